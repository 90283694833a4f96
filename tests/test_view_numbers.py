"""Issue 17's numbers and words on the page and the terminal, through the CLI: the export's size line (item 9)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from flashviz.model.units import human_bytes


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True, env=env)


def element_bytes(html: bytes, id_: str) -> int:
    """The byte length of the page's <script id=id_> element, measured in the file."""
    m = re.search(rb'<script type="application/json" id="' + re.escape(id_.encode()) + rb'">.*?</script>', html, re.S)
    assert m, id_
    return len(m[0])


@pytest.mark.skipif(
    not (Path(__file__).parents[1] / "src/flashviz/viewer/static/single/index.html").is_file(),
    reason="the viewer is not built (cd web && npm run build)",
)
def test_export_size_line_measures_each_part(tmp_path):
    """Item 9: the viewer's size was the total less the raw traces, so it grew with N (1.2 MB at N=8, 1.3 MB at
    N=256, 5.0 MB beside a 366 MB trace). Now each part is measured: the viewer is the same at every N, and each
    trace's size is its element's in the file."""
    viewer = []
    for n, algos in ((8, "fa2"), (256, "fa2"), (8, "fa1,standard")):
        out = tmp_path / f"n{n}-{algos.replace(',', '-')}.html"
        r = run_cli("export", str(out), "--n", str(n), "--algo", algos)
        assert r.returncode == 0, r.stderr
        html = out.read_bytes()
        line = r.stderr.strip().splitlines()[-1]
        assert line.startswith(f"wrote {out} ({human_bytes(len(html))}: "), line
        viewer.append(re.search(r"the viewer with its fonts ([\d.]+ [kMG]?B)", line)[1])
        for k, algo in enumerate(algos.split(",")):
            assert f"{algo} N={n} {human_bytes(element_bytes(html, f'flashviz-trace-{k}'))}" in line, line
        assert f"the comparison {human_bytes(element_bytes(html, 'flashviz-compare-0'))}" in line, line
    assert len(set(viewer)) == 1, viewer


def test_sizes_add_up_to_the_file():
    """flashviz.share.page.sizes: the viewer, the index, each trace and comparison, the ladder; their sum is the
    file."""
    from flashviz.api import trace
    from flashviz.cli.share import documents
    from flashviz.share.page import NoBundle, sizes, standalone

    made = trace("fa2", 8, 4, 4, 4, seed=3)
    docs = documents([(made.config, made.to_json())], compare=True)
    try:
        html = standalone(docs).encode()
    except NoBundle:
        pytest.skip("the viewer is not built")
    parts = dict(sizes(docs))
    assert sum(parts.values()) == len(html)
    assert parts["trace 0"] == element_bytes(html, "flashviz-trace-0")
    assert parts["compare 0"] == element_bytes(html, "flashviz-compare-0")


def table_numbers(text: str) -> set[str]:
    """Every number in the table rows of a rich table's text."""
    return {tok for line in text.splitlines() if line.startswith("│") for tok in re.findall(r"\d[\d,.]*", line)}


@pytest.mark.parametrize(
    "args",
    [
        ("compare", "--n", "4096", "--d", "64", "--br", "64", "--bc", "64"),
        ("compare", "--n", "4096", "--d", "64", "--br", "64", "--bc", "64", "--causal", "--ring", "4"),
        ("compare", "--n", "2147483647", "--d", "256", "--br", "128", "--bc", "11", "--causal"),
        ("ladder",),
    ],
    ids=["compare", "compare-ring", "compare-huge", "ladder"],
)
def test_terminal_tables_fit_columns(args):
    """Item 17: with COLUMNS=80, compare printed 93 columns and ladder 150 (a pipe got a fixed 132 or 150). Every
    line now fits, and every number of the wide table is still there, whole (no "…")."""
    import os

    narrow = run_cli(*args, env={**os.environ, "COLUMNS": "80"})
    wide = run_cli(*args, env={**os.environ, "COLUMNS": "400"})
    assert narrow.returncode == 0 and wide.returncode == 0, narrow.stderr + wide.stderr
    widths = [len(line) for line in narrow.stdout.splitlines()]
    assert max(widths) <= 80, max(widths)
    assert max(len(line) for line in wide.stdout.splitlines()) > 80  # the test would show nothing otherwise
    assert "…" not in narrow.stdout
    assert table_numbers(wide.stdout) <= table_numbers(narrow.stdout)


