"""End-to-end, issue 13: `flashviz export` (one HTML file opened from disk: no request other than file:, data: or
blob:), several algorithms in one file, a trace file's problems said in the page, `flashviz view t.json`, and
`flashviz export --gif` (one frame per step). The CLI runs as a subprocess, the page in Debian's chromium; every wait
is for a state."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from pageutil import WAIT_MS, counter_el, expect, expect_step, same_float32, tooltip_at

from flashviz.hardware.ladder import load as load_ladder

pytestmark = [pytest.mark.browser, pytest.mark.slow]

OFFLINE = {"file", "data", "blob"}  # the only schemes an exported file may ask for


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def cli_trace(*flags: str) -> dict:
    from flashviz.tracing.codec import to_plain

    return to_plain(json.loads(cli("trace", *flags).stdout))


@pytest.fixture
def offline_page(browser):
    """A page whose context records every request (frames, workers, fonts, images) as its URL."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
    urls: list[str] = []
    errors: list[str] = []
    context.on("request", lambda r: urls.append(r.url))
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.set_default_timeout(WAIT_MS)
    page.urls, page.errors = urls, errors
    yield page
    context.close()


def open_file(page, path: Path) -> None:
    page.goto(path.as_uri())
    expect(page.locator("html")).to_have_attribute("data-ready", "true")


def assert_offline(page) -> None:
    assert page.urls, "no request recorded: the recorder is not listening"
    schemes = {urlsplit(u).scheme for u in page.urls}
    assert schemes <= OFFLINE, [u[:80] for u in page.urls if urlsplit(u).scheme not in OFFLINE]
    assert not page.errors, page.errors


def test_an_exported_file_works_from_disk_with_no_network(offline_page, tmp_path):
    page = offline_page
    flags = ("--n", "12", "--d", "4", "--br", "4", "--bc", "8", "--seed", "3")
    out = tmp_path / "walk.html"
    done = cli("export", str(out), *flags)
    assert re.fullmatch(r"wrote .*walk\.html \(\d+(\.\d+)? [kM]B: .*\b1 trace \(.*\)\n", done.stderr), done.stderr
    trace = cli_trace(*flags)
    open_file(page, out)
    expect(counter_el(page)).to_have_attribute("data-total", str(len(trace["steps"])))
    # the keyboard steps through it
    page.locator("body").press("ArrowRight")
    expect_step(page, 1)
    page.keyboard.press("ArrowRight")
    expect_step(page, 2)
    page.keyboard.press("End")
    expect_step(page, len(trace["steps"]) - 1)
    # the trace's numbers: the page holds the CLI's trace, and shows its values (a cell of K, hovered)
    assert same_float32(page.evaluate("window.flashviz.trace().outputs.O"), trace["outputs"]["O"])
    page.keyboard.press("Home")
    expect_step(page, 0)
    text = tooltip_at(page, "K", 5.5, 2.5)
    assert "K[5, 2]" in text
    assert f"{abs(trace['inputs']['K'][5][2]):.4f}"[:5] in text.replace("\u2212", "-")
    # the ladder's recorded run travels inside the file too (the page asks its Source, never /api/ladder)
    recorded = load_ladder()
    expect(page.locator("[data-testid=ladder-rung]")).to_have_count(len(recorded["rungs"]))
    assert_offline(page)


def test_several_algorithms_in_one_file_keep_the_picker(offline_page, tmp_path):
    page = offline_page
    out = tmp_path / "three.html"
    cli("export", str(out), "--algo", "fa1,fa2,standard", "--n", "8", "--d", "4")
    steps = {a: len(cli_trace("--algo", a, "--n", "8", "--d", "4")["steps"]) for a in ("fa1", "fa2", "standard")}
    assert len(set(steps.values())) == 3  # each algorithm is told apart by its number of steps
    open_file(page, out)
    picker = page.locator("[data-testid=cfg-algo]")
    assert sorted(picker.locator("option").evaluate_all("os => os.map(o => o.value)")) == ["fa1", "fa2", "standard"]
    expect(counter_el(page)).to_have_attribute("data-total", str(steps["fa1"]))  # the first one held
    for algo in ("standard", "fa2", "fa1"):
        picker.select_option(algo)
        page.locator("[data-testid=cfg-apply]").click()
        expect(counter_el(page)).to_have_attribute("data-total", str(steps[algo]))
        assert page.evaluate("window.flashviz.trace().config.algo") == algo
    # a launch the file does not hold: one line saying what it holds, and the page keeps what it showed
    page.locator("[data-testid=cfg-n]").fill("16")
    page.locator("[data-testid=cfg-apply]").click()
    message = page.locator("[data-testid=config-error]")
    expect(message).to_contain_text("this file holds fa1, fa2, standard at N=8 D=4 Br=4 Bc=4 seed=0 only")
    assert "\n" not in message.inner_text()
    expect(counter_el(page)).to_have_attribute("data-total", str(steps["fa1"]))
    assert_offline(page)


