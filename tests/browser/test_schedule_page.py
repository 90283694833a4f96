"""End-to-end, issue 20 (the schedule view): for fa3 the page draws its trace's `schedule` as lanes (every bar where
its times put it), outlines the current step's bars in every lane as the step moves, redraws the lanes from the
ablation's rung picked in the radio group, draws the one-lane baseline on the same axis; for fa2 the section is
absent. In real headless Chromium against the real server; a screenshot under test-artifacts/."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest
from pageutil import api, assert_clean, counter_el, expect, expect_step, open_viewer

pytestmark = pytest.mark.browser

INNER = 760 - 170 - 8  # render/schedule.ts: WIDTH - LABEL - 8, the px of the time axis


def bars_on_page(page, testid: str) -> list[dict]:
    return page.eval_on_selector_all(
        f"[data-testid={testid}]",
        """els => els.map(e => ({lane: e.dataset.lane, piece: e.dataset.piece, j: e.dataset.j,
            x: +e.dataset.x, width: +e.dataset.width, current: e.classList.contains('sched-current'),
            source: e.dataset.source}))""",
    )


def key(bar) -> tuple:
    return (bar["lane"], bar["piece"], "" if bar["j"] is None else str(bar["j"]))


def check_placed(drawn: list[dict], bars: list[dict], span: float) -> None:
    """Every bar of the document is drawn once at start/span of the axis, as wide as its duration (>= 1 px)."""
    assert len(drawn) == len(bars)
    left = list(drawn)
    for want in bars:
        x = want["start_ns"] * INNER / span
        width = max(1.0, (want["end_ns"] - want["start_ns"]) * INNER / span)
        hits = [g for g in left if key(g) == key(want) and abs(g["x"] - x) <= 0.01 and abs(g["width"] - width) <= 0.01]
        assert hits, (want, x, width)
        left.remove(hits[0])


def test_the_schedule_follows_the_step_and_the_toggle_redraws(page, server_url, log, artifacts):
    seed = int.from_bytes(os.urandom(2), "little")
    query = f"algo=fa3&n=300&d=128&br=128&bc=128&seed={seed}"
    open_viewer(page, server_url, query)
    trace = api(page, server_url, f"/api/trace?{query}")
    doc = trace["schedule"]
    section = page.locator("[data-testid=schedule]")
    expect(section).to_be_visible()
    for k, s in enumerate(trace["steps"]):
        page.evaluate(f"window.flashviz.goto({k})")
        expect_step(page, k)
        expect(section).to_have_attribute("data-op", s["op"])
        expect(section).to_have_attribute("data-j", "" if s["j"] is None else str(s["j"]))
        block = next(b for b in doc["blocks"] if b["i"] == s["block"])
        base = next(b for b in doc["baseline"]["blocks"] if b["i"] == s["block"])
        span = max(block["end_ns"], base["end_ns"])
        drawn = bars_on_page(page, "sched-bar")
        check_placed(drawn, block["bars"], span)
        check_placed(bars_on_page(page, "sched-base-bar"), base["bars"], span)
        # the current step's bars, in every lane that has some: those whose (step, step_j) are its (op, j)
        want = sorted(key(b) for b in block["bars"] if b["step"] == s["op"] and b["step_j"] == s["j"])
        assert want, s["op"]
        assert sorted(key(b) for b in drawn if b["current"]) == want
        base_on = sorted(key(b) for b in bars_on_page(page, "sched-base-bar") if b["current"])
        assert base_on == sorted(key(b) for b in base["bars"] if b["step"] == s["op"] and b["step_j"] == s["j"])
        assert {b["source"] for b in drawn} == {"modelled"}  # no measured bars in this trace: all hatched
    # the ring's slots and the waits are drawn; the sentences say what the data says
    assert page.locator("[data-testid=sched-slot]").count() > 0
    note = page.locator("[data-testid=sched-note]")
    expect(note).to_contain_text("Every bar here is modelled")
    expect(note).to_contain_text(doc["benchmark"]["source"])
    # the toggle: each rung's lanes from its own blocks, its measured TFLOP/s in its label
    page.evaluate("window.flashviz.goto(0)")
    expect_step(page, 0)
    i = int(counter_el(page).get_attribute("data-block"))
    radios = page.locator("[data-testid=sched-variant]")
    expect(radios).to_have_count(len(doc["variants"]))
    for n, v in enumerate(doc["variants"]):
        label = page.locator("[data-testid=sched-variants] label").nth(n)
        expect(label).to_contain_text(v["name"])
        if v["tflops"] is not None:
            expect(label).to_contain_text(f"{v['tflops']:.1f} TFLOP/s measured")
        radios.nth(n).check()
        block = next(b for b in v["blocks"] if b["i"] == i)
        base = next(b for b in doc["baseline"]["blocks"] if b["i"] == i)
        expect(page.locator("#sched-body h3").first).to_contain_text(v["name"])
        check_placed(bars_on_page(page, "sched-bar"), block["bars"], max(block["end_ns"], base["end_ns"]))
    first = doc["variants"][0]
    radios.nth(0).check()
    expect(page.locator("#sched-body h3").first).to_contain_text(first["name"])
    section.scroll_into_view_if_needed()
    radios.nth(len(doc["variants"]) - 1).check()
    section.screenshot(path=str(artifacts / "schedule.png"))
    # fa2 has no schedule: the section is absent
    open_viewer(page, server_url, f"algo=fa2&n=12&d=4&br=4&bc=4&seed={seed}")
    expect(section).to_be_hidden()
    assert_clean(log)


def test_the_exported_file_carries_the_schedule_view(browser, tmp_path):
    """`flashviz export --algo fa3`: the one HTML file opened from disk draws the same section from its trace, and
    its toggle redraws."""
    out = tmp_path / "fa3.html"
    done = subprocess.run(
        [sys.executable, "-m", "flashviz", "export", str(out), "--algo", "fa3", "--n", "200", "--d", "128",
         "--br", "128", "--bc", "128"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
    errors: list[str] = []
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.as_uri())
    expect(page.locator("html")).to_have_attribute("data-ready", "true")
    section = page.locator("[data-testid=schedule]")
    expect(section).to_be_visible()
    bars = page.locator("[data-testid=sched-bar]")
    expect(bars.first).to_be_visible()
    radios = page.locator("[data-testid=sched-variant]")
    expect(radios).to_have_count(3)
    before = bars_on_page(page, "sched-bar")
    radios.nth(0).check()
    expect(page.locator("#sched-body h3").first).to_contain_text("warp specialization")
    after = bars_on_page(page, "sched-bar")
    assert len(after) == len(before) and after != before  # the rung's own lanes (its softmaxes wait for both S)
    assert errors == []
    context.close()


def test_a_measured_lane_and_a_tensor_pipe_record_are_drawn_as_the_document_says(browser, tmp_path):
    """A hand-made measured document (as the measured run will write it: a lane with `lane_sources` "measured", its
    P·V bars 1.4× the model's, a `measured` record, a `tensor_pipe` record), viewed with `flashviz view t.json`: the
    measured bars are filled, the sentence says 1.40× for P·V, the tensor-pipe table holds the record's numbers."""
    from pageutil import viewing

    done = subprocess.run(
        [sys.executable, "-m", "flashviz", "trace", "--algo", "fa3", "--n", "200", "--d", "128", "--br", "128",
         "--bc", "128", "-o", str(tmp_path / "t.json")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "t.json").read_text())
    sch = doc["schedule"]
    rng = random.Random()
    pipe = {"fa2-triton": round(rng.uniform(20, 60), 1), "fa3": round(rng.uniform(40, 90), 1)}
    lane = "wg0 measured"
    for rung in [{"blocks": sch["blocks"]}, *sch["variants"]]:
        for b in rung["blocks"]:
            copies = []
            for x in b["bars"]:
                if x["lane"] != "wg0":
                    continue
                ns = (x["end_ns"] - x["start_ns"]) * (1.4 if x["piece"] == "PV" else 1.0)
                copies.append({**x, "lane": lane, "end_ns": x["start_ns"] + ns})
            b["bars"] += copies
    sch["lanes"].append(lane)
    sch["lane_labels"][lane] = "warpgroup 0, measured"
    sch["lane_sources"] = {lane: "measured"}
    sch["measured"] = {"date": "2026-12-02", "gpu": "hand-made", "command": "this test"}
    sch["tensor_pipe"] = {k: {"value": v, "unit": "% of cycles", "source": "hand-made"} for k, v in pipe.items()}
    (tmp_path / "t.json").write_text(json.dumps(doc))
    with viewing(tmp_path / "t.json") as url:
        context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        expect(page.locator("html")).to_have_attribute("data-ready", "true")
        expect(page.locator("[data-testid=schedule]")).to_be_visible()
        drawn = bars_on_page(page, "sched-bar")
        measured = [b for b in drawn if b["source"] == "measured"]
        assert measured and {b["lane"] for b in measured} == {lane}
        assert page.locator("[data-testid=sched-bar].sched-measured").count() == len(measured)
        note = page.locator("[data-testid=sched-note]")
        expect(note).to_contain_text("measured Oi += P·Vj (wgmma): 1.40× the model")
        expect(note).to_contain_text("(hand-made, 2026-12-02: this test)")
        table = page.locator("[data-testid=sched-pipe]")
        for name, value in pipe.items():
            expect(table.locator("tr", has_text=name)).to_contain_text(str(value))
        assert errors == []
        context.close()
