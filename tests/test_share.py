"""Issue 13 without a browser: trace files' problems through the CLI (`flashviz view`, `flashviz export --trace`),
`flashviz export`'s flags, `flashviz.trace` against `flashviz trace` (NumPy and torch inputs), its bad arguments, and
the widget's answer to a launch asked from the page (the model's message, as the notebook delivers it)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

import flashviz
from flashviz.model.config import ConfigError
from flashviz.tracing.codec import to_plain
from flashviz.tracing.trace import SCHEMA


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True)


def cli_trace(*flags: str) -> dict:
    done = run_cli("trace", *flags)
    assert done.returncode == 0, done.stderr
    return to_plain(json.loads(done.stdout))  # compact arrays as the nested lists --plain writes


def one_line_error(done: subprocess.CompletedProcess, flag: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    # flashviz's own checks: "flashviz: error: FLAG: ..."; click's: "flashviz export: error: Invalid value for 'FLAG'"
    assert lines[0].startswith("flashviz") and (f"error: {flag}: " in lines[0] or f"'{flag}'" in lines[0]), lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("good") / "t.json"
    done = run_cli("trace", "-o", str(path))
    assert done.returncode == 0, done.stderr
    return path.read_bytes()


def bad_file(how: str, good: bytes, path) -> None:
    if how == "version":
        doc = json.loads(good)
        doc["schema"] = "flashviz.trace/1"
        path.write_text(json.dumps(doc))
    elif how == "truncated":
        path.write_bytes(good[: len(good) * 2 // 3])
    elif how == "array":
        path.write_text("[1, 2, 3]")
    elif how == "no-schema":
        path.write_text(json.dumps({"config": {}, "steps": []}))
    elif how == "profile":
        path.write_text(json.dumps({"schema": "flashviz.profile/1", "kernels": []}))
    elif how == "not-json":
        path.write_text("Q,K,V\n1,2,3\n")
    elif how == "empty":
        path.write_text("")
    elif how == "parts-missing":
        doc = json.loads(good)
        del doc["steps"], doc["tensors"]
        path.write_text(json.dumps(doc))
    elif how == "huge":
        with path.open("wb") as f:  # sparse: no disk is written
            f.truncate(600 * 2**20)
    else:
        raise AssertionError(how)


BAD = {
    "version": "is a trace of schema 'flashviz.trace/1'; this flashviz reads flashviz.trace/4 only",
    "truncated": "is truncated (the JSON ends early)",
    "array": "is not a flashviz trace (a JSON list)",
    "no-schema": "is not a flashviz trace (no schema key)",
    "profile": "is not a flashviz trace (schema 'flashviz.profile/1')",
    "not-json": "is not JSON",
    "empty": "is empty",
    "parts-missing": "lacks steps, tensors: not a whole flashviz.trace/4 trace",
    "huge": "is 629,145,600 bytes, more than a trace file holds (536,870,912 at most)",
}


@pytest.mark.parametrize("how", list(BAD))
@pytest.mark.parametrize(("command", "flag"), [("view", "TRACE.json"), ("export", "--trace")])
def test_a_bad_trace_file_is_one_line_naming_the_expected_version(tmp_path, good, how, command, flag):
    path = tmp_path / f"{how}.json"
    bad_file(how, good, path)
    args = ["view", str(path), "--no-browser"] if command == "view" else ["export", str(tmp_path / "o.html")]
    if command == "export":
        args += ["--trace", str(path)]
    line = one_line_error(run_cli(*args), flag)
    assert BAD[how] in line
    assert SCHEMA in line  # which version is expected
    assert not (tmp_path / "o.html").exists()


def test_a_missing_trace_file_and_a_folder(tmp_path):
    assert "cannot read" in one_line_error(run_cli("view", str(tmp_path / "nope.json")), "TRACE.json")
    line = one_line_error(run_cli("export", str(tmp_path / "o.html"), "--trace", str(tmp_path)), "--trace")
    assert "is not a regular file" in line


def test_export_from_a_trace_file_holds_that_trace(tmp_path, good):
    path = tmp_path / "t.json"
    path.write_bytes(good)
    out = tmp_path / "t.html"
    done = run_cli("export", str(out), "--trace", str(path))
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    # the file's trace, made whole as every reader makes it (its drawn inputs drawn again, its arrays in base64)
    from flashviz.share.trace_files import check_trace_bytes

    held = [
        json.loads(m)
        for m in re.findall(r'<script type="application/json" id="flashviz-trace[^"]*">(.*?)</script>', html)
    ]
    assert held == [check_trace_bytes(good, "t.json", "--trace")]
    assert '"drawn"' in good.decode() and '"drawn"' not in html and '"base85"' not in html
    assert "Content-Security-Policy" in html and "connect-src 'none'" in html
    assert "<script src=" not in html and 'rel="stylesheet"' not in html  # nothing loaded from elsewhere


@pytest.mark.parametrize(
    ("args", "flag", "says"),
    [
        (["--algo", "fa2,fa9"], "--algo", "must be one or more of"),
        (["--algo", ","], "--algo", "must be one or more of"),
        (["--frames", "3"], "--frames", "shapes the GIF only"),
        (["--width", "100", "--gif"], "--width", "320"),
        (["--gif", "--algo", "fa1,fa2"], "--gif", "animates one launch (got 2)"),
        (["--gif", "--browser", "no-such-chromium"], "--browser", "is not an executable Chromium"),
        (["--trace", "t.json", "--n", "16"], "--trace", "give either --trace files or --n"),
        (["--n", "0"], "--n", "1"),
    ],
)
def test_export_bad_flags_are_one_line(tmp_path, good, args, flag, says):
    (tmp_path / "t.json").write_bytes(good)
    done = subprocess.run(
        [sys.executable, "-m", "flashviz", "export", str(tmp_path / "o.html"), *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert says in one_line_error(done, flag)


def test_export_prints_its_size_and_parts(tmp_path):
    out = tmp_path / "o.html"
    done = run_cli("export", str(out), "--algo", "fa1,fa2")
    assert done.returncode == 0, done.stderr
    assert "2 traces" in done.stderr and "the comparison" in done.stderr
    assert out.stat().st_size > 0
    plain = tmp_path / "p.html"
    assert run_cli("export", str(plain), "--no-compare").returncode == 0
    assert plain.stat().st_size < out.stat().st_size


# ---- flashviz.trace: the CLI's trace ----


@pytest.mark.parametrize(
    ("kwargs", "flags"),
    [
        ({}, []),
        (
            {"algo": "fa1", "n": 10, "d": 8, "br": 4, "bc": 8, "seed": 7, "causal": True},
            ["--algo", "fa1", "--n", "10", "--d", "8", "--br", "4", "--bc", "8", "--seed", "7", "--causal"],
        ),
        ({"algo": "standard", "n": 9, "d": 4, "scale": 0.3}, ["--algo", "standard", "--n", "9", "--scale", "0.3"]),
        ({"n": 64, "d": 4, "block": 3}, ["--n", "64", "--block", "3"]),
    ],
)
def test_the_api_trace_is_the_cli_trace(kwargs, flags):
    assert json.loads(flashviz.trace(**kwargs).to_json()) == cli_trace(*flags)


def fresh(n: int, d: int, names=("Q", "K", "V")) -> dict[str, np.ndarray]:
    rng = np.random.default_rng()
    return {k: rng.standard_normal((n, d)).astype(np.float32) for k in names}


@pytest.mark.parametrize(("algo", "names"), [("fa2", ("Q", "K", "V")), ("fa2-backward", ("Q", "K", "V", "dO"))])
def test_the_api_takes_numpy_inputs_as_the_cli_takes_an_npz(tmp_path, algo, names):
    arrays = fresh(11, 8, names)
    np.savez(tmp_path / "qkv.npz", **arrays)
    cli = cli_trace("--algo", algo, "--inputs", str(tmp_path / "qkv.npz"), "--br", "4", "--bc", "4")
    api = json.loads(flashviz.trace(algo=algo, inputs=arrays, br=4, bc=4).to_json())
    assert api == cli
    assert api["config"]["n"] == 11 and api["config"]["d"] == 8
    np.testing.assert_array_equal(np.array(api["inputs"]["Q"], dtype=np.float32), arrays["Q"])


def test_the_api_takes_torch_tensors():
    torch = pytest.importorskip("torch")
    arrays = fresh(13, 4)
    tensors = {k: torch.from_numpy(v.copy()) for k, v in arrays.items()}
    tensors["V"] = tensors["V"].double()  # widened and narrowed back: the same float32 values
    got = flashviz.trace(inputs=tensors, br=4, bc=8)
    want = flashviz.trace(inputs=arrays, br=4, bc=8)
    assert json.loads(got.to_json()) == json.loads(want.to_json())


@pytest.mark.parametrize(
    ("kwargs", "field", "says"),
    [
        ({"inputs": [1, 2]}, "inputs", "must be a dict of arrays Q, K, V"),
        ({"inputs": "qkv"}, "inputs", "must be a dict"),
        ({"inputs": {"Q": 1}}, "inputs", "lacks array K, V"),
        ({"inputs": {**fresh(8, 4), "X": np.zeros((8, 4))}}, "inputs", "it takes Q, K, V"),
        ({"inputs": {**fresh(8, 4), "K": [[1.0] * 4] * 8}}, "K", "must be a NumPy array or a torch tensor"),
        ({"inputs": {**fresh(8, 4), "K": np.ones((8, 4), dtype=np.int32)}}, "K", "floating-point"),
        ({"inputs": {**fresh(8, 4), "V": np.ones((8, 5), dtype=np.float32)}}, "V", "does not match"),
        ({"inputs": {k: np.ones((2, 8, 4), dtype=np.float32) for k in "QKV"}}, "Q", "must be 2-D"),
        ({"inputs": {**fresh(8, 4), "Q": np.full((8, 4), np.nan, dtype=np.float32)}}, "Q", "NaN"),
        ({"inputs": {**fresh(8, 4), "Q": np.full((8, 4), 1e39)}}, "Q", "overflows float32"),
        ({"inputs": fresh(8, 4), "n": 16}, "n", "must match the inputs' N=8"),
        ({"algo": "fa4"}, "algo", "must be one of"),
        ({"n": "8"}, "n", ""),
        ({"n": 0}, "n", ""),
        ({"br": 3.5}, "br", ""),
        ({"block": "x"}, "block", "must be an integer"),
        ({"scale": "big"}, "scale", ""),
    ],
)
def test_bad_api_arguments_raise_one_clear_error(kwargs, field, says):
    with pytest.raises(ConfigError) as info:
        flashviz.trace(**kwargs)
    assert info.value.field == field
    assert says in info.value.message
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


# ---- the widget, answering the page (no notebook: the model's message handler called as the kernel would) ----


def test_the_widget_answers_a_launch_from_python():
    pytest.importorskip("anywidget", reason="pip install -e '.[test]' (the notebook extra)")
    w = flashviz.show(n=8, d=4)
    assert w.config["n"] == 8 and w.config["algo"] == "fa2"
    sent: list[tuple[dict, list]] = []
    w.send = lambda content, buffers=None: sent.append((content, buffers or []))
    config = {**w.config, "n": 12, "causal": True}
    w._on_message(w, {"type": "ask", "view": "v", "id": 1, "kind": "trace", "config": config, "block": None}, [])
    reply, buffers = sent[-1]
    assert reply == {"type": "answer", "view": "v", "id": 1, "ok": True}
    assert to_plain(json.loads(bytes(buffers[0]))) == cli_trace("--n", "12", "--causal")
    assert w.trace.config["n"] == 12
    # a launch Python refuses: one line naming the field, nothing sent but the message
    bad = {**w.config, "n": 0}
    w._on_message(w, {"type": "ask", "view": "v", "id": 2, "kind": "trace", "config": bad, "block": None}, [])
    reply, buffers = sent[-1]
    assert reply["ok"] is False and reply["field"] == "n" and reply["detail"].startswith("n: ")
    assert not buffers


def test_flashviz_trace_is_the_function_before_and_after_the_trace_types_are_imported():
    """`flashviz.trace` is the API's function only: the Trace types live in `flashviz.tracing.trace`, so no module of
    that name shadows it (the package no longer rewrites its own class). In a fresh interpreter the call works first,
    then with the types' module loaded."""
    code = (
        "import types\n"
        "import flashviz\n"
        "a = flashviz.trace(n=8)\n"
        "import flashviz.tracing.trace as m\n"
        "from flashviz.tracing.trace import Trace\n"
        "b = flashviz.trace(n=12, d=8)\n"
        "from flashviz import trace\n"
        "c = trace(n=9)\n"
        "assert isinstance(a, Trace) and isinstance(b, Trace) and isinstance(c, Trace)\n"
        "assert isinstance(flashviz.trace, types.FunctionType) and type(flashviz) is types.ModuleType\n"
        "print(m.SCHEMA, a.config['n'], b.config['d'], c.config['n'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [SCHEMA, "8", "8", "9"]


def inlined_traces(html: str) -> list[dict]:
    import re

    found = re.findall(r'<script type="application/json" id="flashviz-trace-\d+">(.*?)</script>', html, re.S)
    return [to_plain(json.loads(text)) for text in found]


def test_export_holds_the_cli_traces_with_inputs_from_a_file(tmp_path):
    arrays = fresh(10, 8, ("Q", "K", "V", "dO"))
    np.savez(tmp_path / "qkv.npz", **arrays)
    out = tmp_path / "o.html"
    flags = ["--inputs", str(tmp_path / "qkv.npz"), "--br", "4", "--bc", "8"]
    done = run_cli("export", str(out), "--algo", "fa2,fa2-backward", *flags)
    assert done.returncode == 0, done.stderr
    held = inlined_traces(out.read_text())
    assert held == [cli_trace("--algo", "fa2", *flags), cli_trace("--algo", "fa2-backward", *flags)]
    np.testing.assert_array_equal(np.array(held[1]["inputs"]["dO"], dtype=np.float32), arrays["dO"])
