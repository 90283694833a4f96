"""End-to-end, issue 17 item 20: at N = 4096 the page asks /api/trace with `arrays=auto`, gets the launch without its
steps' arrays (each a stub with its min and max), and fetches a step's arrays from /api/trace/arrays before it draws
it, as it is shown (a jump far ahead too): the sections show the same text as when the page is given the whole trace,
only the steps shown (and what they read) are fetched, and no view reads an array before it is there (that would say
so on the console)."""

from __future__ import annotations

import json
import urllib.parse

import pytest
from pageutil import assert_clean, counter_el, expect, expect_step, open_viewer

pytestmark = pytest.mark.browser

QUERY = "n=4096&d=64&br=64&bc=64&seed=0"
# the steps visited, in this order: the first, a jump far ahead, one on from it, back, the last
VISITS = (0, 150, 151, 100, 193)
# what a step draws from the arrays: the memory picture's words, the narrative and its substeps, the carries
SECTIONS = ("narrative", "narrative-detail", "carries", "blocks")


def visit(page, k: int) -> list[str]:
    page.evaluate(f"window.flashviz.goto({k})")
    expect_step(page, k)
    for name in ("narrative-detail", "carries"):  # drawn when on screen (main.ts's lazy cards)
        page.locator(f"#{name}").scroll_into_view_if_needed()
    return [page.locator(f"#{name}").inner_text() for name in SECTIONS]


def test_a_large_launch_fetches_each_steps_arrays_before_drawing_it(page, server_url, log, artifacts):
    asked: list[list[int]] = []  # the steps of each /api/trace/arrays request, in order
    traces: list[str] = []

    def on_request(req) -> None:
        url = urllib.parse.urlparse(req.url)
        q = urllib.parse.parse_qs(url.query)
        if url.path.endswith("/api/trace/arrays"):
            asked.append([int(k) for k in q["steps"][0].split(",")])
        elif url.path.endswith("/api/trace"):
            traces.append(url.query)

    page.on("request", on_request)
    page.emulate_media(reduced_motion="reduce")
    open_viewer(page, server_url, QUERY)
    expect(counter_el(page)).to_have_attribute("data-total", "194")
    assert traces and all("arrays=auto" in q for q in traces)
    assert asked and 0 in asked[0], asked  # the first step's arrays came before it was drawn
    shown = {}
    for k in VISITS:
        before = sum(len(a) for a in asked)
        shown[k] = visit(page, k)
        fetched = {s for a in asked for s in a}
        assert k in fetched, f"step {k} was drawn without its arrays asked for"
        if k == 150:
            assert sum(len(a) for a in asked) > before  # a jump ahead fetches
    fetched = {s for a in asked for s in a}
    assert len(fetched) < 194 // 2, f"{len(fetched)} of 194 steps fetched: not on demand"
    page.locator("#stage").screenshot(path=str(artifacts / "on_demand_n4096_step193.png"))
    assert_clean(log)  # no array read before it was fetched (codec.ts says so on the console)

    # the same steps from the whole trace, as /api/trace?arrays=all answers it
    whole = page.request.get(f"{server_url}/api/trace?{QUERY}")
    assert whole.ok
    body = whole.body()
    assert b'"on_demand"' not in body
    assert json.loads(body)["steps"][150]["sram"], "the whole trace holds step 150's arrays"
    page.route("**/api/trace?*", lambda r: r.fulfill(status=200, content_type="application/json", body=body))
    asked.clear()
    open_viewer(page, server_url, QUERY)
    for k in VISITS:
        assert visit(page, k) == shown[k], f"step {k}: the page shows other numbers than the whole trace's"
    assert not asked  # nothing was left out, nothing fetched
    assert_clean(log)