def shipped_ladder() -> dict:
    import json

    folder = Path(__file__).parents[1] / "src/flashviz/data/ladder"
    return json.loads(sorted(folder.glob("*.json"))[-1].read_text())


def test_tensor_core_words_are_the_ladders_numbers():
    """Item 12: "the same schedule runs hundreds of times faster" where the ladder measured 4.8x for the tensor cores
    alone and 263x for all its rungs. The sentence now carries those two figures, computed from the shipped run."""
    import json

    from flashviz.api import trace

    rungs = {r["label"]: r for r in shipped_ladder()["rungs"]}
    alone = rungs["Triton fp32, CUDA cores"]["ms"] / rungs["Triton fp32, tensor cores"]["ms"]
    every = rungs["seed kernel, as written"]["ms"] / rungs["Triton bf16, autotuned"]["ms"]
    why = json.loads(trace("fa2-triton", 64, 32, 64, 32, seed=11).to_json())["tensor_cores"]["why"]
    assert "hundreds" not in why
    assert f"{alone:.1f}\u00d7 faster (Triton fp32, CUDA cores \u2192 Triton fp32, tensor cores)" in why, why
    assert f"{every:.0f}\u00d7" in why and "seed kernel, as written" in why, why


def test_one_bf16_peak_with_its_run_named():
    """Item 12: the ladder said bf16 783.4 TFLOP/s (its run), the FLOP ratio of compare and the page 746.6 (the
    parallelism run). Every place now quotes the ladder run's one peak and names that run."""
    from flashviz.hardware.ring_model import recorded_tflops
    from flashviz.reports.compare import compare

    run = shipped_ladder()
    peak = f"{run['peaks']['bf16_matmul']['tflops']:.1f} TFLOP/s"
    anchor = compare(64, 16, 16, 16, False)["flops_anchor"]
    assert f"{anchor['matmul_tflops']} TFLOP/s" == peak
    assert anchor["source"].startswith("the ladder run") and anchor["date"] == run["date"]
    assert f"{recorded_tflops()[0]:.1f} TFLOP/s" == peak and "ladder run" in recorded_tflops()[1]
    wide = {"COLUMNS": "200"}
    import os

    out = run_cli("compare", "--n", "64", "--d", "16", env={**os.environ, **wide}).stdout
    out += run_cli("ladder", env={**os.environ, **wide}).stdout
    quoted = set(re.findall(r"bf16[ _a-z-]*matmul (\d+\.\d) TFLOP/s", out.replace("\n", " ")))
    assert quoted == {peak.split()[0]}, quoted


# ----------------------------------------------------------------------------------------------------------
# Item 11: what the badge judges, and fa2-backward on ill-conditioned inputs
# ----------------------------------------------------------------------------------------------------------
GRADS = ("dQ", "dK", "dV")


def test_backward_at_scale_1e6_is_judged_within_tolerance(tmp_path):
    """A one-hot softmax (--scale 1e6): the true dQ, dK cancel to ~0 and the check divided the float32 rounding of
    their terms by that ~0 (dQ "max rel" 0.41, and 1e9 at N=64: a ✗ on a legitimate run). Gradients are judged
    against the scale of their terms now, and each output says what its error is over."""
    import json

    out = tmp_path / "t.json"
    for scale in ("1e6", "-1e6"):
        r = run_cli("trace", "--algo", "fa2-backward", "--n", "33", "--d", "8", "--br", "4", "--bc", "4", "--causal",
                    "--seed", "5", "--scale", scale, "-o", str(out))  # fmt: skip
        assert r.returncode == 0, r.stderr
        ref = json.loads(out.read_text())["reference"]
        assert ref["ok"], {k: ref[k]["max_rel"] for k in GRADS}
        for k in GRADS:
            assert ref[k]["over"] == "the largest sum of the magnitudes of its terms" and ref[k]["over_value"] > 0
        assert ref["O"]["over"] == "max |ref|" and ref["L"]["over"] == "max(1, max |ref|)"


