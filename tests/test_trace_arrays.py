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
    assert said["field"] == "arrays" and "all, on-demand or auto" in said["detail"]


def test_several_steps_at_once_equal_each_step_alone(server):
    assert get(url(server, "trace"))[0] == 200
    asked = [5, 0, 3]
    status, _, body = get(url(server, "trace/arrays", steps=",".join(map(str, asked))))
    assert status == 200, body
    got = json.loads(body)["steps"]
    assert [g["step"] for g in got] == asked
    for k, g in zip(asked, got, strict=True):
        assert g == json.loads(get(url(server, "trace/arrays", step=str(k)))[2])


@pytest.mark.parametrize(
    ("extra", "field", "says"),
    [
        ({"steps": "1,1"}, "steps", "a list K,K,... of at most 256 different steps"),
        ({"steps": "1,x"}, "steps", "got '1,x'"),
        ({"steps": ",".join(map(str, range(257)))}, "steps", "at most 256"),
        ({"steps": "0,9999"}, "steps", "must be an integer in 0.."),
        ({"steps": "0", "step": "1"}, "steps", "steps: give step or steps, not both"),  # said "or give steps="
    ],
)
def test_bad_step_lists_are_one_line_422(server, extra, field, says):
    assert get(url(server, "trace"))[0] == 200
    got, _, body = get(url(server, "trace/arrays", **extra))
    assert got == 422, body
    said = json.loads(body)
    assert said["field"] == field and says in said["detail"] and "\n" not in said["detail"]


def test_auto_sends_a_small_trace_whole(server):
    whole = json.loads(get(url(server, "trace"))[2])
    status, _, body = get(url(server, "trace", arrays="auto"))
    assert status == 200
    assert json.loads(body) == whole


def test_auto_leaves_a_large_traces_step_arrays_out_and_serves_them(server):
    big = {"n": "2048", "d": "32", "br": "64", "bc": "64", "block": ""}  # its steps hold 2.2 MB of values
    status, _, body = get(url(server, "trace", arrays="auto", **big))
    assert status == 200
    part = json.loads(body)
    stubs = [v for s in part["steps"] for name, g in holders(s) for v in g.values() if isinstance(v, dict)]
    assert stubs and all(v.get("on_demand") is True for v in stubs)
    # the arrays of a step come from the trace the server made for it: the engine does not run again
    k = len(part["steps"]) - 2
    status, _, one = get(url(server, "trace/arrays", step=str(k), **big))
    assert status == 200, one
    got = json.loads(one)
    for name, group in holders(part["steps"][k]):
        answer = got[name] if "/" not in name else got["substeps"][int(name.split("/")[1])]
        for key, v in group.items():
            if v.get("on_demand"):
                values = decode_doc({"inputs": {"x": answer[key]}})["inputs"]["x"]
                assert list(values.shape) == v["shape"]
                finite = values[np.isfinite(values)]
                span = (float(finite.min()), float(finite.max())) if finite.size else (None, None)
                assert (v["min"], v["max"]) == span


def test_skeleton_of_a_trace_is_the_skeleton_of_its_document():
    """on_demand.skeleton (made from the Trace, as the server does) is trace_codec.skeleton of the full compact
    document, but for the dtype a stub says: the one the array is stored as (bfloat16 where that is lossless)."""
    from flashviz import trace as fv_trace
    from flashviz.tracing import on_demand
    from flashviz.tracing.codec import encode_array, skeleton

    seed = int(np.random.default_rng().integers(0, 2**31))
    t = fv_trace("fa2", 40, 8, 8, 4, seed=seed, causal=True)
    full = json.loads(t.to_json(compact=True))
    want = skeleton(json.loads(json.dumps(full)))
    got = json.loads(json.dumps(on_demand.skeleton(t)))
    assert {k: v for k, v in got.items() if k != "steps"} == {k: v for k, v in want.items() if k != "steps"}
    plain = decode_doc(json.loads(json.dumps(full)))
    for k, (a, b) in enumerate(zip(got["steps"], want["steps"], strict=True)):
        for (name, ga), (_, gb) in zip(holders(a), holders(b), strict=True):
            values = dict(holders(plain["steps"][k]))[name]
            for key in gb:
                if isinstance(gb[key], dict) and gb[key].get("on_demand"):
                    assert {**ga[key], "dtype": None} == {**gb[key], "dtype": None}
                    assert ga[key]["dtype"] == encode_array(values[key])["dtype"]
                else:
                    assert ga[key] == gb[key]
        strip = ("sram", "carries", "substeps")
        assert {x: y for x, y in a.items() if x not in strip} == {x: y for x, y in b.items() if x not in strip}


def test_arrays_of_a_trace_no_longer_held_come_back_after_the_trace_is_asked_again(monkeypatch):
    """The page's way back (api.ts fetchStepArrays): the server dropped the Trace an answer without arrays came from, so
    /api/trace/arrays is a 404; asking /api/trace?arrays=auto again runs the engine again (not the cached skeleton:
    it would leave the arrays out of reach), and then the arrays come."""
    from fastapi.testclient import TestClient

    from flashviz import server

    client = TestClient(server.create_app())
    big = {**QUERY, "n": "2048", "d": "32", "br": "64", "bc": "64", "block": ""}
    runs = []
    real = server.traces.make
    monkeypatch.setattr(server.traces, "make", lambda cfg: runs.append(cfg) or real(cfg))
    first = client.get("/api/trace", params={**big, "arrays": "auto"})
    assert first.status_code == 200 and len(runs) == 1
    with server.traces.lock:  # the server's memory moved on to other launches
        server.traces.items.clear()
        server.traces.sizes.clear()
    gone = client.get("/api/trace/arrays", params={**big, "steps": "3,4"})
    assert gone.status_code == 404 and gone.json()["field"] == "query"
    again = client.get("/api/trace", params={**big, "arrays": "auto"})
    assert again.status_code == 200 and len(runs) == 2 and again.content == first.content
    back = client.get("/api/trace/arrays", params={**big, "steps": "3,4"})
    assert back.status_code == 200 and [s["step"] for s in back.json()["steps"]] == [3, 4]
