"""End-to-end, issue 20 (the schedule view): for fa3 the page draws its trace's `schedule` as lanes (every bar where
its times put it), outlines the current step's bars in every lane as the step moves, redraws the lanes from the
ablation's rung picked in the radio group, draws the one-lane baseline on the same axis; beneath, the recorded H200
run's measured lanes (filled) each beside the model's (hatched) on one axis, the outline following the step there
too, the per-piece disagreement and the tensor pipe of fa2-triton and fa3 as the trace carries them; for fa2 the
section is absent. The same from the exported file (file://, no server) and in the notebook widget's frame. In real
headless Chromium against the real server; a screenshot under test-artifacts/ (docs/schedule.png is a copy)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pytest
from pageutil import api, assert_clean, counter_el, expect, expect_step, open_viewer, to_fixed

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
    return (bar["lane"], bar["piece"], "" if bar["j"] is None else str(bar["j"]), bar.get("source") or "modelled")


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
    outlined: set[str] = set()
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
        assert {b["source"] for b in drawn} == {"modelled"}  # the model's lanes: all hatched
        # the measured panel: the recorded block, its measured and modelled bars each where its times put it,
        # outlined with the step as the model's are
        mb = doc["measured"]["blocks"][0]
        meas = bars_on_page(page, "sched-meas-bar")
        check_placed(meas, mb["bars"], mb["end_ns"])
        want = sorted(key(b) for b in mb["bars"] if b["step"] == s["op"] and b["step_j"] == s["j"])
        assert sorted(key(b) for b in meas if b["current"]) == want
        outlined |= {b["source"] for b in meas if b["current"]}
    assert outlined == {"measured", "modelled"}  # the outline followed the step in the measured lanes too
    # the ring's slots and the waits are drawn; the sentences say what the data says
    assert page.locator("[data-testid=sched-slot]").count() > 0
    note = page.locator("[data-testid=sched-note]")
    expect(note).to_contain_text("The lanes above are the model's (hatched)")
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
            expect(label).to_contain_text(f"{to_fixed(v['tflops'], 1)} TFLOP/s measured")
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


def measured_panel_matches(frame, doc: dict) -> None:
    """The measured panel in `frame` (a page or a frame locator) is the document's: its measured bars filled, the
    legend saying which is which, the note and the disagreement and tensor-pipe numbers as the document has them."""
    m, tp = doc["measured"], doc["tensor_pipe"]
    mb = m["blocks"][0]
    n_meas = sum(b["source"] == "measured" for b in mb["bars"])
    expect(frame.locator("[data-testid=sched-meas-bar][data-source=measured]")).to_have_count(n_meas)
    expect(frame.locator("[data-testid=sched-meas-bar].sched-measured")).to_have_count(n_meas)
    expect(frame.locator("[data-testid=sched-meas-bar][data-source=modelled]")).to_have_count(len(mb["bars"]) - n_meas)
    expect(frame.locator("[data-testid=sched-meas-bar][data-source=modelled].sched-measured")).to_have_count(0)
    title = frame.locator("[data-testid=sched-meas-title]")
    expect(title).to_contain_text(f"Measured on the {m['gpu']} (filled) beside the model (hatched)")
    expect(title).to_contain_text(f"block i = {mb['i']}, run by program {mb['program']}")
    legend = frame.locator("[data-testid=sched-meas-legend]")
    expect(legend).to_contain_text("hatched: modelled")
    expect(legend).to_contain_text("filled: measured")
    for row in m["lane_rows"]:
        expect(
            frame.locator("[data-testid=sched-meas-svg] text.sched-lane-label", has_text=row["label"])
        ).to_have_count(1)
    if m["note"]:
        expect(frame.locator("[data-testid=sched-meas-note]")).to_contain_text(m["note"])
    run = frame.locator("[data-testid=sched-meas-run]")
    expect(run).to_contain_text(m["record_command"])
    expect(run).to_contain_text(m["file"])
    lines = frame.locator("[data-testid=sched-disagree] li")
    expect(lines).to_have_count(len(m["disagreement"]))
    for n, r in enumerate(m["disagreement"]):
        line = lines.nth(n)
        expect(line).to_contain_text(f"{r['piece']} ({r['what']}): measured ")
        expect(line).to_contain_text(f"(mean of {r['count']})")
        if r["ratio"] is not None:
            expect(line).to_contain_text(f"{to_fixed(r['ratio'], 2)}× the model")
        elif r["modelled_ns"] is None:
            expect(line).to_contain_text("the model has no such piece")
    table = frame.locator("[data-testid=sched-pipe]")
    expect(frame.locator("[data-testid=sched-pipe-row]")).to_have_count(len(tp["rows"]))
    for n, r in enumerate(tp["rows"]):
        row = frame.locator("[data-testid=sched-pipe-row]").nth(n)
        expect(row).to_have_attribute("data-algo", r["algo"])
        for name in tp["shown"]:
            expect(row.locator(f"[data-metric={name}]")).to_have_text(f"{to_fixed(r['metrics'][name], 1)}%")
    for name in tp["shown"]:
        expect(table.locator("th", has_text=name)).to_have_attribute("title", tp["metrics"][name])
    expect(frame.locator("[data-testid=sched-pipe-metrics]")).to_contain_text(tp["metrics"]["tensor_active_pct"])


def side_by_side(tp: dict) -> tuple[dict, dict]:
    """The two rows the page's sentence sets side by side: the first two of different algorithms at one launch."""
    at = lambda r: (r["n"], r["d"], r["heads"], r["batch"], r["causal"])  # noqa: E731
    a = next(r for r in tp["rows"] if any(x["algo"] != r["algo"] and at(x) == at(r) for x in tp["rows"]))
    b = next(x for x in tp["rows"] if x["algo"] != a["algo"] and at(x) == at(a))
    return a, b


