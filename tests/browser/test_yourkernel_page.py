"""End-to-end, issue 21 phase 2: a user's Triton kernel in the viewer. `flashviz trace --kernel
examples/my_attn_bug.py:attn_fwd -o t.json` then `flashviz export k.html --trace t.json` (and `flashviz view t.json`
for the correct one), in Debian's chromium: the file's code in the code panel with each step's lines highlighted,
the divergence said in one line at the top, every step drawn with no junk, the carries beside float64. The CLI runs
as a subprocess, on fresh random inputs; every wait is for a state. With FLASHVIZ_UPDATE_SCREENSHOT set, the
divergence's step is saved as docs/yourkernel.png (the README's picture)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pageutil import WAIT_MS, assert_no_junk, counter_el, expect, expect_step, viewing

from flashviz.share.trace_files import read_trace_file

pytestmark = [pytest.mark.browser, pytest.mark.slow]
pytest.importorskip("triton")
pytest.importorskip("torch")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
N, D, B = 40, 16, 16


def cli(*args: str, cwd: Path, code: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True, cwd=cwd)
    assert done.returncode == code, done.stderr
    return done


def first_moved_tile(q: np.ndarray, k: np.ndarray) -> int:
    """The first tile at which a row of block 0's running max grows: where a missing rescale of acc first shows."""
    s = q[:B].astype(np.float64) @ k.astype(np.float64).T
    running = np.maximum.accumulate(np.stack([s[:, j * B : (j + 1) * B].max(1) for j in range(3)]), axis=0)
    return next(j for j in range(1, 3) if np.any(running[j] > running[j - 1]))


