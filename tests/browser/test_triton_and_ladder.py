"""End-to-end, issue 12: fa2-triton in the page (picked, stepped, its Python kernel file in the code panel), its
tensor-cores section, the comparison with it, and the ladder section showing the recorded run, in real headless
Chromium against the real server."""

from __future__ import annotations

import re

import pytest
from pageutil import api, assert_clean, assert_no_junk, counter_el, expect, expect_step, open_viewer

pytestmark = pytest.mark.browser

ALGO = "fa2-triton"
SMALL = "n=100&d=32&br=64&bc=32&seed=3"


def test_fa2_triton_is_picked_and_every_step_renders_with_its_python_kernel(page, server_url, log):
    open_viewer(page, server_url, SMALL)
    names = page.eval_on_selector_all("[data-testid=cfg-algo] option", "els => els.map(e => e.value)")
    assert ALGO in names
    for causal in ("", "&causal=true"):
        query = f"algo={ALGO}&{SMALL}{causal}"
        trace = api(page, server_url, f"/api/trace?{query}")
        if not causal:
            with page.expect_response(lambda r: f"algo={ALGO}" in r.url and "/api/trace" in r.url and r.status == 200):
                page.select_option("[data-testid=cfg-algo]", ALGO)
            page.wait_for_url(re.compile(rf"algo={re.escape(ALGO)}"))
        else:
            open_viewer(page, server_url, query)
        expect(counter_el(page)).to_have_attribute("data-total", str(len(trace["steps"])))
        # the code panel holds the very Triton file flashviz.attention runs, in the Python grammar
        editor = page.locator("[data-testid=kernel-editor]")
        expect(editor).to_contain_text(trace["kernel"]["source"].split("\n", 1)[0])  # its docstring's first line
        assert "def _fwd_tiles(" in trace["kernel"]["source"]
        expect(page.locator("#kernel-file")).to_have_text(trace["kernel"]["file"])
        assert trace["kernel"]["file"].endswith(".py")
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
        # Python keywords are highlighted as keywords (the C++ grammar would not know `def`)
        keyword = page.locator("[data-testid=kernel-editor] .cm-line span", has_text=re.compile(r"^def$")).first
        color = keyword.evaluate("e => getComputedStyle(e).color")
        plain = page.locator("[data-testid=kernel-editor] .cm-content").evaluate("e => getComputedStyle(e).color")
        assert color != plain
        expect(page.locator("[data-testid=error-badge]")).to_have_attribute("data-ok", "true")
    assert_clean(log)


def test_tensor_cores_section_follows_the_steps_from_the_trace(page, server_url, log):
    open_viewer(page, server_url, "n=64&d=16&br=16&bc=16&seed=0")  # fa2: scalar code, no such section
    expect(page.locator("[data-testid=tensor-cores]")).to_be_hidden()
    query = f"algo={ALGO}&n=256&d=64&br=128&bc=64&seed=1"
    open_viewer(page, server_url, query)
    trace = api(page, server_url, f"/api/trace?{query}")
    tc = trace["tensor_cores"]
    section = page.locator("[data-testid=tensor-cores]")
    expect(section).to_be_visible()
    expect(section.locator("[data-testid=tc-hidden] li")).to_have_count(len(tc["hidden"]))
    for k, s in enumerate(trace["steps"][:8]):
        page.evaluate(f"window.flashviz.goto({k})")
        expect_step(page, k)
        dot = tc["ops"].get(s["op"])
        if dot is None:
            expect(section.locator("[data-testid=tc-idle]")).to_be_visible()
            continue
        expect(section.locator("[data-testid=tc-instruction]")).to_contain_text(dot["instruction"]["text"])
        expect(section.locator("[data-testid=tc-dot]")).to_contain_text(f"{dot['flops']:,} FLOPs")
        # one coloured band per 16-row slice a warp owns, each marked with its warp
        bands = section.locator("[data-testid=tc-figure] rect.tc-band")
        expect(bands).to_have_count(sum(len(o["rows"]) for o in dot["owners"]))
        assert sorted({int(w) for w in bands.evaluate_all("els => els.map(e => e.dataset.warp)")}) == list(
            range(tc["warps"])
        )
        m = s["mma"]
        element = section.locator("[data-testid=tc-element]")
        expect(element).to_contain_text(f"{m['value']:.6g}"[:5])
        assert len(m["parts"]) == dot["k_steps"]
    assert_clean(log)


def test_compare_lists_fa2_triton_at_tiles_it_runs(page, server_url, log):
    open_viewer(page, server_url, "n=128&d=32&br=64&bc=32&seed=0")
    doc = api(page, server_url, "/api/compare?n=128&d=32&br=64&bc=32")
    assert doc["algorithms"][ALGO]["supported"]
    page.locator("#compare").scroll_into_view_if_needed()
    table = page.locator("[data-testid=compare-table]")
    expect(table.locator(f"[data-testid=compare-total] td[data-algo='{ALGO}']")).to_have_count(1)
    chart = page.locator("[data-testid=traffic-chart]")
    expect(chart.locator("polyline.series")).to_have_count(len(doc["sweep"]["bytes"]))
    assert ALGO in doc["sweep"]["bytes"]
    page.keyboard.press("End")
    moved = page.locator(f"[data-testid=race-{ALGO}] .race-text")
    expect(moved).to_have_attribute("data-bytes", str(doc["algorithms"][ALGO]["total"]["bytes"]))
    assert_clean(log)


