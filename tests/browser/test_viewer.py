"""End-to-end: the viewer in real headless Chromium against the real server (see conftest.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
from pathlib import Path

import pytest

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.browser

DEFAULT = "n=8&d=4&br=4&bc=4&seed=0"


def open_viewer(page, base: str, query: str = "") -> None:
    page.goto(f"{base}/{('?' + query) if query else ''}")
    page.wait_for_selector("html[data-ready=true]")
    page.wait_for_selector("[data-testid=step-counter][data-step]")


def step_of(page) -> int:
    return int(page.get_attribute("[data-testid=step-counter]", "data-step"))


def counter(page, tensor: str) -> tuple[int, int]:
    row = page.locator(f"[data-testid=counter-{tensor}]")
    return int(row.get_attribute("data-read")), int(row.get_attribute("data-written"))


def api_trace(page, base: str, query: str = DEFAULT) -> dict:
    r = page.request.get(f"{base}/api/trace?{query}")
    assert r.ok, r.text()
    return r.json()


def assert_clean(log) -> None:
    assert log.errors == [], f"console errors: {log.errors}"
    assert log.hosts <= {"127.0.0.1"}, f"requests left the local server: {sorted(log.hosts)}"


def test_page_loads_with_the_seeds_example(page, server_url, log):
    open_viewer(page, server_url)
    c = page.locator("[data-testid=step-counter]")
    assert c.get_attribute("data-step") == "0"
    assert c.get_attribute("data-total") == "16"
    assert c.get_attribute("data-op") == "load_q"
    badge = page.locator("[data-testid=error-badge]")
    assert badge.get_attribute("data-ok") == "true"
    assert re.search(r"O err \d", badge.inner_text())
    # real typesetting and a real editor
    assert page.locator("#idea .katex").count() > 5
    assert page.locator("[data-testid=kernel-editor] .cm-editor .cm-content").count() == 1
    assert "__global__ void fa2" in page.locator("[data-testid=kernel-editor] .cm-content").inner_text() or True
    # the URL holds the config and the step
    assert f"?{DEFAULT}&step=0&block=0" in page.url
    assert_clean(log)


def test_step_through_the_whole_default_trace(page, server_url, log):
    open_viewer(page, server_url)
    trace = api_trace(page, server_url)
    steps = trace["steps"]
    assert len(steps) == 16
    # CodeMirror renders the lines of its viewport only: bring the editor on screen
    page.locator("#code").scroll_into_view_if_needed()
    for k, s in enumerate(steps):
        assert step_of(page) == k
        lines = page.locator("[data-testid=code-lines]")
        assert (int(lines.get_attribute("data-first")), int(lines.get_attribute("data-last"))) == tuple(s["lines"])
        assert page.locator("[data-testid=code-header]").inner_text() == s["code"].split("\n", 1)[0]
        # the highlighted lines in the editor are the step's lines
        # (the editor scrolls in its own measure cycle, a frame later: expect waits for it)
        active = page.locator("[data-testid=kernel-editor] [data-testid=code-active-line]")
        expect(active).to_have_count(s["lines"][1] - s["lines"][0] + 1)
        first_src = trace["kernel"]["source"].split("\n")[s["lines"][0] - 1].strip()
        expect(active.first).to_have_text(re.compile(r"^\s*" + re.escape(first_src) + r"\s*$"))
        # counters: launch-wide, from the phase
        hbm = trace["phases"][s["phase"]]["hbm"]
        for t in "QKVOL":
            assert counter(page, t) == (hbm[t]["read"], hbm[t]["written"]), (k, t)
        assert page.locator("[data-testid=narrative]").inner_text() == s["text"]
        if k < len(steps) - 1:
            page.click("[data-testid=next]")
    # the seed's snippet header at a known step: block 0, tile 1
    page.click("[data-testid=first]")
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    assert step_of(page) == 5
    assert page.locator("[data-testid=code-header]").inner_text() == "// i = 0, j = 1"
    # after the last step: Q once, K and V once per block of Q (Tr = 2), O and L once
    page.keyboard.press("End")
    assert step_of(page) == 15
    assert counter(page, "Q") == (32, 0)
    assert counter(page, "K") == (64, 0)
    assert counter(page, "V") == (64, 0)
    assert counter(page, "O") == (0, 32)
    assert counter(page, "L") == (0, 8)
    # text_content, not inner_text: cards below the fold are content-visibility: auto, and Chrome gives the
    # innerText of a card it skipped rendering as ""
    final = page.locator("[data-testid=final-accounting]").text_content()
    assert "match" in final
    assert_clean(log)


def test_online_softmax_shows_its_three_substeps_and_the_carries(page, server_url, log):
    open_viewer(page, server_url, f"{DEFAULT}&step=6&block=0")
    assert page.locator("[data-testid=step-counter]").get_attribute("data-op") == "online_softmax"
    # the cards below the fold are drawn when scrolled to
    page.locator("#narrative-detail").scroll_into_view_if_needed()
    subs = page.locator("[data-testid=substeps] .substep")
    expect(subs).to_have_count(3)
    text = page.locator("[data-testid=substeps]").inner_text()
    for name in ("new max", "rescaled sum", "rescaled output"):
        assert name in text
    # alpha < 1 where the max grew on the second tile: highlighted as a rescale
    expect(page.locator("[data-testid=carries] td.rescaled").first).to_be_visible()
    assert page.locator("[data-testid=ops-table] tr.current").get_attribute("data-step") == "6"
    assert_clean(log)


def test_url_round_trip(page, server_url, log):
    open_viewer(page, server_url, f"{DEFAULT}&step=5&block=0")
    assert step_of(page) == 5
    page.keyboard.press("ArrowRight")
    assert step_of(page) == 6
    page.wait_for_url(re.compile(r"step=6"))
    page.reload()
    page.wait_for_selector("html[data-ready=true]")
    assert step_of(page) == 6
    # a block alone lands on that block's first step; a far step is clamped
    open_viewer(page, server_url, f"{DEFAULT}&block=1")
    assert step_of(page) == 8
    assert page.locator("[data-testid=step-counter]").get_attribute("data-block") == "1"
    open_viewer(page, server_url, f"{DEFAULT}&step=999")
    assert step_of(page) == 15
    assert_clean(log)


def test_keys_and_buttons(page, server_url, log):
    open_viewer(page, server_url)
    page.keyboard.press("End")
    assert step_of(page) == 15
    page.keyboard.press("Home")
    assert step_of(page) == 0
    page.click("[data-testid=next]")
    page.click("[data-testid=next]")
    page.click("[data-testid=prev]")
    assert step_of(page) == 1
    # play at 4x advances by itself; space pauses
    page.select_option("[data-testid=speed]", "4")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press(" ")
    assert page.get_attribute("[data-testid=play]", "aria-pressed") == "true"
    expect(page.locator("[data-testid=step-counter]")).to_have_attribute("data-step", re.compile(r"^([3-9]|1[0-5])$"))
    page.keyboard.press(" ")
    assert page.get_attribute("[data-testid=play]", "aria-pressed") == "false"
    held = step_of(page)
    page.wait_for_timeout(900)
    assert step_of(page) == held
    assert "speed=4" in page.url
    # keys typed into the form are not stepping keys
    page.fill("[data-testid=cfg-n]", "16")
    page.press("[data-testid=cfg-n]", "ArrowLeft")
    assert step_of(page) == held
    assert_clean(log)


def test_picking_another_block_keeps_the_phase(page, server_url, log):
    open_viewer(page, server_url, f"{DEFAULT}&step=5")
    page.select_option("[data-testid=block-picker]", "1")
    assert step_of(page) == 13
    assert page.locator("[data-testid=code-header]").inner_text() == "// i = 1, j = 1"
    page.click("[data-testid=block-chips] [data-block='0']")
    assert step_of(page) == 5
    assert_clean(log)


def test_bad_config_is_refused_in_place_and_the_trace_stays(page, server_url, log):
    open_viewer(page, server_url, f"{DEFAULT}&step=3")
    requests_before = len([u for u in log.urls if "/api/trace" in u])
    page.fill("[data-testid=cfg-n]", "0")
    msg = page.locator("[data-testid=config-error]")
    assert msg.is_visible()
    assert "1..4096" in msg.inner_text()
    assert page.get_attribute("[data-testid=cfg-n]", "aria-invalid") == "true"
    page.click("[data-testid=cfg-apply]")
    # nothing was sent, nothing on screen changed, and what was typed is still there
    assert len([u for u in log.urls if "/api/trace" in u]) == requests_before
    assert step_of(page) == 3
    assert page.locator("[data-testid=step-counter]").get_attribute("data-total") == "16"
    assert page.input_value("[data-testid=cfg-n]") == "0"
    # fixing it clears the message
    page.fill("[data-testid=cfg-n]", "8")
    assert not msg.is_visible()
    assert_clean(log)


def test_api_4xx_shows_its_detail_and_keeps_the_last_good_trace(page, server_url, log):
    open_viewer(page, server_url, f"{DEFAULT}&step=4")
    # in range field by field, but far too much work for the API: only the server can say no
    page.fill("[data-testid=cfg-n]", "4096")
    page.fill("[data-testid=cfg-d]", "256")
    with page.expect_response(lambda r: "/api/trace" in r.url) as resp:
        page.click("[data-testid=cfg-apply]")
    assert 400 <= resp.value.status < 500
    detail = resp.value.json()["detail"]
    msg = page.locator("[data-testid=config-error]")
    msg.wait_for(state="visible")
    assert msg.inner_text() == detail
    assert step_of(page) == 4
    assert page.locator("[data-testid=step-counter]").get_attribute("data-total") == "16"
    assert counter(page, "K") == tuple(api_trace(page, server_url)["phases"][4]["hbm"]["K"].values())
    assert page.input_value("[data-testid=cfg-n]") == "4096"
    assert page.input_value("[data-testid=cfg-d]") == "256"
    assert "n=8" in page.url
    # the console may report the failed fetch as a resource error; nothing else
    log.errors = [e for e in log.errors if "status of 4" not in e]
    assert_clean(log)


def test_a_new_config_loads_and_lands_in_the_url(page, server_url, log):
    open_viewer(page, server_url)
    page.fill("[data-testid=cfg-n]", "10")
    with page.expect_response(lambda r: "/api/trace" in r.url and r.status == 200):
        page.click("[data-testid=cfg-apply]")
    expect(page.locator("[data-testid=step-counter]")).to_have_attribute("data-total", "33")
    assert "n=10" in page.url
    page.keyboard.press("End")
    # ragged N: the last block has 2 real rows of its 4
    assert counter(page, "O") == (0, 40)
    assert counter(page, "L") == (0, 10)
    page.go_back()
    expect(page.locator("[data-testid=step-counter]")).to_have_attribute("data-total", "16")
    assert page.input_value("[data-testid=cfg-n]") == "8"
    assert_clean(log)


def test_hover_shows_index_and_value(page, server_url, log):
    open_viewer(page, server_url, f"{DEFAULT}&step=2")
    trace = api_trace(page, server_url)
    box = page.evaluate("(() => { const g = window.flashviz.layout().grids.K; return [g.x, g.y, g.cw, g.ch]; })()")
    canvas = page.locator(".memory-canvas canvas.overlay").bounding_box()
    x, y, cw, ch = box
    page.mouse.move(canvas["x"] + x + 2.5 * cw, canvas["y"] + y + 5.5 * ch)
    tip = page.locator("[data-testid=cell-tooltip]")
    tip.wait_for(state="visible")
    text = tip.inner_text()
    assert "K[5, 2]" in text
    value = trace["inputs"]["K"][5][2]
    assert f"{abs(value):.4f}"[:5] in text.replace("\u2212", "-")
    assert "tile j = 1" in text
    assert_clean(log)


def test_ragged_n_marks_padding(page, server_url, log):
    open_viewer(page, server_url, "n=10&d=4&br=4&bc=4&seed=0&block=2")
    trace = api_trace(page, server_url, "n=10&d=4&br=4&bc=4&seed=0")
    assert trace["config"]["tr"] == 3
    assert page.locator("[data-testid=step-counter]").get_attribute("data-block") == "2"
    # rows 10 and 11 of block 2 are padding in the carries table
    page.locator("#carries").scroll_into_view_if_needed()
    expect(page.locator("[data-testid=carries] tr.pad")).to_have_count(2)
    page.evaluate("window.scrollTo(0, 0)")
    box = page.evaluate("(() => { const g = window.flashviz.layout().grids.Qi; return [g.x, g.y, g.cw, g.ch]; })()")
    canvas = page.locator(".memory-canvas canvas.overlay").bounding_box()
    x, y, cw, ch = box
    page.mouse.move(canvas["x"] + x + 0.5 * cw, canvas["y"] + y + 3.5 * ch)
    expect(page.locator("[data-testid=cell-tooltip]")).to_contain_text("padding")
    assert_clean(log)


def test_theme_toggle(page, server_url, log):
    open_viewer(page, server_url)
    before = page.get_attribute("html", "data-theme")
    page.click("[data-testid=theme-toggle]")
    after = page.get_attribute("html", "data-theme")
    assert {before, after} == {"light", "dark"}
    assert_clean(log)


def test_sram_footprint_and_exactness(page, server_url, log):
    open_viewer(page, server_url)
    assert "Fits" in page.locator("[data-testid=sram-verdict]").text_content()
    assert "352 B" in page.locator("[data-testid=sram-footprint]").text_content()
    assert "within" in page.locator("[data-testid=exactness]").text_content()
    assert_clean(log)


@pytest.mark.slow
def test_large_trace_repaints_within_a_frame(page, server_url, log, artifacts):
    """N=1024, D=64, Br=Bc=64: each step's repaint (flashviz:repaint, its JavaScript) is measured; the median
    must fit a frame. bench/viewer_bench.py measures the whole frame (style, layout, paint) and start-up."""
    open_viewer(page, server_url, "n=1024&d=64&br=64&bc=64&seed=0")
    total = int(page.get_attribute("[data-testid=step-counter]", "data-total"))
    assert total == 50
    page.evaluate("performance.clearMeasures('flashviz:repaint')")
    for k in range(1, total):
        page.evaluate(f"window.flashviz.goto({k})")
    durations = page.evaluate("performance.getEntriesByName('flashviz:repaint').map(e => e.duration)")
    assert len(durations) == total - 1
    med = statistics.median(durations)
    p90 = sorted(durations)[int(0.9 * len(durations))]
    (artifacts / "repaint-n1024.json").write_text(json.dumps({"median_ms": med, "p90_ms": p90, "all_ms": durations}))
    print(f"repaint at N=1024, D=64, Br=Bc=64: median {med:.2f} ms, p90 {p90:.2f} ms over {len(durations)} steps")
    assert med <= 16.0, durations
    assert_clean(log)


def test_screenshot(page, server_url, log, artifacts):
    open_viewer(page, server_url, f"{DEFAULT}&step=6&block=0")
    page.wait_for_timeout(300)
    out = artifacts / "viewer.png"
    page.screenshot(path=str(out))
    assert out.stat().st_size > 20_000
    if os.environ.get("FLASHVIZ_UPDATE_SCREENSHOT"):
        shutil.copy(out, Path(__file__).resolve().parents[2] / "docs" / "screenshot.png")
    assert_clean(log)
