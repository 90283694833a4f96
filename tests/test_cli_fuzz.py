"""Every CLI command's flags, fuzzed through the real entry point (`python -m flashviz ...` in a subprocess).

The flags are read from the click commands themselves, so a new flag is fuzzed without editing this file. Each
value mixes valid ones, range boundaries, garbage (unicode digits like '²' and '①', '+-5', control characters,
huge integers, 10,000-character strings) and odd files (a pickle, a member that is no .npy array, a FIFO,
/dev/zero, a directory, a name too long). Every invocation must end with exit code 0, 1 or 2, no traceback, and
on failure exactly one line `flashviz ...: error: ...` naming a --flag or a field. `serve` is only run with an
invalid --port (it would block); `gpu` commands, without a GPU, must fail with exit code 2.

bench/fuzz_cli.py runs the same generator for thousands of invocations and prints the counts.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import pickle
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import click
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flashviz.cli.main import cli
from flashviz.cli.options import Bounded, FilePath, Number
from flashviz.model.config import Config

HAVE_CUPY = importlib.util.find_spec("cupy") is not None
# the flag or field an error names: a --flag, -o, an array, the GPU, stdout, or a command's argument (OUT, TRACE.json)
ERROR_LINE = re.compile(
    r"^flashviz(?: [a-z-]+)*: error: .*?(?:--[a-z][a-z-]*|'-o'|\B-o\b|\b(?:Q|K|V|dO|GPU|stdout|OUT|TRACE\.json)\b)"
)
GARBAGE = [
    "²",
    "①",
    "٥",
    "+-5",
    "--5",
    "\x1f5",
    "5\x1c",
    "0x10",
    "1e3",
    "1_000",
    "",
    " ",
    "-",
    "nan",
    "inf",
    "-inf",
    "\t",
    "5\n",
    "\x1b[2J",
    "'",
    '"',
    "%s",
    "{}",
    "9" * 50,
    str(2**64),
    str(-(2**63)),
]
LONG = ["x" * 10_000, "9" * 10_000, "a b " * 2_500, "\n" * 50 + "x", "²" * 5_000]
garbage = st.one_of(
    st.sampled_from(GARBAGE),
    st.sampled_from(LONG),
    st.text(alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=30),
)


# ---- files ----


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, a, allow_pickle=True)
    return buf.getvalue()


def make_files(root: Path) -> dict[str, list[str]]:
    """Files to give --inputs (valid and hostile) and -o (writable and not), made once in `root`."""
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    x = {k: rng.standard_normal((12, 3)).astype(np.float32) for k in ("Q", "K", "V", "dO")}
    np.savez(root / "ok.npz", **x)
    np.savez(root / "ok_qkv.npz", Q=x["Q"], K=x["K"], V=x["V"])
    np.savez(root / "f64.npz", **{k: v.astype(np.float64) for k, v in x.items()})
    np.savez(root / "shapes.npz", Q=x["Q"], K=x["K"][:5], V=x["V"])
    np.savez(root / "nan.npz", Q=x["Q"], K=np.full((12, 3), np.nan, np.float32), V=x["V"])
    np.savez(root / "huge.npz", Q=np.full((12, 3), 1e30, np.float32), K=np.full((12, 3), 1e30, np.float32), V=x["V"])
    np.savez(root / "ints.npz", Q=x["Q"].astype(np.int32), K=x["K"], V=x["V"])
    np.savez(root / "wide.npz", **{k: np.ones((2, 300), np.float32) for k in "QKV"})
    objects = np.empty((12, 3), dtype=object)
    objects[:] = 1.0
    with zipfile.ZipFile(root / "pickled.npz", "w") as zf:
        zf.writestr("Q.npy", _npy(x["Q"]))
        zf.writestr("K.npy", _npy(objects))
        zf.writestr("V", pickle.dumps(x["V"]))
    with zipfile.ZipFile(root / "not_npy.npz", "w") as zf:
        for k in "QKV":
            zf.writestr(f"{k}.npy", b"not an array")
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (2**20, 2**10)})
    with zipfile.ZipFile(root / "lying.npz", "w") as zf:  # declares 4 GiB, holds 16 bytes
        zf.writestr("Q.npy", header.getvalue() + bytes(16))
        zf.writestr("K.npy", _npy(x["K"]))
        zf.writestr("V.npy", _npy(x["V"]))
    (root / "text.npz").write_text("not a zip")
    (root / "empty.npz").write_bytes(b"")
    os.mkfifo(root / "fifo.npz")
    (root / "dir").mkdir()
    inputs = [str(root / name) for name in sorted(os.listdir(root)) if name.endswith(".npz")]
    inputs += [str(root / "dir"), "/dev/zero", "/dev/null", str(root / "missing.npz"), str(root / ("n" * 300))]
    inputs += ["", "-", "/", "..", "ok.npz"]  # the last: relative to the working directory (also `root`)
    outputs = [str(root / "out.json"), str(root / "dir"), "/dev/null", "/dev/full", "/nonexistent/out.json"]
    outputs += [str(root / ("o" * 300)), str(root / "ok.npz" / "x"), "", "out2.json"]
    return {"inputs": inputs, "outputs": outputs}


# ---- what to run ----


def commands(group: click.Group = cli, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    out = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            out += commands(command, (*path, name))
        else:
            out.append(((*path, name), command))
    return out


def integers(t: Bounded) -> st.SearchStrategy[str]:
    edges = [t.lo, t.hi, t.lo - 1, t.hi + 1, 0, -1, 2**31, 2**63, 10**30]
    near = [t.lo, min(t.hi, t.lo + 64)]
    return st.one_of(
        st.integers(*near).map(str),
        st.integers(t.lo, t.hi).map(str),
        st.sampled_from(edges).map(str),
        st.sampled_from([f"+{t.lo}", f"0{t.lo}", f" {t.lo}", f"{t.lo} ", f"{t.lo}.0"]),
        garbage,
    )


def numbers() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(["0.125", "1", "-1", "1e-6", "1e6", "-1e6", "0", "1e-7", "1e7", "nan", "inf", "-inf", "1e400"]),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        garbage,
    )


def value(option: click.Option, files: dict[str, list[str]]) -> st.SearchStrategy[str]:
    t = option.type
    if isinstance(t, Bounded):
        return integers(t)
    if isinstance(t, Number):
        return numbers()
    if isinstance(t, click.Choice):
        return st.one_of(st.sampled_from([str(c) for c in t.choices]), garbage)
    if isinstance(t, (FilePath, click.Path)):
        # -o only into the pool (a random name could land anywhere); --inputs and --profile also take garbage
        pool = files["outputs"] if option.name == "output" else files["inputs"]
        return st.sampled_from(pool) if option.name == "output" else st.one_of(st.sampled_from(pool), garbage)
    return st.one_of(garbage, st.sampled_from(["ncu", "compute-sanitizer", "127.0.0.1", "localhost"]))


def affordable(path: tuple[str, ...], args: list[str], files: dict[str, list[str]]) -> list[str]:
    """Drop --n from an engine run whose valid settings would take more than a moment (the fuzz is for answers,
    not for speed); everything else, bad or good, is kept."""
    if path not in (("trace",), ("steps",), ("export",)) or "--n" not in args:
        return args
    given = dict(zip(args[::2], args[1::2], strict=False))
    cfg = Config()
    sizes = {}
    for key in ("n", "d", "br", "bc"):
        try:
            sizes[key] = int(given.get(f"--{key}", getattr(cfg, key)))
        except ValueError:
            return args  # not a number: fails at once
    n, d, br, bc = (sizes[k] for k in ("n", "d", "br", "bc"))
    if min(n, d, br, bc) < 1 or n > 16384 or max(d, br, bc) > 256:
        return args  # out of range: fails at once
    if n * n * d > 2**22 or -(-n // br) * -(-n // bc) > 4096:
        k = args.index("--n")
        return args[:k] + args[k + 2 :]
    return args


@st.composite
def invocation(draw, files: dict[str, list[str]]) -> list[str]:
    path, command = draw(st.sampled_from(commands()))
    options = [p for p in command.params if isinstance(p, click.Option)]
    if path == ("serve",):  # it would serve forever: an invalid port, which click refuses before the command runs
        options = [o for o in options if o.name != "port"]
    if path == ("export",):  # --gif renders frames in Chromium (tests/browser/test_export.py): not for a fuzz
        options = [o for o in options if o.name != "gif"]
    chosen = draw(st.lists(st.sampled_from(options), max_size=4, unique_by=lambda o: o.name)) if options else []
    args: list[str] = []
    for option in chosen:
        if option.is_flag:
            args.append(draw(st.sampled_from(option.opts + option.secondary_opts)))
        else:
            args += [draw(st.sampled_from(option.opts)), draw(value(option, files))]
    if path == ("serve",):
        args += ["--port", draw(integers(Bounded(0, 65535)).filter(lambda v: not _valid_port(v)))]
    return [*path, *affordable(path, args, files), *arguments(draw, path, files)]


def arguments(draw, path: tuple[str, ...], files: dict[str, list[str]]) -> list[str]:
    """A command's positional argument: export's OUT from the pool of outputs (never .gif, which would render
    frames), view's TRACE.json from the odd files only (a good trace would be served forever). After `--`, so that
    garbage such as `--5` is a file's name, not an option."""
    if path == ("export",):
        return ["--", draw(st.sampled_from([*files["outputs"], "fuzz.html"]))]
    if path == ("view",):
        return ["--", draw(st.one_of(st.sampled_from(files["inputs"]), garbage))]
    return []


