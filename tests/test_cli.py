"""The CLI contract: trace and count documents, and one-line errors with exit code 2 for bad input."""

from __future__ import annotations

import io
import json
import os
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from flashviz.cli.main import main
from flashviz.tracing.codec import to_plain
from helpers import bounded_work


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True)


def test_trace_default_is_the_seed_example(capsysbinary):
    assert main(["trace"]) == 0
    doc = to_plain(json.loads(capsysbinary.readouterr().out))
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
    assert main(["trace", "--plain", "--n", "6", "--d", "2", "--br", "4", "--bc", "4"]) == 0
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
    doc = to_plain(json.loads((tmp_path / "t.json").read_text()))
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


def test_steps_are_numbered_as_the_page_numbers_them(tmp_path):
    """The page says "step 1 / 16"; the table numbered the same steps 0..15."""
    run = subprocess.run([sys.executable, "-m", "flashviz", "steps"], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    assert run.returncode == 0, run.stderr
    numbers = [int(row.split("│")[1]) for row in run.stdout.splitlines() if row.startswith("│ ") and row[2].isdigit()]
    assert numbers == list(range(1, 17)), numbers
    assert "┃ step ┃" in run.stdout


def test_trace_o_says_its_size_as_every_other_writer(tmp_path):
    """`trace -o` said "0.09 MB" where `trace --kernel -o` and `export` say "116.7 kB": bytes in one format."""
    from flashviz.model.units import human_bytes

    out = tmp_path / "t.json"
    run = run_cli("trace", "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert run.stderr.strip() == f"wrote {out} ({human_bytes(out.stat().st_size)}, 16 steps)"


@pytest.mark.parametrize("algo", ["standard", "fa1", "fa2", "fa2-backward"])
@pytest.mark.parametrize("causal", [False, True])
def test_count_at_the_largest_sizes_answers_at_once(algo, causal, capsys):
    """N = 2^31 - 1 with one-row tiles: closed forms (no loop over tiles, judged by the lines of Python run, not by
    a clock: bench/cli_bench.py times it), counts past 2^64 printed exactly."""
    from flashviz.algos import get

    args = ["count", "--algo", algo, "--n", "2147483647", "--d", "4096", "--br", "1", "--bc", "1", "--json"]
    code, _ = bounded_work(main, args + (["--causal"] if causal else []))
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    model = get(algo).traffic.count(2147483647, 4096, 1, 1, causal)
    assert doc["total"]["read"] == sum(t["read"] for t in model.values())
    assert doc["total"]["read_bytes"] == 4 * doc["total"]["read"]


# ---- stdout that cannot take the output (issue 8, item 11) ----

WRITERS = [
    ["trace"],
    ["count"],
    ["count", "--json"],
    ["steps"],
    ["compare"],
    ["compare", "--json"],
    ["--help"],
    ["--version"],
]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
@pytest.mark.parametrize("args", WRITERS, ids=" ".join)
def test_a_full_stdout_is_one_line_and_exit_1(args):
    with open("/dev/full", "w") as full:
        out = subprocess.run([sys.executable, "-m", "flashviz", *args], stdout=full, stderr=subprocess.PIPE, text=True)
    line = "flashviz: error: stdout: cannot write the output (No space left on device)"
    if args == ["trace"]:
        line += "; write the trace to a file with -o FILE"
    assert out.stderr.splitlines() == [line], out.stderr
    assert out.returncode == 1


@pytest.mark.parametrize("args", WRITERS, ids=" ".join)
def test_a_closed_stdout_is_one_line_and_exit_1(args):
    out = subprocess.run(
        [sys.executable, "-m", "flashviz", *args], stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.close(1)
    )
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("flashviz: error: stdout: stdout is closed"), out.stderr
    assert out.returncode == 1


def test_trace_to_a_file_needs_no_stdout(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "flashviz", "trace", "-o", str(tmp_path / "t.json")],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.close(1),
    )
    assert out.returncode == 0, out.stderr
    assert json.loads((tmp_path / "t.json").read_text())["config"]["n"] == 8


# ---- bad values are echoed cut to ~40 characters (issue 8, item 13) ----

LONG = "9" * 5000 + "x" * 5000
CUT = [
    (["trace", "--algo", LONG], "--algo"),
    (["trace", "--n", LONG], "--n"),
    (["trace", "--n", "9" * 10000], "--n"),
    (["trace", "--scale", LONG], "--scale"),
    (["trace", "--block", LONG], "--block"),
    (["trace", "--inputs", "a" * 10000], "--inputs"),
    (["trace", "-o", "/nonexistent/" + "a" * 10000], "-o"),
    (["count", "--d", "a b " * 2500], "--d"),
    (["trace", "--" + "n" * 10000], "--nnnnnnnn"),
    (["trace", LONG], "trace"),
    (["gpu", "sanitize", "--tool", LONG], "--tool"),
    (["gpu", "run", "--scale", LONG], "--scale"),
]


@pytest.mark.parametrize("args,flag", CUT, ids=[f"{a[0]} {a[1][:12]}" for a, _ in CUT])
def test_a_long_bad_value_is_echoed_cut(args, flag):
    out = run_cli(*args)
    lines = out.stderr.splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr[:500]
    assert lines[0].startswith("flashviz") and "error:" in lines[0] and flag in lines[0], lines[0]
    assert len(lines[0]) <= 200 and "…" in lines[0], lines[0]


def test_control_characters_in_a_value_stay_on_one_line():
    out = run_cli("trace", "--algo", "fa2\nflashviz: all good\r\x1b[2J")
    lines = out.stderr.splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "--algo" in lines[0], out.stderr
    assert "\x1b" not in out.stderr


# ---- hostile --inputs files (issue 8, item 9) ----


def zip_of(path, members: dict[str, bytes]) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return str(path)


def npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, a, allow_pickle=True)
    return buf.getvalue()


