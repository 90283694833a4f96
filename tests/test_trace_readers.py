"""The readers of trace files (`flashviz view`, `flashviz export --trace`, `flashviz.show(path)`), held through their
real entry points: an array is checked against the config before anything is inflated, and what a file may inflate
to is bounded by its config (a 1.4 MB file said [16384, 16384] of zeros and took 3.2 GB); a file's verdict is the
verdict of its arrays (NaN outputs showed ✓); a ring file at any P and layout passes every reader; `view` announces
the algorithm the file holds; and the one-line messages say what they mean."""

from __future__ import annotations

import functools
import json
import resource
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from flashviz.algos import ALGOS
from flashviz.model.config import ConfigError
from flashviz.tracing.codec import SHUFFLE_DEFLATE, b85encode, decode_array, encode_array
from flashviz.tracing.store import packed

HANG_S = 120  # `view` serves forever once it accepts a file: a reader that hangs or serves fails, not waits
MEMORY = 2**30  # bytes of address space a reader runs in: the interpreter and NumPy need ~0.8 GiB, no more


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=HANG_S, cwd=cwd, preexec_fn=limit_memory
    )


# flashviz.show(path) as a notebook calls it; its ConfigError as one line on stderr and exit 2, like the CLI's
SHOW = """
import sys, flashviz
from flashviz.model.config import ConfigError
try:
    w = flashviz.show(sys.argv[1])
except ConfigError as exc:
    print(f"ConfigError: {exc.field}: {exc.message}", file=sys.stderr)
    sys.exit(2)
print(w.trace["config"]["algo"], w.config["n"])
"""

READERS = {
    # reader: (its arguments after the file name is put in, the start of its one line)
    "export": (("-m", "flashviz", "export", "out.html", "--no-compare", "--trace"), "flashviz: error: --trace: "),
    "view": (("-m", "flashviz", "view", "--no-browser"), "flashviz: error: TRACE.json: "),
    "show": (("-c", SHOW), "ConfigError: trace file: "),
}


def read_with(reader: str, path: Path) -> subprocess.CompletedProcess:
    args, _ = READERS[reader]
    return run(*args, str(path), cwd=path.parent)


def refused(done: subprocess.CompletedProcess, reader: str) -> str:
    """The reader's one line (exit 2, no traceback); the line, after its prefix."""
    start = READERS[reader][1]
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(start), done.stderr[-2000:]
    assert len(lines[0]) < 600, lines[0]
    return lines[0][len(start) :]


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True, cwd=cwd)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def write(tmp: Path, doc: dict[str, Any], name: str = "t.json") -> Path:
    path = tmp / name
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> dict[str, Any]:
    """A trace file as `flashviz trace` writes it: fa2, N=16, D=8, its inputs drawn from the seed."""
    tmp = tmp_path_factory.mktemp("small")
    cli("trace", "--n", "16", "--d", "8", "--br", "4", "--bc", "4", "-o", "t.json", cwd=tmp)
    return json.loads((tmp / "t.json").read_text())


@pytest.fixture(scope="module")
def given_inputs(tmp_path_factory) -> dict[str, Any]:
    """A trace file whose inputs are stored (--inputs): fa2, N=12, D=8, fresh random inputs."""
    tmp = tmp_path_factory.mktemp("given")
    rng = np.random.default_rng()
    np.savez(tmp / "qkv.npz", **{k: rng.standard_normal((12, 8)).astype(np.float32) for k in "QKV"})
    cli("trace", "--inputs", "qkv.npz", "--br", "4", "--bc", "4", "-o", "t.json", cwd=tmp)
    return json.loads((tmp / "t.json").read_text())


def zeros_deflated(shape: list[int], dtype: str = "float32") -> dict[str, Any]:
    """An array of zeros as store.packed writes it (shuffled zeros are zeros, one zlib stream, base85), deflated a
    chunk at a time: the file stays small while its shape says gigabytes."""
    return {"dtype": dtype, "shape": shape, **_deflated_zeros(tuple(shape), dtype)}


