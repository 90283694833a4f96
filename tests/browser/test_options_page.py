"""End-to-end, issue 22 "In the viewer": fa2-triton's options of real models drawn from the trace alone, each trace
made by the real CLI (`flashviz trace ... -o`) and opened with `flashviz view` (and one through the served page's
URL): a window's band (the tiles skipped left and right of it, in the tile map and veiled in the memory picture, with
the bytes and FLOPs saved), the q heads sharing one K/V head (the options section and the heads control), packed
sequences (the boundaries in HBM, the blocks inside each, the other sequences' keys veiled) and soft-capping (the
step's math and code). Screenshots go to test-artifacts/options-*.png."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from pageutil import WAIT_MS, assert_clean, counter_el, expect, open_viewer, viewing

pytestmark = pytest.mark.browser

BASE = ["--algo", "fa2-triton", "--d", "32", "--br", "16", "--bc", "16"]


def traced(tmp_path, *args: str) -> tuple:
    """`flashviz trace` with these options, written to a file: its path and its document (arrays plain)."""
    out = tmp_path / "t.json"
    run = subprocess.run([sys.executable, "-m", "flashviz", "trace", *BASE, *args, "-o", str(out)], capture_output=True,
                         text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    from flashviz.tracing.codec import to_plain

    return out, to_plain(json.loads(out.read_text()))


def opened(page, url: str) -> None:
    page.goto(url)
    expect(page.locator("html")).to_have_attribute("data-ready", "true")
    expect(counter_el(page)).to_have_attribute("data-step", "0")


def goto(page, k: int) -> None:
    page.evaluate(f"window.flashviz.goto({k})")
    expect(counter_el(page)).to_have_attribute("data-step", str(k))


def drawn_labels(page, kind: str) -> list[str]:
    page.wait_for_function("() => window.flashviz.layout() !== null", timeout=WAIT_MS)
    return page.evaluate(f"window.flashviz.layout().drawn.labels.filter((l) => l.kind === '{kind}').map((l) => l.text)")


def test_a_window_band_skips_the_tiles_left_and_right_of_it(page, log, tmp_path, artifacts):
    path, doc = traced(tmp_path, "--n", "128", "--window", "24,0")
    pairs = doc["tiling"]["pairs"]
    left = sum(len(p) - len(p.lstrip("s")) for p in pairs)
    right = sum(len(p) - len(p.rstrip("s")) for p in pairs)
    assert left > 0 and right > 0  # the band leaves tiles on both sides
    with viewing(path) as url:
        opened(page, url)
        # a late block: its first step past load_q, whose veil leaves keys skipped on both sides of its band
        k = next(s["index"] for s in doc["steps"] if s["block"] == 6 and s["op"] == "scores")
        goto(page, k)
        veil = doc["veils"][doc["steps"][k]["veil"]]
        sides = sorted(v["rows"] for v in veil if v["tensor"] == "K")
        assert sides[0][0] == 0 and sides[-1][1] == 128 and len(sides) == 2, sides
        labels = drawn_labels(page, "veil")
        assert labels.count("skipped") >= 2, labels  # K's and V's skipped keys, labelled where they fit
        page.locator("#blocks").scroll_into_view_if_needed()
        caption = page.locator("[data-testid=tile-map-caption]")
        expect(caption).to_contain_text(f"{sum(len(p) for p in pairs) - left - right} of {sum(len(p) for p in pairs)}")
        expect(caption).to_contain_text(f"{left} left of a block's band")
        expect(caption).to_contain_text(f"{right} right of it")
        band = page.locator("[data-testid=option-band]")
        expect(band).to_contain_text("A sliding window")
        saved = next(r for r in doc["options"]["items"][0]["rows"] if r[0].startswith("HBM traffic without"))
        expect(band).to_contain_text(saved[1])  # the bytes the window saves, as the trace's closed forms say
        expect(band).to_contain_text("FLOPs without the window")
        page.locator("figure.tilemap").screenshot(path=artifacts / "options-window-tilemap.png")
        page.evaluate("window.scrollTo(0, 0)")
        page.locator("#stage").screenshot(path=artifacts / "options-window-memory.png")
    assert_clean(log)


def test_the_heads_control_shows_the_q_heads_sharing_one_kv_head(page, log, tmp_path, artifacts):
    path, doc = traced(tmp_path, "--n", "48", "--group", "4", "--causal")
    with viewing(path) as url:
        opened(page, url)
        # Q, O, L hold the 4 q heads one above the other, each labelled and bounded in HBM
        assert drawn_labels(page, "block")[:4] == ["h0", "h1", "h2", "h3"]
        bounds = page.evaluate("window.flashviz.layout().grids.Q.bounds")
        assert bounds == [48, 96, 144], bounds
        heads = page.locator("[data-testid=hw-heads]")
        page.locator("#hardware").scroll_into_view_if_needed()
        expect(heads).to_have_value("4")  # the first launch that holds a whole group
        heads.select_option("8")
        groups = page.locator("#hw-controls [data-testid=head-groups]")
        expect(groups).to_have_attribute("data-heads", "8")
        expect(groups.locator(".kvgroup")).to_have_count(2)
        expect(groups.locator(".kvgroup").nth(1)).to_contain_text("K/V 1")
        assert groups.locator(".kvgroup").nth(1).locator(".qhead").all_text_contents() == ["q4", "q5", "q6", "q7"]
        gqa = page.locator("[data-testid=option-gqa]")
        expect(gqa).to_contain_text("4 q heads share one K/V head")
        row = next(r for r in doc["options"]["items"][0]["rows"] if r[0].startswith("K, V in HBM"))
        expect(gqa).to_contain_text(row[1])  # the bytes GQA saves in HBM, per K/V head
        expect(page.locator("[data-testid=option-heads] .qhead")).to_have_count(4)
        page.locator("#hw-controls").screenshot(path=artifacts / "options-gqa-heads.png")
        page.locator("#options").screenshot(path=artifacts / "options-gqa-section.png")
    assert_clean(log)


def test_packed_sequences_have_their_boundaries_and_blocks(page, log, tmp_path, artifacts):
    path, doc = traced(tmp_path, "--seqlens", "20,44,30", "--causal")
    segs = doc["layout"]["segments"]
    with viewing(path) as url:
        opened(page, url)
        assert page.evaluate("window.flashviz.layout().grids.Q.bounds") == [20, 64]
        assert page.evaluate("window.flashviz.layout().grids.K.bounds") == [20, 64]
        # a block of the middle sequence: the other sequences' keys are veiled, its rows start at the sequence's
        k = next(s["index"] for s in doc["steps"] if s["block"] == 2 and s["op"] == "load_kv")
        goto(page, k)
        assert "other sequence" in drawn_labels(page, "veil")
        picker = page.locator("#block-picker")
        expect(picker).to_contain_text("s1")
        bar = page.locator("[data-testid=seq-bar-q] .seq")
        expect(bar).to_have_count(3)
        for s, seg in enumerate(segs):
            blocks = [b for b in doc["blocks"] if b["segment"] == s]
            expect(bar.nth(s).locator(".blk")).to_have_count(len(blocks))
            # the last block of a sequence ends inside it: cut short where the sequence is not a multiple of Br
            short = (seg["q"][1] - seg["q"][0]) % 16 != 0
            expect(bar.nth(s).locator(".blk.ragged")).to_have_count(1 if short else 0)
        expect(page.locator("[data-testid=option-varlen]")).to_contain_text("3 packed sequences")
        page.locator("[data-testid=option-sequences]").screenshot(path=artifacts / "options-varlen-sequences.png")
        page.evaluate("window.scrollTo(0, 0)")
        page.locator("#stage").screenshot(path=artifacts / "options-varlen-memory.png")
    assert_clean(log)


def test_softcap_is_in_the_steps_math_and_code_and_the_url_keeps_the_options(page, log, server_url, artifacts):
    """Served: the page's URL asks for the options (as /api/trace takes them), keeps them while it plays, and the
    scores step says its cap in its math (KaTeX) and its code (kernel.py's own lines)."""
    open_viewer(page, server_url, "algo=fa2-triton&n=64&d=32&br=16&bc=16&softcap=5&window=16,-1&causal=true")
    trace = page.evaluate("window.flashviz.trace().config")
    assert trace["softcap"] == 5 and trace["window"] == [16, -1]
    k = page.evaluate("window.flashviz.trace().steps.findIndex((s) => s.j !== null && s.math.includes('tanh'))")
    assert k > 0
    goto(page, k)
    expect(page.locator("#step-math")).to_contain_text("tanh")
    page.locator("#code").scroll_into_view_if_needed()  # the code card is brought up to date when on screen
    expect(page.locator("#code")).to_contain_text("softcap2 * _tanh(Sij)")
    expect(page.locator("[data-testid=option-softcap]")).to_contain_text("Soft-capping at 5")
    page.wait_for_function("() => location.search.includes('softcap=5') && location.search.includes('window=16%2C-1')")
    page.locator("#code").screenshot(path=artifacts / "options-softcap-code.png")
    assert_clean(log)


def form_values(page) -> dict:
    """What the config bar's form holds: each named input's value (a box: whether it is ticked)."""
    return page.evaluate(
        "Object.fromEntries([...document.querySelectorAll('#config [name]')]"
        ".map((i) => [i.name, i.type === 'checkbox' ? i.checked : i.value]))"
    )


def test_packed_sequences_without_n_draw_their_sum(page, server_url, log, artifacts):
    """Hardening item 10: a link with seqlens and no N drew the seed's example ("n: must be the sum of seqlens, 94 (got
    128)") while the form said fa2-triton N=128; the CLI and the API take N as the sum, and so does the page."""
    lens = [random.randint(1, 40) for _ in range(3)]  # fresh lengths: N = their sum, ragged blocks in each
    query = f"algo=fa2-triton&d=32&br=16&bc=16&seqlens={','.join(map(str, lens))}&causal=true"
    open_viewer(page, server_url, query)
    config = page.evaluate("window.flashviz.trace().config")
    assert (config["algo"], config["n"], config["seqlens"], config["causal"]) == ("fa2-triton", sum(lens), lens, True)
    expect(page.locator("[data-testid=config-error]")).to_be_hidden()
    form = form_values(page)
    assert (form["algo"], form["n"], form["seqlens"]) == ("fa2-triton", str(sum(lens)), ",".join(map(str, lens)))
    expect(page.locator("[data-testid=seq-bar-q] .seq")).to_have_count(3)
    page.wait_for_function(f"() => location.search.includes('n={sum(lens)}&')")
    page.screenshot(path=artifacts / "options-seqlens-without-n.png")
    assert_clean(log)


def test_typing_packed_sequences_makes_n_their_sum(page, server_url, log):
    """Item 10, typed: seqlens typed in the options panel ran at the N in the form and were refused."""
    open_viewer(page, server_url, "algo=fa2-triton&d=32&br=16&bc=16")
    page.locator("[data-testid=cfg-more] summary").click()
    page.locator("[data-testid=cfg-seqlens]").fill("20,44,30")
    expect(page.locator("[data-testid=cfg-n]")).to_have_value("94")
    with page.expect_response(lambda r: "seqlens=20%2C44%2C30" in r.url and "/api/trace" in r.url and r.status == 200):
        page.locator("[data-testid=cfg-apply]").click()
    expect(page.locator("[data-testid=seq-bar-q] .seq")).to_have_count(3)
    assert page.evaluate("window.flashviz.trace().config.n") == 94
    expect(page.locator("[data-testid=config-error]")).to_be_hidden()
    assert_clean(log)


def test_a_refused_link_shows_the_example_in_the_form_too(page, server_url, log, artifacts):
    """Item 10: when the page falls back on the seed's example for a link the server refuses, the form shows what is
    drawn (it kept the refused fa2-triton N=100 over a picture of fa2 N=8), and the message says what was refused."""
    open_viewer(page, server_url, "algo=fa2-triton&n=100&d=32&br=16&bc=16&seqlens=20,44,30")
    message = page.locator("[data-testid=config-error]")
    expect(message).to_contain_text("n: must be the sum of seqlens, 94 (got 100)")
    expect(message).to_contain_text("showing the seed's example instead")
    drawn = page.evaluate("window.flashviz.trace().config")
    form = form_values(page)
    assert (form["algo"], form["n"], form["d"], form["br"], form["bc"]) == tuple(
        str(drawn[k]) for k in ("algo", "n", "d", "br", "bc")
    ), (form, drawn)
    assert form["seqlens"] == "" and drawn["seqlens"] is None
    page.screenshot(path=artifacts / "options-refused-link.png")
    # the browser logs the refused request itself (422); nothing else
    assert [e for e in log.errors if "422" not in e] == [], log.errors


def test_the_options_panel_opens_when_asked_and_closes(page, server_url, log, artifacts):
    """Hardening item 15: the panel opened on load (the launch used an option), stayed open through Escape and clicks
    elsewhere over the step timeline, and cut its placeholders ("0 (non", "one se")."""
    open_viewer(page, server_url, "algo=fa2-triton&n=64&d=32&br=16&bc=16&group=2&window=16,0")
    more = page.locator("[data-testid=cfg-more]")
    summary = more.locator("summary")
    panel = more.locator(".more-panel")
    expect(panel).to_be_hidden()
    # folded, the toggle still says which options the launch uses
    expect(more).to_have_attribute("data-used", "group window")
    expect(summary).to_have_attribute("aria-label", "options, 2 in use: group, window")
    summary.click()
    expect(panel).to_be_visible()
    cut = panel.evaluate(
        "p => [...p.querySelectorAll('input')].filter((i) => i.placeholder)"
        ".filter((i) => { const c = getComputedStyle(i); const w = i.clientWidth - parseFloat(c.paddingLeft)"
        " - parseFloat(c.paddingRight); const x = document.createElement('canvas').getContext('2d');"
        " x.font = c.font; return x.measureText(i.placeholder).width > w + 0.5; }).map((i) => i.placeholder)"
    )
    assert cut == [], f"placeholders cut: {cut}"
    page.screenshot(path=artifacts / "options-panel-open.png")
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    summary.click()
    expect(panel).to_be_visible()
    page.locator("[data-testid=narrative]").click()  # a click elsewhere on the page
    expect(panel).to_be_hidden()
    summary.click()
    page.locator("[data-testid=cfg-window]").fill("8,0")
    with page.expect_response(lambda r: "window=8%2C0" in r.url and "/api/trace" in r.url and r.status == 200):
        page.locator("[data-testid=cfg-apply]").click()
    expect(panel).to_be_hidden()  # Run folds it: the step timeline under it is the page's again
    expect(counter_el(page)).to_have_attribute("data-step", "0")
    page.locator("#timeline-host").click()  # the middle of the timeline: a middle step
    expect(counter_el(page)).not_to_have_attribute("data-step", "0")
    assert_clean(log)
