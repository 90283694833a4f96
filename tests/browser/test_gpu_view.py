"""End-to-end (issue 11): the hardware view draws the launch's grid on the H200's 132 SMs and the warp split of
one block for fa1 and fa2, follows the step cursor (the SM of the step's block, the warps of the step's op) and
the heads control, and the FLOPs panel follows the phases; in real Chromium against the real server."""

from __future__ import annotations

import pytest
from pageutil import api, assert_clean, assert_no_junk, expect, expect_step, open_viewer

pytestmark = pytest.mark.browser

CFG = "n=256&d=8&br=32&bc=32&seed=1"


def launch(trace: dict, heads: int) -> dict:
    (k,) = trace["hardware"]["kernels"].values()
    return next(x for x in k["launches"] if x["heads"] == heads)


def goto(page, k: int) -> None:
    page.evaluate(f"window.flashviz.goto({k})")
    expect_step(page, k)


@pytest.mark.parametrize("algo", ["fa1", "fa2"])
def test_grid_on_sms_follows_the_heads_control(page, server_url, log, algo):
    trace = api(page, server_url, f"/api/trace?algo={algo}&{CFG}")
    open_viewer(page, server_url, f"algo={algo}&{CFG}")
    sms = page.locator("[data-testid=hw-sms]")
    sms.scroll_into_view_if_needed()
    one = launch(trace, 1)
    assert one["blocks"] == (1 if algo == "fa1" else 8)  # fa1: one block per head; fa2: Tr = 256 / 32 per head
    expect(sms).to_have_attribute("data-blocks", str(one["blocks"]))
    expect(sms).to_have_attribute("data-idle", str(132 - one["blocks"]))
    expect(sms.locator(".sm")).to_have_count(132)
    expect(sms.locator(".sm.busy")).to_have_count(one["busy_sms"])
    expect(page.locator("[data-testid=hw-idle]")).to_have_text(f"{one['idle_sms']} idle")
    page.locator("[data-testid=hw-heads]").select_option("32")
    many = launch(trace, 32)
    expect(sms).to_have_attribute("data-heads", "32")
    expect(sms).to_have_attribute("data-blocks", str(many["blocks"]))
    expect(sms.locator(".sm.busy")).to_have_count(many["busy_sms"])
    assert many["idle_sms"] == (100 if algo == "fa1" else 0)  # 32 blocks leave 100 SMs idle; 256 fill all 132
    theo = trace["hardware"]["kernels"][algo]["occupancy"]["theoretical"]
    expect(page.locator("[data-testid=hw-theoretical]")).to_have_text(f"{100 * theo:.1f}%")
    expect(page.locator("[data-testid=hw-measured] tbody tr")).to_have_count(4)  # the recorded ncu rows
    assert_no_junk(page)
    assert_clean(log)


