"""`flashviz compare` and the closed forms behind it: per-algorithm SRAM and step counts against the engine,
the causal block sums against a loop, the table and its JSON, instant answers without the engine."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flashviz.algos import REGISTRY, get
from flashviz.cli.main import main
from flashviz.model import kernels, tiling
from flashviz.model.config import Config
from flashviz.reports.compare import compare
from flashviz.tracing.build import make_trace
from helpers import bounded_work, runnable

README = Path(__file__).resolve().parents[1] / "README.md"


@given(n=st.integers(1, 300), br=st.integers(1, 70), bc=st.integers(1, 70), causal=st.booleans())
def test_block_sums_equal_a_loop_over_blocks(n, br, bc, causal):
    tr = -(-n // br)
    tc = [tiling.tiles_of_block(n, br, bc, i, causal) for i in range(tr)]
    rows = [min(n, (i + 1) * br) - i * br for i in range(tr)]
    width = [min(n, t * bc) for t in tc]
    assert tiling.sum_tiles(n, br, bc, causal) == sum(tc)
    assert tiling.sum_tiles(n, br, bc, causal, weighted=True) == sum(r * t for r, t in zip(rows, tc, strict=True))
    assert tiling.sum_width(n, br, bc, causal) == sum(width)
    assert tiling.sum_width(n, br, bc, causal, weighted=True) == sum(r * w for r, w in zip(rows, width, strict=True))
    first = [tiling.first_block(j, br, bc, causal) for j in range(tiling.count(n, bc))]
    assert tiling.sum_first_blocks(n, br, bc, causal) == sum(first)
    # tile j's first block is the first whose rows reach its first column; none before it does
    for j, i0 in enumerate(first):
        assert i0 == 0 or not causal or tiling.span(i0 - 1, br, n)[1] - 1 < j * bc <= tiling.span(i0, br, n)[1] - 1


def test_floor_sum_against_a_loop():
    for n in range(1, 30):
        for m in range(1, 12):
            for a in range(0, 15):
                for b in range(0, 15):
                    assert tiling.floor_sum(n, m, a, b) == sum((a * k + b) // m for k in range(n))


def with_closed_forms() -> list[str]:
    return [name for name, a in REGISTRY.items() if hasattr(a.traffic, "sram_bytes") and hasattr(a.traffic, "steps")]


def test_every_forward_algorithm_has_closed_forms_for_sram_and_steps():
    assert {"standard", "fa1", "fa2"} <= set(with_closed_forms())


@pytest.mark.parametrize("algo", with_closed_forms())
@given(
    n=st.integers(1, 40),
    d=st.integers(1, 6),
    br=st.integers(1, 16),
    bc=st.integers(1, 16),
    causal=st.booleans(),
)
def test_sram_and_steps_equal_the_engines(algo, n, d, br, bc, causal):
    """The trace's SRAM footprint per block, and its step count with every block recorded."""
    if causal and not REGISTRY[algo].causal:
        return
    cfg = runnable(Config(algo=algo, n=n, d=d, br=br, bc=bc, causal=causal))
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc  # what it runs (the ring's launch ties N to its devices)
    blocks = REGISTRY[algo].blocks(cfg)  # CUDA blocks of the main kernel (fa2-backward: one per K/V tile)
    t = make_trace(cfg.replace(record=tuple(range(blocks))))
    module = REGISTRY[algo].traffic
    assert t.sram["bytes"] == module.sram_bytes(n, d, br, bc)
    assert len(t.steps) == module.steps(n, d, br, bc, causal=causal)
    assert t.hbm == module.count(n, d, br, bc, causal=causal)


def test_fa2_sram_matches_the_kernels_macro():
    source = kernels.source(get("fa2").kernel)
    m = re.search(r"^#define fa2_smem_bytes\(Br, Bc, D\)\s+(\(.*\))\s*$", source, re.MULTILINE)
    assert m
    for br, bc, d in ((4, 4, 4), (64, 64, 64), (16, 32, 128), (3, 5, 7)):
        assert eval(m[1], {}, {"Br": br, "Bc": bc, "D": d}) == REGISTRY["fa2"].traffic.sram_bytes(0, d, br, bc)


def test_compare_document_holds_every_algorithm_from_its_model():
    doc = compare(4096, 64, 64, 64)
    assert list(doc["algorithms"]) == [name for name, a in REGISTRY.items() if a.rival]  # the ring: `--ring P`
    for name, e in doc["algorithms"].items():
        if get(name).allowed and 64 not in get(name).allowed.get("br", (64,)):  # fa3 runs only Br = Bc = 128
            assert not e["supported"] and e["why"].startswith("br: ")
            continue
        counts = get(name).traffic.count(4096, 64, 64, 64)
        assert {k: {"read": v["read"], "written": v["written"]} for k, v in e["tensors"].items()} == counts
        assert e["total"]["read"] == sum(t["read"] for t in counts.values())
        size = {t: get(name).bytes_of(t) for t in counts}  # 4 per element (fp32), 2 (bf16)
        assert e["total"]["bytes"] == sum(size[t] * (c["read"] + c["written"]) for t, c in counts.items())
        assert e["pass"] == ("backward" if "backward" in name else "forward")
    fa2, fa1, std = (doc["algorithms"][k] for k in ("fa2", "fa1", "standard"))
    assert fa2["traffic_vs_fa2"] == 1.0
    assert std["total"]["bytes"] > fa1["total"]["bytes"] > fa2["total"]["bytes"], "the headline: FA2 moves least"
    assert fa2["sram_bytes"] == 4 * (2 * 64 * 64 + 2 * 64 * 64 + 64 * 64 + 2 * 64) and fa2["sram_fits"]
    assert fa2["steps"] == 64 * (2 + 3 * 64)