@functools.cache
def _deflated_zeros(shape: tuple[int, ...], dtype: str) -> dict[str, str]:
    width = {"float32": 4, "float64": 8, "bfloat16": 2}[dtype]
    z = zlib.compressobj(6)
    chunk = bytes(2**24)
    parts, left = [], int(np.prod(shape)) * width
    while left > 0:
        parts.append(z.compress(chunk[: min(left, len(chunk))]))
        left -= len(chunk)
    parts.append(z.flush())
    return {"base85": b85encode(b"".join(parts)), "compression": SHUFFLE_DEFLATE}


def stored(a: np.ndarray) -> dict[str, Any]:
    return packed(encode_array(a))


# ---- item 4: shapes against the config before anything is inflated ---------------------------------------------


@pytest.mark.parametrize("reader", list(READERS))
def test_an_array_that_inflates_past_its_config_is_refused_without_inflating(tmp_path, small, reader):
    """A 1.4 MB file whose outputs/O says [16384, 16384] (the config: N=16, D=8): `export --trace` and
    `flashviz.show` crashed (exit 139 at 3.2 GB, or MemoryError), `view` never served. In 1 GiB of address space each
    reader now refuses it in one line naming the array, the config and the shape it makes."""
    doc = {**small, "outputs": {**small["outputs"], "O": zeros_deflated([16384, 16384])}}
    path = write(tmp_path, doc)
    assert path.stat().st_size < 2 * 2**20
    line = refused(read_with(reader, path), reader)
    assert "outputs/O has shape [16384, 16384]" in line and "[16, 8]" in line, line


def test_the_refusal_comes_before_any_array_is_inflated(small, monkeypatch):
    """In process: with zlib unable to inflate anything, the file is still refused for its shape (the check runs
    first), and a whole file fails on the inflation (the check does inflate once the shapes hold)."""
    from flashviz.share.trace_files import check_trace_bytes
    from flashviz.tracing import codec

    def no_inflating(*_args, **_kwargs):
        raise AssertionError("inflated an array")

    monkeypatch.setattr(codec.zlib, "decompressobj", no_inflating)
    doc = {**small, "outputs": {**small["outputs"], "O": zeros_deflated([16384, 16384])}}
    with pytest.raises(ConfigError, match=r"outputs/O has shape \[16384, 16384\]"):
        check_trace_bytes(json.dumps(doc).encode(), "'t.json'", "TRACE.json")
    assert any("compression" in v for v in small["outputs"].values())  # the whole file has a deflated output
    with pytest.raises(AssertionError, match="inflated an array"):
        check_trace_bytes(json.dumps(small).encode(), "'t.json'", "TRACE.json")


def test_a_steps_array_that_inflates_past_what_the_config_holds_is_refused(tmp_path, small):
    """A step's SRAM buffer of [8192, 8192] zeros in a trace of N=16: the arrays the file holds are bounded by what
    its config's trace holds (Algorithm.trace_values), so it is refused before inflating."""
    steps = json.loads(json.dumps(small["steps"]))
    steps[2]["sram"]["Sij"] = zeros_deflated([8192, 8192])
    path = write(tmp_path, {**small, "steps": steps})
    line = refused(read_with("export", path), "export")
    assert "steps/2/sram/Sij" in line and "[8192, 8192]" in line, line


def _transposed(doc, rng):
    return {"outputs": {**doc["outputs"], "O": stored(rng.standard_normal((8, 16)).astype(np.float32))}}


def _zero_rows(doc, rng):
    return {"outputs": {**doc["outputs"], "O": stored(np.zeros((0, 8), np.float32))}}


def _l_as_a_column(doc, rng):
    return {"outputs": {**doc["outputs"], "L": stored(rng.standard_normal((16, 1)).astype(np.float32))}}


