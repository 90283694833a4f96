"""The web API and the viewer's static files, through FastAPI's TestClient (no network)."""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import orjson
import pytest
from fastapi.testclient import TestClient

from flashviz import server
from flashviz.config import API_LIMITS, Config
from flashviz.tracer import make_trace


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
    got, want = orjson.loads(r.content), orjson.loads(make_trace(Config()).to_json())
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


def test_largest_allowed_trace_is_quick(client):
    start = time.perf_counter()
    r = client.get("/api/trace?n=4096&d=64&br=64&bc=64")
    assert r.status_code == 200
    assert time.perf_counter() - start < 10  # ~1 s on one core; generous for a loaded CI machine


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


def test_at_most_two_traces_compute_at_once_and_the_loop_stays_free(monkeypatch):
    running, peak, calls = 0, 0, []
    lock = threading.Lock()

    def slow(cfg):
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
            calls.append(cfg.seed)
        time.sleep(0.3)
        with lock:
            running -= 1
        return b'{"seed": %d}' % cfg.seed

    monkeypatch.setattr(server, "compute_json", slow)
    app = server.create_app()

    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
            traces = [asyncio.create_task(c.get(f"/api/trace?seed={s}")) for s in (1, 2, 3, 4, 1, 2)]
            await asyncio.sleep(0.05)
            start = time.perf_counter()
            limits = await c.get("/api/limits")  # answered while traces compute
            quick = time.perf_counter() - start
            done = await asyncio.gather(*traces)
            again = await c.get("/api/trace?seed=3")  # from the cache
            return limits, quick, done, again

    # a thread of its own: the browser tests' Playwright (sync API) keeps an event loop on the main thread
    with ThreadPoolExecutor(1) as pool:
        limits, quick, done, again = pool.submit(asyncio.run, go()).result()
    assert limits.status_code == 200 and quick < 0.25
    assert [r.json()["seed"] for r in done] == [1, 2, 3, 4, 1, 2]
    assert peak == 2
    assert sorted(calls) == [1, 2, 3, 4]  # repeats waited and were served from the cache
    assert again.json() == {"seed": 3} and len(calls) == 4


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
