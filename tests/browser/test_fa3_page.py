"""End-to-end, issue 20 (first part): fa3 in the page, picked from the list, every step rendered with its code cut
from the Gluon kernel file itself (the file `flashviz.attention(backend="fa3")` launches), the error badge ok, in
real headless Chromium against the real server."""

from __future__ import annotations

import re

import pytest
from pageutil import api, assert_clean, assert_no_junk, counter_el, expect, expect_step, open_viewer

pytestmark = pytest.mark.browser

ALGO = "fa3"
SMALL = "n=300&d=32&br=64&bc=32&seed=3"  # fa2-triton's launch: fa3 refuses its D and tiles


def test_fa3_is_picked_and_every_step_renders_with_its_gluon_kernel(page, server_url, log):
    open_viewer(page, server_url, f"algo=fa2-triton&{SMALL}")
    names = page.eval_on_selector_all("[data-testid=cfg-algo] option", "els => els.map(e => e.value)")
    assert ALGO in names
    for causal in ("", "&causal=true"):
        query = f"algo={ALGO}&n=300&d=64&br=128&bc=128&seed=5{causal}"
        if not causal:
            with page.expect_response(lambda r: f"algo={ALGO}" in r.url and "/api/trace" in r.url and r.status == 200):
                page.select_option("[data-testid=cfg-algo]", ALGO)
            page.wait_for_url(re.compile(rf"algo={re.escape(ALGO)}"))
            url = page.url
            # the page keeps N and switches to a launch fa3 runs: its example's D, Br, Bc (helpers.runnable's rule)
            for key, value in {"n": 300, "d": 64, "br": 128, "bc": 128}.items():
                assert re.search(rf"[?&]{key}={value}(&|$)", url), url
            # the page's own state (step, picked block) is no parameter of its trace
            query = "&".join(p for p in url.split("?", 1)[1].split("&") if not p.startswith(("step=", "block=")))
        else:
            open_viewer(page, server_url, query)
        trace = api(page, server_url, f"/api/trace?{query}")
        ops = {s["op"] for s in trace["steps"]}
        assert ops == {"load_q", "load_kv", "first_tile", "scores", "online_softmax", "last_pv", "write_back"}
        expect(counter_el(page)).to_have_attribute("data-total", str(len(trace["steps"])))
        # the code panel holds the very Gluon file the fa3 backend launches, in the Python grammar
        editor = page.locator("[data-testid=kernel-editor]")
        expect(editor).to_contain_text(trace["kernel"]["source"].split("\n", 1)[0])  # its docstring's first line
        assert "def _fwd_tiles_overlapped(" in trace["kernel"]["source"] and "gluon" in trace["kernel"]["source"]
        expect(page.locator("#kernel-file")).to_have_text("kernel.py")
        page.locator("#code").scroll_into_view_if_needed()  # CodeMirror renders the lines of its viewport only
        lines = trace["kernel"]["source"].split("\n")
        for k, s in enumerate(trace["steps"]):
            page.evaluate(f"window.flashviz.goto({k})")
            expect_step(page, k)
            expect(counter_el(page)).to_have_attribute("data-op", s["op"])
            expect(page.locator("[data-testid=code-header]")).to_have_text(s["code"].split("\n", 1)[0])
            first, last = s["lines"]
            active = page.locator("[data-testid=kernel-editor] [data-testid=code-active-line]")
            expect(active).to_have_count(last - first + 1)
            expect(active.first).to_have_text(re.compile(r"^\s*" + re.escape(lines[first - 1].strip()) + r"\s*$"))
            expect(page.locator("[data-testid=step-code]")).to_contain_text(s["code"].split("\n", 2)[1].strip())
            assert_no_junk(page)
        keyword = page.locator("[data-testid=kernel-editor] .cm-line span", has_text=re.compile(r"^def$")).first
        color = keyword.evaluate("e => getComputedStyle(e).color")
        plain = page.locator("[data-testid=kernel-editor] .cm-content").evaluate("e => getComputedStyle(e).color")
        assert color != plain
        expect(page.locator("[data-testid=error-badge]")).to_have_attribute("data-ok", "true")
    assert_clean(log)