def _valid_port(v: str) -> bool:
    try:
        Bounded(0, 65535).convert(v, None, None)
    except click.BadParameter:
        return False
    return True


# ---- running and judging ----


def run(args: list[str], cwd: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    """One invocation (timeout: only for bench/fuzz_cli.py, which reports a hang instead of waiting on it)."""
    return subprocess.run(
        [sys.executable, "-m", "flashviz", *args],
        capture_output=True,
        text=True,
        errors="backslashreplace",
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "CI": "1"},  # never open a browser
        timeout=timeout,
    )


def problems(args: list[str], out: subprocess.CompletedProcess) -> list[str]:
    """What is wrong with one invocation's answer (nothing: [])."""
    found = []
    lines = out.stderr.splitlines()
    if "Traceback" in out.stderr:
        found.append("traceback")
    if out.returncode not in (0, 1, 2):
        found.append(f"exit code {out.returncode}")
    if out.returncode != 0:
        if len(lines) != 1:
            found.append(f"{len(lines)} lines on stderr")
        elif not ERROR_LINE.match(lines[0]):
            found.append("the error line does not read 'flashviz ...: error: ...' naming a --flag or field")
        elif len(lines[0]) > 300:
            found.append(f"an error line of {len(lines[0])} characters: a bad value echoed whole?")
    if args[0] == "gpu" and not HAVE_CUPY and out.returncode != 2:
        found.append(f"gpu without a GPU exited {out.returncode}, not 2")
    if out.returncode == 0 and args[0] == "trace" and not ({"-o", "--output"} & set(args)):
        try:
            json.loads(out.stdout)
        except ValueError:
            found.append("trace exited 0 but stdout is no JSON")
    return found


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    return root, make_files(root)


