"""bench/attention_bench.py --features on the CPU, as far as it goes without a GPU: the argument parsing, the case
list of issue 22 (--dry-run), the FLOP count against attention_reference.visible, and a --smoke run (every case
shrunk, flashviz under Triton's interpreter) through the real script, writing the JSON the H200 run writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "attention_bench.py"
sys.path.insert(0, str(BENCH.parent))
import attention_features as af  # noqa: E402

from flashviz.ops.reference import visible  # noqa: E402

ROW_KEYS = {"provider", "mode", "causal", "d", "n", "batch", "heads", "dtype", "tflops", "ms", "case"}


def bench(*args, timeout=600):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("TRITON_INTERPRET", None)  # the script sets it itself for --smoke without a GPU
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)  # fmt: skip


def test_dry_run_lists_the_issues_cases():
    out = bench("--features", "--dry-run")
    assert out.returncode == 0, out.stderr
    names = [line.split("  ")[0] for line in out.stdout.splitlines() if " B=" in line]
    assert names == [c.name for c in af.cases()]
    for nq in (1, 16, 128):
        for nk in ("8k", "32k", "128k"):
            assert f"decode Nq={nq} Nk={nk}" in names
    assert {"prefill with cache Nq=2k Nk=16k", "varlen 64 seqs 64k tokens", "window 4096 N=32k",
            "softcap 50 N=8k", "gqa causal N=8k"} <= set(names)  # fmt: skip
    assert all("Hq=32 Hkv=8 D=128" in line for line in out.stdout.splitlines() if " B=" in line)
    assert "providers: flashviz, fa3, sdpa-cudnn, flex, fa4" in out.stdout
    varlen = next(c for c in af.cases() if c.varlen)
    assert len(varlen.lengths) == 64 and sum(varlen.lengths) == 65536 and min(varlen.lengths) >= 1


def test_feature_flags_need_features():
    out = bench("--dry-run")
    assert out.returncode == 2 and "--dry-run, --smoke and --case go with --features" in out.stderr


@pytest.mark.parametrize(("nq", "nk", "causal", "window"), [(37, 53, True, (-1, -1)), (53, 37, True, (5, -1)),
                         (1, 90, True, (-1, -1)), (40, 40, False, (3, 7)), (25, 80, False, (6, 6)),
                         (64, 64, True, (16, 4))])  # fmt: skip
def test_pairs_are_the_masks_count(nq, nk, causal, window):
    assert af.visible_pairs(nq, nk, causal, window) == int(visible(nq, nk, causal, window).sum())


def test_smoke_run_writes_the_features_json(tmp_path):
    """Three shrunk cases, flashviz, fa3 and sdpa-cudnn (absent on the CPU: recorded as unsupported or an error) and
    flex (compiled for the CPU, forward only there: its output is compared with flashviz's)."""
    out = bench("--features", "--smoke", "--case", "decode Nq=16 Nk=8k", "--case", "varlen", "--case", "window",
                "--providers", "flashviz,fa3,sdpa-cudnn,flex", "--out", str(tmp_path))  # fmt: skip
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    (path,) = tmp_path.glob("*-features.json")
    doc = json.loads(path.read_text())
    assert list(doc["cases"]) == ["varlen 64 seqs 64k tokens", "window 4096 N=32k", "decode Nq=16 Nk=8k"]
    flashviz = [r for r in doc["rows"] if r["provider"] == "flashviz"]
    assert all(set(r) == ROW_KEYS for r in doc["rows"])
    assert {(r["case"], r["mode"]) for r in flashviz} == {
        ("decode Nq=16 Nk=8k", "fwd"), ("varlen 64 seqs 64k tokens", "fwd"), ("varlen 64 seqs 64k tokens", "bwd"),
        ("window 4096 N=32k", "fwd"), ("window 4096 N=32k", "bwd")}  # fmt: skip
    notes = json.loads(next(tmp_path.glob("*-features-extra.json")).read_text())["cases"]
    assert notes["varlen 64 seqs 64k tokens"]["sdpa-cudnn"].startswith("unsupported: SDPA takes no packed")
    assert notes["window 4096 N=32k"]["sdpa-cudnn"].startswith("unsupported: SDPA has no sliding window")
    for case in doc["cases"]:  # fa3 needs an sm_90 GPU: said in its own line, before any launch
        assert notes[case]["fa3"].startswith("unsupported: backend 'fa3' is not available here"), notes[case]["fa3"]
    flex = notes["decode Nq=16 Nk=8k"]["flex"]
    assert flex["max_abs_diff_vs_flashviz"] < 0.02, flex  # bf16 outputs of two kernels, |O| < 1
    assert any(r["provider"] == "flex" and r["case"] == "decode Nq=16 Nk=8k" for r in doc["rows"])
    assert (tmp_path / path.name.replace(".json", ".md")).read_text().count("| decode Nq=16 Nk=8k |") == 1


def test_graph_rows_get_a_table_of_their_own():
    """Forward-only cases timed from a CUDA graph ("fwd-graph" rows) are a second table, with its own ratio of
    flashviz's best kernel against the best other provider; the first table keeps the eager times."""

    def row(case, provider, mode, ms):
        return {"case": case, "provider": provider, "mode": mode, "ms": ms, "tflops": 10.0 / ms}

    doc = {"gpu": "G", "date": "D", "versions": {"torch": "x"}, "cases": {"decode a": {}, "gqa b": {}},
           "rows": [row("decode a", "flashviz", "fwd", 0.4), row("decode a", "sdpa-cudnn", "fwd", 0.2),
                    row("decode a", "flashviz", "fwd-graph", 0.03), row("decode a", "sdpa-cudnn", "fwd-graph", 0.036),
                    row("decode a", "fa3", "fwd-graph", 0.05),
                    row("gqa b", "flashviz", "fwd", 1.0), row("gqa b", "fa4", "fwd", 0.8)]}  # fmt: skip
    md = af.markdown(doc, {})
    first, _, second = md.partition("captured in a CUDA graph")
    assert "| decode a | 25 | – | 50 | – | – | 0.50 (fwd) |" in first
    assert "| gqa b | 10 | – | – | – | 12 | 0.80 (fwd) |" in first
    assert "| decode a | 333 | 200 | 278 | – | – | 1.20 (fwd) |" in second
    assert "gqa b" not in second
    doc["rows"] = [r for r in doc["rows"] if r["mode"] != "fwd-graph"]
    assert "CUDA graph" not in af.markdown(doc, {})
