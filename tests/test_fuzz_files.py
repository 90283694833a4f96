"""Issue 17's fuzzers of the files flashviz reads, kept as tests: crafted trace files through the check every view
runs first and the page documents built from what passes (`flashviz view`, `flashviz export --trace`,
`flashviz.show(path)` share both), a few of them through `flashviz export --trace` in a subprocess, and crafted ladder
files through `flashviz.hardware.ladder.load` and the table, a few through `flashviz ladder --from`.

A crafted file is a real one (`flashviz trace`, the shipped ladder run) with one to three parts replaced by random
JSON (null, booleans, numbers at the edges, strings, lists, objects), deleted, or the whole document cut short. The
judge: a file is either shown or refused with one ConfigError line naming the flag; never another exception.
Bounded example counts keep CI to a few seconds each; bench/fuzz_traces.py runs the same generators for thousands.

The readers' own hazards, each with a generator and a stricter judge: arrays whose declared shape inflates far past
the config (a few hundred bytes of deflated zeros saying gigabytes) must be refused in one line within a bounded
peak of memory (tracemalloc in process; RLIMIT_AS in a subprocess through `export --trace`); an input or output of
another shape than its config makes (transposed, without rows, another rank, a row more or less), and outputs with
NaN or +∞ under the file's ✓, must be refused; ring files of every P and both layouts must be shown by `view` (the
page its server sends), `export --trace` and `flashviz.show`.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import math
import resource
import subprocess
import sys
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flashviz.model.config import ConfigError

# ---- generators (bench/fuzz_traces.py imports these) ------------------------------------------------------------

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 1, 2, 3, 4, 8, 12, 16384, 16385, 2**31, 2**53 + 1]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.5, 8.5, 1e30, 1e-300, -1e-7]),
    st.text(max_size=12),
    st.sampled_from(["", "x", "NaN", "Infinity", "fa3", "fa2", "<b>x</b>", "Q", "load_q", "\u202e", "a" * 500]),
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=8,
)


def paths(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The places a mutation may hit: every top-level key, every config key, keys of the first, a middle and the last
    step and block, and of the picker, the picture, the kernel and one tensor, buffer, op and kernel."""
    out: list[tuple[Any, ...]] = [(k,) for k in doc]
    out += [("config", k) for k in doc["config"]]
    for part in ("steps", "blocks", "phases"):
        items = doc[part]
        for i in sorted({0, len(items) // 2, len(items) - 1}):
            out.append((part, i))
            out += [(part, i, k) for k in items[i]]
    for part in ("picker", "picture", "kernel"):
        out += [(part, k) for k in doc[part]]
    for part in ("tensors", "buffers", "ops", "kernels", "inputs", "outputs"):
        name = next(iter(doc[part]))
        out.append((part, name))
        if isinstance(doc[part][name], dict):
            out += [(part, name, k) for k in doc[part][name]]
    return out


def set_at(doc: Any, path: tuple[Any, ...], value: Any, delete: bool) -> None:
    *parents, last = path
    for p in parents:
        doc = doc[p]
    if delete and isinstance(doc, dict):
        doc.pop(last, None)
    elif isinstance(doc, (dict, list)):
        doc[last] = value


@st.composite
def crafted_trace(draw, good: dict[str, Any]) -> bytes:
    """`good` with one to three parts replaced or deleted, or (one in twenty) its JSON cut short."""
    if draw(st.integers(0, 19)) == 0:
        data = orjson.dumps(good)
        return data[: draw(st.integers(0, len(data) - 1))]
    doc = copy.deepcopy(good)
    where = paths(good)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(where))
        with contextlib.suppress(KeyError, IndexError, TypeError):  # an earlier mutation replaced a parent
            set_at(doc, path, draw(JSON), delete=draw(st.integers(0, 5)) == 0)
    return json.dumps(doc).encode()


def judge_trace(data: bytes) -> str:
    """What every view does first with a trace file's bytes, then with what passes: "shown" or "refused"; any
    exception other than a one-line ConfigError is a failure (raised)."""
    from flashviz.cli.share import documents
    from flashviz.share.trace_files import check_trace_bytes

    try:
        doc = check_trace_bytes(data, "'t.json'", "TRACE.json")
    except ConfigError as exc:
        message = str(exc)
        assert "\n" not in message and len(message) < 600, message
        assert exc.field == "TRACE.json", exc.field
        return "refused"
    # what `flashviz view` and `flashviz export --trace` build from it (export adds the comparison at its config)
    docs = documents([(doc["config"], data)], compare=True)
    docs.ladder = None
    docs.html()
    return "shown"


@st.composite
def crafted_ladder(draw, good: dict[str, Any]) -> bytes:
    if draw(st.integers(0, 19)) == 0:
        data = json.dumps(good).encode()
        return data[: draw(st.integers(0, len(data) - 1))]
    doc = copy.deepcopy(good)
    where: list[tuple[Any, ...]] = [(k,) for k in good]
    for k, v in good.items():
        if isinstance(v, dict):
            where += [(k, kk) for kk in v]
        if isinstance(v, list) and v and isinstance(v[0], dict):
            for i in sorted({0, len(v) - 1}):
                where.append((k, i))
                where += [(k, i, kk) for kk in v[i]]
    for _ in range(draw(st.integers(1, 3))):
        with contextlib.suppress(KeyError, IndexError, TypeError):
            set_at(doc, draw(st.sampled_from(where)), draw(JSON), delete=draw(st.integers(0, 5)) == 0)
    return json.dumps(doc).encode()


def judge_ladder(path: Path) -> str:
    from flashviz.hardware.ladder import load
    from flashviz.hardware.ladder_schema import LadderError
    from flashviz.reports.ladder_table import render

    try:
        doc = load(path)
    except LadderError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 600, str(exc)
        return "refused"
    from rich.console import Console

    Console(file=open("/dev/null", "w"), width=150).print(*render(doc))  # noqa: SIM115
    return "shown"


# ---- the readers' own hazards ------------------------------------------------------------------------------------

# shapes far past any config's (the config of GOOD: N=12, D=4), each some hundred MB to a GiB of values
HUGE = ([16384, 16384], [2**28], [65536, 4096], [4096, 65536], [8192, 8192, 2], [1, 2**27])
PEAK = 64 * 2**20  # bytes a reader may allocate (tracemalloc's peak) while refusing one: far below any HUGE array


@functools.cache
def deflated_zeros(count: int, width: int) -> dict[str, str]:
    """`count` zeros of `width` bytes as a trace file stores them (store.packed: shuffled zeros are zeros, one zlib
    stream, base85), deflated a chunk at a time, once per size."""
    from flashviz.tracing.codec import SHUFFLE_DEFLATE, b85encode

    z, chunk, left, parts = zlib.compressobj(6), bytes(2**24), count * width, []
    while left > 0:
        parts.append(z.compress(chunk[: min(left, len(chunk))]))
        left -= len(chunk)
    parts.append(z.flush())
    return {"base85": b85encode(b"".join(parts)), "compression": SHUFFLE_DEFLATE}


def array_paths(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Where an array may be replaced: every input and output, and every SRAM buffer of a few steps."""
    out: list[tuple[Any, ...]] = [(part, k) for part in ("inputs", "outputs") for k in doc[part]]
    for i in sorted({0, len(doc["steps"]) // 2, len(doc["steps"]) - 1}):
        out += [("steps", i, "sram", k) for k in doc["steps"][i]["sram"]]
    return out


@st.composite
def inflating_trace(draw, good: dict[str, Any]) -> bytes:
    """`good` with one or two arrays replaced by deflated zeros whose shape says far more than its config holds."""
    doc = copy.deepcopy(good)
    for _ in range(draw(st.integers(1, 2))):
        shape = list(draw(st.sampled_from(HUGE)))
        dtype, width = draw(st.sampled_from([("float32", 4), ("bfloat16", 2), ("float64", 8)]))
        if width == 8:
            shape[-1] = max(1, shape[-1] // 2)  # at most 1 GiB of bytes: one compressed stream of each size is kept
        array = {"dtype": dtype, "shape": shape, **deflated_zeros(math.prod(shape), width)}
        set_at(doc, draw(st.sampled_from(array_paths(good))), array, delete=False)
    return json.dumps(doc).encode()


def judge_refused(data: bytes) -> str:
    """What every view does first, where the file must be refused: one ConfigError line naming the flag, within PEAK
    bytes of allocation (nothing inflated past what its config holds). Any other outcome is a failure (raised)."""
    tracemalloc.start()
    try:
        said = judge_trace(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert said == "refused", "a file that must be refused was shown"
    assert peak < PEAK, f"refusing it allocated {peak:,} bytes at the peak"
    return said


def stored_array(a: Any) -> dict[str, Any]:
    from flashviz.tracing.codec import encode_array
    from flashviz.tracing.store import packed

    return packed(encode_array(a))


def other_shapes(shape: list[int]) -> list[list[int]]:
    """Shapes an array of `shape` must not have: transposed, without rows, a row more or fewer, another rank."""
    rows = shape[0]
    out = [[0, *shape[1:]], [rows + 1, *shape[1:]], [rows - 1, *shape[1:]], [*shape, 1], [rows * 2, *shape[1:]]]
    if len(shape) == 2:
        out += [shape[::-1], [rows * shape[1]], [shape[1], rows], [rows, shape[1] + 1]]
    else:
        out += [[rows, 1], [1, rows]]
    return [s for s in out if s != shape and min(s) >= 0]


@st.composite
def misshapen_trace(draw, good: dict[str, Any]) -> bytes:
    """`good` with one input or output of another shape than its config makes (real random values, stored as a
    trace file stores them; a drawn input becomes a stored one)."""
    import numpy as np

    doc = copy.deepcopy(good)
    part = draw(st.sampled_from(["inputs", "outputs"]))
    name = draw(st.sampled_from(sorted(good[part])))
    shape = draw(st.sampled_from(other_shapes(list(good[part][name]["shape"]))))
    seed = draw(st.integers(0, 2**32 - 1))
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    doc[part][name] = stored_array(a)
    if draw(st.booleans()):  # the tensors' table made to agree with the array: the config still says otherwise
        doc["tensors"][name]["shape"] = shape
    return json.dumps(doc).encode()


@st.composite
def false_verdict(draw, good: dict[str, Any]) -> bytes:
    """`good` (its verdict ✓) with NaN or +∞ put in one output at random places, or one output scaled past its
    tolerance: a file whose stored verdict is not its arrays'."""
    import numpy as np

    from flashviz.tracing.codec import decode_array

    doc = copy.deepcopy(good)
    name = draw(st.sampled_from(sorted(good["outputs"])))
    a = decode_array(good["outputs"][name]).copy()  # the file's own values
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.integers(0, 3)) == 0:
        a = a * np.float32(draw(st.sampled_from([1.01, 0.5, 2.0, -1.0])))
    else:
        where = rng.integers(0, a.size, size=draw(st.integers(1, a.size)))
        a.reshape(-1)[where] = draw(st.sampled_from([np.nan, np.inf]))
    doc["outputs"][name] = stored_array(a)
    return json.dumps(doc).encode()


def judge_verdict(data: bytes) -> str:
    said = judge_trace(data)
    assert said == "refused", "a file whose verdict is not its arrays' was shown"
    return said


@st.composite
def ring_file(draw) -> tuple[dict[str, Any], bytes]:
    """A ring trace file of P = 2..8 devices, either layout, causal or not, N a multiple of the layout's chunks."""
    from flashviz.api import trace

    devices = draw(st.integers(2, 8))
    layout = draw(st.sampled_from(["zigzag", "contiguous"]))
    chunks = 2 * devices if layout == "zigzag" else devices
    n = chunks * draw(st.integers(1, 3))
    shard = n // devices  # Br = Bc = N/P
    d, causal = draw(st.integers(1, 8)), draw(st.booleans())
    made = trace("ring", n, d, shard, shard, devices=devices, layout=layout, causal=causal)
    return made.config, made.to_json(compact=True, file=True)


def judge_ring(held: tuple[dict[str, Any], bytes]) -> str:
    """A ring file through the readers in process: `view` (the page its server sends holds it), `export --trace`'s
    documents, and `flashviz.show` (the widget, its config the file's): each must show it."""
    from fastapi.testclient import TestClient

    from flashviz.reports.compare_api import limits_document
    from flashviz.server import create_app
    from flashviz.share.page import Documents
    from flashviz.share.trace_files import check_trace_bytes
    from flashviz.share.widget import Viewer

    config, data = held
    assert judge_trace(data) == "shown", "a ring file was refused"
    doc = check_trace_bytes(data, "'ring.json'", "TRACE.json")
    whole = json.dumps(doc).encode()
    docs = Documents(origin="flashviz view", limits=limits_document(), traces=[(doc["config"], whole)], server=True)
    page = TestClient(create_app(documents=docs.html())).get("/")
    assert page.status_code == 200 and 'id="flashviz-trace-0"' in page.text
    w = Viewer.of_document(doc, whole)
    assert (w.config["n"], w.config["br"]) == (config["n"], config["br"])
    return "shown"


def good_trace(file: bool = False) -> dict[str, Any]:
    """The fuzzers' real trace, as `flashviz trace --plain` writes it, or (`file`) as `flashviz trace` does."""
    from flashviz.api import trace

    return orjson.loads(trace("fa2", 12, 4, 4, 4, causal=True, seed=3, block=1).to_json(compact=file, file=file))


def good_ladder() -> dict[str, Any]:
    from flashviz.hardware.ladder import load

    return load()


# ---- the tests ---------------------------------------------------------------------------------------------------

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
GOOD = good_trace()
GOOD_FILE = good_trace(file=True)
LADDER = good_ladder()


@FUZZ
@given(data=crafted_trace(GOOD))
def test_crafted_trace_files_are_shown_or_refused_in_one_line(data):
    judge_trace(data)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=crafted_trace(GOOD))