def test_ladder_section_shows_the_recorded_run_with_its_date_and_gpu(page, server_url, log):
    open_viewer(page, server_url)
    doc = api(page, server_url, "/api/ladder")
    section = page.locator("#ladder")
    section.scroll_into_view_if_needed()
    provenance = page.locator("[data-testid=ladder-provenance]")
    expect(provenance).to_contain_text(f"Recorded {doc['date']} on {doc['gpu']}")
    expect(provenance).to_contain_text("not measured on this machine")
    rows = page.locator("[data-testid=ladder-rung]")
    expect(rows).to_have_count(len(doc["rungs"]))
    assert rows.evaluate_all("els => els.map(e => e.dataset.rung)") == [r["name"] for r in doc["rungs"]]
    tflops = page.locator("[data-testid=ladder-tflops]").all_text_contents()
    assert tflops == [f"{r['tflops']:.1f}" for r in doc["rungs"]]
    for r in doc["rungs"]:
        expect(section).to_contain_text(r["what_changed"][:60])
    assert_clean(log)


def test_picking_fa2_triton_on_the_seeds_example_switches_to_tiles_its_kernel_runs(page, server_url, log):
    """The seed's example (D=4, Br=Bc=4) is no launch of the Triton kernel: picking it takes the example launch's D,
    Br, Bc from /api/limits (N stays), and typing a head dimension it does not run is refused in place."""
    open_viewer(page, server_url)
    info = next(a for a in api(page, server_url, "/api/limits")["algos"] if a["name"] == ALGO)
    with page.expect_response(lambda r: f"algo={ALGO}" in r.url and "/api/trace" in r.url and r.status == 200):
        page.select_option("[data-testid=cfg-algo]", ALGO)
    ex = info["example"]
    page.wait_for_url(re.compile(rf"algo={re.escape(ALGO)}.*"))
    for f in ("d", "br", "bc"):
        expect(page.locator(f"#config [name={f}]")).to_have_value(str(ex[f]))
    expect(page.locator("[data-testid=tensor-cores]")).to_be_visible()
    page.fill("#config [name=d]", "48")
    expect(page.locator("#config [name=d]")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#cfg-d-err")).to_contain_text(f"must be one of {', '.join(map(str, info['allowed']['d']))}")
    assert_clean(log)


def test_fa2_triton_counts_its_flops_and_lays_its_recorded_program_on_the_sms(page, server_url, log):
    """Integration items 2 and 3: at a launch recorded on the H200 (N=1000, D=64, causal, 128×128: the autotuner's
    pick, 8 warps, 3 stages, 191 registers, 115,712 B), the FLOPs panel shows the engine's counts, equal to the closed
    form and not zero, with where this kernel runs them; the hardware view draws its grid on the SMs with the
    recorded registers and shared memory, the causal program order, and the warps' rows of the tensor-cores key."""
    query = "algo=fa2-triton&n=1000&d=64&br=128&bc=128&causal=true&seed=2"
    trace = api(page, server_url, f"/api/trace?{query}")
    open_viewer(page, server_url, query)
    f = trace["flops"]
    assert f["matches"] and f["matmul"] > 0 and f["non_matmul"] > 0
    page.locator("[data-testid=flops]").scroll_into_view_if_needed()
    last = len(trace["steps"]) - 1
    page.evaluate(f"window.flashviz.goto({last})")
    expect_step(page, last)
    expect(page.locator("[data-testid=flops-matmul]")).to_have_text(f"{f['matmul']:,}")
    expect(page.locator("[data-testid=flops-non-matmul]")).to_have_text(f"{f['non_matmul']:,}")
    expect(page.locator("[data-testid=flops-now-exp]")).to_have_text(f"{f['counted']['exp']:,}")
    expect(page.locator("[data-testid=flops-note]")).to_contain_text("tensor cores (bf16 in, fp32 out)")

    k = trace["hardware"]["kernels"]["fa2_fwd"]
    assert k["registers"]["value"] == 191 and k["smem_bytes"] == 115_712
    sms = page.locator("[data-testid=hw-sms]")
    sms.scroll_into_view_if_needed()
    one = next(x for x in k["launches"] if x["heads"] == 1)
    expect(sms).to_have_attribute("data-kernel", k["template"])
    expect(sms).to_have_attribute("data-blocks", str(trace["config"]["tr"]))
    expect(sms.locator(".sm.busy")).to_have_count(one["busy_sms"])
    expect(page.locator("[data-testid=hw-theoretical]")).to_have_text(f"{100 * k['occupancy']['theoretical']:.1f}%")
    occupancy = page.locator("#hw-occupancy")
    expect(occupancy).to_contain_text("191 registers per thread (measured: ")
    expect(occupancy).to_contain_text("(measured: fa2_fwd with 128×128 tiles, D=64, 8 warps, 3 stages")
    # the step's block i runs as program Tr - 1 - i under causal masking
    s = trace["steps"][last]
    program = trace["config"]["tr"] - 1 - s["block"]
    expect(page.locator("[data-testid=hw-sm-here]")).to_have_attribute("data-sm", str(program % 132))
    expect(page.locator("[data-testid=hw-summary]")).to_contain_text(f"runs as program {program}")
    # the warps: at a scores step, the wgmma rows of the tensor-cores key (16 rows per warp; the first 64 shown)
    k_scores = next(j for j, st in enumerate(trace["steps"]) if st["op"] == "scores")
    page.evaluate(f"window.flashviz.goto({k_scores})")
    expect_step(page, k_scores)
    host = page.locator("[data-testid=hw-warps]")
    expect(host).to_have_attribute("data-op", "scores")
    expect(page.locator("[data-testid=hw-owners]")).to_have_attribute("data-warps", "0,1,2,3")
    expect(host).to_contain_text("wgmma.mma_async m64n128k16")
    expect(host).to_contain_text("8 of 8 warps busy")
    assert_no_junk(page)
    assert_clean(log)
