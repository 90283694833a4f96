"""`flashviz export --gif OUT.gif`: the walkthrough as an animated GIF, one frame per step, each a screenshot of the
real page (the file `flashviz export` writes, opened from disk in headless Chromium through Playwright) and put
together by Pillow, with a rich progress bar while it renders. Nothing is drawn here: the page draws every frame.

Needs Playwright and Pillow (`pip install 'flashviz[animation]'`) and a Chromium: Debian's /usr/bin/chromium when
present, else `--browser PATH`, else the one `playwright install chromium` downloads."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from flashviz.model.config import ConfigError, shown
from flashviz.model.echo import cut

if TYPE_CHECKING:
    from flashviz.share.page import Documents

CHROMIUM = "/usr/bin/chromium"  # Debian's (apt-get install chromium): what the tests drive too
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
WAIT_MS = 120_000  # the bound on one wait for the page (a hang, not a speed check)
FRAME_SCALE = 1  # device pixels per CSS pixel: small files


def needs() -> tuple[object, object]:
    """(playwright.sync_api, PIL.Image), or a ConfigError naming the extra to install."""
    try:
        from playwright import sync_api
    except ImportError:
        raise ConfigError("--gif", "needs Playwright and Pillow: pip install 'flashviz[animation]'") from None
    try:
        from PIL import Image
    except ImportError:
        raise ConfigError("--gif", "needs Pillow: pip install 'flashviz[animation]'") from None
    return sync_api, Image


def chromium(browser: Path | None) -> str | None:
    """The browser to run: `browser`, else Debian's chromium, else None (Playwright's own download)."""
    if browser is not None:
        if not (browser.is_file() and os.access(browser, os.X_OK)):
            raise ConfigError("--browser", f"{shown(str(browser))} is not an executable Chromium")
        return str(browser)
    return CHROMIUM if shutil.which(CHROMIUM) else None


def write_gif(
    docs: Documents, out: Path, frames: int, width: int, delay_ms: int, browser: Path | None = None
) -> tuple[int, int]:
    """Render the first `frames` steps of the page holding `docs` (one launch) into `out`; (frames written, bytes)."""
    sync_api, _ = needs()
    from flashviz.share.page import NoBundle, standalone

    try:
        html = standalone(docs)
    except NoBundle as exc:
        raise ConfigError("OUT", str(exc)) from None
    executable = chromium(browser)
    with tempfile.TemporaryDirectory(prefix="flashviz-gif-") as tmp:
        page_file = Path(tmp) / "walkthrough.html"
        page_file.write_text(html)
        images = _screenshots(sync_api, page_file, executable, frames, width)
    data = _gif(images, delay_ms)
    try:
        out.write_bytes(data)
    except OSError as exc:
        raise ConfigError("OUT", f"cannot write {shown(str(out))}: {exc.strerror}") from None
    return len(images), len(data)


def _screenshots(sync_api, page_file: Path, executable: str | None, frames: int, width: int) -> list[bytes]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        except sync_api.Error as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(
                "--gif", f"cannot start Chromium ({shown(first)}): apt-get install chromium, or give --browser PATH"
            ) from None
        try:
            ctx = b.new_context(
                viewport={"width": width, "height": 800}, device_scale_factor=FRAME_SCALE, reduced_motion="reduce"
            )
            page = ctx.new_page()
            page.set_default_timeout(WAIT_MS)
            page.goto(page_file.as_uri())
            page.wait_for_selector("html[data-ready=true]", state="attached")
            counter = page.locator("[data-testid=step-counter]")
            total = int(counter.get_attribute("data-total") or 0)
            if total == 0:  # the page shows no steps: say what it says instead (no empty GIF, no IndexError)
                said = " ".join((page.locator("#config-error").text_content() or "").split())
                said = cut(said, 200)
                raise ConfigError("--gif", f"the page shows no steps to animate ({said or 'it says nothing'})")
            count = min(frames, total)
            # the frame: the step bar and the memory picture (the idea folded away; the code below is left out)
            page.evaluate("() => { const i = document.getElementById('idea'); if (i) i.open = false; }")
            shots: list[bytes] = []
            with Progress(
                TextColumn("rendering frames"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),  # stdout stays clean
                transient=True,
            ) as bar:
                task = bar.add_task("frames", total=count)
                for k in range(count):
                    page.evaluate("(k) => window.flashviz.goto(k)", k)
                    page.wait_for_selector(f"[data-testid=step-counter][data-step='{k}']", state="attached")
                    shots.append(page.screenshot(clip=_clip(page), full_page=True, animations="disabled", caret="hide"))
                    bar.advance(task)
            return shots
        except sync_api.Error as exc:  # the page never got ready, or Chromium went away: one line, not a traceback
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError("--gif", f"the page did not render its steps ({shown(first)})") from None
        finally:
            b.close()


def _clip(page) -> dict[str, float]:
    """From the top of the page to the bottom of the memory picture, the page's width."""
    bottom = page.evaluate("() => document.getElementById('stage').getBoundingClientRect().bottom + window.scrollY + 8")
    return {"x": 0, "y": 0, "width": page.viewport_size["width"], "height": max(1.0, float(bottom))}


def _gif(shots: list[bytes], delay_ms: int) -> bytes:
    """The frames as one looping GIF: one adaptive palette from the first frame, the rest mapped onto it (the page's
    colours do not change between steps), so Pillow can store each frame as its difference from the last."""
    from PIL import Image

    if not shots:
        raise ConfigError("--gif", "no frames to write: the page showed no steps")
    frames = [Image.open(io.BytesIO(s)).convert("RGB") for s in shots]
    size = frames[0].size
    frames = [f if f.size == size else f.resize(size) for f in frames]
    palette = frames[0].quantize(colors=128, method=Image.Quantize.MEDIANCUT)
    indexed = [f.quantize(palette=palette, dither=Image.Dither.NONE) for f in frames]
    buf = io.BytesIO()
    indexed[0].save(
        buf, format="GIF", save_all=True, append_images=indexed[1:], duration=delay_ms, loop=0, optimize=True
    )
    return buf.getvalue()