def test_crafted_trace_files_through_export(tmp_path_factory, data):
    """The same files through `flashviz export --trace` (a subprocess): exit 0, or 2 with one line."""
    tmp = tmp_path_factory.mktemp("fuzz")
    (tmp / "t.json").write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-m", "flashviz", "export", "out.html", "--no-compare", "--trace", "t.json"],
        capture_output=True,
        text=True,
        cwd=tmp,
    )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if done.returncode == 0:
        assert (tmp / "out.html").stat().st_size > 0
    else:
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
        assert lines[0].startswith("flashviz: error: --trace: "), lines[0]


@FUZZ
@given(data=crafted_ladder(LADDER))
def test_crafted_ladder_files_are_shown_or_refused_in_one_line(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("ladder") / "run.json"
    path.write_bytes(data)
    judge_ladder(path)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=crafted_ladder(LADDER))
def test_crafted_ladder_files_through_the_cli(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("ladder-cli")
    (tmp / "run.json").write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-m", "flashviz", "ladder", "--from", "run.json"], capture_output=True, text=True, cwd=tmp
    )
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
        assert lines[0].startswith("flashviz: error: --from: run.json: "), lines[0]


READERS = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@READERS
@given(data=inflating_trace(GOOD_FILE))
def test_arrays_that_inflate_past_the_config_are_refused_in_bounded_memory(data):
    judge_refused(data)


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))  # the interpreter and NumPy need ~0.8 GiB


@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=inflating_trace(GOOD_FILE))
def test_arrays_that_inflate_through_export_in_one_gib(tmp_path_factory, data):
    """The same through `flashviz export --trace` in 1 GiB of address space: exit 2 with one line."""
    tmp = tmp_path_factory.mktemp("inflating")
    (tmp / "t.json").write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-m", "flashviz", "export", "out.html", "--no-compare", "--trace", "t.json"],
        capture_output=True,
        text=True,
        cwd=tmp,
        preexec_fn=limit_memory,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("flashviz: error: --trace: 't.json' is not a trace this flashviz can show: ")


@READERS
@given(data=misshapen_trace(GOOD_FILE))
def test_arrays_of_another_shape_than_the_config_are_refused(data):
    judge_refused(data)


@READERS
@given(data=false_verdict(GOOD_FILE))
def test_outputs_that_are_not_their_verdict_are_refused(data):
    judge_verdict(data)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(held=ring_file())
def test_ring_files_of_any_p_and_layout_are_shown_by_every_reader(held):
    judge_ring(held)


@pytest.mark.parametrize("part", ["config", "steps", "tensors"])
def test_the_generator_reaches_the_parts_the_views_read(part):
    assert any(p[0] == part for p in paths(GOOD))