def test_the_measured_lanes_and_the_tensor_pipe_are_the_recorded_runs(page, server_url, log):
    """fa3 at a launch other than the recorded one: the panel shows the recorded block, says where it was measured,
    and every number it shows is the trace's; the tensor pipe of fa2-triton and fa3 side by side in one sentence."""
    query = "algo=fa3&n=256&d=64&br=128&bc=128&causal=1"
    open_viewer(page, server_url, query)
    doc = api(page, server_url, f"/api/trace?{query}")["schedule"]
    m = doc["measured"]
    assert m["shape"]["causal"] and not m["shape_matches"]
    expect(page.locator("[data-testid=schedule]")).to_be_visible()
    measured_panel_matches(page, doc)
    a, b = side_by_side(doc["tensor_pipe"])
    ta, tb = a["metrics"]["tensor_active_pct"], b["metrics"]["tensor_active_pct"]
    sentence = page.locator("[data-testid=sched-pipe-sentence]")
    active = f"active {to_fixed(tb, 1)}% of the SMs' active cycles in {b['algo']} ({b['kernel']})"
    expect(sentence).to_contain_text(active)
    against = f"against {to_fixed(ta, 1)}% in {a['algo']} ({a['kernel']}): {to_fixed(tb / ta, 2)}×"
    expect(sentence).to_contain_text(against)
    assert_clean(log)


