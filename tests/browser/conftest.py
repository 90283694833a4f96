"""Fixtures for the end-to-end tests: the real server (flashviz.server.create_app) on a free loopback port in
a thread, and Debian's chromium driven by Playwright. A page fixture records console errors and every
request's host, so each test can check the page stayed clean and offline."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
IN_CI = bool(os.environ.get("CI"))


def _missing(reason: str):
    """Without the browser or the built viewer these tests cannot run: fail in CI, skip elsewhere."""
    if IN_CI:
        pytest.fail(reason)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server_url():
    """Base URL of the real flashviz server, serving the built viewer."""
    uvicorn = pytest.importorskip("uvicorn")
    from flashviz import server

    if not (server.static_dir() / "index.html").is_file():
        _missing("the viewer is not built: cd web && npm ci && npm run build (pip install . does it)")
    port = _free_port()
    config = uvicorn.Config(server.create_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, name="flashviz-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the flashviz server did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (no `playwright install`)")
    if not (os.path.exists(CHROMIUM) and shutil.which(CHROMIUM)):
        _missing(f"Debian's chromium is not at {CHROMIUM}: apt-get install -y chromium")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class PageLog:
    def __init__(self) -> None:
        self.errors: list[str] = []
        self.hosts: set[str] = set()
        self.urls: list[str] = []


@pytest.fixture
def log() -> PageLog:
    return PageLog()


@pytest.fixture
def page(browser, server_url, log):
    """A fresh page at 1280x800 (light theme) that records console errors and request hosts."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
    pg = context.new_page()
    pg.on("console", lambda m: log.errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: log.errors.append(f"pageerror: {e}"))

    def on_request(req):
        log.urls.append(req.url)
        parts = urlsplit(req.url)
        if parts.scheme in ("http", "https", "ws", "wss"):
            log.hosts.add(parts.hostname or "")

    pg.on("request", on_request)
    pg.set_default_timeout(15_000)
    yield pg
    context.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
