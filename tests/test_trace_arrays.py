"""GET /api/trace/arrays (issue 17, item 20): a step's arrays from the server's cache of the trace /api/trace
answered with the same query, equal to the full trace's; bad or unknown queries are one-line 4xx errors."""

from __future__ import annotations

import json
import urllib.parse

import numpy as np
import pytest

from flashviz.tracing.codec import _groups, decode_doc, is_compact, step_arrays
from serving import get, serving

QUERY = {"algo": "fa2", "n": "24", "d": "8", "br": "8", "bc": "8", "seed": "11", "block": "1"}


def url(base: str, path: str, **extra: str) -> str:
    return f"{base}api/{path}?{urllib.parse.urlencode({**QUERY, **extra})}"


def holders(step: dict) -> list[tuple[str, dict]]:
    """(name, arrays) of one step, in the trace's order."""
    out = [(name, step[name]) for name in ("sram", "carries") if isinstance(step.get(name), dict)]
    for q, sub in enumerate(step.get("substeps") or []):
        if isinstance(sub, dict) and isinstance(sub.get("values"), dict):
            out.append((f"substeps/{q}", sub["values"]))
    return out


@pytest.fixture(scope="module")
def server():
    with serving("serve", "--no-browser", "--port", "0") as (_proc, base, _port):
        yield base


def test_unknown_trace_is_a_404_naming_what_to_ask_first(server):
    status, _, body = get(url(server, "trace/arrays", step="0", seed="12"))
    assert status == 404
    said = json.loads(body)
    assert said["field"] == "query" and "GET /api/trace with the same query first" in said["detail"]


def test_each_steps_arrays_equal_the_full_traces(server):
    status, _, body = get(url(server, "trace"))
    assert status == 200
    full = json.loads(body)
    decoded = decode_doc(json.loads(body))
    assert len(full["steps"]) > 4
    compared = 0
    for k, step in enumerate(decoded["steps"]):
        status, _, part = get(url(server, "trace/arrays", step=str(k)))
        assert status == 200, part
        got = json.loads(part)
        assert got["step"] == k
        for name, want in holders(step):
            group = got[name.split("/")[0]] if "/" not in name else got["substeps"][int(name.split("/")[1])]
            assert set(group) == set(want)
            for key, v in want.items():
                if not isinstance(v, np.ndarray):
                    assert group[key] == v
                    continue
                assert is_compact(group[key]) and "ref" not in group[key]  # stored on its own: no reference
                mine = decode_doc({"inputs": {"x": group[key]}})["inputs"]["x"]
                np.testing.assert_array_equal(mine, v)  # bit for bit (NaN where NaN)
                compared += 1
    assert compared > 20
    # the full trace held references (the answers above followed them)
    assert any(is_compact(v) and "ref" in v for _, g in _groups(full) for v in g.values())


@pytest.mark.parametrize(
    ("extra", "status", "field", "says"),
    [
        ({"step": "9999"}, 422, "step", "must be an integer in 0.."),
        ({"step": "-1"}, 422, "step", "must be an integer in 0..len(steps)-1"),
        ({"step": "x"}, 422, "step", "got 'x'"),
        ({}, 422, "step", "must be an integer"),
        ({"step": "0", "n": "0"}, 422, "n", "must be an integer in"),
        ({"step": "0", "bogus": "1"}, 422, "bogus", "unknown parameter"),
    ],
)
def test_bad_queries_are_one_line_4xx(server, extra, status, field, says):
    assert get(url(server, "trace"))[0] == 200  # the trace is cached: only the step is wrong
    got, _, body = get(url(server, "trace/arrays", **extra))
    assert got == status, body
    said = json.loads(body)
    assert said["field"] == field and says in said["detail"] and "\n" not in said["detail"]


def test_step_arrays_follow_references_within_a_document():
    from flashviz import trace as fv_trace

    doc = json.loads(fv_trace("fa2", 16, 4, 4, 4, seed=3).to_json(compact=True))
    plain = decode_doc(json.loads(json.dumps(doc)))
    refs = 0
    for k in range(len(doc["steps"])):
        got = step_arrays(doc, k)
        for name, group in holders(doc["steps"][k]):
            mine = got[name] if "/" not in name else got["substeps"][int(name.split("/")[1])]
            want = dict(holders(plain["steps"][k]))[name]
            for key, v in group.items():
                if is_compact(v):
                    refs += "ref" in v
                    values = decode_doc({"inputs": {"x": mine[key]}})["inputs"]["x"]
                    np.testing.assert_array_equal(values, want[key])
    assert refs > 0  # references were there to follow


def test_on_demand_trace_is_the_full_one_without_the_steps_arrays(server):
    full = json.loads(get(url(server, "trace"))[2])
    status, _, body = get(url(server, "trace", arrays="on-demand"))
    assert status == 200
    part = json.loads(body)
    plain = decode_doc(json.loads(json.dumps(full)))
    assert part["inputs"] == full["inputs"] and part["outputs"] == full["outputs"]
    assert {k: v for k, v in part.items() if k != "steps"} == {k: v for k, v in full.items() if k != "steps"}
    stubs = 0
    for k, step in enumerate(part["steps"]):
        for name, group in holders(step):
            want = dict(holders(plain["steps"][k]))[name]
            for key, v in group.items():
                if isinstance(want[key], np.ndarray):
                    assert v["on_demand"] is True and "base64" not in v and "ref" not in v
                    assert v["shape"] == list(want[key].shape)
                    finite = want[key][np.isfinite(want[key])]
                    span = (float(finite.min()), float(finite.max())) if finite.size else (None, None)
                    assert (v["min"], v["max"]) == span  # None: no finite value (mi = -inf at load_q)
                    stubs += 1
                else:
                    assert v == want[key]
        assert {k2: v2 for k2, v2 in step.items() if k2 not in ("sram", "carries", "substeps")} == {
            k2: v2 for k2, v2 in full["steps"][k].items() if k2 not in ("sram", "carries", "substeps")
        }
    assert stubs > 20


def test_arrays_parameter_is_checked(server):
    status, _, body = get(url(server, "trace", arrays="some"))
    assert status == 422
    said = json.loads(body)
    assert said["field"] == "arrays" and "all or on-demand" in said["detail"]