def test_backward_with_a_true_gradient_of_zero(rng):
    """V's rows all equal: dP - Delta = 0, so dQ = dK = 0 in exact arithmetic; float32 leaves ~1e-5, which the old
    check divided by max |dQ| ~ 1e-14 (max rel 3.7e8, ✗)."""
    import json

    from flashviz.api import trace

    n, d = 32, 8
    inputs = {k: (3 * rng.standard_normal((n, d))).astype(np.float32) for k in ("Q", "K", "dO")}
    inputs["V"] = np.tile(3 * rng.standard_normal((1, d)), (n, 1)).astype(np.float32)
    ref = json.loads(trace("fa2-backward", None, None, 8, 8, inputs=inputs).to_json())["reference"]
    assert ref["ok"], {k: ref[k]["max_rel"] for k in GRADS}
    assert ref["dQ"]["max_abs"] > 0  # float32 did leave something: the check judged it, it did not see zeros


def test_gradient_magnitudes_still_catch_a_wrong_gradient(rng):
    """The scale of the terms is no blanket: a gradient off by 1e-3 of its own size fails the 1e-4 tolerance."""
    from flashviz.algos import get
    from flashviz.model import reference

    n, d, scale = 40, 16, 0.3
    q, k, v, do = (rng.standard_normal((n, d)) for _ in range(4))
    ref = reference.attention_backward(q, k, v, do, scale, causal=True)
    mags = reference.backward_magnitudes(q, k, v, do, scale, causal=True)
    tol = get("fa2-backward").expect.TOLERANCE
    for name in GRADS:
        assert mags[name] >= np.abs(ref[name]).max()  # the terms' scale is at least the result's
        wrong = {**ref, name: ref[name] + 1e-3 * np.abs(ref[name]).max() * rng.standard_normal(ref[name].shape)}
        checked = reference.check(wrong, ref, tol, frozenset({"L"}), mags)
        assert not checked[name]["ok"] and not checked["ok"], name
        assert all(checked[x]["ok"] for x in ref if x != name)


def test_trace_of_an_algorithm_with_its_own_defaults_runs_with_no_flags(tmp_path):
    """Item 13: `flashviz trace --algo fa2-triton` with no other flags failed ("--d: must be one of 32, 64, ...
    (got 4)"): the seed's N=8, D=4 are no launch of its kernel. It now runs at the algorithm's own defaults, and a
    flag given is kept."""
    import json

    from flashviz.algos import get

    own = dict(get("fa2-triton").example or {})
    assert own and get("fa2-triton").example_why
    out = tmp_path / "t.json"
    r = run_cli("trace", "--algo", "fa2-triton", "-o", str(out))
    assert r.returncode == 0, r.stderr
    cfg = json.loads(out.read_text())["config"]
    assert {k: cfg[k] for k in own} == own
    r = run_cli("trace", "--algo", "fa2-triton", "--d", "64", "--n", "40", "-o", str(out))
    assert r.returncode == 0, r.stderr
    cfg = json.loads(out.read_text())["config"]
    assert (cfg["n"], cfg["d"], cfg["br"], cfg["bc"]) == (40, 64, own["br"], own["bc"])
    r = run_cli("count", "--algo", "fa2-triton")
    assert r.returncode == 0 and f"N={own['n']} D={own['d']}" in r.stdout, r.stderr
    r = run_cli("trace", "-o", str(out))  # an algorithm without its own: the seed's example, as before
    assert r.returncode == 0 and json.loads(out.read_text())["config"]["n"] == 8
