"""fa3, FlashAttention-3's Gluon forward walked through: its engine against float64 (fresh random inputs, explicit
tolerances), against fa2-triton's engine on the same inputs (the same arithmetic rules at the same tiles: identical),
the ownership it records in each step's `schedule` (which consumer warpgroup owns which rows of Qi, which ring slot
holds which Kj, Vj), its steps cut from the `# step:` regions of the very kernel file the launcher runs, and its
launch rules. Gluon has no interpreter: the engine against the kernel itself is `pytest -m gpu` (tests/test_gpu.py's
`flashviz gpu run --algo fa3`) on an H200."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from flashviz.algos import get
from flashviz.algos.fa3 import gpu, tiles
from flashviz.model import kernels, reference
from flashviz.model.config import Config, ConfigError
from flashviz.model.precision import bf16
from flashviz.tracing.build import make_trace
from helpers import every_block

ALGO = "fa3"
A = get(ALGO)
ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "src/flashviz/algos/fa3/kernel.py"
CASES = [  # n, d, causal: ragged and not, one block and several, one tile and several, both head dimensions
    (256, 64, False),
    (256, 64, True),
    (300, 64, True),
    (300, 128, False),
    (129, 128, True),
    (100, 64, False),
    (1, 64, True),
    (520, 64, True),  # 5 blocks: the ring of 3 slots wraps
]
# O: fa2-triton's bound (expect.py: the ladder's bf16 check), which its measured error (about 1/3 of plain bf16
# attention's 0.4-1.2e-2) sits well inside; L: fp32 throughout, as fa2's L.
O_TOL, L_TOL = 2e-2, 1e-5


def fresh(n: int, d: int) -> dict[str, np.ndarray]:
    """Fresh unit-normal inputs every run (the seed is printed to replay a failure)."""
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"numpy seed: {seed}")
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal((n, d), dtype=np.float32) for k in "QKV"}


def cfg_of(n: int, d: int, causal: bool, algo: str = ALGO, **more) -> Config:
    return Config(algo=algo, n=n, d=d, br=128, bc=128, causal=causal, **more)


@pytest.mark.parametrize(("n", "d", "causal"), CASES)
def test_engine_against_float64(n, d, causal):
    cfg = A.validated(cfg_of(n, d, causal, record=()))
    x = fresh(n, d)
    rec = A.engine.execute(cfg, x)
    O, L = rec.hbm.value("O"), rec.hbm.value("L")
    q, k, v = (bf16(x[c]) for c in "QKV")  # what the kernel can see of the inputs
    ref_O, ref_L = reference.attention(q, k, v, cfg.softmax_scale, causal)
    assert np.isfinite(O).all() and np.isfinite(L).all()  # every element written (outputs start as NaN)
    assert np.abs(O - ref_O).max() / np.abs(ref_O).max() <= O_TOL
    assert np.abs(L - ref_L).max() / max(1.0, np.abs(ref_L).max()) <= L_TOL
    assert np.array_equal(O, bf16(O)), "O is stored in bf16"
    assert n == 1 or not np.array_equal(O, ref_O.astype(np.float32))  # the bf16 rounding shows (N = 1: O = V)
    assert A.expect.TOLERANCE == {"O": O_TOL, "L": L_TOL}


@pytest.mark.parametrize(("n", "d", "causal"), CASES)
def test_engine_is_fa2_tritons_at_the_same_tiles(n, d, causal):
    """Gluon has no interpreter, so the kernel's arithmetic is held to fa2-triton's engine (itself held to the Triton
    kernel under TRITON_INTERPRET): the same rules (bf16 inputs, fp32 sums, exp2 of the folded scale, P rounded
    before P·V, masks on the diagonal, one division), with the P·V of tile j moved to tile j+1's step. The bound is
    zero: every row's operations are the same in the same order, so O and L are bit for bit fa2-triton's."""
    x = fresh(n, d)
    out = {}
    for algo in (ALGO, "fa2-triton"):
        a = get(algo)
        rec = a.engine.execute(a.validated(cfg_of(n, d, causal, algo, record=())), x)
        out[algo] = (rec.hbm.value("O"), rec.hbm.value("L"), rec.flops_counted())
    (o3, l3, f3), (o2, l2, f2) = out[ALGO], out["fa2-triton"]
    np.testing.assert_array_equal(o3, o2)
    np.testing.assert_array_equal(l3, l2)
    assert f3 == f2 == A.flops.count(n, d, 128, 128, causal)  # the same arithmetic, counted as done


@pytest.mark.parametrize(("n", "d", "causal"), CASES)
def test_counters_equal_the_closed_forms(n, d, causal):
    trace = make_trace(every_block(cfg_of(n, d, causal, seed=int.from_bytes(os.urandom(4), "little"))))
    assert trace.hbm == A.traffic.count(n, d, 128, 128, causal)
    assert len(trace.steps) == A.traffic.steps(n, d, 128, 128, causal)
    assert trace.sram["bytes"] == A.traffic.sram_bytes(n, d, 128, 128)
    assert trace.reference["ok"], trace.reference


@pytest.mark.parametrize(("n", "d", "causal"), [(520, 64, True), (300, 128, False), (100, 64, False)])
def test_each_step_records_who_runs_it_and_where_its_tiles_sit(n, d, causal):
    cfg = every_block(cfg_of(n, d, causal))
    doc = json.loads(make_trace(cfg).to_json())
    stages = {64: 3, 128: 2}[d]
    seen: dict[int, list[str]] = {}
    for s in doc["steps"]:
        sch, i, j, op = s["schedule"], s["indices"]["i"], s["j"], s["op"]
        seen.setdefault(i, []).append(op)
        assert sch["partition"] == ("producer" if op in ("load_q", "load_kv") else "consumers"), op
        assert sch["program"] == (cfg.tr - 1 - i if causal else i)
        if op != "load_kv":
            wg = sch["warpgroups"]
            assert [w["warpgroup"] for w in wg] == [0, 1]
            assert [w["rows"] for w in wg] == [[128 * i, 128 * i + 64], [128 * i + 64, 128 * i + 128]]
            assert sum(w["valid"] for w in wg) == min(n, 128 * (i + 1)) - 128 * i  # the block's rows inside N
        if j is not None:
            ring = sch["ring"]
            assert (ring["slot"], ring["use"], ring["phase"], ring["stages"]) == (
                j % stages,
                j // stages,
                (j // stages) % 2,
                stages,
            )
        if op == "online_softmax":
            assert sch["pv_of"] == j - 1 and sch["pv_ring"]["slot"] == (j - 1) % stages
            assert f"sp = {(j - 1) % stages}" in s["code"].split("\n", 1)[0]
        if op == "last_pv":
            assert sch["pv_of"] == j == cfg.tiles_of_block(i) - 1
        if op in ("first_tile", "online_softmax"):
            n_full = i if causal else n // 128  # kernel.py's _fwd_num_tiles: tiles wholly inside (and below)
            masked = j == 0 or j >= max(n_full, 1)
            assert sch["mask"] == (("MASK_CAUSAL" if causal else "MASK_COLUMNS") if masked else "NO_MASK"), (i, j)
    for i, ops in seen.items():  # the overlapped schedule's order, per block
        tc = cfg.tiles_of_block(i)
        want = ["load_q", "load_kv", "first_tile"] + ["load_kv", "scores", "online_softmax"] * (tc - 1)
        assert ops == [*want, "last_pv", "write_back"], i
    assert any(s["schedule"]["ring"]["use"] > 0 for s in doc["steps"] if s["op"] == "load_kv") == (
        max(cfg.tiles_of_block(i) for i in range(cfg.tr)) > stages
    )


def function_of(line: int) -> str:
    tree = ast.parse(KERNEL.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.lineno <= line <= (node.end_lineno or 0):
            return node.name
    return ""


def test_the_step_markers_cut_the_kernel_file_as_the_code_panel_shows_it():
    """Each step's code is its `# step:` region of kernel.py, inside the overlapped forward's functions only (not the
    ablation's `_fwd_tiles_plain`, not the backward's), with i, j and the ring slot substituted."""
    lines = KERNEL.read_text().splitlines()
    regions = kernels.regions(A.kernel)
    assert kernels.source(A.kernel) == KERNEL.read_text()
    assert sorted(regions) == sorted(A.words.LABELS) == sorted(A.picture.OPS)
    where = {op: function_of(r.first) for op, r in regions.items()}
    assert where == {
        "load_q": "_fwd_producer",
        "load_kv": "_load_kv",
        "first_tile": "_fwd_consumer",
        "scores": "_fwd_tiles_overlapped",
        "online_softmax": "_fwd_tiles_overlapped",
        "last_pv": "_fwd_consumer",
        "write_back": "_fwd_consumer",
    }
    assert "v_smem.index(sp)" in regions["online_softmax"].body and "_softmax(" in regions["online_softmax"].body
    assert "warpgroup_mma(q, k_smem" in regions["scores"].body
    cfg = every_block(cfg_of(300, 64, True))
    trace = make_trace(cfg)
    doc = json.loads(trace.to_json())
    assert doc["kernel"]["file"] == "kernel.py" and doc["kernel"]["source"] == KERNEL.read_text()
    for s in trace.steps:
        first, last = s.lines
        assert lines[first - 2].strip() == f"# step: {s.op}" and lines[last].strip() == "# end step"
        header, body = s.code.split("\n", 1)
        assert header.startswith(f"# i = {s.indices['i']}")
        original = "\n".join(lines[first - 1 : last])
        named = dict(x.split(" = ") for x in header.removeprefix("# ").split(" \u00b7 ")[0].split(", "))
        assert body == kernels.substitute(regions[s.op].body, **{k: int(v) for k, v in named.items()})
        if s.op == "load_kv":
            assert f"[b, h, {s.j} * Bc, 0]" in body and "j * Bc" in original
            assert f"k_smem.index({s.j % 3})" in body and f"s = {s.j % 3}" in header
        if s.op == "load_q":
            assert f"{s.indices['i']} * Br + w * WG_ROWS" in body


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"br": 64}, "br", "must be 128 for fa3"),
        ({"bc": 64}, "bc", "must be 128 for fa3 at D=64"),
        ({"d": 32}, "d", "must be one of 64, 128"),
        ({"d": 96}, "d", "must be one of 64, 128"),
        ({"scale": -0.5}, "scale", "must be > 0"),
    ],
)
def test_launches_the_kernel_does_not_run_are_refused_in_one_line(changes, field, words):
    A.validated(cfg_of(256, 64, False))
    with pytest.raises(ConfigError) as e:
        A.validated(cfg_of(256, 64, False).replace(**changes))
    assert e.value.field == field and words in e.value.message and "\n" not in str(e.value)


def test_the_cli_refuses_in_one_line_and_runs_its_example_with_no_size_flags(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    bad = subprocess.run([sys.executable, "-m", "flashviz", "trace", "--algo", ALGO, "--br", "64", "--bc", "128",
                          "--n", "256", "--d", "64"], capture_output=True, text=True, env=env)  # fmt: skip
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1 and "br" in bad.stderr
    out = tmp_path / "t.json"
    ok = subprocess.run([sys.executable, "-m", "flashviz", "trace", "--algo", ALGO, "-o", str(out)],
                        capture_output=True, text=True, env=env)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(out.read_text())
    c = doc["config"]
    assert {k: c[k] for k in ("n", "d", "br", "bc")} == dict(A.example or {}) == {"n": 256, "d": 64, "br": 128,
                                                                                 "bc": 128}  # fmt: skip
    assert doc["reference"]["ok"] and doc["model"]["matches"] and doc["flops"]["matches"]
    assert A.example_why and len(doc["steps"]) == A.traffic.steps(256, 64, 128, 128)


def test_the_tiles_are_the_launchers():
    """tiles.py states fa3_launcher's launch constants without importing torch: held equal here where torch is."""
    fa3 = pytest.importorskip("flashviz.algos.fa3.launcher")
    assert tiles.BR == fa3.BR and tiles.SUPPORTED_D == fa3.SUPPORTED_D
    for d in tiles.SUPPORTED_D:
        assert (tiles.BC[d], tiles.STAGES[d]) == (fa3.FWD_CONFIGS[d].Bc, fa3.FWD_CONFIGS[d].stages)
        for n in (1, 4096, 4097, 16384):
            assert gpu.persistent(cfg_of(n, d, False)) == fa3.forward_config(d, n, False).persistent
    src = KERNEL.read_text()
    assert "WG_ROWS = gl.constexpr(64)" in src and "NUM_WG = gl.constexpr(2)" in src
    assert tiles.shared_bytes(128) == 196_608 and tiles.shared_bytes(64) == 131_072  # the launcher's 196 / 131 KB


