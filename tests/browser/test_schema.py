"""End-to-end, issue 10: the page reads one schema, `flashviz.trace/4`. A trace of another version (here an answer of
/api/trace whose schema says `flashviz.trace/1`, as an older server writes) is refused with one line naming both
versions; the page keeps what it showed, and nothing of the refused trace reaches a view."""

from __future__ import annotations

import json

import pytest
from pageutil import DEFAULT, api, assert_clean, counter_el, expect, expect_step, open_viewer

pytestmark = pytest.mark.browser


def v1_of(trace: dict) -> str:
    """The same launch as a trace of the old version says it is."""
    return json.dumps({**trace, "schema": "flashviz.trace/1"})


def test_a_trace_of_the_old_schema_is_refused_naming_both_versions(page, server_url, log):
    open_viewer(page, server_url, f"{DEFAULT}&step=5")
    expect_step(page, 4)
    first = api(page, server_url, f"/api/trace?{DEFAULT}")
    assert first["schema"] == "flashviz.trace/4"
    old = v1_of(api(page, server_url, "/api/trace?n=12&d=4&br=4&bc=4&seed=0"))
    page.route("**/api/trace?*", lambda r: r.fulfill(status=200, content_type="application/json", body=old))
    page.fill("[data-testid=cfg-n]", "12")
    with page.expect_response(lambda r: "/api/trace" in r.url):
        page.click("[data-testid=cfg-apply]")
    msg = page.locator("[data-testid=config-error]")
    expect(msg).to_contain_text("flashviz.trace/1")
    expect(msg).to_contain_text("flashviz.trace/4")
    assert "\n" not in msg.inner_text().strip()  # one line
    # the page keeps its last good state: the N=8 launch at the same step
    expect_step(page, 4)
    expect(counter_el(page)).to_have_attribute("data-total", str(len(first["steps"])))
    assert page.evaluate("window.flashviz.trace().config.n") == 8
    assert page.evaluate("window.flashviz.trace().schema") == "flashviz.trace/4"
    assert_clean(log)


def test_a_first_load_of_the_old_schema_says_so_and_draws_nothing_of_it(page, server_url, log):
    old = v1_of(api(page, server_url, f"/api/trace?{DEFAULT}"))
    page.route("**/api/trace?*", lambda r: r.fulfill(status=200, content_type="application/json", body=old))
    page.goto(f"{server_url}/?{DEFAULT}")
    expect(page.locator("html")).to_have_attribute("data-ready", "true")
    msg = page.locator("[data-testid=config-error]")
    expect(msg).to_contain_text("flashviz.trace/1")
    expect(msg).to_contain_text("flashviz.trace/4")
    assert page.evaluate("window.flashviz.trace()") is None
    expect(counter_el(page)).not_to_have_attribute("data-total", "16")
    assert_clean(log)
