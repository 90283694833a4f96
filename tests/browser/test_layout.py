"""Layout in real Chromium (issue 8, items 20 and 21): no text cut off or written across a line, at 1280x800,
1400 wide and on a phone (390x844). Geometry is measured, not looked at: cells' scrollWidth against their
clientWidth, boxes of the chart's words, the boxes of every label the memory picture drew (exposed by
`window.flashviz.layout().drawn`) against its boundary lines and connectors, the page's width, the sticky header's
height and the controls' boxes on a phone. Screenshots of every algorithm go to test-artifacts/layout-*.png."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from pageutil import WAIT_MS

from flashviz.algos import REGISTRY
from flashviz.model.config import Config, ConfigError

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.browser

SEED = "n=8&d=4&br=4&bc=4&seed=0"
DESKTOP = (1280, 800)
WIDE = (1400, 900)
PHONE = (390, 844)
TABLET = (768, 1024)
ALGOS = ["fa2", "fa1", "standard", "fa2-backward"]
# every algorithm, and FA2 causal, as (name for the artifacts, query)
CASES = [(a, f"algo={a}&{SEED}" if a != "fa2" else SEED) for a in ALGOS] + [("fa2-causal", f"{SEED}&causal=true")]


@contextmanager
def viewer(browser, server_url, log, size, query):
    """A page at `size` (a phone: touch, mobile viewport) on the viewer at `query`, ready."""
    w, h = size
    phone = w < 500
    options = {"color_scheme": "light", "device_scale_factor": 1, "is_mobile": phone, "has_touch": phone}
    ctx = browser.new_context(viewport={"width": w, "height": h}, **options)
    page = ctx.new_page()
    page.on("console", lambda m: log.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: log.errors.append(f"pageerror: {e}"))
    page.set_default_timeout(WAIT_MS)  # a loaded 2-core machine: bound only how long a broken page takes to fail
    try:
        page.goto(f"{server_url}/?{query}")
        page.wait_for_selector("html[data-ready=true]")
        page.wait_for_selector("[data-testid=step-counter][data-step]")
        yield page
    finally:
        ctx.close()


def goto_step(page, k: int) -> None:
    page.evaluate("k => window.flashviz.goto(k)", k)
    expect(page.locator("[data-testid=step-counter]")).to_have_attribute("data-step", str(k))


# JavaScript run in the page: what it returns is what the assertions judge.
WRAP_WIDTHS = "sel => { const w = document.querySelector(sel); return [w.scrollWidth, w.clientWidth]; }"

CUT_CELLS = """sel => [...document.querySelectorAll(sel)]
  .filter(e => e.scrollWidth > e.clientWidth + 1)
  .map(e => `${e.tagName} ${e.scrollWidth}>${e.clientWidth}: ${e.textContent.trim().slice(0, 50)}`)"""

DRAWN_PROBLEMS = """() => {
  const l = window.flashviz.layout();
  const d = l.drawn;
  const out = [];
  const ov = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
  const meets = (a, s) => s.x <= a.x + a.w && a.x <= s.x + s.w && s.y <= a.y + a.h && a.y <= s.y + s.h;
  const name = (t) => `"${t.text}" (${t.kind})`;
  d.labels.forEach((a, i) => {
    if (a.box.x < 0 || a.box.y < 0 || a.box.x + a.box.w > l.width + 0.5 || a.box.y + a.box.h > l.height + 0.5)
      out.push(`${name(a)} leaves the canvas`);
    d.labels.slice(i + 1).forEach((b) => { if (ov(a.box, b.box)) out.push(`${name(a)} overlaps ${name(b)}`); });
    d.lines.forEach((s) => { if (meets(a.box, s)) out.push(`${name(a)} crosses a boundary at ${JSON.stringify(s)}`); });
    d.arcs.forEach((r) => { if (ov(a.box, r)) out.push(`${name(a)} is crossed by a connector`); });
  });
  d.arcs.forEach((r) => {
    const b = l.band;
    if (r.y < b.y - 0.5 || r.y + r.h > b.y + b.h + 0.5) out.push(`a connector leaves its band: ${JSON.stringify(r)}`);
  });
  return { problems: out, labels: d.labels.map((t) => t.text), lines: d.lines.length, arcs: d.arcs.length };
}"""


def test_memory_picture_never_writes_across_a_line(browser, server_url, log, artifacts):
    """Item 20: "written once," struck through by the block boundary, "not written yet" on the borders, dashed
    arrows across labels, "V[…]" in the SRAM caption: every label of every step, every algorithm, two sizes."""
    seen_arcs = 0
    for size, tag in ((DESKTOP, "desktop"), (PHONE, "phone")):
        for name, query in CASES:
            with viewer(browser, server_url, log, size, query) as page:
                total = int(page.get_attribute("[data-testid=step-counter]", "data-total"))
                for k in range(total):
                    goto_step(page, k)
                    got = page.evaluate(DRAWN_PROBLEMS)
                    assert got["problems"] == [], f"{name} {tag} step {k}: {got['problems'][:5]}"
                    assert got["labels"], f"{name} {tag} step {k}: no labels recorded"
                    assert not any("\u2026]" in t for t in got["labels"]), got["labels"]
                    seen_arcs += got["arcs"]
                    if name == "fa2" and k == 0 and tag == "desktop":
                        # the seed's O, before its write-back: the whole note is there, between the boundaries
                        note = {"not written yet:", "written once,", "at write-back"}
                        assert note <= set(got["labels"]), got["labels"]
                    if name == "fa2" and k == 6 and tag == "desktop":
                        assert "K[4:8], V[4:8] held" in got["labels"], got["labels"]
                goto_step(page, min(total - 1, 6))
                page.locator("#stage").scroll_into_view_if_needed()
                page.screenshot(path=str(artifacts / f"layout-{name}-{tag}.png"))
    assert seen_arcs > 20  # the connectors were drawn (and checked)
    assert log.errors == []


LARGER = [
    "n=1024&d=64&br=64&bc=64&seed=0",
    "n=17&d=3&br=5&bc=7&seed=0",
    "algo=standard&n=64&d=16&br=16&bc=16&seed=0",
    "algo=fa2-backward&n=40&d=8&br=8&bc=8&seed=0&causal=true",
]


def test_memory_picture_labels_at_larger_shapes(browser, server_url, log):
    """The same rules at other shapes (colour cells, ragged blocks, many narrow tensors: the backward's titles
    overlapped at 768 px), on a desktop, a tablet and a phone: the first steps and the last."""
    for size in (DESKTOP, TABLET, PHONE):
        for query in LARGER:
            with viewer(browser, server_url, log, size, query) as page:
                total = int(page.get_attribute("[data-testid=step-counter]", "data-total"))
                for k in [*range(min(total, 10)), total - 1]:
                    goto_step(page, k)
                    got = page.evaluate(DRAWN_PROBLEMS)
                    assert got["problems"] == [], f"{query} {size} step {k}: {got['problems'][:5]}"
    assert log.errors == []


def test_carries_cells_are_never_cut(browser, server_url, log):
    """Item 20: the carries table cut the O_i column at 1400 px wide even at D=4."""
    queries = [
        f"{SEED}&step=6",
        f"algo=fa1&{SEED}&step=7",
        f"algo=standard&{SEED}&step=8",
        f"algo=fa2-backward&{SEED}&step=10",
        "n=64&d=64&br=16&bc=16&seed=0&step=6",
    ]
    for size in (WIDE, DESKTOP, PHONE):
        for q in queries:
            with viewer(browser, server_url, log, size, q) as page:
                page.locator("#carries").scroll_into_view_if_needed()
                expect(page.locator("[data-testid=carries] tbody tr").first).to_be_visible()
                cut = page.evaluate(CUT_CELLS, "#carries-table th, #carries-table td")
                assert cut == [], f"{size} {q}: {cut}"
                if size != PHONE:
                    # on a desktop the whole table shows, no scrolling sideways
                    wrap = page.evaluate(WRAP_WIDTHS, "#carries .table-wrap")
                    assert wrap[0] <= wrap[1] + 1, f"{size} {q}: the carries table is {wrap[0]} px in {wrap[1]}"
    assert log.errors == []


def test_cell_tooltip_stays_inside_the_picture(browser, server_url, log):
    """Item 20: the tooltip of a cell near the picture's lower edge was cut off by the card."""
    for size in (DESKTOP, WIDE, PHONE):
        with viewer(browser, server_url, log, size, f"{SEED}&step=6") as page:
            page.locator("#stage").scroll_into_view_if_needed()
            grids = page.evaluate("() => { const l = window.flashviz.layout(); return Object.values(l.grids); }")
            canvas = page.locator("[data-testid=memory-canvas]").bounding_box()
            low = max(g["y"] + g["h"] for g in grids)
            corners = [g for g in grids if abs(g["y"] + g["h"] - low) < 1]
            for g in (min(corners, key=lambda g: g["x"]), max(corners, key=lambda g: g["x"] + g["w"])):
                x = canvas["x"] + g["x"] + g["w"] - g["cw"] / 2
                y = canvas["y"] + g["y"] + g["h"] - g["ch"] / 2
                if size == PHONE:
                    page.touchscreen.tap(x, y)
                else:
                    page.mouse.move(x, y)
                tip = page.locator("[data-testid=cell-tooltip]")
                expect(tip).to_be_visible()
                expect(tip).to_contain_text(g["name"])
                box = tip.bounding_box()
                host = page.locator("#memory-host").bounding_box()
                why = (size, g["name"], box, host)
                assert host["x"] - 0.5 <= box["x"] and box["x"] + box["width"] <= host["x"] + host["width"] + 0.5, why
                assert host["y"] - 0.5 <= box["y"] and box["y"] + box["height"] <= host["y"] + host["height"] + 0.5, why
    assert log.errors == []


