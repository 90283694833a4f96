"""What the views read in a trace (src/flashviz/data/trace_shape.json), checked by
`flashviz.share.trace_files.check_trace`
before any view draws it (issue 17, the page fuzzer's finding): every algorithm's real trace passes, plain or compact,
causal or not; each part a view cannot read is refused in one line naming it, with the words the page's own check
says (the cases are shared with web/test/traceCheck.test.ts)."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import orjson
import pytest

from flashviz.algos import ALGOS, REGISTRY
from flashviz.api import trace
from flashviz.model.config import ConfigError
from flashviz.share.trace_files import check_trace
from flashviz.tracing.shape import ATOMS, spec

FIXTURES = Path(__file__).resolve().parents[1] / "web" / "test" / "fixtures"
# written by hand, shared with web/test/traceCheck.test.ts (not a generated fixture: web/test/fixtures is only those)
CASES = json.loads((FIXTURES.parent / "cases" / "trace_shape_cases.json").read_text())["cases"]
FA2C = json.loads((FIXTURES / "fa2_causal_n12_block0.json").read_text())


def refusal(doc) -> str | None:
    try:
        check_trace(doc, "'t.json'", "--trace")
    except ConfigError as exc:
        return exc.message
    return None


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("compact", [False, True])
def test_every_algorithms_trace_passes(algo, causal, compact):
    seed = int.from_bytes(os.urandom(4), "little")  # fresh inputs each run
    causal = causal and REGISTRY[algo].causal  # fa2-splitkv refuses --causal
    own = {"fa2-triton": (100, 32, 64, 32), "fa3": (200, 64, 128, 128), "ring": (16, 4, 4, 4)}  # their kernels' tiles
    launch = own.get(algo, (11, 4, 4, 4))
    doc = orjson.loads(trace(algo, *launch, causal=causal, seed=seed).to_json(compact=compact))
    assert refusal(doc) is None


def test_the_page_fixture_passes():
    assert refusal(copy.deepcopy(FA2C)) is None


@pytest.mark.parametrize("case", CASES, ids=lambda c: ".".join(map(str, c["path"])))
def test_a_part_a_view_cannot_read_is_refused_in_the_pages_words(case):
    doc = copy.deepcopy(FA2C)
    *parents, last = case["path"]
    here = doc
    for p in parents:
        here = here[p]
    if case.get("delete"):
        del here[last]
    else:
        here[last] = case["value"]
    message = refusal(doc)
    assert message is not None and "\n" not in message and len(message) < 600, message
    lead = "'t.json' is not a trace this flashviz can show: "
    assert message.startswith(lead + case["says"]), message


def test_the_spec_uses_only_known_atoms_and_definitions():
    s = spec()

    def walk(shape, at):
        if isinstance(shape, str):
            assert shape.rstrip("?") in {*ATOMS, "any"}, at
        elif "ref" in shape:
            assert shape["ref"] in s["defs"], at
        elif "either" in shape:
            for k, sub in enumerate(shape["either"]):
                walk(sub, f"{at}|{k}")
        elif "keys" in shape:
            for k, sub in shape["keys"].items():
                walk(sub, f"{at}.{k}")
        else:
            assert ("list" in shape) != ("map" in shape), at
            walk(shape.get("list", shape.get("map")), f"{at}[]")

    walk(s["trace"], "trace")
    walk(s["compare"], "compare")
    for name, shape in s["defs"].items():
        walk(shape, name)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n", [1, 37, 4096])
def test_every_comparison_the_page_is_given_passes_its_shape(n, causal):
    """The page checks a comparison it holds against the spec's `compare` (web/src/source.ts): what
    flashviz.reports.compare_api writes (GET /api/compare, `flashviz export`, the widget) must pass it, curves or
    not."""
    from flashviz.reports.compare_api import compare_document
    from flashviz.tracing.shape import compare_problem

    for curves in (False, True):
        doc = orjson.loads(
            orjson.dumps(compare_document(n, 64, 64, 64, causal, with_curves=curves), option=orjson.OPT_SERIALIZE_NUMPY)
        )
        assert compare_problem(doc) is None