@pytest.fixture
def context(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
    yield ctx
    ctx.close()


def watched(context):
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    return page


def kernel_trace(tmp_path: Path, rng, example: str, code: int) -> tuple[dict, dict]:
    qkv = {x: rng.standard_normal((N, D)).astype(np.float16).astype(np.float32) for x in "QKV"}
    np.savez(tmp_path / "qkv.npz", **qkv)
    cli("trace", "--kernel", f"{EXAMPLES / example}:attn_fwd", "--meta", "BLOCK_M=16,BLOCK_N=16", "--inputs",
        "qkv.npz", "-o", "t.json", cwd=tmp_path, code=code)  # fmt: skip
    doc, _ = read_trace_file(tmp_path / "t.json")
    return doc, qkv


def test_the_bug_exported(context, tmp_path, rng):
    """export --trace t.json: the one-file page opens on the kernel, its divergence at the top, its file."""
    doc, qkv = kernel_trace(tmp_path, rng, "my_attn_bug.py", code=1)
    said = f"block 0, tile {first_moved_tile(qkv['Q'], qkv['K'])}: acc diverges"
    cli("export", "k.html", "--trace", "t.json", cwd=tmp_path)
    page = watched(context)
    page.goto((tmp_path / "k.html").as_uri())
    expect(page.locator("html")).to_have_attribute("data-ready", "true")
    summary = page.locator("[data-testid=idea-summary]")
    expect(summary).to_have_text(re.compile("^" + re.escape(said) + r" — .* so the rescale by alpha is missing$"))
    assert page.evaluate("window.flashviz.trace().kernel.source") == (EXAMPLES / "my_attn_bug.py").read_text()
    expect(counter_el(page)).to_have_attribute("data-total", str(len(doc["steps"])))
    expect(page.locator("[data-testid=config-error]")).to_be_hidden()  # the page's traceCheck and traceShape take it
    page.locator("#code").scroll_into_view_if_needed()
    expect(page.locator("[data-testid=kernel-editor] .cm-content")).to_contain_text("def attn_fwd(")
    assert not page.errors, page.errors


def test_the_bug_in_the_page(context, tmp_path, rng, artifacts):
    """flashviz view t.json: every step drawn (its lines, its sentence, no junk), the divergence at its step."""
    doc, qkv = kernel_trace(tmp_path, rng, "my_attn_bug.py", code=1)
    j0 = first_moved_tile(qkv["Q"], qkv["K"])
    said = f"block 0, tile {j0}: acc diverges"
    with viewing("t.json", cwd=tmp_path) as url:
        page = watched(context)
        page.goto(url)
        expect(page.locator("html")).to_have_attribute("data-ready", "true")
        walk(page, doc, said, j0, artifacts)


def walk(page, doc: dict, said: str, j0: int, artifacts: Path) -> None:
    # the divergence, in one line at the top of the page
    summary = page.locator("[data-testid=idea-summary]")
    expect(summary).to_have_text(re.compile("^" + re.escape(said) + r" — .* so the rescale by alpha is missing$"))
    assert "\n" not in summary.inner_text()
    expect(page.locator("[data-testid=config-error]")).to_be_hidden()
    # the file's code in the panel
    source = (EXAMPLES / "my_attn_bug.py").read_text()
    assert page.evaluate("window.flashviz.trace().kernel.source") == source
    editor = page.locator("[data-testid=kernel-editor]")
    page.locator("#code").scroll_into_view_if_needed()  # the editor draws its lines while it is on screen
    expect(editor.locator(".cm-content")).to_contain_text("def attn_fwd(")
    expect(page.locator("[data-testid=code-lines]")).to_contain_text("my_attn_bug.py")
    # every step: its lines highlighted, its sentence, no junk
    steps = doc["steps"]
    expect(counter_el(page)).to_have_attribute("data-total", str(len(steps)))
    text = source.split("\n")
    for k, s in enumerate(steps):
        expect_step(page, k)
        lines = page.locator("[data-testid=code-lines]")
        expect(lines).to_have_attribute("data-first", str(s["lines"][0]))
        expect(lines).to_have_attribute("data-last", str(s["lines"][1]))
        active = editor.locator("[data-testid=code-active-line]")
        expect(active).to_have_count(s["lines"][1] - s["lines"][0] + 1)
        first_src = text[s["lines"][0] - 1].strip()
        expect(active.first).to_have_text(re.compile(r"^\s*" + re.escape(first_src) + r"\s*$"))
        expect(page.locator("[data-testid=narrative]")).to_have_text(s["text"])
        assert_no_junk(page)
        if k < len(steps) - 1:
            page.click("[data-testid=next]")
    # the divergence's step: acc beside float64, the note says it diverges
    at = next(
        k
        for k, s in enumerate(steps)
        if s["block"] == 0 and s["j"] == j0 and "acc.error" in (s["carries"] or {}) and s["op"] == "online_softmax"
    )
    page.click("[data-testid=first]")
    expect_step(page, 0)
    for _ in range(at):
        page.keyboard.press("ArrowRight")
    expect_step(page, at)
    table = page.locator("[data-testid=carries]")
    expect(table).to_contain_text("|acc \u2212 float64| (row max)")
    expect(table).to_contain_text("m_i (float64)")
    expect(table).to_contain_text("m_i (your kernel)")
    expect(page.locator("#carries-note")).to_contain_text(f"After tile j = {j0}")
    expect(page.locator("#carries-note")).to_contain_text("(diverges)")
    # the picture: the code panel on the kernel's line, the carries' note saying where acc diverges, the table
    page.locator("#code").evaluate(
        "e => window.scrollTo(0, e.getBoundingClientRect().top + window.scrollY"
        " - document.querySelector('.transport').getBoundingClientRect().bottom - 12)"
    )
    page.evaluate("document.fonts.ready.then(() => true)")
    expect(editor.locator("[data-testid=code-active-line]").first).to_be_visible()
    out = artifacts / "yourkernel.png"
    page.screenshot(path=str(out))
    assert out.stat().st_size > 20_000
    if os.environ.get("FLASHVIZ_UPDATE_SCREENSHOT"):
        shutil.copy(out, Path(__file__).resolve().parents[2] / "docs" / "yourkernel.png")
    assert not page.errors, page.errors


def test_the_correct_kernel_through_view(context, tmp_path, rng):
    doc, _ = kernel_trace(tmp_path, rng, "my_attn.py", code=0)
    with viewing("t.json", cwd=tmp_path) as url:
        page = watched(context)
        page.goto(url)
        expect(page.locator("html")).to_have_attribute("data-ready", "true")
        expect(page.locator("[data-testid=idea-summary]")).to_have_text(
            re.compile(r"^correct: m_i, l_i, acc, O and L match float64")
        )
        assert page.evaluate("window.flashviz.trace().tagline") == doc["tagline"]
        assert page.evaluate("window.flashviz.trace().hbm") == doc["hbm"]
        expect(page.locator("[data-testid=config-error]")).to_be_hidden()
        assert_no_junk(page)
        # a launch edited in the page: the server never runs the kernel; the page says it left the file
        page.locator("[data-testid=cfg-n]").fill("48")
        page.locator("[data-testid=cfg-apply]").click()
        expect(page.locator("[data-testid=config-error]")).to_contain_text("this launch is not in t.json")
        assert not page.errors, page.errors