def test_the_exported_file_carries_the_schedule_view(browser, tmp_path):
    """`flashviz export --algo fa3`: the one HTML file opened from disk (file://, no server, no other request) draws
    the same section from its trace, the recorded run's measured lanes included, and its toggle redraws."""
    out = tmp_path / "fa3.html"
    done = subprocess.run(
        [sys.executable, "-m", "flashviz", "export", str(out), "--algo", "fa3", "--n", "200", "--d", "128",
         "--br", "128", "--bc", "128"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    trace = subprocess.run(
        [sys.executable, "-m", "flashviz", "trace", "--algo", "fa3", "--n", "200", "--d", "128", "--br", "128",
         "--bc", "128", "-o", str(tmp_path / "t.json")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert trace.returncode == 0, trace.stderr
    doc = json.loads((tmp_path / "t.json").read_text())["schedule"]
    context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
    errors: list[str] = []
    schemes: set[str] = set()
    context.on("request", lambda r: schemes.add(r.url.split(":", 1)[0]))
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(out.as_uri())
    expect(page.locator("html")).to_have_attribute("data-ready", "true")
    section = page.locator("[data-testid=schedule]")
    expect(section).to_be_visible()
    bars = page.locator("[data-testid=sched-bar]")
    expect(bars.first).to_be_visible()
    measured_panel_matches(page, doc)
    mb = doc["measured"]["blocks"][0]
    check_placed(bars_on_page(page, "sched-meas-bar"), mb["bars"], mb["end_ns"])
    radios = page.locator("[data-testid=sched-variant]")
    expect(radios).to_have_count(3)
    before = bars_on_page(page, "sched-bar")
    radios.nth(0).check()
    expect(page.locator("#sched-body h3").first).to_contain_text("warp specialization")
    after = bars_on_page(page, "sched-bar")
    assert len(after) == len(before) and after != before  # the rung's own lanes (its softmaxes wait for both S)
    assert errors == []
    assert schemes <= {"file", "data", "blob"}, schemes
    context.close()


def test_the_notebook_widget_carries_the_measured_lanes(browser):
    """The widget's own host module (flashviz/share/widget_host.js, as anywidget runs it, with a stand-in model that
    holds the widget's synced state) puts the page in its sandboxed frame: the frame draws the schedule with the
    measured lanes and the tensor pipe from the trace Python made, with no server."""
    pytest.importorskip("anywidget", reason="pip install -e '.[test]' (the notebook extra)")
    from flashviz import trace
    from flashviz.share.widget import Viewer, esm

    t = trace(algo="fa3", n=256, d=64, br=128, bc=128)
    w = Viewer.of_trace(t)
    doc = json.loads(t.to_json())["schedule"]
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
    errors: list[str] = []
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_content("<div id=root></div>")
    page.evaluate(
        """async ([code, state]) => {
            const url = URL.createObjectURL(new Blob([code], {type: "text/javascript"}));
            const mod = await import(url);
            const model = {get: (k) => state[k], set() {}, save_changes() {}, send() {}, on() {}, off() {}};
            mod.default.render({model, el: document.getElementById("root")});
        }""",
        [esm(), {"_documents": w._documents, "config": w.config, "step": 0, "height": 860}],
    )
    frame = page.frame_locator("iframe[data-flashviz=viewer]")
    expect(frame.locator("html")).to_have_attribute("data-ready", "true")
    expect(frame.locator("[data-testid=schedule]")).to_be_visible()
    measured_panel_matches(frame, doc)
    assert errors == []
    context.close()


def test_the_page_shows_the_documents_numbers_not_its_own(browser, tmp_path):
    """A trace file whose measured disagreement and tensor pipe were changed by hand (random numbers), viewed with
    `flashviz view t.json`: the page shows those numbers, as the document says them (it recomputes nothing)."""
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
    for r in sch["measured"]["disagreement"]:
        if r["ratio"] is not None:
            r["ratio"] = round(rng.uniform(0.1, 9.9), 3)
    for r in sch["tensor_pipe"]["rows"]:
        r["metrics"]["tensor_active_pct"] = round(rng.uniform(5, 95), 2)
    sch["tensor_pipe"]["rows"][0]["metrics"]["tensor_active_pct"] = rng.choice([89.25, 12.75, 50.25])  # exact ties
    sch["measured"]["gpu"] = "hand-made GPU"
    (tmp_path / "t.json").write_text(json.dumps(doc))
    with viewing(tmp_path / "t.json") as url:
        context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(url)
        expect(page.locator("html")).to_have_attribute("data-ready", "true")
        expect(page.locator("[data-testid=schedule]")).to_be_visible()
        measured_panel_matches(page, sch)
        expect(page.locator("[data-testid=sched-meas-title]")).to_contain_text("Measured on the hand-made GPU")
        assert errors == []
        context.close()


def test_to_fixed_writes_what_the_page_writes(page):
    """The tests' to_fixed against Chromium's own Number.prototype.toFixed: exact binary ties (where Python's format
    and the page part), values a hair either side of them, negatives, and fresh random numbers."""
    rng = random.Random()
    xs = [89.25, 12.75, 0.125, 1.005, 2.675, -0.25, -3.125, 0.0, 1e-7, 123456.5]
    xs += [rng.uniform(-100, 100) for _ in range(200)] + [round(rng.uniform(0, 100), 2) for _ in range(200)]
    for digits in (0, 1, 2, 3):
        shown = page.evaluate("([xs, d]) => xs.map(x => x.toFixed(d))", [xs, digits])
        assert [to_fixed(x, digits) for x in xs] == shown, digits