@pytest.mark.parametrize("algo", ["fa1", "fa2"])
def test_warp_split_and_sm_follow_the_step_cursor(page, server_url, log, algo):
    block = 0 if algo == "fa1" else 5
    query = f"algo={algo}&{CFG}" + ("" if algo == "fa1" else f"&block={block}")
    open_viewer(page, server_url, query)
    trace = page.evaluate("window.flashviz.trace()")  # the trace the page shows, block 5's steps among them
    warps = trace["hardware"]["warps"]
    rows_op = next(op for op, w in warps["ops"].items() if w["split"] == "rows")
    k_rows = next(k for k, s in enumerate(trace["steps"]) if s["op"] == rows_op and s["block"] == block)
    k_scores = max(
        k
        for k in range(k_rows)
        if trace["steps"][k]["op"] in warps["ops"]
        and warps["ops"][trace["steps"][k]["op"]]["split"] == "strided"
        and warps["ops"][trace["steps"][k]["op"]]["buffer"] == "Sij"
    )
    host = page.locator("[data-testid=hw-warps]")
    host.scroll_into_view_if_needed()

    goto(page, k_scores)
    expect(host).to_have_attribute("data-op", trace["steps"][k_scores]["op"])
    owners = page.locator("[data-testid=hw-owners]")
    # strided: consecutive elements of a row go to consecutive threads, so row 0 of 32 columns is all warp 0 and
    # the rows below it cycle through the 4 warps of 128 threads
    expect(owners).to_have_attribute("data-warps", "0,1,2,3")
    expect(owners).to_have_attribute("data-col0", ",".join(str((r * 32 % 128) // 32) for r in range(32)))
    expect(page.locator("[data-testid=hw-sm-here]")).to_have_attribute("data-sm", str(block))

    goto(page, k_rows)
    expect(host).to_have_attribute("data-op", rows_op)
    # one thread per row of Qi: 32 rows are warp 0's alone, the other 3 warps idle
    expect(owners).to_have_attribute("data-warps", "0")
    expect(host).to_contain_text("1 of 4 warps busy, 3 idle")
    expect(host).to_contain_text("cross shared memory")
    expect(page.locator("[data-testid=hw-scheme-split-Q]")).to_have_attribute("data-warps", "0,1,2,3")
    expect(page.locator("[data-testid=hw-scheme-split-K]")).to_have_attribute(
        "data-row0", ",".join(str(c // 8) for c in range(32))
    )
    assert_clean(log)


def test_flops_panel_follows_the_phases_and_states_the_measured_ratio(page, server_url, log):
    trace = api(page, server_url, f"/api/trace?algo=fa2&{CFG}")
    open_viewer(page, server_url, f"algo=fa2&{CFG}")
    page.locator("[data-testid=flops]").scroll_into_view_if_needed()
    last = len(trace["steps"]) - 1
    goto(page, last)
    f = trace["flops"]
    expect(page.locator("[data-testid=flops-non-matmul]")).to_have_text(f"{f['non_matmul']:,}")
    expect(page.locator("[data-testid=flops-now-div]")).to_have_text(f"{f['counted']['div']:,}")
    goto(page, 0)
    expect(page.locator("[data-testid=flops-now-div]")).to_have_text("0")
    expect(page.locator("[data-testid=flops-ratio]")).to_have_text(f"{f['anchor']['measured_ratio']}\u00d7")
    expect(page.locator("[data-testid=regimes-table] tbody tr.current")).to_have_count(1)
    assert_clean(log)


def test_hardware_view_kept_between_steps_shows_what_a_fresh_draw_shows(page, server_url, log):
    # the view redraws only what a step changes (owner maps kept per op, the SM marker moved): coming back to a
    # step, or stepping after the heads control changed, must show what opening the page at that step shows
    open_viewer(page, server_url, f"algo=fa2&{CFG}&block=5")
    trace = page.evaluate("window.flashviz.trace()")
    steps = trace["steps"]
    ops = trace["hardware"]["warps"]["ops"]
    k_a = next(k for k, s in enumerate(steps) if s["op"] in ops and s["block"] == 5)
    split_a = ops[steps[k_a]["op"]]["owners"]
    k_b = next(
        k for k, s in enumerate(steps) if s["op"] in ops and ops[s["op"]]["owners"] != split_a and s["block"] == 5
    )
    k_other = next(k for k, s in enumerate(steps) if s["block"] != 5)  # block 0's steps, recorded by default
    host = page.locator("[data-testid=hw-warps]")
    host.scroll_into_view_if_needed()
    owners = page.locator("[data-testid=hw-owners]")
    here = page.locator("[data-testid=hw-sm-here]")
    pixels = "el => el.toDataURL()"

    goto(page, k_a)
    expect(host).to_have_attribute("data-op", steps[k_a]["op"])
    first = owners.evaluate(pixels)
    row0 = ",".join(str(w) for w in split_a[0])
    expect(owners).to_have_attribute("data-row0", row0)
    goto(page, k_b)
    expect(host).to_have_attribute("data-op", steps[k_b]["op"])
    assert owners.evaluate(pixels) != first  # another split of the warps
    goto(page, k_a)
    expect(host).to_have_attribute("data-op", steps[k_a]["op"])
    expect(owners).to_have_attribute("data-row0", row0)
    assert owners.evaluate(pixels) == first
    expect(here).to_have_count(1)
    expect(here).to_have_attribute("data-sm", "5")

    page.locator("[data-testid=hw-heads]").select_option("32")
    expect(page.locator("[data-testid=hw-sms]")).to_have_attribute("data-heads", "32")
    expect(here).to_have_count(1)
    expect(here).to_have_attribute("data-sm", "5")
    goto(page, k_other)
    other = steps[k_other]["block"]
    expect(here).to_have_count(1)
    expect(here).to_have_attribute("data-sm", str(other))
    expect(page.locator("[data-testid=hw-summary]")).to_contain_text(f"blockIdx.x = {other} of head 0")
    expect(page.locator("[data-testid=hw-summary]")).to_contain_text("B\u00b7H = 32")
    assert_clean(log)
