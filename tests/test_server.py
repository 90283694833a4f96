"""The web API and the viewer's static files, through FastAPI's TestClient (no network), and the engine's
queue on a real server (uvicorn in a thread, raw sockets that leave)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import orjson
import pytest
from fastapi.testclient import TestClient

from flashviz import server
from flashviz.algos import resolve
from flashviz.model.config import API_LIMITS, Config
from flashviz.server import gate as gate_module
from flashviz.tracing.build import make_trace
from flashviz.tracing.codec import to_plain
from serving import answer, get, in_thread, send, wait_for


@pytest.fixture(scope="module")
def client():
    return TestClient(server.create_app())


@pytest.fixture
def bundle(tmp_path, monkeypatch):
    """A stand-in viewer bundle in tmp/static, with a secret file beside it that must never be served."""
    static = tmp_path / "static"
    (static / "assets").mkdir(parents=True)
    (static / "index.html").write_text("<!doctype html><title>flashviz</title>")
    (static / "assets" / "app.js").write_text("console.log('flashviz')")
    (tmp_path / "secret.txt").write_text("SECRET-OUTSIDE-THE-BUNDLE")
    monkeypatch.setattr(server, "static_dir", lambda: static)
    return TestClient(server.create_app())


def test_default_trace_is_the_seeds_example(client):
    r = client.get("/api/trace")
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    got, want = to_plain(orjson.loads(r.content)), orjson.loads(make_trace(Config()).to_json())
    assert got["outputs"] == want["outputs"]
    assert got["hbm"] == want["hbm"]
    assert got == want
    assert (got["config"]["n"], got["config"]["d"], got["config"]["br"], got["config"]["bc"]) == (8, 4, 4, 4)


def test_config_params_round_trip(client):
    r = client.get("/api/trace", params={"algo": "fa2", "n": 10, "d": 8, "br": 4, "bc": 3, "seed": 7, "scale": 0.5})
    assert r.status_code == 200, r.text
    config = r.json()["config"]
    assert {k: config[k] for k in ("algo", "n", "d", "br", "bc", "seed", "scale")} == {
        "algo": "fa2",
        "n": 10,
        "d": 8,
        "br": 4,
        "bc": 3,
        "seed": 7,
        "scale": 0.5,
    }
    assert (config["tr"], config["tc"]) == (3, 4)
    assert r.json()["reference"]["ok"]

    one = client.get("/api/trace", params={"n": 10, "br": 4, "block": 1}).json()
    assert one["config"]["recorded_blocks"] == [1]
    assert {s["block"] for s in one["steps"]} == {1}
    causal = client.get("/api/trace", params={"n": 8, "causal": "true"}).json()
    assert causal["config"]["causal"] is True
    assert client.get("/api/trace?causal=0").json()["config"]["causal"] is False
    # empty optional parameters mean their defaults (a form with blank fields)
    blank = client.get("/api/trace?scale=&block=").json()["config"]
    assert blank["scale"] == pytest.approx(0.5) and blank["recorded_blocks"] == [0, 1]


@pytest.mark.parametrize(
    ("query", "field", "says"),
    [
        ("n=0", "n", "1..4096"),
        ("n=abc", "n", "1..4096"),
        ("n=", "n", "1..4096"),
        ("n=4097", "n", "1..4096"),
        ("n=1e3", "n", "1..4096"),
        ("n=99999999999999999999999999999999999999999", "n", "1..4096"),
        ("d=-1", "d", "1..256"),
        ("d=257", "d", "1..256"),
        ("br=1.5", "br", "1..256"),
        ("bc=0", "bc", "1..256"),
        ("seed=-1", "seed", "0..4294967295"),
        ("seed=4294967296", "seed", "0..4294967295"),
        ("algo=nope", "algo", "fa2"),
        ("scale=nan", "scale", "|scale|"),
        ("scale=inf", "scale", "|scale|"),
        ("scale=0", "scale", "|scale|"),
        ("scale=lots", "scale", "|scale|"),
        ("block=2", "block", "0..1"),
        ("block=-1", "block", "0..1"),
        ("block=x", "block", "block"),
        ("causal=maybe", "causal", "true or false"),
        ("nn=8", "nn", "accepted"),
        # the API's bounds on work: N*N*D, Tr*Tc and the size of the JSON
        ("n=4096&d=128", "n", "N*N*D"),
        ("n=4096&br=16&bc=16", "br", "Tr*Tc"),
        ("n=2048&d=256&br=256&bc=256", "block", "block=0"),
    ],
)
def test_bad_params_answer_422_naming_the_field(client, query, field, says):
    r = client.get(f"/api/trace?{query}")
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["field"] == field
    assert body["detail"].startswith(f"{field}: ")
    assert says in body["detail"]
    assert "\n" not in body["detail"] and "Traceback" not in r.text


def test_limits(client):
    limits = client.get("/api/limits").json()
    assert {k: limits[k] for k in ("n", "d", "br", "bc", "seed", "scale")} == {
        "n": [1, 4096],
        "d": [1, 256],
        "br": [1, 256],
        "bc": [1, 256],
        "seed": [0, 4294967295],
        "scale": [1e-6, 1e6],
    }
    assert limits["n"] == list(API_LIMITS["n"])


def test_largest_allowed_trace_answers(client):
    """Its time is measured in bench/load_bench.py, not here."""
    r = client.get("/api/trace?n=4096&d=64&br=64&bc=64")
    assert r.status_code == 200
    assert r.json()["config"]["n"] == 4096 and r.json()["reference"]["ok"]


def test_profile_is_passed_through():
    assert TestClient(server.create_app()).get("/api/profile").status_code == 404
    profile = {"device": "NVIDIA H200", "runs": [{"n": 4096, "ms": 0.5}]}
    assert TestClient(server.create_app(profile)).get("/api/profile").json() == profile


def test_unknown_api_is_a_json_404(client):
    r = client.get("/api/nope")
    assert r.status_code == 404 and "nope" in r.json()["detail"]


def test_missing_bundle_answers_503_with_how_to_build(tmp_path, monkeypatch):
    monkeypatch.setattr(server, "static_dir", lambda: tmp_path / "static")
    c = TestClient(server.create_app())
    r = c.get("/")
    assert r.status_code == 503
    assert "npm ci && npm run build" in r.text and "pip install" in r.text
    assert c.get("/api/trace").status_code == 200  # the API still works


def test_bundle_is_served(bundle):
    r = bundle.get("/")
    assert r.status_code == 200 and "<title>flashviz</title>" in r.text
    assert bundle.get("/assets/app.js").text == "console.log('flashviz')"
    assert bundle.get("/assets/").status_code == 404  # no directory listing
    assert bundle.get("/api/trace").status_code == 200  # the API is not shadowed by the static mount


@pytest.mark.parametrize(
    "path",
    [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/..%2fsecret.txt",
        "/%2e%2e%2fsecret.txt",
        "/assets/..%2f..%2fsecret.txt",
        "/assets/%2e%2e/%2e%2e/secret.txt",
    ],
)
def test_no_path_escape(bundle, path):
    r = bundle.get(path)
    assert "SECRET" not in r.text
    assert r.status_code in (400, 404)


def test_security_headers_on_every_response(client, bundle):
    for c, path in [(client, "/api/trace"), (client, "/api/trace?n=0"), (client, "/"), (bundle, "/")]:
        csp = c.get(path).headers["content-security-policy"]
        assert "default-src 'self'" in csp
        assert "style-src 'self' 'unsafe-inline'" in csp
        assert "font-src 'self' data:" in csp and "img-src 'self' data:" in csp
        assert "connect-src 'self'" in csp and "http" not in csp


def test_foreign_host_header_is_refused():
    c = TestClient(server.create_app(allowed_hosts=server.LOOPBACK_NAMES))
    assert c.get("/api/limits", headers={"host": "evil.example:8000"}).status_code == 421
    assert c.get("/api/limits", headers={"host": "127.0.0.1:8000"}).status_code == 200
    assert c.get("/api/limits", headers={"host": "[::1]:8000"}).status_code == 200
    assert c.get("/api/limits", headers={"host": "localhost"}).status_code == 200


class Held:
    """A stand-in for the engine that holds every run until `release` is set, then runs `then(cfg)`."""

    def __init__(self, then=lambda cfg: b'{"seed": %d}' % cfg.seed) -> None:
        self.release = threading.Event()
        self.then = then
        self.calls: list[int] = []
        self.running = 0
        self.peak = 0
        self.lock = threading.Lock()

    def __call__(self, cfg: Config) -> bytes:
        with self.lock:
            self.calls.append(cfg.seed)
            self.running += 1
            self.peak = max(self.peak, self.running)
        try:
            assert self.release.wait(timeout=300), "never released"
            return self.then(cfg)
        finally:
            with self.lock:
                self.running -= 1


def test_at_most_two_traces_compute_at_once_and_the_loop_stays_free(monkeypatch):
    """Item 3: states, not times. While two runs are held (the gate full), /api/limits answers; a repeat of a
    request that is running or queued is computed once (it waits for the answer, then reads it from the cache)."""
    held = Held()
    monkeypatch.setattr(server, "compute_json", held)
    app = server.create_app()

    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            gate = app.state.gate
            traces = [asyncio.create_task(c.get(f"/api/trace?seed={s}")) for s in (1, 2, 3, 4)]
            # the gate admits a request before its worker thread enters the engine: wait for both states
            while not (gate.running == 2 and gate.waiting == 2 and held.running == 2):
                await asyncio.sleep(0.01)
            # the repeats queue behind 3 and 4 (tasks reach the gate in no fixed order: sent once the first are in)
            traces += [asyncio.create_task(c.get(f"/api/trace?seed={s}")) for s in (1, 2)]
            while gate.waiting != 4:
                await asyncio.sleep(0.01)
            limits = await c.get("/api/limits")  # answered while the gate is full
            running_then = held.running
            held.release.set()
            done = await asyncio.gather(*traces)
            again = await c.get("/api/trace?seed=3")  # from the cache
            return limits, running_then, done, again

    # a thread of its own: the browser tests' Playwright (sync API) keeps an event loop on the main thread
    with ThreadPoolExecutor(1) as pool:
        limits, running_then, done, again = pool.submit(asyncio.run, go()).result()
    assert limits.status_code == 200 and running_then == 2
    assert [r.json()["seed"] for r in done] == [1, 2, 3, 4, 1, 2]
    assert held.peak == 2
    assert sorted(held.calls) == [1, 2, 3, 4]  # repeats waited and were served from the cache
    assert again.json() == {"seed": 3} and len(held.calls) == 4


def test_an_abandoned_trace_stops_at_the_engines_next_step(monkeypatch):
    """Item 17: the client leaves while its trace is on the engine; the run stops (Cancelled from the engine's
    step loop), is not cached, and the slot serves the next request."""
    held = Held(then=server.compute_json)  # the real engine, once released
    monkeypatch.setattr(server, "compute_json", held)
    app = server.create_app()
    gate = app.state.gate
    with in_thread(app) as (url, port):
        leaving = send(port, "/api/trace?n=64&d=16&seed=1")
        # on the engine: admitted by the gate and inside the engine's call (the gate counts a run before its worker
        # thread enters the call, and a run given up before that never enters it)
        wait_for(lambda: gate.running == 1 and held.calls == [1], "the trace is on the engine")
        leaving.close()
        wait_for(lambda: gate.disconnected == 1, "the server saw the client leave")
        held.release.set()  # the engine starts now, for a client that has gone
        wait_for(lambda: gate.abandoned == 1, "the request was given up")
        assert gate.cancelled == 1 and gate.running == 0
        assert gate.cache.get(resolve("fa2").api_validated(Config(n=64, d=16, seed=1))) is None
        status, _, body = get(url + "/api/trace?n=64&d=16&seed=2")
        assert status == 200 and json.loads(body)["reference"]["ok"]
        assert gate.cancelled == 1 and held.calls == [1, 2]


def test_the_queue_is_bounded_and_clients_that_leave_it_start_no_work(monkeypatch):
    """Item 17: two runs and WAITING queued requests fill the gate: one more (the comparison's engine curves too) is
    503 with Retry-After at once, /api/limits and /api/compare (closed forms) still answer, and queued requests whose
    clients leave are dropped."""
    held = Held()
    monkeypatch.setattr(server, "compute_json", held)
    app = server.create_app()
    gate = app.state.gate
    with in_thread(app) as (url, port):
        running = [send(port, f"/api/trace?seed={s}") for s in (1, 2)]
        wait_for(lambda: gate.running == 2, "two runs on the engine")
        queued = [send(port, f"/api/trace?seed={s}") for s in range(10, 10 + gate_module.WAITING)]
        wait_for(lambda: gate.waiting == gate_module.WAITING, "the queue is full")
        for path in ("/api/curves?n=64", "/api/trace?seed=99"):
            status, headers, body = get(url + path)
            assert status == 503 and headers["retry-after"] == str(gate_module.RETRY_AFTER_S)
            assert b"\n" not in body and json.loads(body)["detail"].startswith("busy")
        status, _, body = get(url + "/api/limits")
        assert status == 200 and json.loads(body)["n"] == [1, 4096]
        status, _, body = get(url + "/api/compare?n=4096&d=64&br=128&bc=11")  # issue 17 item 10: not queued
        assert status == 200 and json.loads(body)["algorithms"]["fa2"]["total"]["bytes"] > 0
        for sock in queued:
            sock.close()
        wait_for(lambda: gate.waiting == 0, "the clients that left are out of the queue")
        assert gate.disconnected == gate_module.WAITING
        held.release.set()
        assert [answer(sock) for sock in running] == [(200, b'{"seed": 1}'), (200, b'{"seed": 2}')]
        wait_for(lambda: gate.running == 0, "the runs ended")
        assert sorted(held.calls) == [1, 2]  # nothing was started for a client that had gone
        assert gate.busy == 2 and gate.abandoned == gate_module.WAITING


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"sec-fetch-site": "cross-site"}, 403),
        ({"sec-fetch-site": "same-site"}, 403),  # another port of 127.0.0.1 is the same site
        ({"origin": "http://127.0.0.1:9"}, 403),
        ({"origin": "null"}, 403),
        ({"sec-fetch-site": "same-origin"}, 200),
        ({"sec-fetch-site": "none"}, 200),  # a URL typed into the address bar
        ({"origin": "http://testserver"}, 200),
        ({}, 200),  # curl, scripts
    ],
)
def test_the_api_refuses_other_origins(monkeypatch, headers, status):
    """Item 17: a page elsewhere (even `<img>` tags on another loopback port) cannot make the server compute."""
    held = Held()
    held.release.set()
    monkeypatch.setattr(server, "compute_json", held)
    c = TestClient(server.create_app())
    r = c.get("/api/trace?seed=5", headers=headers)
    assert r.status_code == status, r.text
    assert held.calls == ([5] if status == 200 else [])
    assert "content-security-policy" in r.headers
    if status == 403:
        assert "cross-origin" in r.json()["detail"] and "\n" not in r.text
    assert c.get("/", headers=headers).status_code in (200, 503)  # the page itself loads anywhere


def test_a_500_is_one_line_of_json_with_the_security_headers(monkeypatch):
    """Item 16: an unexpected exception still gets the CSP and friends, and no traceback."""

    def broken(cfg):
        raise RuntimeError("a bug\nwith a second line")

    monkeypatch.setattr(server, "compute_json", broken)
    r = TestClient(server.create_app(), raise_server_exceptions=False).get("/api/trace?seed=3")
    assert r.status_code == 500
    for name, value in server.SECURITY_HEADERS:
        assert r.headers[name.decode()] == value.decode()
    assert r.headers["content-type"] == "application/json"
    assert "\n" not in r.text and "Traceback" not in r.text and "second line" not in r.text
    assert r.json()["detail"].startswith("internal error (RuntimeError)")


@pytest.mark.parametrize("byte", ["%1C", "%1D", "%1E", "%1F", "%0B", "%0C", "%C2%A0", "%E2%80%83"])
def test_control_and_unicode_space_bytes_are_a_422(client, byte):
    """Item 6: `strip()` removed bytes 0x1c-0x1f that `int()` then refused: a 500."""
    for query in (f"n={byte}5", f"n=5{byte}", f"seed={byte}1", f"block={byte}0", f"scale={byte}0.5"):
        r = client.get(f"/api/trace?{query}")
        assert r.status_code == 422, (query, r.text)
        field = query.split("=")[0]
        assert r.json()["field"] == field and r.json()["detail"].startswith(f"{field}: must be ")


@pytest.mark.parametrize("value", ["%C2%B2", "%E2%91%A0", "%D9%A5", "%EF%BC%95", "%2B-5", "--5", "5.0", "1_0", "0x5"])
def test_only_ascii_integers_are_integers(client, value):
    """Item 7 (here for /api/trace): `isdigit()` took ², ①, Arabic-Indic and full-width digits."""
    r = client.get(f"/api/trace?n={value}")
    assert r.status_code == 422, r.text
    assert r.json()["field"] == "n" and "1..4096" in r.json()["detail"]


def test_openapi_schema_has_typed_bounded_parameters(client):
    doc = client.get("/api/openapi.json").json()
    assert set(doc["paths"]) == {
        "/api/trace",
        "/api/trace/arrays",
        "/api/compare",
        "/api/curves",
        "/api/limits",
        "/api/profile",
        "/api/ladder",
    }
    trace = {p["name"]: p["schema"] for p in doc["paths"]["/api/trace"]["get"]["parameters"]}
    options = ["group", "nk", "window", "softcap", "seqlens", "seqlens_k"]  # issue 22: the options of real models
    ring = ["devices", "layout"]  # ring attention's own fields
    assert list(trace) == ["algo", "n", "d", "br", "bc", "seed", "scale", "causal", *ring, "block", *options, "arrays"]
    assert trace["layout"]["enum"] == ["zigzag", "contiguous"] and (
        trace["devices"]["minimum"],
        trace["devices"]["maximum"],
    ) == (2, 8)
    assert (trace["group"]["minimum"], trace["group"]["maximum"], trace["nk"]["maximum"]) == (1, 8, 16384)
    for name, (lo, hi) in API_LIMITS.items():
        assert (trace[name]["type"], trace[name]["minimum"], trace[name]["maximum"]) == ("integer", lo, hi)
    assert trace["algo"]["enum"] == [
        "standard",
        "fa1",
        "fa2",
        "fa2-backward",
        "fa2-triton",
        "fa3",
        "fa2-splitkv",
        "ring",
    ]
    assert trace["causal"]["type"] == "boolean" and trace["scale"]["type"] == "number"
    arrays = {p["name"]: p["schema"] for p in doc["paths"]["/api/trace/arrays"]["get"]["parameters"]}
    assert list(arrays) == [*list(trace)[:-1], "step", "steps"] and arrays["step"]["minimum"] == 0
    assert arrays["steps"]["type"] == "string" and arrays["steps"]["pattern"].startswith("^[0-9]")
    assert trace["arrays"]["enum"] == ["all", "on-demand", "auto"]
    compare = {p["name"]: p["schema"] for p in doc["paths"]["/api/compare"]["get"]["parameters"]}
    assert compare["n"]["maximum"] == 2**31 - 1 and compare["d"]["maximum"] == 4096
    errors = doc["paths"]["/api/trace"]["get"]["responses"]["422"]["content"]["application/json"]["schema"]
    assert errors["required"] == ["detail", "field"]


def test_the_built_viewer_is_served_with_its_assets(client):
    """After `pip install` (the build hook ran npm), `/` is the real page and everything it loads is local."""
    if not (server.static_dir() / "index.html").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"the viewer bundle was not built into {server.static_dir()} (the install's build hook)")
        pytest.skip("the viewer is not built here (FLASHVIZ_SKIP_WEB_BUILD=1, or installed before web/ existed)")
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert any(a.endswith(".js") for a in assets)
    for asset in assets:
        if asset.startswith("data:"):
            continue
        assert "://" not in asset and not asset.startswith("//"), f"{asset} would leave the local server"
        assert client.get("/" + asset.removeprefix("./").lstrip("/")).status_code == 200, asset


@pytest.mark.parametrize(
    "host",
    [
        "[::1]evil.example.com",
        "[::1].evil.example.com:80",
        "[::1]:80evil",
        "[::1]x:80",
        "127.0.0.1:80:80",
        "127.0.0.1 evil",
        "localhost:abc",
        "[evil.example.com]",
        "[::1",
        "",
    ],
)
def test_malformed_host_header_is_refused(host):
    """Issue 17 item 16: `[::1]evil.example.com` and `[::1].evil.example.com:80` were read as `::1` (200); the Host
    header is parsed whole (a host and an optional port) and anything else is a 400 naming Host."""
    c = TestClient(server.create_app(allowed_hosts=server.LOOPBACK_NAMES))
    r = c.get("/api/limits", headers={"host": host})
    assert r.status_code == 400, (host, r.status_code, r.text)
    assert r.json()["field"] == "Host" and "\n" not in r.json()["detail"]


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.0.0.1:8000",
        "localhost",
        "localhost:8000",
        "LOCALHOST:1",
        "[::1]",
        "[::1]:8000",
        "[0:0:0:0:0:0:0:1]:80",
    ],
)
def test_loopback_host_headers_still_answer(host):
    c = TestClient(server.create_app(allowed_hosts=server.LOOPBACK_NAMES))
    assert c.get("/api/limits", headers={"host": host}).status_code == 200, host


GET_APIS = [
    "/api/trace",
    "/api/compare",
    "/api/curves",
    "/api/limits",
    "/api/profile",
    "/api/ladder",
    "/api/openapi.json",
]


@pytest.mark.parametrize("path", GET_APIS)
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
def test_other_methods_on_a_get_api_are_405_with_allow(client, path, method):
    """Issue 17 item 15: POST/PUT/PATCH/DELETE on /api/trace were 404 "no such API"; now 405 naming the method,
    with `Allow: GET, HEAD`. A path that is no API stays a 404 whatever the method."""
    r = client.request(method, path)
    assert r.status_code == 405, (method, path, r.status_code, r.text)
    assert r.headers["allow"] == "GET, HEAD"
    assert r.json()["field"] == "method" and r.json()["detail"].startswith(f"method: {method} is not answered")
    assert client.request(method, "/api/no-such").status_code == 404


@pytest.mark.parametrize("path", GET_APIS)
def test_head_is_answered_as_get_without_the_body(client, path):
    got, head = client.get(path), client.head(path)
    assert head.status_code == got.status_code, (path, head.status_code)
    assert head.content == b""
    assert head.headers.get("content-length") == got.headers.get("content-length")
    assert head.headers["content-type"] == got.headers["content-type"]
    assert "content-security-policy" in head.headers
