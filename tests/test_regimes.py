"""Issue 11, item 3: `flashviz compare` shows both regimes — where FA1 moves fewer bytes than FA2 (Bc > Br) and
where FA2 does (Br >= Bc, what real kernels pick) — says which terms dominate, and prints the FLOPs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from flashviz.algos import get
from flashviz.reports.compare import compare
from flashviz.reports.regimes import sweep, terms


def run(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "flashviz", "compare", *args],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "COLUMNS": "160"},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_compare_prints_the_issues_example_and_both_regimes():
    out = run("--n", "4096", "--d", "64", "--br", "32", "--bc", "128")
    assert "0.39×" in out  # FA1 moves 0.39x FA2's bytes at Br=32, Bc=128
    assert "fewest bytes" in out and "32 × 128 (this config)" in out
    rows = {line.split("│")[1].strip(): line for line in out.splitlines() if line.startswith("│ 32 × ")}
    assert rows["32 × 128 (this config)"].rstrip(" │").endswith("fa1")
    assert rows["32 × 16"].rstrip(" │").endswith("fa2")
    assert "Br ≥ Bc" in out and "12.1×" in out and "~16×" in out  # the ladder run: 783.4 / 64.8 TFLOP/s
    assert "non-matmul FLOPs" in out and "matmul FLOPs" in out


def test_compare_json_carries_flops_terms_and_the_sweep():
    doc = json.loads(run("--n", "1000", "--d", "16", "--br", "32", "--bc", "48", "--causal", "--json"))
    for name in ("fa1", "fa2"):
        f = doc["algorithms"][name]["flops"]
        assert f["by_kind"] == get(name).flops.count(1000, 16, 32, 48, causal=True)
    pts = doc["regimes"]["points"]
    assert [p["current"] for p in pts].count(True) == 1
    assert {p["fewest"] for p in pts} >= {"fa1", "fa2"}


@pytest.mark.parametrize(("n", "br", "bc"), [(4096, 32, 128), (1000, 64, 16), (777, 8, 8)])
def test_terms_say_fa1_rereads_q_tc_times_and_fa2_rereads_k_v_tr_times(n, br, bc):
    tr, tc = -(-n // br), -(-n // bc)
    fa1 = {t["tensor"]: t for t in terms("fa1", n, 8, br, bc, False)}
    fa2 = {t["tensor"]: t for t in terms("fa2", n, 8, br, bc, False)}
    assert fa1["Q"]["times"] == fa1["O"]["times"] == tc  # Q and the carried O (and l, m) on every visit
    assert fa2["K"]["times"] == fa2["V"]["times"] == tr and fa2["Q"]["times"] == 1


def test_at_br_at_least_bc_fa2_moves_fewer_bytes():
    for n in (256, 1000, 4096):
        for p in sweep(n, 64, 64, 64, False)["points"]:
            if p["br"] >= p["bc"]:
                assert p["fewest"] == "fa2", (n, p)


def test_real_forward_tiles_are_at_least_as_tall_as_wide():
    from flashviz.algos.fa2_triton.launch_tiles import FWD_TILES

    tiles = [t for ts in FWD_TILES.values() for t in ts]
    assert tiles and all(t.Br >= t.Bc for t in tiles)


def test_compare_flops_are_the_closed_forms():
    doc = compare(300, 8, 16, 32, causal=True)
    assert doc["algorithms"]["fa1"]["flops"]["by_kind"]["div"] > doc["algorithms"]["fa2"]["flops"]["by_kind"]["div"]
    assert doc["flops_anchor"]["measured_ratio"] == pytest.approx(12.1, abs=0.05)  # the ladder run's peaks


def test_the_readmes_parallelism_table_is_the_recorded_run():
    """Issue 11 item 4: the README's numbers are the recorded H200 run's, and its 0.39x is compare's."""
    from pathlib import Path

    from flashviz.hardware import recorded

    readme = Path(__file__).resolve().parents[1] / "README.md"
    if not readme.is_file():
        pytest.skip("no README beside this checkout")
    text = readme.read_text()
    rows = recorded.parallelism()["rows"]
    by = {(r["algo"], r["n"], r["heads"]): r for r in rows}
    for n, heads in ((4096, 1), (4096, 4), (1024, 32), (512, 128)):
        fa1, fa2 = by[("fa1", n, heads)], by[("fa2", n, heads)]
        line = (
            f"| {n} | {heads} | {fa1['blocks']} | {fa1['ms']:.2f} | {fa1['ncu']['sm_utilisation_pct']:.1f}% | "
            f"{fa2['blocks']} | {fa2['ms']:.2f} | {fa2['ncu']['sm_utilisation_pct']:.1f}% |"
        )
        assert line in text, line
    assert f"{by[('fa1', 4096, 1)]['ms'] / by[('fa2', 4096, 1)]['ms']:.0f}× slower" in text
    ratio = compare(4096, 64, 32, 128)["algorithms"]["fa1"]["traffic_vs_fa2"]
    assert f"{ratio:.2f}× FA2's bytes" in text
    assert "## Why FA2 wins: trips across HBM" not in text


def test_the_sweep_sets_only_schedules_of_one_element_width_side_by_side():
    """fa2-triton runs fa2's schedule in bf16: counted at 4 bytes it tied fa2 at every point (the sweep counted every
    algorithm in fp32); counted at its own 2 bytes it would "win" everywhere by precision alone. The sweep sets side
    by side only the algorithms as wide as fa2, counts each at its own width, and names the ones it leaves out."""
    r = sweep(4096, 64, 32, 128, False)
    wide = {name for name in r["points"][0]["bytes"]}
    assert {"standard", "fa1", "fa2"} <= wide
    for name in wide:
        assert get(name).element_bytes == get("fa2").element_bytes
    narrow = [a for a in ("fa2-triton",) if get(a).element_bytes != get("fa2").element_bytes]
    assert narrow, "fa2-triton is bf16: 2 bytes per element"
    for name in narrow:
        assert name not in wide and name in r["left_out"]
    assert "left out" in run("--n", "4096", "--d", "64", "--br", "32", "--bc", "128")


@pytest.mark.parametrize("causal", [False, True])
def test_the_sweeps_bytes_at_the_current_tiles_are_compares_totals(causal):
    """One count of bytes: the sweep's point at the current (Br, Bc) holds each algorithm's `total.bytes` of the
    comparison (each tensor at its own width)."""
    doc = compare(1000, 16, 32, 48, causal)
    (here,) = [p for p in doc["regimes"]["points"] if p["current"]]
    for name, b in here["bytes"].items():
        assert b == doc["algorithms"][name]["total"]["bytes"], name
