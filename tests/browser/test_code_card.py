"""The code card in real Chromium: the kernel editor shows the lines of the step it highlights, whenever it is drawn.
The card is brought up to date only on screen (a lazy card, data-stale while it is not), and CodeMirror measures
nothing while off screen: the scroll to a step's lines is checked in the editor's own box once the card is scrolled
to. Screenshots go to test-artifacts/code-card-*.png."""

from __future__ import annotations

import random
import re

import pytest
from pageutil import WAIT_MS, api, assert_clean, counter_el, expect, expect_step, open_viewer

pytestmark = pytest.mark.browser

# the highlighted lines (the step's) lie inside the editor's scroller, as many of them as it can show
LINES_SHOWN = """() => {
  const s = document.querySelector('#kernel-editor .cm-scroller');
  const box = s.getBoundingClientRect();
  const active = [...s.querySelectorAll('[data-testid=code-active-line]')];
  if (!active.length) return false;
  const inside = active.filter((l) => {
    const r = l.getBoundingClientRect();
    return r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
  });
  const fit = Math.floor(s.clientHeight / active[0].getBoundingClientRect().height);
  return inside.length >= Math.min(active.length, fit - 1);
}"""
FRAMES = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(r))))"


@pytest.mark.parametrize("algo", ["ring", "fa2-triton", "fa2"])
def test_the_editor_shows_the_lines_of_a_step_taken_off_screen(page, server_url, log, artifacts, algo):
    """Hardening item 13: stepping with the arrow keys while the code card was off screen, then scrolling to it, showed
    "lines 71-8x highlighted" over an editor at lines 102-120 (ring: 195-214 against 165-167), 7 of 9 times on ring
    and fa2-triton. Each run opens a fresh random step, steps back from it with the card off screen, then scrolls to
    the card."""
    open_viewer(page, server_url, f"algo={algo}")
    trace = api(page, server_url, f"/api/trace?algo={algo}")
    total = len(trace["steps"])
    start = random.randrange(4, total)
    back = random.randint(1, 3)
    page.set_viewport_size({"width": 1280, "height": 680})  # fa2's small picture leaves the card just below the fold
    page.goto(f"{server_url}/?algo={algo}&step={start + 1}")
    expect(page.locator("html")).to_have_attribute("data-ready", "true")
    expect_step(page, start)
    assert page.locator("#code").evaluate("e => e.getBoundingClientRect().top") > page.viewport_size["height"]
    for _ in range(back):
        page.keyboard.press("ArrowLeft")
    expect_step(page, start - back)
    first, last = trace["steps"][start - back]["lines"]
    expect(page.locator("[data-testid=code-lines]")).to_have_attribute("data-first", str(first))
    page.locator("#code").scroll_into_view_if_needed()
    expect(page.locator("#code")).not_to_have_attribute("data-stale", re.compile(".*"))  # drawn
    active = page.locator("[data-testid=kernel-editor] [data-testid=code-active-line]")
    expect(active).to_have_count(last - first + 1)
    source = trace["kernel"]["source"].split("\n")[first - 1].strip()
    expect(active.first).to_have_text(re.compile(r"^\s*" + re.escape(source) + r"\s*$"))
    try:
        page.wait_for_function(LINES_SHOWN, timeout=WAIT_MS)
        page.evaluate(FRAMES)  # and still there once the editor's measuring has settled
        assert page.evaluate(LINES_SHOWN), f"step {start - back}: lines {first}-{last} left the editor's box"
    finally:
        page.locator("#code").screenshot(path=artifacts / f"code-card-{algo}.png")
    assert int(counter_el(page).get_attribute("data-step")) == start - back
    assert_clean(log)
