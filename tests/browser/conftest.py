"""Fixtures for the end-to-end tests: the real server (flashviz.server.create_app) on a free loopback port in
a thread, and Debian's chromium driven by Playwright. A page fixture records console errors and every
request's host, so each test can check the page stayed clean and offline.

The tests wait for states, never for times, and assert no durations. Each wait is bounded by WAIT_MS, a bound
chosen for a loaded 2-core CI machine (Playwright's own 5 s is not): it only decides how long a broken page
takes to fail."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from pageutil import WAIT_MS, missing, serving

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


@pytest.fixture(scope="session")
def server_url():
    """Base URL of the real flashviz server, serving the built viewer."""
    with serving() as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (no `playwright install`)")
    if not (os.path.exists(CHROMIUM) and shutil.which(CHROMIUM)):
        missing(f"Debian's chromium is not at {CHROMIUM}: apt-get install -y chromium")
    sync_api.expect.set_options(timeout=WAIT_MS)
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
    pg.set_default_timeout(WAIT_MS)
    yield pg
    context.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
