"""Issue 17 in the page: the ladder's table and compare's FA2 column on a phone (item 19: stacked cards, every number
on screen at 390 px, screenshots to test-artifacts/), and picking fa2-triton (item 13: its own sizes, and a note
saying what changed and why)."""

from __future__ import annotations

import re

import pytest
from pageutil import WAIT_MS, assert_clean, counter_el, open_viewer

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect

PHONE = {"width": 390, "height": 844}


def on_screen(loc) -> bool:
    """The element, scrolled into view, lies inside the 390-px viewport from its left edge to its right."""
    loc.scroll_into_view_if_needed()
    box = loc.bounding_box()
    return box is not None and box["width"] > 0 and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]


def test_ladder_and_compare_read_on_a_phone(browser, server_url, log, artifacts):
    """Item 19: at 390 px the ladder's 1,345-px table showed no numbers and compare's FA2 column was off screen."""
    phone = {"color_scheme": "light", "device_scale_factor": 1, "is_mobile": True, "has_touch": True}
    ctx = browser.new_context(viewport=PHONE, **phone)
    page = ctx.new_page()
    page.on("console", lambda m: log.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: log.errors.append(f"pageerror: {e}"))
    page.set_default_timeout(WAIT_MS)
    try:
        page.goto(f"{server_url}/?n=64&d=64&br=64&bc=64&seed=0")
        page.wait_for_selector("html[data-ready=true]")
        expect(counter_el(page)).to_have_attribute("data-step", re.compile(r"\d"))
        rungs = page.locator("[data-testid=ladder-table] [data-testid=ladder-rung]")
        expect(rungs.first).to_be_attached()
        for k in range(rungs.count()):
            cell = rungs.nth(k).locator("[data-testid=ladder-tflops]")
            assert on_screen(cell), f"rung {k}'s TFLOP/s is off screen"
            expect(cell).to_be_visible()
            assert cell.evaluate("e => getComputedStyle(e, '::before').content").strip('"') == "TFLOP/s"
        page.locator("#ladder").screenshot(path=str(artifacts / "phone-390-ladder.png"))
        fa2 = page.locator("[data-testid=compare-table] td[data-algo=fa2]")
        expect(fa2.first).to_be_attached()
        for k in range(fa2.count()):
            assert on_screen(fa2.nth(k)), f"compare's FA2 cell {k} is off screen"
        # the SRAM row in KiB, as the hardware section writes it (item 8)
        expect(page.locator("[data-testid=compare-sram] td[data-algo=fa2]")).to_have_text("80.5 KiB")
        page.locator("#compare-table").screenshot(path=str(artifacts / "phone-390-compare.png"))
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    finally:
        ctx.close()
    assert_clean(log)


def test_picking_fa2_triton_brings_its_own_sizes_and_says_so(page, server_url, log):
    """Item 13: picking fa2-triton kept N=8 and snapped D/Br/Bc to 32/64/32 silently (7/8 of the picture padding)."""
    open_viewer(page, server_url, "n=8&d=4&br=4&bc=4&seed=0")
    with page.expect_response(lambda r: "algo=fa2-triton" in r.url and "/api/trace" in r.url and r.status == 200):
        page.select_option("[data-testid=cfg-algo]", "fa2-triton")
    for field, value in (("n", "128"), ("d", "32"), ("br", "64"), ("bc", "32")):
        expect(page.locator(f"[data-testid=cfg-{field}]")).to_have_value(value)
    note = page.locator("[data-testid=config-error]")
    expect(note).to_be_visible()
    moved = "N 8 \u2192 128, D 4 \u2192 32, Br 4 \u2192 64, Bc 4 \u2192 32"
    expect(note).to_contain_text(f"Switched to fa2-triton: {moved}")
    expect(note).to_contain_text("fa2-triton's own defaults")
    assert_clean(log)