def spoil(html: str, how: str) -> str:
    """The exported page with its trace element changed as a hand-edited or damaged file would be."""
    start = html.index('<script type="application/json" id="flashviz-trace-0">')
    body = start + len('<script type="application/json" id="flashviz-trace-0">')
    end = html.index("</script>", body)
    text = html[body:end]
    if how == "version":
        text = text.replace('"schema":"flashviz.trace/4"', '"schema":"flashviz.trace/1"', 1)
    elif how == "truncated":
        text = text[: len(text) // 2]
    else:
        text = '{"not": "a trace"}'
    return html[:body] + text + html[end:]


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("version", "schema flashviz.trace/1; this page reads flashviz.trace/4 only"),
        ("truncated", "is not whole JSON (truncated?); this page reads flashviz.trace/4"),
        ("not-a-trace", "not a flashviz trace (schema null); this page reads flashviz.trace/4"),
    ],
)
def test_a_bad_trace_in_a_file_is_one_line_in_the_page(offline_page, tmp_path, how, says):
    page = offline_page
    good = tmp_path / "good.html"
    cli("export", str(good))
    bad = tmp_path / f"{how}.html"
    bad.write_text(spoil(good.read_text(), how))
    page.goto(bad.as_uri())
    message = page.locator("[data-testid=config-error]")
    expect(message).to_be_visible()
    expect(message).to_contain_text(says)
    assert "\n" not in message.inner_text()
    page.errors[:] = [e for e in page.errors if says not in e]
    assert_offline(page)


def test_flashviz_view_opens_a_trace_file(browser, tmp_path):
    flags = ("--n", "12", "--d", "8", "--br", "4", "--bc", "4", "--seed", "5")
    path = tmp_path / "t.json"
    cli("trace", *flags, "-o", str(path))
    from flashviz.tracing.codec import to_plain

    trace = to_plain(json.loads(path.read_text()))
    proc = subprocess.Popen(
        [sys.executable, "-m", "flashviz", "view", str(path), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        url = None
        for line in proc.stdout:  # a state: the server prints its URL once it listens
            found = re.search(r"http://127\.0\.0\.1:\d+/?", line)
            if found:
                url = found[0]
                break
        assert url, "flashviz view printed no URL"
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(url)
        expect(page.locator("html")).to_have_attribute("data-ready", "true")
        expect(counter_el(page)).to_have_attribute("data-total", str(len(trace["steps"])))
        assert page.evaluate("window.flashviz.trace().config.n") == 12
        assert same_float32(page.evaluate("window.flashviz.trace().outputs.O"), trace["outputs"]["O"])
        context.close()
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_export_gif_has_one_frame_per_step(tmp_path):
    image = pytest.importorskip("PIL.Image", reason="pip install -e '.[test]' (Pillow)")
    steps = len(cli_trace("--n", "8", "--d", "4", "--causal")["steps"])
    out = tmp_path / "walk.gif"
    done = cli("export", "--gif", str(out), "--causal", "--width", "480")
    assert f"{steps} frames of 480 px" in done.stderr
    with image.open(out) as gif:
        assert gif.n_frames == steps
        assert gif.size[0] == 480
        first = gif.convert("RGB").tobytes()
        gif.seek(steps - 1)
        assert gif.convert("RGB").tobytes() != first  # the frames differ: the page moved on
    capped = tmp_path / "capped.gif"
    cli("export", str(capped), "--frames", "3", "--width", "480")
    with image.open(capped) as gif:
        assert gif.n_frames == 3