def _tensor_table(doc, rng):
    tensors = json.loads(json.dumps(doc["tensors"]))
    tensors["O"]["shape"] = [16384, 16384]
    return {"tensors": tensors}


def _an_output_left_out(doc, rng):
    return {"outputs": {"O": doc["outputs"]["O"]}}


SHAPES = {
    # what is changed: (the change, what the line says)
    "O transposed": (_transposed, "outputs/O has shape [8, 16]; config N=16, D=8 makes it [16, 8]"),
    "O without rows": (_zero_rows, "outputs/O has shape [0, 8]; config N=16, D=8 makes it [16, 8]"),
    "L a column": (_l_as_a_column, "outputs/L has shape [16, 1]; config N=16, D=8 makes it [16]"),
    "the tensors' table": (_tensor_table, "tensors.O.shape is [16384, 16384]; config N=16, D=8 makes it [16, 8]"),
    "L left out": (_an_output_left_out, "outputs must hold O, L, the outputs of fa2 (got O)"),
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("case", list(SHAPES))
def test_an_array_whose_shape_disagrees_with_the_config_is_refused(tmp_path, rng, small, case, reader):
    """An output transposed or without rows, an array of another rank, a tensors' table that says another shape: one
    line from every reader (before, only some were refused, by the page and not by Python)."""
    change, says = SHAPES[case]
    path = write(tmp_path, {**small, **change(small, rng)})
    assert says in refused(read_with(reader, path), reader)


def test_a_stored_input_of_other_rows_is_refused(tmp_path, rng, given_inputs):
    """Inputs the user gave are stored: their shape is judged against the config as the outputs' are."""
    q = rng.standard_normal((13, 8)).astype(np.float32)
    path = write(tmp_path, {**given_inputs, "inputs": {**given_inputs["inputs"], "Q": stored(q)}})
    line = refused(read_with("export", path), "export")
    assert "inputs/Q has shape [13, 8]; config N=12, D=8 makes it [12, 8]" in line, line


# ---- item 3: a file's verdict is its arrays' ---------------------------------------------------------------------


def _nan_outputs(doc, rng):
    return {"outputs": {**doc["outputs"], "O": stored(np.full((16, 8), np.nan, np.float32))}}


def _one_nan(doc, rng):
    o = decode_array(doc["outputs"]["O"]).copy()  # (16, 8): the file's own O
    o[rng.integers(16), rng.integers(8)] = np.nan
    return {"outputs": {**doc["outputs"], "O": stored(o)}}


def _scaled(doc, rng):
    o = decode_array(doc["outputs"]["O"]) * np.float32(1.5)
    return {"outputs": {**doc["outputs"], "O": stored(o)}}


VERDICTS = {
    "O all NaN": (_nan_outputs, "outputs O: 128 values not finite"),
    "one NaN in O": (_one_nan, "outputs O: 1 value not finite"),
    "O scaled by 1.5": (_scaled, "outputs O: rel err"),
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("case", list(VERDICTS))
def test_a_file_whose_verdict_is_not_its_arrays_is_refused(tmp_path, rng, small, case, reader):
    """Item 3: a file with NaN outputs kept its stored ✓ (reference.ok true) in every reader. Each reader now judges
    the outputs it draws against float64 again (the algorithm's own check) and refuses a file whose stored verdict
    disagrees, in one line."""
    change, says = VERDICTS[case]
    assert small["reference"]["ok"] is True
    path = write(tmp_path, {**small, **change(small, rng)})
    line = refused(read_with(reader, path), reader)
    assert "its reference says ✓" in line and says in line, line


def test_a_file_whose_outputs_are_not_finite_and_says_so_is_shown(tmp_path):
    """No false refusal: a launch whose row overflows (NaN outputs, as docs/trace-schema.md says) has a ✗ verdict
    of its own, and every reader shows it as written."""
    rng = np.random.default_rng()
    q = rng.standard_normal((8, 4)).astype(np.float32)
    q[2] = 1e30
    k = (np.abs(rng.standard_normal((8, 4))) + 1e30).astype(np.float32)
    v = rng.standard_normal((8, 4)).astype(np.float32)
    np.savez(tmp_path / "qkv.npz", Q=q, K=k, V=v)
    cli("trace", "--inputs", "qkv.npz", "--scale", "-1", "-o", "t.json", cwd=tmp_path)
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["reference"]["ok"] is False and doc["reference"]["O"]["nonfinite"] > 0
    done = read_with("export", tmp_path / "t.json")
    assert done.returncode == 0, done.stderr[-2000:]
    done = read_with("show", tmp_path / "t.json")
    assert done.returncode == 0 and done.stdout.split() == ["fa2", "8"], done.stderr[-2000:]


# ---- item 8: ring files of any P and layout through every reader -------------------------------------------------

RING = "--algo ring --n 24 --br 4 --bc 4 --devices 6 --layout contiguous --causal -o ring.json"  # the README's


def test_show_takes_the_readmes_ring_file(tmp_path):
    """Item 8: flashviz.show("ring.json") raised `ConfigError: br: must be N/P = 24/4 = 6` (the file checked again
    with the default devices, P = 4); `view` and `export --trace` took the same file."""
    cli("trace", *RING.split(), cwd=tmp_path)
    done = read_with("show", tmp_path / "ring.json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ring", "24"]


@pytest.mark.parametrize(("devices", "layout", "n"), [(2, "zigzag", 8), (3, "contiguous", 9), (8, "zigzag", 32)])
def test_a_ring_file_of_any_p_and_layout_passes_every_reader(tmp_path, devices, layout, n):
    """`export --trace` and `flashviz.show` in a subprocess; `view`'s page as its server sends it (GET /), holding
    the file's trace with its devices and layout."""
    from fastapi.testclient import TestClient

    from flashviz.reports.compare_api import limits_document
    from flashviz.server import create_app
    from flashviz.share.page import Documents
    from flashviz.share.trace_files import read_trace_file

    tiles = ("--br", str(n // devices), "--bc", str(n // devices))  # Br = Bc = N/P
    flags = ("--algo", "ring", "--n", str(n), *tiles, "--devices", str(devices), "--layout", layout, "--causal")
    cli("trace", *flags, "-o", "ring.json", cwd=tmp_path)
    for reader in ("export", "show"):
        done = read_with(reader, tmp_path / "ring.json")
        assert done.returncode == 0, (reader, done.stderr[-2000:])
    doc, data = read_trace_file(tmp_path / "ring.json", "TRACE.json")  # as `flashviz view` reads and serves it
    docs = Documents(origin="flashviz view", limits=limits_document(), traces=[(doc["config"], data)], server=True)
    page = TestClient(create_app(documents=docs.html())).get("/")
    assert page.status_code == 200
    tag = '<script type="application/json" id="flashviz-trace-0">'
    held = json.loads(page.text[page.text.index(tag) + len(tag) :].split("</script>", 1)[0])
    assert held["config"]["launch"] == {"devices": devices, "layout": layout}


def test_show_keeps_the_devices_of_a_ring_launch(tmp_path):
    """The same through keywords: flashviz.show(algo="ring", devices=6, ...) raised the same ConfigError."""
    import flashviz

    w = flashviz.show(algo="ring", n=24, br=4, bc=4, devices=6, layout="contiguous", causal=True)
    assert w.trace.config["launch"] == {"devices": 6, "layout": "contiguous"}
    assert w.config["n"] == 24 and w.config["br"] == 4


# ---- item 17: `view` says what the file holds ----------------------------------------------------------------------


def first_line_of_view(path: Path) -> str:
    proc = subprocess.Popen(
        [sys.executable, "-m", "flashviz", "view", str(path), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=path.parent,
    )
    try:
        assert proc.stdout is not None
        return proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=60)


LAUNCHES = {a: ("--algo", a) for a in ALGOS}
LAUNCHES["ring"] = ("--algo", "ring", "--n", "24", "--br", "8", "--bc", "8", "--devices", "3", "--layout", "contiguous")


@pytest.mark.parametrize("algo", ALGOS)
def test_view_announces_the_algorithm_the_file_holds(tmp_path, algo):
    """Item 17: `flashviz view ring.json` announced "the FlashAttention-2 walkthrough"; it says the file's algorithm
    and launch, and for the ring, that its rows are in the layout's order."""
    from flashviz.algos import resolve

    cli("trace", *LAUNCHES[algo], "-o", "t.json", cwd=tmp_path)
    line = first_line_of_view(tmp_path / "t.json")
    assert line.startswith(f"flashviz: serving t.json, {resolve(algo).title}"), line
    assert "http://127.0.0.1:" in line and "FlashAttention-2 walkthrough" not in line, line
    if algo == "ring":
        assert "Q, K, V, O and L in the contiguous layout's order (P = 3), not the sequence's" in line, line


def test_a_ring_traces_outputs_say_their_order(tmp_path):
    """Item 17: Q, K and V were labelled "(zigzag order)", O and L not, though they are stored in the same order."""
    cli("trace", "--algo", "ring", "--n", "16", "-o", "t.json", cwd=tmp_path)
    tensors = json.loads((tmp_path / "t.json").read_text())["tensors"]
    assert {k: tensors[k]["label"] for k in "QKVOL"} == {k: f"{k} (zigzag order)" for k in "QKVOL"}


# ---- item 19: messages ---------------------------------------------------------------------------------------------


def test_a_long_path_keeps_its_closing_quote(tmp_path):
    """A path cut at 40 characters lost its closing quote: `'a_rather_long_directory_name_for_tests…  is truncated`."""
    folder = tmp_path / ("a_rather_long_directory_name_for_tests/" * 2)
    folder.mkdir(parents=True)
    (folder / "t.json").write_text("{")
    path = str(folder / "t.json")
    line = refused(read_with("export", Path(path)), "export")
    shown = line.split(" is truncated")[0]
    assert shown.startswith("'") and shown.endswith("…'") and len(shown) <= 40, shown


def test_an_edited_n_is_named_as_n(tmp_path, small):
    """config.n edited from 16 to 20 was reported as `config.nk fa2 does not run this option`."""
    line = refused(read_with("export", write(tmp_path, {**small, "config": {**small["config"], "n": 20}})), "export")
    assert "config.n (20) and config.nk (16) must be equal: fa2 runs Nk = N" in line, line


@pytest.mark.parametrize(
    ("seed", "says"),
    [
        ("0", "has drawn.seed '0', a string; expected an integer >= 0"),
        (-1, "has drawn.seed -1; expected an integer >= 0"),
    ],
)
def test_a_drawn_seed_says_what_is_wrong_with_it(tmp_path, small, seed, says):
    """`has drawn.seed '0'; expected an integer >= 0`: the problem is that it is the string "0" (and -1 was quoted
    as if it were one)."""
    inputs = json.loads(json.dumps(small["inputs"]))
    inputs["Q"]["drawn"]["seed"] = seed
    line = refused(read_with("export", write(tmp_path, {**small, "inputs": inputs})), "export")
    assert says in line, line


def test_a_kernel_file_that_does_not_parse_says_no_line_none(tmp_path):
    """A kernel file holding a NUL byte: `does not parse: source code string cannot contain null bytes (line None)`."""
    (tmp_path / "k.py").write_bytes(b"import triton\n\x00\n")
    done = subprocess.run(
        [sys.executable, "-m", "flashviz", "trace", "--kernel", "k.py:attn"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    line = done.stderr.strip()
    assert "\n" not in line and "does not parse" in line and "None" not in line, line
