"""Issue 17 item 10: the comparison's closed forms (GET /api/compare, no engine) and its race's per-phase curves
(GET /api/curves, counters-only engine runs queued with traces) come separately: the table shows what it showed,
the race is animated phase by phase when the curves come, and says why when the server cannot give them."""

from __future__ import annotations

import json
import re

from pageutil import DEFAULT, api, assert_clean, expect, open_viewer


def test_the_race_animates_from_the_curves_that_come_after_the_closed_forms(page, server_url, log):
    open_viewer(page, server_url, DEFAULT)
    doc = api(page, server_url, "/api/compare?n=8&d=4&br=4&bc=4")
    assert doc["curves"] is None
    race = page.locator("[data-testid=race-fa2]")
    page.keyboard.press("Home")
    expect(race.locator(".race-op")).to_have_text("after phase 1 of 8 \u00b7 load_q")
    expect(race.locator(".race-text")).to_have_attribute("data-bytes", "128")
    table = page.locator("[data-testid=compare-total] td[data-algo='fa2']")
    expect(table).to_have_text(f"{doc['algorithms']['fa2']['total']['bytes']} B")
    assert any("/api/compare?" in u for u in log.urls) and any("/api/curves?" in u for u in log.urls)
    assert_clean(log)


def test_a_busy_server_leaves_the_table_and_says_why_the_race_is_not_animated(page, server_url, log):
    busy = {"detail": "busy: 16 requests are waiting for the engine; try again in a moment"}
    page.route(
        "**/api/curves?*",
        lambda route: route.fulfill(status=503, headers={"Retry-After": "2"}, body=json.dumps(busy)),
    )
    open_viewer(page, server_url, DEFAULT)
    doc = api(page, server_url, "/api/compare?n=8&d=4&br=4&bc=4")
    race = page.locator("[data-testid=race-fa2]")
    expect(race.locator(".race-op")).to_have_text(f"counters not animated: {busy['detail']}")
    table = page.locator("[data-testid=compare-total] td[data-algo='fa2']")
    expect(table).to_have_text(f"{doc['algorithms']['fa2']['total']['bytes']} B")
    # the bars still move with the page's step, in proportion to each algorithm's total
    expect(race.locator(".race-text")).to_have_attribute("data-bytes", re.compile(r"^\d+$"))
    assert not [e for e in log.errors if "503" not in e], log.errors  # the browser logs the refused request itself