# ---- on an H200 (`pytest -m gpu tests/test_fa3_engine.py`, or bench/fa3_view_gpu.sh): the kernel itself ----


def hopper() -> str | None:
    """Why the Gluon kernel cannot run here (None: it can)."""
    try:
        from flashviz.algos.fa3 import launcher as fa3_launcher
    except ImportError as e:  # no torch
        return f"no torch ({e})"
    return fa3_launcher.unavailable()


needs_hopper = pytest.mark.skipif(hopper() is not None, reason=f"fa3 needs an sm_90 GPU: {hopper()}")


@pytest.mark.gpu
@needs_hopper
@pytest.mark.parametrize(
    ("n", "d", "causal", "heads"), [(300, 64, True, 2), (1024, 128, False, 3), (129, 128, True, 1)]
)
def test_gpu_run_agrees_with_the_engine_and_float64(tmp_path, n, d, causal, heads):
    """`flashviz gpu run --algo fa3`, the real front door: the Gluon kernel on every head against the engine (within
    expect.ENGINE_TOLERANCE: bf16 O one ulp, L in fp32) and float64 (TOLERANCE); exit 0 when it agrees."""
    out = tmp_path / "run.json"
    seed = int.from_bytes(os.urandom(4), "little") % 2**31
    args = ["gpu", "run", "--algo", ALGO, "--n", str(n), "--d", str(d), "--br", "128", "--bc", "128",
            "--heads", str(heads), "--seed", str(seed), "-o", str(out)] + (["--causal"] if causal else [])  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "src")})  # fmt: skip
    report = json.loads(out.read_text())
    assert proc.returncode == 0 and report["ok"], (seed, proc.stderr[-2000:], report.get("check"))
    assert report["launch"]["kernel"] == "fa3_fwd" and not report["launch"]["interpreted"]