@settings(
    max_examples=int(os.environ.get("FLASHVIZ_FUZZ_EXAMPLES", "80")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_every_command_answers_bad_input_with_one_line(files, data):
    root, pools = files
    args = data.draw(invocation(pools), label="argv")
    out = run(args, str(root))
    assert problems(args, out) == [], (args, out.returncode, out.stderr[-1500:])


@pytest.mark.parametrize("command", [("trace",), ("gpu", "run")])
def test_every_odd_file_as_inputs(files, command):
    """Each file of the pool at least once (the fuzz above draws a given one only now and then)."""
    root, pools = files
    for path in pools["inputs"]:
        args = [*command, "--inputs", path]
        out = run(args, str(root))
        assert problems(args, out) == [], (path[:80], out.returncode, out.stderr[-1500:])


def test_the_generator_covers_every_command_and_flag(files):
    """The generator reads the real commands: all of them, each option with a strategy for its values."""
    _, pools = files
    paths = {p for p, _ in commands()}
    assert paths >= {("trace",), ("count",), ("steps",), ("compare",), ("serve",)}
    assert paths >= {("gpu", "run"), ("gpu", "profile"), ("gpu", "sanitize")}
    options = [(p, o) for p, c in commands() for o in c.params if isinstance(o, click.Option)]
    assert {(p, o.name) for p, o in options} >= {(("trace",), "inputs_path"), (("gpu", "sanitize"), "tools")}
    for _, option in options:
        assert option.is_flag or value(option, pools) is not None
