"""End-to-end, issue 23: the ring in the page, in real headless Chromium against the real server. The section "Across
GPUs" appears for the ring's trace (and not for fa2's), numbered like the others; it follows the cursor: the
transfers in flight (arrows from each device to the next, carrying the shard it holds) and the shard each device holds
are the trace's at the step's phase, the watched device is the step's; each device's carries are the latest snapshot
at or before the phase; the zigzag layout's chunks are labelled by owner; the merged result is checked against
float64. A screenshot of the section goes to test-artifacts/."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from pageutil import WAIT_MS, api, assert_clean, counter_el, expect, expect_step, open_viewer, viewing

pytestmark = pytest.mark.browser

QUERY = "algo=ring&n=16&d=4&br=4&bc=4&seed=5&causal=true"  # the ring's example, P = 4 devices (zigzag), causal


def test_the_section_is_hidden_for_fa2_and_shown_when_ring_is_picked(page, server_url, log):
    open_viewer(page, server_url)
    expect(page.locator("[data-testid=devices]")).to_be_hidden()
    # picking ring on the page runs its example (N = 16, Br = Bc = 4: P = 4 devices), the section shows
    with page.expect_response(lambda r: "algo=ring" in r.url and "/api/trace" in r.url and r.status == 200):
        page.select_option("[data-testid=cfg-algo]", "ring")
    page.wait_for_url(re.compile(r"algo=ring"))
    example = api(page, server_url, "/api/trace?algo=ring&n=16&d=4&br=4&bc=4")
    expect(counter_el(page)).to_have_attribute("data-total", str(len(example["steps"])))
    section = page.locator("[data-testid=devices]")
    expect(section).to_be_visible()
    expect(section.locator("[data-testid=ring-device]")).to_have_count(4)
    expect(page.locator("[data-testid=error-badge]")).to_have_attribute("data-ok", "true")
    assert_clean(log)


def test_the_ring_section_follows_the_cursor(page, server_url, log, artifacts):
    open_viewer(page, server_url, QUERY)
    section = page.locator("[data-testid=devices]")
    expect(section).to_be_visible()
    expect(section.locator("h2 .ch")).to_have_text(re.compile(r"^\d+$"))  # numbered like the others
    expect(section.locator("h2")).to_contain_text("Across GPUs")
    trace = api(page, server_url, f"/api/trace?{QUERY}")
    dev = trace["devices"]
    P = dev["count"]
    assert P == 4 and dev["layout"] == "zigzag"

    # the zigzag layout: 8 chunks, each labelled and owned as the trace says (device r: chunks r and 7 - r)
    chunks = section.locator("[data-testid=ring-chunk]")
    expect(chunks).to_have_count(8)
    expect(chunks).to_have_text([f"c{k}" for k in range(8)])
    owners = [chunks.nth(k).get_attribute("data-owner") for k in range(8)]
    assert owners == ["0", "1", "2", "3", "3", "2", "1", "0"]
    expect(section.locator("[data-testid=ring-device]").first).to_contain_text("Q c0\u00b7c7")

    def at(k: int):
        page.evaluate(f"window.flashviz.goto({k})")
        expect_step(page, k)
        return trace["steps"][k]

    # before the first ring step (a device's init): every device holds its own shard, nothing in flight
    k0 = next(k for k, s in enumerate(trace["steps"]) if s["op"] == "init" and s["block"] == 2)
    s = at(k0)
    expect(section.locator("[data-testid=ring-arrow]")).to_have_count(0)
    expect(section).to_have_attribute("data-watch", "2")
    for r in range(P):
        node = section.locator(f"[data-testid=ring-device][data-device='{r}']")
        expect(node).to_have_attribute("data-holds", str(r))
        expect(node).to_have_attribute("data-watch", "true" if r == 2 else "false")
    expect(section.locator("[data-testid=ring-row][data-device='2'] [data-testid=ring-carries]")).to_contain_text(
        "\u2212\u221e"
    )

    # every send and wait of device 1: the arrows and the shards held are the trace's at that phase
    for k, s in enumerate(trace["steps"]):
        if s["block"] != 1 or s["op"] not in ("send", "wait", "merge"):
            continue
        at(k)
        ring_step = s["indices"]["step"]
        step = dev["steps"][ring_step]
        flying = step["transfers"]  # in flight from the send to the wait
        arrows = section.locator("[data-testid=ring-arrow]")
        expect(arrows).to_have_count(len(flying))
        got = sorted(
            (int(arrows.nth(a).get_attribute("data-from")), int(arrows.nth(a).get_attribute("data-to")),
             int(arrows.nth(a).get_attribute("data-owner")))
            for a in range(len(flying))
        )  # fmt: skip
        assert got == sorted((t["from"], t["to"], t["owner"]) for t in flying)
        assert all(to == (fr + 1) % P for fr, to, _ in got)
        # after a wait the shard that arrived is held (the next ring step's); else the step's own
        holds = dev["steps"][ring_step + 1]["holds"] if s["op"] == "wait" and flying else step["holds"]
        for r in range(P):
            node = section.locator(f"[data-testid=ring-device][data-device='{r}']")
            expect(node).to_have_attribute("data-holds", str(holds[r]["owner"]))
        assert int(section.get_attribute("data-step")) == ring_step
        expect(section).to_have_attribute("data-watch", "1")
        # the carries: each device's latest snapshot at or before the step's phase
        for r in range(P):
            snap = [c for c in dev["carries"][r] if c["phase"] <= s["phase"]][-1]
            cell = section.locator(f"[data-testid=ring-row][data-device='{r}'] [data-testid=ring-carries]")
            expect(cell).to_have_attribute("data-phase", str(snap["phase"]))
            if all(x is None for x in snap["L"]):
                expect(cell).to_contain_text("\u2212\u221e")
            else:
                expect(cell).not_to_contain_text("\u2212\u221e")
            expect(cell).to_have_attribute("title", re.compile(r"^O row 0: "))  # O, the carries' other half
        # the step's work: a device's blocks, full, masked and skipped, as the plan lists them
        work = step["work"][1]
        cell = section.locator("[data-testid=ring-row][data-device='1'] [data-testid=ring-work]")
        for kind, attr in (("full", "data-full"), ("causal", "data-causal"), ("skip", "data-skip")):
            expect(cell).to_have_attribute(attr, str(sum(w["kind"] == kind for w in work)))

    # the last step: the merged result against float64, and the link's bytes against the closed form
    at(len(trace["steps"]) - 1)
    expect(section).to_have_attribute("data-stage", "done")
    expect(section.locator("[data-testid=ring-check]")).to_contain_text("within tolerance")
    expect(section.locator("[data-testid=ring-check]")).to_contain_text("float64")
    expect(section.locator("[data-testid=ring-link]")).to_contain_text("equal")
    assert trace["reference"]["ok"]

    # a moment with shards in flight, for the screenshot
    k = next(
        k for k, s in enumerate(trace["steps"]) if s["op"] == "merge" and s["block"] == 0 and s["indices"]["step"] == 1
    )
    at(k)
    expect(section.locator("[data-testid=ring-arrow]")).to_have_count(P)
    section.scroll_into_view_if_needed()
    section.screenshot(path=str(artifacts / "ring-section.png"), animations="disabled")
    expect(counter_el(page)).to_have_attribute("data-op", "merge")
    assert_clean(log)


def test_a_ring_trace_file_of_another_p_and_layout(browser, tmp_path, log):
    """`flashviz trace --algo ring --devices 6 --layout contiguous --causal -o` then `flashviz view`: the page shows
    the file's six devices, the contiguous chunks one per device, and device r skipping the shards after its own."""
    out = tmp_path / "ring.json"
    args = ["trace", "--algo", "ring", "--n", "24", "--br", "4", "--bc", "4", "--devices", "6"]
    run = subprocess.run(
        [sys.executable, "-m", "flashviz", *args, "--layout", "contiguous", "--causal", "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    held = json.loads(out.read_text())
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.on("pageerror", lambda e: log.errors.append(f"pageerror: {e}"))
    page.set_default_timeout(WAIT_MS)
    try:
        with viewing(out) as url:
            page.goto(url)
            expect(page.locator("html")).to_have_attribute("data-ready", "true")
            expect(counter_el(page)).to_have_attribute("data-total", str(len(held["steps"])))
            section = page.locator("[data-testid=devices]")
            expect(section.locator("[data-testid=ring-device]")).to_have_count(6)
            chunks = section.locator("[data-testid=ring-chunk]")
            expect(chunks).to_have_count(6)
            assert [chunks.nth(k).get_attribute("data-owner") for k in range(6)] == [str(k) for k in range(6)]
            # device 1 at ring step 3 holds device 4's shard (after its own): every block skipped
            k = next(
                k
                for k, s in enumerate(held["steps"])
                if s["op"] == "send" and s["block"] == 1 and s["indices"]["step"] == 3
            )
            page.evaluate(f"window.flashviz.goto({k})")
            expect_step(page, k)
            node = section.locator("[data-testid=ring-device][data-device='1']")
            expect(node).to_have_attribute("data-holds", "4")
            expect(node).to_contain_text("skips this shard")
            work = section.locator("[data-testid=ring-row][data-device='1'] [data-testid=ring-work]")
            expect(work).to_have_attribute("data-skip", "1")
            expect(work).to_have_attribute("data-full", "0")
            expect(section.locator("[data-testid=ring-device][data-device='5']")).not_to_contain_text("skips")
    finally:
        context.close()
    assert_clean(log)