CHART_WORDS = """() => {
  const svg = document.querySelector('[data-testid=traffic-chart]');
  const texts = [...svg.querySelectorAll('text')].map(t => ({ text: t.textContent, r: t.getBoundingClientRect() }));
  const box = svg.getBoundingClientRect();
  const out = [];
  const ov = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  texts.forEach((a, i) => {
    const inside = a.r.left >= box.left - 0.5 && a.r.right <= box.right + 0.5
      && a.r.top >= box.top - 0.5 && a.r.bottom <= box.bottom + 0.5;
    if (!inside) out.push(`"${a.text}" leaves the chart`);
    texts.slice(i + 1).forEach(b => { if (ov(a.r, b.r)) out.push(`"${a.text}" overlaps "${b.text}"`); });
  });
  // each current-config dot is a point of its algorithm's line
  const off = [];
  for (const dot of svg.querySelectorAll('circle.dot')) {
    const algo = dot.dataset.algo;
    const line = svg.querySelector(`polyline[data-algo="${algo}"]`);
    const pts = line.getAttribute('points').trim().split(/\\s+/).map(p => p.split(',').map(Number));
    const cx = +dot.getAttribute('cx'), cy = +dot.getAttribute('cy');
    const d = Math.min(...pts.map(([x, y]) => Math.hypot(x - cx, y - cy)));
    if (d > 0.6) off.push(`${algo}: the dot is ${d.toFixed(1)} units from its line`);
  }
  const parent = svg.parentElement.getBoundingClientRect();
  return { overlaps: out, off, dots: svg.querySelectorAll('circle.dot').length, fits: box.width <= parent.width + 0.5 };
}"""


