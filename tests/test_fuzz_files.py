"""Issue 17's fuzzers of the files flashviz reads, kept as tests: crafted trace files through the check every view
runs first and the page documents built from what passes (`flashviz view`, `flashviz export --trace`,
`flashviz.show(path)` share both), a few of them through `flashviz export --trace` in a subprocess, and crafted ladder
files through `flashviz.hardware.ladder.load` and the table, a few through `flashviz ladder --from`.

A crafted file is a real one (`flashviz trace`, the shipped ladder run) with one to three parts replaced by random
JSON (null, booleans, numbers at the edges, strings, lists, objects), deleted, or the whole document cut short. The
judge: a file is either shown or refused with one ConfigError line naming the flag; never another exception.
Bounded example counts keep CI to a few seconds each; bench/fuzz_traces.py runs the same generators for thousands.
"""

from __future__ import annotations

import contextlib
import copy
import json
import subprocess
import sys
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


def good_trace() -> dict[str, Any]:
    from flashviz.api import trace

    return orjson.loads(trace("fa2", 12, 4, 4, 4, causal=True, seed=3, block=1).to_json())


def good_ladder() -> dict[str, Any]:
    from flashviz.hardware.ladder import load

    return load()


# ---- the tests ---------------------------------------------------------------------------------------------------

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
GOOD = good_trace()
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


@pytest.mark.parametrize("part", ["config", "steps", "tensors"])
def test_the_generator_reaches_the_parts_the_views_read(part):
    assert any(p[0] == part for p in paths(GOOD))
