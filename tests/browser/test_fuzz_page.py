"""Issue 17's fuzzer of the page (file://), kept as a test: crafted trace files (tests/test_fuzz_files.py's generator)
inlined in an exported page, as `flashviz export --trace` writes one when the file passes the CLI's check, and
spliced in raw when it does not (a hand-edited export). Judge: the page gets ready, makes no request off disk,
throws nothing, and either shows steps or says in one line what is wrong. A bounded number of examples keeps CI
short; bench/fuzz_traces.py runs the Python side for thousands.

And the served page's URL with options (fuzz_urls.py: packed sequences with and without N, seqlens_k, group, nk,
window, softcap, causal, good, odd and bad values): what the page says names the parameter, the form shows what is
drawn, no console error, and a URL the API takes is drawn as the API runs it. bench/fuzz_page.py --urls runs
hundreds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fuzz_urls import judge as judge_url
from fuzz_urls import option_urls
from hypothesis import HealthCheck, Phase, example, given, settings
from pageutil import WAIT_MS, expect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_fuzz_files import GOOD, crafted_trace

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def page_of(data: bytes) -> str:
    """The exported page holding `data`: through the CLI's check when it passes, spliced in raw when it does not."""
    from flashviz.cli.share import documents
    from flashviz.model.config import ConfigError
    from flashviz.share.page import element, standalone
    from flashviz.share.trace_files import check_trace_bytes

    try:
        doc = check_trace_bytes(data, "'t.json'", "--trace")
        return standalone(documents([(doc["config"], data)], compare=False))
    except ConfigError:
        html = standalone(documents([(GOOD["config"], b"{}")], compare=False))
        return html.replace(element("flashviz-trace-0", b"{}"), element_raw(data), 1)


def element_raw(data: bytes) -> str:
    text = data.decode("utf-8", "replace").replace("<", "\\u003c")
    return f'<script type="application/json" id="flashviz-trace-0">{text}</script>'


@pytest.fixture(scope="module")
def tab(browser):
    context = browser.new_context(viewport={"width": 1000, "height": 800}, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.errors, page.urls = [], []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    context.on("request", lambda r: page.urls.append(r.url))
    yield page
    context.close()


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: each example is a page load
)
@given(data=crafted_trace(GOOD))
def test_crafted_traces_in_a_page_are_shown_or_said_in_one_line(tab, tmp_path_factory, artifacts, data):
    """Found by this test on 2026-12-02 and fixed: traces passing both checks (a phase's writes of lists, a block
    without rows, a step without code, the footprint a number, ...) left the page never ready. A failing example is
    saved to test-artifacts/ (the message names the file): `python tests/browser/test_fuzz_page.py FILE` opens it."""
    path = tmp_path_factory.mktemp("page") / "fuzz.html"
    path.write_text(page_of(data))
    tab.errors.clear()
    tab.urls.clear()
    try:
        judge(tab, path)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\ncrafted trace saved as {saved(artifacts, data)} ({changed(data)})") from None


def judge(tab, path: Path) -> None:
    tab.goto(path.as_uri())
    expect(tab.locator("html")).to_have_attribute("data-ready", "true")
    total = int(tab.locator("[data-testid=step-counter]").get_attribute("data-total") or 0)
    message = tab.locator("[data-testid=config-error]")
    if total == 0:
        expect(message).to_be_visible()
        text = message.inner_text()
        assert "\n" not in text and "Cannot read" not in text and "reach the server" not in text, text
        # the page's safety net (a view threw on what the checks let through): the checks should have named the field
        assert "could not draw" not in text, text
    assert not tab.errors, tab.errors[:3]
    assert all(u.startswith(("file:", "data:", "blob:")) for u in tab.urls), tab.urls[:5]


@pytest.fixture(scope="module")
def served_tab(browser):
    """One tab for the URL examples, its console errors and exceptions gathered in `tab.errors`."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.errors = []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(f"pageerror: {e}"))
    yield page
    context.close()


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: each example is a page load
)
@given(query=option_urls())
@example(query="algo=fa2-triton&d=32&br=16&bc=16&seqlens=20,44,30&causal=true")  # packed sequences without N
@example(query="algo=fa2-triton&n=100&seqlens=20,44,30&seqlens_k=9,9")  # N not their sum; keys of another count
def test_urls_with_options_are_drawn_as_asked_or_said_in_one_line(served_tab, server_url, query):
    """Hardening item 10 and the issue's "the page's URL with options" fuzzer: a link with seqlens and no N drew the
    seed's example under a form that still said fa2-triton N=128."""
    fields = {f["name"] for f in served_tab.request.get(f"{server_url}/api/limits").json()["fields"]}
    wrong = judge_url(served_tab, served_tab.errors, server_url, query, fields)
    assert wrong is None, f"/?{query}: {wrong}"


def saved(artifacts: Path, data: bytes) -> Path:
    import hashlib

    out = artifacts / f"fuzz-page-{hashlib.sha256(data).hexdigest()[:12]}.json"
    out.write_bytes(data)
    return out


def changed(data: bytes) -> str:
    """What the crafted trace changed from the good one, for the failure's message."""
    import json

    try:
        doc = json.loads(data)
    except ValueError:
        return f"cut at {len(data)} bytes"
    if not isinstance(doc, dict):
        return "not an object"
    out = [k for k in set(GOOD) | set(doc) if doc.get(k) != GOOD.get(k)]
    return "; ".join(f"{k}: {json.dumps(doc.get(k))[:200]}" for k in out)[:1500]


if __name__ == "__main__":  # a saved crafted trace as the page the test built: python tests/browser/test_fuzz_page.py F
    out = Path(sys.argv[1]).with_suffix(".html")
    out.write_text(page_of(Path(sys.argv[1]).read_bytes()))
    print(f"open {out.resolve().as_uri()}")
