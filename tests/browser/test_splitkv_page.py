"""End-to-end, issue 18: fa2-splitkv in the page with no change to web/src: opened by URL, every step of both
kernels rendered with its code cut from fa2_splitkv.cu, the error badge ok, in real headless Chromium against the
real server."""

from __future__ import annotations

import random

import pytest
from pageutil import api, assert_clean, assert_no_junk, counter_el, expect, expect_step, open_viewer

pytestmark = pytest.mark.browser

ALGO = "fa2-splitkv"
QUERY = f"algo={ALGO}&n=18&d=3&br=4&bc=4&seed=11"  # ragged: Tc = 5, S = 3 chunks, the last of one tile


def test_splitkv_opens_and_every_step_renders(page, server_url, log):
    open_viewer(page, server_url, QUERY)
    names = page.eval_on_selector_all("[data-testid=cfg-algo] option", "els => els.map(e => e.value)")
    assert ALGO in names
    trace = api(page, server_url, f"/api/trace?{QUERY}")
    ops = {s["op"] for s in trace["steps"]}
    assert ops == {
        "load_q", "load_kv", "scores", "online_softmax", "write_partial",
        "load_first", "load_partial", "merge", "write_out",
    }  # fmt: skip
    expect(counter_el(page)).to_have_attribute("data-total", str(len(trace["steps"])))
    page.locator("#code").scroll_into_view_if_needed()  # the step's code is drawn while the code is on screen
    for k, s in enumerate(trace["steps"]):
        page.evaluate(f"window.flashviz.goto({k})")
        expect_step(page, k)
        expect(counter_el(page)).to_have_attribute("data-op", s["op"])
        expect(page.locator("[data-testid=code-header]")).to_have_text(s["code"].split("\n", 1)[0])
        expect(page.locator("[data-testid=step-code]")).to_contain_text(s["code"].split("\n", 2)[1].strip())
        assert_no_junk(page)
    expect(page.locator("#kernel-file")).to_have_text("fa2_splitkv.cu")
    expect(page.locator("[data-testid=error-badge]")).to_have_attribute("data-ok", "true")
    assert_clean(log)


def test_every_tensor_in_hbm_has_its_title_at_every_step(page, server_url, log, artifacts):
    """Hardening item 16: the HBM picture drew a tensor between V and Lpart with no title at any step: Opart, whose
    label "Opart (S·N rows)" was wider than its column, so the picture left it out. A fresh random launch each run."""
    n, d, b = random.randint(9, 40), random.randint(2, 8), random.choice([2, 4, 8])
    query = f"algo={ALGO}&n={n}&d={d}&br={b}&bc={b}&seed={random.randrange(2**32)}"
    open_viewer(page, server_url, query)
    trace = page.evaluate(
        "(() => { const t = window.flashviz.trace(); return {tensors: t.tensors, steps: t.steps.length}; })()"
    )
    labels = [t["label"] for t in trace["tensors"].values()]
    assert "Opart" in trace["tensors"]
    for k in range(trace["steps"]):
        page.evaluate(f"window.flashviz.goto({k})")
        expect_step(page, k)
        titles = page.evaluate(
            "window.flashviz.layout().drawn.labels.filter((l) => l.kind === 'title').map((l) => l.text)"
        )
        assert [x for x in labels if x not in titles] == [], (query, k, titles)
    page.locator("#stage").screenshot(path=artifacts / "splitkv-hbm-titles.png")
    assert_clean(log)
