"""GET /api/compare (the viewer's comparison view) and the algorithm list in GET /api/limits."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from flashviz import server
from flashviz.algos import REGISTRY
from flashviz.model.config import Config
from flashviz.reports.compare import compare
from flashviz.tracing.build import make_trace

RIVALS = [name for name, a in REGISTRY.items() if a.rival]  # compare's algorithms (the ring: `compare --ring P`)


@pytest.fixture(scope="module")
def client():
    return TestClient(server.create_app())


def test_limits_list_every_algorithm(client):
    algos = client.get("/api/limits").json()["algos"]
    assert [a["name"] for a in algos] == list(REGISTRY)
    for a in algos:
        assert a["title"] == REGISTRY[a["name"]].title
        assert a["causal"] is REGISTRY[a["name"]].causal
        assert a["pass"] in ("forward", "backward")
    assert {a["name"]: a["max_n"] for a in algos}["standard"] == 4096
    # the page asks for /api/profile only when there is one
    assert client.get("/api/limits").json()["profile"] is False
    with_profile = TestClient(server.create_app(profile={"schema": "flashviz.profile/1"}))
    assert with_profile.get("/api/limits").json()["profile"] is True


def test_compare_is_flashviz_compare_plus_what_the_page_needs(client):
    r = client.get("/api/compare", params={"n": 64, "d": 16, "br": 16, "bc": 16})
    assert r.status_code == 200, r.text
    doc = r.json()
    want = compare(64, 16, 16, 16, False)
    for name, entry in want["algorithms"].items():
        got = doc["algorithms"][name]
        if not entry["supported"]:  # a kernel that does not run these tiles (fa2-triton at D=16) says why
            assert got["supported"] is False and got["why"] == entry["why"] and "tensors" not in got
            continue
        assert got["tensors"] == entry["tensors"]
        assert got["total"] == entry["total"]
        assert got["sram_bytes"] == entry["sram_bytes"]
        assert got["steps"] == entry["steps"]
        assert got["saved_bytes"] == 0
        assert got["noncausal_bytes"] == entry["total"]["bytes"]
    assert doc["config"] == want["config"]


def test_compare_curves_end_at_the_engines_totals(client):
    query = {"n": 10, "d": 4, "br": 4, "bc": 3, "causal": "true"}
    doc = client.get("/api/compare", params=query).json()
    assert doc["curves"] is None  # the closed forms only: the engine's curves are GET /api/curves
    curves = client.get("/api/curves", params=query).json()
    assert set(curves) == set(RIVALS)
    for name in RIVALS:
        curve = curves[name]
        if not doc["algorithms"][name]["supported"]:  # tiles its kernel does not run: no engine run either
            assert "skipped" in curve
            continue
        trace = make_trace(Config(algo=name, n=10, d=4, br=4, bc=3, causal=True, record=()))
        assert curve["phases"] == len(trace.phases)
        assert curve["phase"][-1] == len(trace.phases) - 1
        assert curve["read"][-1] == sum(t["read"] for t in trace.hbm.values())
        assert curve["written"][-1] == sum(t["written"] for t in trace.hbm.values())
        assert set(curve["tensors"]) == set(trace.tensors)
        # cumulative: never goes down
        assert all(a <= b for a, b in zip(curve["read"], curve["read"][1:], strict=False))
        # and the curve's last point is the model's total, in elements
        total = doc["algorithms"][name]["total"]
        assert curve["read"][-1] == total["read"] and curve["written"][-1] == total["written"]


def test_compare_states_what_causal_saves(client):
    doc = client.get("/api/compare", params={"n": 256, "d": 64, "br": 64, "bc": 64, "causal": "1"}).json()
    plain = compare(256, 64, 64, 64, False)["algorithms"]
    for name, entry in doc["algorithms"].items():
        if not entry["supported"]:  # a kernel that does not run these tiles (fa3 at Br = 64) saves nothing here
            assert entry["noncausal_bytes"] is None and entry["saved_bytes"] is None and entry["why"]
            continue
        assert entry["noncausal_bytes"] == plain[name]["total"]["bytes"]
        assert entry["saved_bytes"] == plain[name]["total"]["bytes"] - entry["total"]["bytes"]
        assert entry["saved_bytes"] > 0


def test_compare_sweep_is_the_closed_forms_over_n(client):
    doc = client.get("/api/compare", params={"n": 1024, "d": 64, "br": 64, "bc": 64}).json()
    sweep = doc["sweep"]
    assert sweep["n"] == [2**k for k in range(6, 17)]
    assert set(sweep["bytes"]) == {
        "standard",
        "fa1",
        "fa2",
        "fa2-triton",
        "fa2-splitkv",
    }  # the forwards that run these tiles
    for name, series in sweep["bytes"].items():
        for n, b in zip(sweep["n"], series, strict=True):
            assert b == compare(n, 64, 64, 64, False)["algorithms"][name]["total"]["bytes"]
    # the headline: standard's N² terms overtake, FA2 moves least at every N
    by = sweep["bytes"]
    assert all(f2 < f1 < st for f2, f1, st in zip(by["fa2"], by["fa1"], by["standard"], strict=True))


def test_compare_past_the_engines_bounds_still_answers_from_the_closed_forms(client):
    doc = client.get("/api/compare", params={"n": 65536, "d": 64, "br": 64, "bc": 64}).json()
    assert doc["algorithms"]["fa2"]["total"]["bytes"] > 0
    curves = client.get("/api/curves", params={"n": 65536, "d": 64, "br": 64, "bc": 64}).json()
    for name in RIVALS:
        assert "n:" in curves[name]["skipped"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("n=0", "n"),
        ("n=abc", "n"),
        ("d=-1", "d"),
        ("br=99999", "br"),
        ("bc=1.5", "bc"),
        ("causal=maybe", "causal"),
        ("algo=fa2", "algo"),
        ("seed=1", "seed"),
    ],
)
def test_compare_bad_params_422_naming_the_field(client, query, field):
    r = client.get(f"/api/compare?{query}")
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["field"] == field
    assert body["detail"].startswith(f"{field}:")


@pytest.mark.parametrize("value", ["%C2%B2", "%2B-5", "--5", "%E2%91%A0", "%D9%A5", "%1F5", "5%1F", "1_0", "5.0"])
def test_compare_takes_only_ascii_integers(client, value):
    """Item 7: `isdigit()` accepted ², +-5, --5 and ①, which `int()` then refused: a 500."""
    for name in ("n", "d", "br", "bc"):
        r = client.get(f"/api/compare?{name}={value}")
        assert r.status_code == 422, (name, value, r.text)
        body = r.json()
        assert body["field"] == name and body["detail"].startswith(f"{name}: must be an integer in 1..")
        assert "\n" not in body["detail"]


def test_compare_counts_past_64_bits():
    """Item 8: at N=876706528 standard attention's byte counts pass 2^64 (orjson refused them: a 500)."""
    r = TestClient(server.create_app()).get("/api/compare?n=876706528")
    assert r.status_code == 200, r.text
    doc = r.json()  # the stdlib's json reads ints of any size
    want = compare(876706528, 4, 4, 4, False)["algorithms"]["standard"]["total"]["bytes"]
    assert want > 2**64 and doc["algorithms"]["standard"]["total"]["bytes"] == want
    assert "skipped" in TestClient(server.create_app()).get("/api/curves?n=876706528").json()["fa2"]