def test_npz_members_that_are_not_float_arrays(tmp_path, rng):
    f32 = npy(rng.standard_normal((4, 2)).astype(np.float32))
    objects = np.empty((4, 2), dtype=object)
    objects[:] = 1.5
    cases = {
        "not .npy": (
            {"Q.npy": f32, "K.npy": b"just some text, no NUMPY magic", "V.npy": f32},
            "K: is not an .npy array",
        ),
        "no suffix": ({"Q.npy": f32, "K.npy": f32, "V": pickle.dumps([1.0, 2.0])}, "V: is not an .npy array"),
        "pickled": ({"Q.npy": f32, "K.npy": npy(objects), "V.npy": f32}, "K: holds Python objects (a pickle)"),
        "complex": ({"Q.npy": npy(np.ones((4, 2), np.complex64)), "K.npy": f32, "V.npy": f32}, "Q: must hold floating"),
        "truncated": ({"Q.npy": f32[:-8], "K.npy": f32, "V.npy": f32}, "Q: cannot be read"),
        "3-D": ({"Q.npy": npy(np.ones((2, 2, 2), np.float32)), "K.npy": f32, "V.npy": f32}, "Q: must be 2-D"),
    }
    for label, (members, message) in cases.items():
        out = run_cli("trace", "--inputs", zip_of(tmp_path / f"{label}.npz", members))
        lines = out.stderr.splitlines()
        assert out.returncode == 2 and len(lines) == 1, (label, out.stderr)
        assert lines[0].startswith(f"flashviz: error: {message}"), (label, lines[0])


def test_inputs_that_are_no_regular_file(tmp_path):
    fifo = tmp_path / "fifo.npz"
    os.mkfifo(fifo)
    cases = {
        str(fifo): "is not a regular file",  # opening it would wait for a writer forever
        "/dev/zero": "is not a regular file",
        str(tmp_path): "is not a regular file",
        str(tmp_path / ("a" * 300 + ".npz")): "File name too long",
        str(tmp_path / "missing.npz"): "No such file or directory",
    }
    for path, message in cases.items():
        out = run_cli("trace", "--inputs", path)
        lines = out.stderr.splitlines()
        assert out.returncode == 2 and len(lines) == 1, (path[:50], out.stderr)
        assert lines[0].startswith("flashviz: error: --inputs: ") and message in lines[0] and len(lines[0]) < 200


def test_a_small_npz_declaring_a_huge_array_is_refused_from_its_header(tmp_path):
    """A 0.5 MB .npz whose Q inflates to 512 MiB of zeros: refused from the header, without reading Q's data."""
    header = io.BytesIO()
    rows, d = 2**19, 256
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (rows, d)})
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open("Q.npy", "w", force_zip64=True) as f:
            f.write(header.getvalue())
            chunk = bytes(4 * d * 4096)
            for _ in range(rows // 4096):
                f.write(chunk)
        for k in "KV":
            zf.writestr(f"{k}.npy", npy(np.ones((4, d), np.float32)))
    assert path.stat().st_size < 2**20
    # The child's peak RSS from its own /proc/self/status (VmHWM belongs to the memory map that exec made; the
    # ru_maxrss of wait4 would carry the size of this pytest process over the fork), written as it exits.
    hwm = tmp_path / "hwm"
    record = (
        "import atexit, runpy, sys; hwm = sys.argv.pop(); sys.argv[0] = 'flashviz'; "
        "atexit.register(lambda: open(hwm, 'w').write(open('/proc/self/status').read().split('VmHWM:')[1])); "
        "runpy.run_module('flashviz', run_name='__main__', alter_sys=True)"
    )
    out = subprocess.run(
        [sys.executable, "-c", record, "trace", "--inputs", str(path), str(hwm)], capture_output=True, text=True
    )
    kb, unit = hwm.read_text().split()[:2]
    assert unit == "kB"
    peak_mib = int(kb) / 1024
    assert peak_mib < 200, f"peak RSS {peak_mib:.0f} MiB: the array was read before its shape was checked"
    assert out.returncode == 2 and out.stderr.splitlines() == ["flashviz: error: Q: N = 524288 is outside 1..16384"]
