"""End-to-end, issue 17 item 20: the seed's walkthrough (N=8) looks the same whether the page receives the trace with
compact arrays (what /api/trace sends now) or as nested lists (`flashviz trace --plain`, what /2 sent): at every
step the page's text and its pixels are the same. And at N=4096 the page draws from a compact, gzipped answer."""

from __future__ import annotations

import pytest
from pageutil import DEFAULT, assert_clean, counter_el, expect, expect_step, open_viewer

from flashviz.config import Config
from flashviz.tracer import make_trace

pytestmark = pytest.mark.browser


def walk(page, steps: int) -> list[tuple[str, bytes]]:
    """(the page's text, a screenshot) at each step."""
    out = []
    for k in range(steps):
        page.evaluate(f"window.flashviz.goto({k})")
        expect_step(page, k)
        page.evaluate("window.scrollTo(0, 0)")
        out.append((page.evaluate("document.body.innerText"), page.screenshot(full_page=True, animations="disabled")))
    return out


def test_the_seeds_walkthrough_is_the_same_from_compact_and_plain_arrays(page, server_url, log):
    plain = make_trace(Config().api_validated()).to_json()
    assert b'"base64"' not in plain
    open_viewer(page, server_url, DEFAULT)
    total = int(counter_el(page).get_attribute("data-total"))
    assert total == 16
    compact = walk(page, total)
    # the same page, its trace answered as nested lists
    page.route("**/api/trace?*", lambda r: r.fulfill(status=200, content_type="application/json", body=plain))
    open_viewer(page, server_url, DEFAULT)
    lists = walk(page, total)
    for k, ((text_c, shot_c), (text_p, shot_p)) in enumerate(zip(compact, lists, strict=True)):
        assert text_c == text_p, f"step {k}: the text differs"
        assert shot_c == shot_p, f"step {k}: the pixels differ"
    assert_clean(log)


def test_the_page_draws_n4096_from_a_compact_gzipped_answer(page, server_url, log):
    answers = []
    page.on("response", lambda r: answers.append(r) if "/api/trace" in r.url else None)
    open_viewer(page, server_url, "n=4096&d=64&br=64&bc=64&seed=0")
    expect(counter_el(page)).to_have_attribute("data-total", "194")
    assert answers and answers[-1].headers.get("content-encoding") == "gzip"
    # a step deep in block 0 shows its SRAM values, decoded when shown
    page.evaluate("window.flashviz.goto(190)")
    expect_step(page, 190)
    kinds = page.evaluate("Object.values(window.flashviz.trace().steps[190].sram).map((v) => Array.isArray(v))")
    assert kinds and all(kinds)
    assert_clean(log)