def forwards_running(shape: str) -> list[str]:
    """The forward algorithms of the registry, in its order, whose launch rules take this shape's tiles."""
    launch = {k: int(v) for k, v in (x.split("=") for x in shape.split("&"))}
    running = []
    for name, algo in REGISTRY.items():
        try:
            algo.api_validated(Config(algo=name, record=(), **launch))
        except ConfigError:
            continue
        if algo.direction == "forward":
            running.append(name)
    return running


def test_traffic_chart_words_apart_and_the_current_config_on_its_lines(browser, server_url, log):
    """Item 20: the y-axis title collided with a tick; the lines started at N=64 while the dot sat at N=8."""
    for size in (DESKTOP, PHONE):
        for q in (
            SEED,
            "n=10&d=4&br=4&bc=3&seed=0",
            "n=1024&d=64&br=64&bc=64&seed=0",
            "n=2048&d=16&bc=32&br=32&seed=1",
        ):
            with viewer(browser, server_url, log, size, q) as page:
                page.locator("#compare").scroll_into_view_if_needed()
                # one line and dot per forward algorithm that runs these tiles (fa2-triton only at its own)
                shape = "&".join(x for x in q.split("&") if x.split("=")[0] in ("n", "d", "br", "bc"))
                names = page.evaluate(
                    "async (q) => Object.keys((await (await fetch('api/compare?' + q)).json()).sweep.bytes)",
                    shape,
                )
                assert names == forwards_running(shape), shape
                lines = len(names)
                expect(page.locator("[data-testid=traffic-chart] circle.dot")).to_have_count(lines)
                got = page.evaluate(CHART_WORDS)
                assert got["overlaps"] == [], (size, q, got["overlaps"])
                assert got["off"] == [], (size, q, got["off"])
                assert got["fits"], (size, q)
    assert log.errors == []


PICTURE = "() => { const l = window.flashviz.layout(); return { w: l.width, stacked: l.stacked, text: l.sramText }; }"

