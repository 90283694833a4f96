"""What the browser tests share: opening the viewer and reading it, always by waiting for a state (Playwright's
`expect` retries until the page shows it), never by sleeping or reading a value the page may not have written
yet. Every wait is bounded by conftest's timeout, long enough for a loaded 2-core machine; nothing measures time."""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from contextlib import contextmanager
from decimal import ROUND_HALF_UP, Decimal

import pytest

expect = pytest.importorskip("playwright.sync_api").expect

DEFAULT = "n=8&d=4&br=4&bc=4&seed=0"
WAIT_MS = 180_000  # the bound on any one wait for a state: how long a broken page takes to fail, nothing more
# (60 s was too short for JupyterLab at a load of 15 on 2 cores, seen while several suites ran at once)
IN_CI = bool(os.environ.get("CI"))


def missing(reason: str):
    """Without the browser or the built viewer these tests cannot run: fail in CI, skip elsewhere."""
    if IN_CI:
        pytest.fail(reason)
    pytest.skip(reason)


def to_fixed(x: float, digits: int) -> str:
    """What JavaScript's `x.toFixed(digits)` writes, the page's way of showing a number: the exact binary value of x
    rounded half away from zero. Python's format rounds half to even, so the two part on exact ties (89.25 is "89.2"
    to Python, "89.3" to the page); a test expecting what the page shows says it with this."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(**app_args):
    """The real flashviz server (create_app(**app_args), as `flashviz serve` builds it) on a free loopback port in a
    thread, serving the built viewer; yields its base URL."""
    uvicorn = pytest.importorskip("uvicorn")
    from flashviz import server

    if not (server.static_dir() / "index.html").is_file():
        missing("the viewer is not built: cd web && npm ci && npm run build (pip install . does it)")
    port = _free_port()
    app = server.create_app(**app_args)
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=srv.run, name="flashviz-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_MS / 1000
    while not srv.started:  # a state, polled: uvicorn sets it once it listens
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the flashviz server did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        srv.should_exit = True
        thread.join(timeout=10)


def open_viewer(page, base: str, query: str = "") -> None:
    """Open the page and wait until it is ready: the trace drawn, KaTeX and the editor loaded, the limits known."""
    page.goto(f"{base}/{('?' + query) if query else ''}")
    expect(page.locator("html")).to_have_attribute("data-ready", "true")
    expect(counter_el(page)).to_have_attribute("data-step", re.compile(r"^\d+$"))
    # the page writes the shown launch into the URL a moment after drawing it (main.ts syncUrl): wait for that, so
    # that a test reading page.url or watching navigations starts after it
    page.wait_for_function("() => location.search.includes('step=')", timeout=WAIT_MS)


def counter_el(page):
    return page.locator("[data-testid=step-counter]")


def step_of(page) -> int:
    """The step index on screen now (data-step is the index into trace.steps; the page shows it plus one)."""
    return int(counter_el(page).get_attribute("data-step"))


def expect_step(page, k: int) -> None:
    """Wait until step index k is on screen."""
    expect(counter_el(page)).to_have_attribute("data-step", str(k))


def counter(page, tensor: str) -> tuple[int, int]:
    row = page.locator(f"[data-testid=counter-{tensor}]")
    return int(row.get_attribute("data-read")), int(row.get_attribute("data-written"))


def expect_counter(page, tensor: str, read: int, written: int) -> None:
    row = page.locator(f"[data-testid=counter-{tensor}]")
    expect(row).to_have_attribute("data-read", str(read))
    expect(row).to_have_attribute("data-written", str(written))


def api(page, base: str, path: str) -> dict:
    """An API answer; a trace with its compact arrays as the nested lists `flashviz trace --plain` writes."""
    from flashviz.tracing.codec import to_plain

    r = page.request.get(f"{base}{path}")
    assert r.ok, r.text()
    doc = r.json()
    return to_plain(doc) if str(doc.get("schema", "")).startswith("flashviz.trace/") else doc


def same_float32(got, want) -> bool:
    """The page's values (each float32 exactly, as compact arrays decode) are a plain trace's (each float32's
    shortest decimal), value for value; null (−∞) where it is null."""
    import numpy as np

    a, b = np.array(got, dtype=object), np.array(want, dtype=object)
    if a.shape != b.shape:
        return False
    nulls = np.vectorize(lambda v: v is None)
    if not (nulls(a) == nulls(b)).all():
        return False
    fill = np.where(nulls(a), -np.inf, a).astype(np.float64).astype(np.float32)
    other = np.where(nulls(b), -np.inf, b).astype(np.float64).astype(np.float32)
    return bool(np.array_equal(fill, other, equal_nan=True))


def assert_clean(log) -> None:
    assert log.errors == [], f"console errors: {log.errors}"
    assert log.hosts <= {"127.0.0.1"}, f"requests left the local server: {sorted(log.hosts)}"


def assert_no_junk(page) -> None:
    """No formatting accident on the page: no "NaN", "undefined", "Infinity" or "[object" in its text (a trace of
    finite numbers; a row with no finite score shows NaN on purpose, see test_masked.py)."""
    # text quoted verbatim from a recorded document (the ladder run's own sentences, e.g. "outputs poisoned with
    # NaN") is marked data-verbatim and is no formatting of the page's; nor are the documents a page holds in its
    # <script type="application/json"> elements (`flashviz view`, `flashviz export`), which are not its text
    text = page.evaluate(
        "(() => { const b = document.body.cloneNode(true); b.querySelectorAll('[data-verbatim], script, style')"
        ".forEach(e => e.remove()); return b.textContent; })()"
    )
    for junk in ("NaN", "undefined", "Infinity", "[object"):
        assert junk not in text, (junk, text[max(0, text.find(junk) - 80) : text.find(junk) + 40])


def tooltip_at(page, grid: str, r: float, c: float) -> str:
    """Hover cell (r, c) of a grid of the memory picture; the tooltip's text once it shows that cell."""
    box = page.evaluate("(n) => { const g = window.flashviz.layout().grids[n]; return [g.x, g.y, g.cw, g.ch]; }", grid)
    canvas = page.locator(".memory-canvas canvas.overlay").bounding_box()
    x, y, cw, ch = box
    page.mouse.move(canvas["x"] + x + c * cw, canvas["y"] + y + r * ch)
    tip = page.locator("[data-testid=cell-tooltip]")
    expect(tip).to_be_visible()
    return tip.inner_text()


@contextmanager
def viewing(path, cwd=None):
    """`flashviz view PATH --no-browser` in a subprocess (from `cwd`, when given); yields its URL once it prints
    it (a state)."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "flashviz", "view", str(path), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=cwd,
    )
    try:
        url = None
        for line in proc.stdout:
            found = re.search(r"http://127\.0\.0\.1:\d+/?", line)
            if found:
                url = found[0]
                break
        assert url, "flashviz view printed no URL"
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def settle_near(page, selector: str) -> None:
    """Scroll `selector` into view and wait until the lazy cards that the scroll brings near the screen are drawn
    (the page marks a card it has not brought up to date with data-stale, its margin in px): an IntersectionObserver
    draws them a moment after the scroll, and their new height would move what a click then aims at (the click's
    press and release would land on different elements, and no click would reach the page's handler)."""
    page.locator(selector).scroll_into_view_if_needed()
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-stale]')].every((card) => {
            const m = Number(card.dataset.stale) || 0, r = card.getBoundingClientRect();
            return !(r.bottom > -m + 2 && r.top < innerHeight + m - 2);
        })""",
        timeout=WAIT_MS,
    )
