"""The CLI contract: trace and count documents, and one-line errors with exit code 2 for bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from flashviz.cli import main


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True, timeout=120)


def test_trace_default_is_the_seed_example(capsysbinary):
    assert main(["trace"]) == 0
    doc = json.loads(capsysbinary.readouterr().out)
    c = doc["config"]
    assert (c["algo"], c["n"], c["d"], c["br"], c["bc"], c["seed"]) == ("fa2", 8, 4, 4, 4, 0)
    assert c["scale"] == pytest.approx(0.5)
    assert np.array(doc["inputs"]["Q"]).shape == (8, 4)
    assert np.array(doc["outputs"]["O"]).shape == (8, 4) and len(doc["outputs"]["L"]) == 8
    assert doc["hbm"] == {
        "Q": {"read": 32, "written": 0},
        "K": {"read": 64, "written": 0},
        "V": {"read": 64, "written": 0},
        "O": {"read": 0, "written": 32},
        "L": {"read": 0, "written": 8},
    }
    assert [s["op"] for s in doc["steps"] if s["block"] == 0] == [
        "load_q",
        "load_kv",
        "scores",
        "online_softmax",
        "load_kv",
        "scores",
        "online_softmax",
        "write_back",
    ]
    assert {s["block"] for s in doc["steps"]} == {0, 1}
    for s in doc["steps"]:
        assert {"op", "block", "j", "code", "text"} <= s.keys() and s["text"]
    assert doc["reference"]["ok"] is True


def test_minus_infinity_is_null_in_json(capsysbinary):
    assert main(["trace", "--n", "6", "--d", "2", "--br", "4", "--bc", "4"]) == 0
    doc = json.loads(capsysbinary.readouterr().out)
    load_q = doc["steps"][0]
    assert load_q["sram"]["mi"] == [None] * 4  # mi starts at -inf
    scores_last = next(s for s in doc["steps"] if s["op"] == "scores" and s["j"] == 1 and s["block"] == 0)
    assert [row[2:] for row in scores_last["sram"]["Sij"]] == [[None, None]] * 4  # columns 6, 7 are past N


def test_trace_reads_inputs_from_npz(tmp_path, rng, capsysbinary):
    x = {k: rng.standard_normal((12, 3)).astype(np.float32) for k in "QKV"}
    np.savez(tmp_path / "in.npz", **x)
    assert (
        main(["trace", "--inputs", str(tmp_path / "in.npz"), "--br", "5", "--bc", "4", "-o", str(tmp_path / "t.json")])
        == 0
    )
    doc = json.loads((tmp_path / "t.json").read_text())
    assert (doc["config"]["n"], doc["config"]["d"], doc["config"]["inputs"]) == (12, 3, "file")
    np.testing.assert_array_equal(np.array(doc["inputs"]["K"], dtype=np.float32), x["K"])


def test_scale_flag(capsysbinary):
    assert main(["trace", "--scale", "0.125"]) == 0
    assert json.loads(capsysbinary.readouterr().out)["config"]["scale"] == 0.125


def test_count_json_matches_model(capsys):
    assert main(["count", "--n", "1048576", "--d", "128", "--br", "64", "--bc", "64", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tensors"]["K"]["read"] == 16384 * 1048576 * 128
    assert doc["tensors"]["K"]["read_bytes"] == 4 * doc["tensors"]["K"]["read"]
    assert doc["total"]["written"] == 1048576 * 128 + 1048576


def test_count_table(capsys):
    assert main(["count", "--n", "4096", "--d", "64", "--br", "64", "--bc", "64"]) == 0
    out = capsys.readouterr().out
    assert "16,777,216" in out and "total" in out  # K: Tr=64 passes over 4096x64


def npz(tmp_path, name="bad.npz", **arrays):
    path = tmp_path / name
    np.savez(path, **arrays)
    return str(path)


BAD = [
    (["trace", "--n", "0"], "--n"),
    (["trace", "--n", "-3"], "--n"),
    (["trace", "--d", "2.5"], "--d"),
    (["trace", "--br", "abc"], "--br"),
    (["trace", "--n", "100000"], "--n"),
    (["trace", "--d", "257"], "--d"),
    (["trace", "--bc", "0"], "--bc"),
    (["trace", "--n", "16384", "--br", "1", "--bc", "1"], "--br"),  # 268M (block, tile) pairs: hours of engine
    (["trace", "--seed", "-1"], "--seed"),
    (["trace", "--scale", "nan"], "--scale"),
    (["trace", "--scale", "inf"], "--scale"),
    (["trace", "--scale", "0"], "--scale"),
    (["trace", "--algo", "fa9"], "--algo"),
    (["trace", "--block", "7"], "--block"),
    (["trace", "--inputs", "/nonexistent/in.npz"], "--inputs"),
    (["count", "--n", "0"], "--n"),
    (["count", "--d", "x"], "--d"),
]


@pytest.mark.parametrize("args,flag", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_line_and_exit_2(args, flag, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag in err and "Traceback" not in err


def test_bad_npz_files(tmp_path, capsys):
    f32 = np.ones((4, 2), np.float32)
    cases = {
        "lacks K": (npz(tmp_path, "a.npz", Q=f32, V=f32), "K"),
        "mismatched shapes": (npz(tmp_path, "b.npz", Q=f32, K=np.ones((5, 2), np.float32), V=f32), "K"),
        "non-float": (npz(tmp_path, "c.npz", Q=f32, K=f32.astype(np.int32), V=f32), "K"),
        "NaN": (npz(tmp_path, "d.npz", Q=f32, K=f32, V=np.full((4, 2), np.nan, np.float32)), "V"),
        "inf": (npz(tmp_path, "e.npz", Q=np.full((4, 2), np.inf, np.float32), K=f32, V=f32), "Q"),
        "1-D": (npz(tmp_path, "f.npz", Q=np.ones(4, np.float32), K=f32, V=f32), "Q"),
        "float64 overflow": (npz(tmp_path, "g.npz", Q=f32.astype(np.float64) * 1e300, K=f32, V=f32), "Q"),
    }
    (tmp_path / "h.npz").write_text("not a zip")
    cases["not an npz"] = (str(tmp_path / "h.npz"), "--inputs")
    for label, (path, name) in cases.items():
        assert main(["trace", "--inputs", path]) == 2, label
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and name in err and "Traceback" not in err, (label, err)


def test_errors_through_the_real_console_script():
    out = run_cli("trace", "--n", "0")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        "flashviz trace: error: Invalid value for '--n': must be an integer in 1..16384 (got 0)"
    ]


def test_steps_table_prints_the_seed_example(capsys):
    assert main(["steps"]) == 0
    out = capsys.readouterr().out
    assert "Sij = Qi @ Kj.T" in out and "exact within" in out


@pytest.mark.parametrize("algo", ["standard", "fa1", "fa2", "fa2-backward"])
@pytest.mark.parametrize("causal", [False, True])
def test_count_at_the_largest_sizes_answers_at_once(algo, causal, capsys):
    """N = 2^31 - 1 with one-row tiles: closed forms (no loop over tiles), counts past 2^64 printed exactly."""
    import time

    from flashviz import traffic

    args = ["count", "--algo", algo, "--n", "2147483647", "--d", "4096", "--br", "1", "--bc", "1", "--json"]
    started = time.perf_counter()
    assert main(args + (["--causal"] if causal else [])) == 0
    assert time.perf_counter() - started < 5
    doc = json.loads(capsys.readouterr().out)
    model = traffic.count(algo, 2147483647, 4096, 1, 1, causal)
    assert doc["total"]["read"] == sum(t["read"] for t in model.values())
    assert doc["total"]["read_bytes"] == 4 * doc["total"]["read"]