HEADER = """() => {
  const bars = [...document.querySelectorAll('.topbar, .transport')];
  // what stays on screen once the page is scrolled: the sticky bars' lowest edge
  return Math.max(0, ...bars.map(b => b.getBoundingClientRect()).filter(r => r.bottom > 0).map(r => r.bottom));
}"""

CARDS_CUT = """() => [...document.querySelectorAll('.card')]
  .filter(c => c.scrollWidth > c.clientWidth + 1)
  .map(c => `#${c.id}: ${c.scrollWidth} > ${c.clientWidth}`)"""


def scroll_through(page) -> list[str]:
    """Scroll the whole page (content-visibility draws each card as it comes on screen); what overflowed."""
    cut = []
    height = page.evaluate("document.documentElement.scrollHeight")
    for y in range(0, height + 800, 600):
        page.evaluate("y => window.scrollTo(0, y)", y)
        page.wait_for_function("() => new Promise(r => requestAnimationFrame(() => r(true)))")
        cut += page.evaluate(CARDS_CUT)
    return sorted(set(cut))


def test_phone_layout_fits_and_its_controls_work(browser, server_url, log, artifacts):
    """Item 21: at 390x844 the page was 883 px wide, the timeline, speed and block picker were off screen, the
    memory picture was a thumbnail with SRAM cut off, the sticky header took 245 px, tables and chart were cut."""
    for name, query in CASES:
        with viewer(browser, server_url, log, PHONE, query) as page:
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE[0]
            # the memory picture: HBM above SRAM, all of it within the card, the seed's SRAM in numbers
            layout = page.evaluate(PICTURE)
            host_w = page.evaluate("document.querySelector('#memory-host').clientWidth")
            assert layout["stacked"] and layout["w"] <= host_w, (name, layout, host_w)
            if name in ("fa2", "fa1", "fa2-causal"):
                assert layout["text"], name
            assert scroll_through(page) == [], name
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE[0], name
            # scrolled down: the sticky header is compact, and every control is on screen and big enough to tap
            page.evaluate("window.scrollTo(0, 1500)")
            expect(page.locator(".topbar")).not_to_be_in_viewport()
            assert page.evaluate(HEADER) <= 120, name
            assert page.evaluate(CUT_CELLS, ".counter, .transport select") == [], name
            for testid in ("first", "prev", "play", "next", "last", "timeline", "speed", "block-picker"):
                box = page.locator(f"[data-testid={testid}]").bounding_box()
                assert box is not None, testid
                assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE[0], (name, testid, box)
                assert box["y"] >= 0 and box["y"] + box["height"] <= 120, (name, testid, box)
                assert box["height"] >= (34 if testid == "timeline" else 40), (name, testid, box)
                assert box["width"] >= 40, (name, testid, box)
            page.screenshot(path=str(artifacts / f"layout-{name}-phone-scrolled.png"))
    # and they work by touch
    with viewer(browser, server_url, log, PHONE, f"{SEED}&step=0") as page:
        page.evaluate("window.scrollTo(0, 1500)")
        page.locator("[data-testid=next]").tap()
        expect(page.locator("[data-testid=step-counter]")).to_have_attribute("data-step", "1")
        t = page.locator("[data-testid=timeline]").bounding_box()
        page.touchscreen.tap(t["x"] + t["width"] - 2, t["y"] + t["height"] / 2)
        expect(page.locator("[data-testid=step-counter]")).to_have_attribute("data-step", "15")
        page.select_option("[data-testid=block-picker]", "1")
        expect(page.locator("[data-testid=step-counter]")).to_have_attribute("data-block", "1")
        page.select_option("[data-testid=speed]", index=0)
        picked = float(page.eval_on_selector("[data-testid=speed]", "s => s.value"))
        assert page.evaluate("window.flashviz.state().speed") == picked != 1
    assert log.errors == []


def test_desktop_and_tablet_pages_fit(browser, server_url, log):
    """Items 20 and 21 on a desktop and a tablet: nothing wider than the window (a 768 px tablet's page was 883 px
    wide), no card cuts its contents, the sticky header stays under 120 px."""
    for size in (DESKTOP, WIDE, TABLET):
        for _name, query in CASES:
            with viewer(browser, server_url, log, size, query) as page:
                assert scroll_through(page) == [], (size, query)
                assert page.evaluate("document.documentElement.scrollWidth") <= size[0]
                page.evaluate("window.scrollTo(0, 1500)")
                assert page.evaluate(HEADER) <= 120, (size, query)
    assert log.errors == []
