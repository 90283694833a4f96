"""Issue 17 (round two), the files flashviz reads: one guard for every file flag (`ladder --from`, `serve --profile`,
trace files), a dangling symlink named as one, and the trace file's schema (config values, structure) checked before
any view draws it, through the real CLI."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from flashviz.algos import ALGOS

HANG_S = 120  # a FIFO that is waited on: a hang is a failure too, not only a wrong exit code


def limit_memory() -> None:
    """So that code reading /dev/zero to the end fails fast instead of filling the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flashviz", *args],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        cwd=cwd,
        preexec_fn=limit_memory,
    )


def one_line(done: subprocess.CompletedProcess, start: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(start) and len(lines[0]) < 400, lines[0]
    return lines[0]


# ---- item 4: ladder --from reads a regular file of bounded size --------------------------------------------------


def not_regular(tmp: Path) -> dict[str, tuple[str, str]]:
    os.mkfifo(tmp / "fifo.json")
    big = tmp / "big.json"
    with big.open("wb") as f:
        f.truncate(64 * 2**20)  # sparse: no disk used
    return {
        "dev-zero": ("/dev/zero", "is not a regular file (a character device)"),
        "fifo": (str(tmp / "fifo.json"), "is not a regular file (a FIFO)"),
        "folder": (str(tmp), "is not a regular file (a directory)"),
        "huge": (str(big), "is 67,108,864 bytes, more than a ladder file holds"),
    }


@pytest.mark.parametrize("case", ["dev-zero", "fifo", "folder", "huge"])
def test_ladder_from_refuses_what_is_not_a_regular_file(tmp_path, case):
    """Item 4: `--from /dev/zero` read until memory ran out (killed at 24 GB); `--from` a FIFO hung."""
    path, says = not_regular(tmp_path)[case]
    line = one_line(run_cli("ladder", "--from", path), "flashviz: error: --from: ")
    assert says in line and "ladder JSON" in line


# ---- item 7: serve --profile "" ----------------------------------------------------------------------------------


@pytest.mark.parametrize("given", ["", ".", "/dev/zero"])
def test_serve_profile_that_names_no_file(tmp_path, given):
    """Item 7: `--profile ""` was an IsADirectoryError traceback (the empty path is the current folder)."""
    line = one_line(run_cli("serve", "--no-browser", "--profile", given, cwd=tmp_path), "flashviz")
    assert "--profile" in line
    assert ("must name a file (got '')" if given == "" else "is not a regular file") in line


# ---- item 18: a dangling symlink is "no such file" ---------------------------------------------------------------


@pytest.mark.parametrize("command", [("trace",), ("export", "out.html")])
def test_inputs_on_a_dangling_symlink_says_no_such_file(tmp_path, command):
    """Item 18: `--inputs` on a symlink to nothing said "not a readable .npz (BadZipFile)"."""
    (tmp_path / "qkv.npz").symlink_to("gone.npz")
    done = run_cli(*command, "--inputs", "qkv.npz", cwd=tmp_path)
    line = one_line(done, "flashviz: error: --inputs: ")
    assert "No such file or directory" in line and "a symlink to" in line and "gone.npz" in line
    assert "BadZipFile" not in line


def test_a_trace_file_on_a_dangling_symlink_says_no_such_file(tmp_path):
    (tmp_path / "t.json").symlink_to("gone.json")
    line = one_line(run_cli("view", "--no-browser", "t.json", cwd=tmp_path), "flashviz: error: TRACE.json: ")
    assert "No such file or directory (a symlink to" in line


def test_readme_says_the_test_command_pulls_cuda_torch_unless_the_cpu_build_comes_first():
    """Item 18: the README's test command pulled the CUDA build of torch (a 6 GB venv) where .ci/run installs the
    CPU build first; the README says so, beside the command .ci/run checks it holds."""
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    command = 'pip install -e ".[test]" && pytest'
    assert command in readme.splitlines()
    after = readme[readme.index(command) :][:800]
    assert "CUDA" in after and "pip install torch==2.13.0" in after and "CPU build" in after
    assert 'pip install "torch==2.13.0"' in (root / ".ci" / "run").read_text()


# ---- items 5 and 6: a trace file's config values and structure, checked before any view -------------------------


@pytest.fixture(scope="module")
def good_trace(tmp_path_factory) -> dict:
    import json

    out = tmp_path_factory.mktemp("good") / "t.json"
    done = run_cli("trace", "--n", "12", "--block", "1", "-o", str(out))
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


# (what is changed, the value, what the one line names): item 5's config values
BAD_CONFIG = [
    ("d", 0, "config.d must be an integer in 1..256 (got 0)"),
    ("d", -1, "config.d must be an integer in 1..256 (got -1)"),
    ("d", "x", "config.d must be an integer in 1..256 (got 'x')"),
    ("scale", "abc", "config.scale must be a finite number with 1e-06 <= |scale| <= 1e+06 (got 'abc')"),
    ("br", 0, "config.br must be an integer in 1..256 (got 0)"),
    ("n", 8.5, "config.n must be an integer in 1..16384 (got 8.5)"),
    ("n", 1e30, "config.n must be an integer in 1..16384 (got 1e+30)"),
    ("n", [1, 2], "config.n must be an integer in 1..16384 (got [1, 2])"),
    ("recorded_blocks", 5, "config.recorded_blocks must be a list of at least one block number"),
    ("recorded_blocks", None, "config.recorded_blocks must be a list of at least one block number"),
    ("algo", "fa4", f"config.algo must be one of {', '.join(ALGOS)} (got 'fa4')"),
]
# item 6: the parts every view reads, null or a string; steps that are not steps
BAD_PARTS = [
    *[(part, value) for part in ("tensors", "buffers", "picture", "ops", "picker") for value in (None, "x")],
    *[(part, value) for part in ("inputs", "outputs", "kernels") for value in (None, "x")],
    ("steps", [None, 1, "x"]),
]


def crafted(tmp: Path, doc: dict, name: str = "t.json") -> Path:
    import json

    path = tmp / name
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("key", "value", "says"), BAD_CONFIG, ids=[f"{k}={v!r}" for k, v, _ in BAD_CONFIG])
def test_view_refuses_a_bad_config_value_in_one_line(tmp_path, good_trace, key, value, says):
    """Item 5: d=0 was a ZeroDivisionError, d=-1 a math domain error, d="x" a TypeError, ... from `flashviz view`."""
    doc = {**good_trace, "config": {**good_trace["config"], key: value}}
    crafted(tmp_path, doc)
    line = one_line(run_cli("view", "--no-browser", "t.json", cwd=tmp_path), "flashviz: error: TRACE.json: ")
    assert "is not a trace this flashviz can show: " + says in line, line


