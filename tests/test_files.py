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