def test_compare_blank_fields_mean_the_defaults(client):
    doc = client.get("/api/compare?n=&d=&br=&bc=&causal=").json()
    assert doc["config"] == compare(8, 4, 4, 4, False)["config"]


def engine_refuses(monkeypatch):
    """Every way into an engine raises: each algorithm's executor, the tracer and the phase curves."""

    def refuse(*args, **kwargs):
        raise AssertionError("the engine ran")

    for algo in REGISTRY.values():
        monkeypatch.setattr(algo.engine, "execute", refuse)
    monkeypatch.setattr("flashviz.tracing.build.make_trace", refuse)
    monkeypatch.setattr("flashviz.reports.compare_api.phase_curve", refuse)


@pytest.mark.parametrize(
    "query",
    ["n=4096&d=64&br=128&bc=11", "n=1024&d=64&br=64&bc=64&causal=true", "n=10&d=4&br=4&bc=3", "n=65536&d=128"],
)
def test_compare_runs_no_engine(monkeypatch, query):
    """Issue 17 item 10: /api/compare ran the engine for its phase curves (6.1 s at N=4096, D=64, Br=128, Bc=11,
    where `flashviz compare` takes 0.25 s). Now it answers from the closed forms with every engine refusing to run,
    and its numbers are `flashviz compare`'s."""
    engine_refuses(monkeypatch)
    client = TestClient(server.create_app())
    r = client.get(f"/api/compare?{query}")
    assert r.status_code == 200, r.text
    doc = r.json()
    cfg = doc["config"]
    want = compare(cfg["n"], cfg["d"], cfg["br"], cfg["bc"], cfg["causal"])
    for name, entry in want["algorithms"].items():
        assert doc["algorithms"][name].get("total") == entry.get("total"), name
    assert doc["curves"] is None


def test_compare_answers_while_the_trace_queue_is_full(monkeypatch):
    """Issue 17 item 10: compares queued with traces, so 59 of 67 got 503 under load. With the gate full (a trace
    and the engine's curves are refused), /api/compare still answers."""
    engine_refuses(monkeypatch)
    app = server.create_app()
    gate = app.state.gate
    gate.waiting = gate.max_waiting  # as if that many requests waited for the engine
    client = TestClient(app)
    assert client.get("/api/trace?seed=7").status_code == 503
    assert client.get("/api/curves?n=64").status_code == 503
    r = client.get("/api/compare?n=4096&d=64&br=128&bc=11")
    assert r.status_code == 200, r.text
    assert r.json()["algorithms"]["fa2"]["total"] == compare(4096, 64, 128, 11, False)["algorithms"]["fa2"]["total"]