@pytest.mark.parametrize(("part", "value"), BAD_PARTS, ids=[f"{p}={v!r}" for p, v in BAD_PARTS])
def test_export_refuses_a_broken_part_in_one_line(tmp_path, good_trace, part, value):
    """Item 6: these passed the check and broke the page ("Cannot read properties of null (reading 'Qi')")."""
    crafted(tmp_path, {**good_trace, part: value})
    line = one_line(run_cli("export", "out.html", "--trace", "t.json", cwd=tmp_path), "flashviz: error: --trace: ")
    target = f"{part}[0]" if part == "steps" else part
    assert f"is not a trace this flashviz can show: {target} must be " in line, line
    assert not (tmp_path / "out.html").exists()


def test_show_refuses_the_same_files(tmp_path, good_trace):
    """Item 5 through flashviz.show(path): a ConfigError naming the field, not a traceback from deep inside."""
    import flashviz
    from flashviz.model.config import ConfigError

    for key, value, says in BAD_CONFIG:
        path = crafted(tmp_path, {**good_trace, "config": {**good_trace["config"], key: value}})
        with pytest.raises(ConfigError) as caught:
            flashviz.show(str(path))
        assert caught.value.field == "trace file" and says in caught.value.message, (key, value)
    for part, value in BAD_PARTS:
        with pytest.raises(ConfigError, match=f"can show: {part}"):
            flashviz.show(crafted(tmp_path, {**good_trace, part: value}))


def test_every_algorithms_trace_passes_the_schema(tmp_path):
    """The schema refuses no trace flashviz writes: each algorithm, causal, a block, a negative scale, inputs."""
    import json

    import numpy as np

    import flashviz
    from flashviz.tracing.file_schema import problem

    rng = np.random.default_rng()
    qkv = {k: rng.standard_normal((40, 32)).astype(np.float32) for k in "QKV"}
    launches = [
        {"algo": "standard", "n": 9, "causal": True},
        {"algo": "fa1", "n": 13, "br": 4, "bc": 8, "scale": -0.3},
        {"algo": "fa2", "n": 100, "br": 8, "bc": 8, "block": 3},
        {"algo": "fa2-backward", "n": 33, "causal": True, "block": 2},
        {"algo": "fa2-triton", "n": 17, "d": 32, "br": 16, "bc": 16},
        {"algo": "fa2", "inputs": qkv, "br": 32, "bc": 32, "block": 1},
    ]
    for launch in launches:
        assert problem(json.loads(flashviz.trace(**launch).to_json())) is None, launch