def test_compare_table(capsys):
    assert main(["compare", "--n", "4096", "--d", "64", "--br", "64", "--bc", "64"]) == 0
    out = capsys.readouterr().out
    for name in (n for n, a in REGISTRY.items() if a.rival):  # the ring is not a column: `compare --ring P`
        assert name in out
    for label in ("S written", "l read", "total read", "HBM traffic (bytes)", "dtype", "SRAM per block", "steps"):
        assert label in out
    assert "16,777,216" in out and "2.97×" in out and "80.5 KiB" in out
    if any("backward" in name for name in REGISTRY):
        assert "(backward pass)" in out


def test_compare_json_and_causal(capsys):
    assert main(["compare", "--n", "1000", "--d", "16", "--br", "32", "--bc", "48", "--causal", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["config"] == {"n": 1000, "d": 16, "br": 32, "bc": 48, "causal": True, "tr": 32, "tc": 21}
    for name, e in doc["algorithms"].items():
        assert e["supported"] == (REGISTRY[name].causal and not REGISTRY[name].launch_check)  # Bc=48: no Triton tile
        if e["supported"]:
            assert e["tensors"]["Q"]["read"] == get(name).traffic.count(1000, 16, 32, 48, causal=True)["Q"]["read"]
    full = compare(1000, 16, 32, 48)["algorithms"]["standard"]["total"]["bytes"]
    assert doc["algorithms"]["standard"]["total"]["bytes"] < full


def test_compare_default_is_the_seed_example(capsys):
    assert main(["compare", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["config"]["n"], doc["config"]["d"], doc["config"]["br"], doc["config"]["bc"]) == (8, 4, 4, 4)
    assert doc["algorithms"]["standard"]["tensors"]["S"] == {
        "read": 64,
        "written": 64,
        "read_bytes": 256,
        "written_bytes": 256,
        "element_bytes": 4,
    }


@pytest.mark.parametrize("algo", ["standard", "fa1", "fa2"])
def test_forward_models_are_closed_forms_even_for_2_31_rows(algo):
    """No loop over the 2^31 blocks of Q: judged by the Python lines run and the memory taken (bench/cli_bench.py
    times it)."""
    module = REGISTRY[algo].traffic
    for causal in (False, True):
        _, lines = bounded_work(module.count, 2**31 - 1, 128, 1, 3, causal=causal, max_lines=2000)
        assert lines > 0  # the tracer saw the model run
        bounded_work(module.steps, 2**31 - 1, 128, 1, 3, causal=causal, max_lines=2000)


def test_compare_answers_without_the_engine():
    """compare runs no executor: no Recorder is ever made (its speed is timed by bench/cli_bench.py, not here). Each
    algorithm's engine module is imported with its Algorithm (issue 18: one typed object, its parts imported
    directly), so what is held is that none runs."""
    code = (
        "import sys; from flashviz.engine import recorder; "
        "recorder.Recorder.__init__ = lambda *a, **k: (_ for _ in ()).throw(AssertionError('an engine ran')); "
        "from flashviz.cli.main import main; "
        "rc = main(['compare', '--n', '2147483647', '--d', '128', '--br', '4096', '--bc', '4096', '--causal', "
        "'--json']); "
        "assert rc == 0"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["config"]["n"] == 2147483647


BAD = [
    (["compare", "--n", "0"], "--n"),
    (["compare", "--d", "x"], "--d"),
    (["compare", "--br", "-1"], "--br"),
    (["compare", "--bc", "5000"], "--bc"),
    (["compare", "--causal", "yes"], "compare"),
]


@pytest.mark.parametrize("args,flag", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_line_and_exit_2(args, flag, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err and "Traceback" not in err


@pytest.mark.skipif(not README.is_file(), reason="no README beside this checkout")
def test_readme_holds_the_headline_table():
    text = README.read_text()
    heading = "## Why FA2 is faster: parallelism, warps, fewer non-matmul FLOPs"
    assert heading in text
    section = text.split(heading, 1)[1]
    assert "flashviz compare --n 4096 --d 64 --br 64 --bc 64" in section
    doc = compare(4096, 64, 64, 64)
    for name in ("standard", "fa1", "fa2"):
        total = doc["algorithms"][name]["total"]
        assert f"{total['read']:,}" in section and f"{total['written']:,}" in section, name
