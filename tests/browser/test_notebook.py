"""End-to-end, issue 13: the notebook widget (`flashviz.show`) inside a real JupyterLab, started here on 127.0.0.1
(token and password off, a temporary notebook folder) and driven by Playwright in Debian's chromium. The notebook's
first cell shows the widget; the test checks the page in its iframe draws the trace Python made (its numbers), edits
the launch in the widget, waits for the new launch computed in the kernel (no flashviz server runs), and reads it back
in Python from a second cell. Every wait is for a state (the Lab answering, a cell's output, the page's counter)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from pageutil import WAIT_MS, expect, missing

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LAB_START_S = 240  # how long JupyterLab may take to answer on a loaded machine: a bound on a hang, not a speed check

SRC = Path(__file__).resolve().parents[2] / "src"

CELLS = [
    # first the kernel imports what the widget needs and says so: the widget's cell then runs in a kernel that is up,
    # whose widget comm the Lab has registered (a widget shown by a kernel's very first execution can race that)
    'import flashviz, anywidget\nprint("ready")',
    "w = flashviz.show(n=8, d=4, height=700)\nw",
    'print("shown:", w.config["algo"], w.config["n"], w.trace.config["n"], len(w.trace.steps))',
    'w.config = {**w.config, "n": 16, "causal": True}',
]


def notebook() -> dict:
    return {
        "cells": [
            {"cell_type": "code", "execution_count": None, "id": f"c{k}", "metadata": {}, "outputs": [], "source": src}
            for k, src in enumerate(CELLS)
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on a free loopback port over a temporary folder holding the notebook; yields its base URL."""
    for module, extra in (("jupyterlab", "test"), ("anywidget", "notebook")):
        try:
            __import__(module)
        except ImportError:
            missing(f"{module} is not installed: pip install -e '.[{extra}]'")
    root = tmp_path_factory.mktemp("notebooks")
    home = tmp_path_factory.mktemp("jupyter-home")
    (root / "flashviz.ipynb").write_text(json.dumps(notebook()))
    port = free_port()
    env = {
        **os.environ,
        # nothing from this machine's own Jupyter settings, and the kernel imports this checkout's flashviz
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
    }
    log = (home / "lab.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--ServerApp.root_dir={root}",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True",
            "--allow-root",  # CI runs as root
            "--ServerApp.terminals_enabled=False",
            "--LabApp.extension_manager=readonly",  # no registry asked
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=root,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + LAB_START_S
    try:
        while not answers(f"{base}/api/status"):  # a state, polled: the Lab answers its API
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail(f"JupyterLab did not start: {(home / 'lab.log').read_text()[-2000:]}")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def output_of(page, k: int):
    return page.locator(".jp-Notebook .jp-Cell").nth(k).locator(".jp-OutputArea-output")


RUN_TRIES = 3


def run_cell(page, k: int) -> None:
    """Runs cell k and waits until the Lab took it: its prompt shows [*] or a count. JupyterLab clears a run asked
    before its session holds the kernel (the prompt stays "[ ]", nothing is sent; seen once on a loaded CI machine),
    so a run the prompt does not show is asked again, a bounded number of times."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(k)
    taken = re.compile(r"\[(\*|\d+)\]")
    for attempt in range(RUN_TRIES):
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Shift+Enter")
        try:
            expect(cell.locator(".jp-InputPrompt")).to_have_text(taken, timeout=WAIT_MS // RUN_TRIES)
            return
        except AssertionError:
            if attempt == RUN_TRIES - 1:
                raise


def test_the_widget_renders_and_recomputes_a_launch_in_python(browser, lab):
    from flashviz import trace

    seed_example = trace(n=8, d=4)
    larger = trace(n=12, d=4)
    from_python = trace(n=16, d=4, causal=True)
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    hosts: set[str] = set()
    errors: list[str] = []
    page.on("request", lambda r: hosts.add(urlsplit(r.url).scheme + "://" + (urlsplit(r.url).hostname or "")))
    page.on("pageerror", lambda e: errors.append(str(e)))
    console: list[str] = []  # shown when the test fails: the page's and the widget's own words
    page.on("console", lambda m: console.append(f"{m.type}: {m.text[:300]}"))
    try:
        page.goto(f"{lab}/lab/tree/flashviz.ipynb")
        expect(page.locator(".jp-Notebook .jp-Cell")).to_have_count(len(CELLS))
        # the kernel is up before the first cell runs (else the cell waits in a dialog-free queue: fine as well)
        expect(page.locator(".jp-Notebook-ExecutionIndicator[data-status=idle]").first).to_be_attached()
        # and the session holds it: the status bar names the kernel and its state (before, a run is dropped)
        expect(page.get_by_role("button", name=re.compile(r"Python 3 \(ipykernel\) \| Idle"))).to_be_visible()
        run_cell(page, 0)
        expect(output_of(page, 0)).to_contain_text("ready")
        run_cell(page, 1)
        frame = page.frame_locator("iframe[data-flashviz=viewer]")
        counter = frame.locator("[data-testid=step-counter]")
        expect(counter).to_have_attribute("data-total", str(len(seed_example.steps)))
        expect(frame.locator("html")).to_have_attribute("data-ready", "true")
        # the trace's numbers, as Python computed them, in the page
        inner = next(f for f in page.frames if f.url == "about:srcdoc")
        assert inner.evaluate("window.flashviz.trace().outputs.O[0]") == pytest.approx(
            seed_example.outputs["O"][0].tolist(), rel=1e-6
        )
        frame.locator("body").click(position={"x": 5, "y": 300})
        page.keyboard.press("ArrowRight")
        expect(counter).to_have_attribute("data-step", "1")
        run_cell(page, 2)
        expect(output_of(page, 2)).to_contain_text(f"shown: fa2 8 8 {len(seed_example.steps)}")

        # a config change in the widget: recomputed in the kernel, drawn in the page, read back in Python
        frame.locator("[data-testid=cfg-n]").fill("12")
        frame.locator("[data-testid=cfg-apply]").click()
        expect(counter).to_have_attribute("data-total", str(len(larger.steps)))
        assert inner.evaluate("window.flashviz.trace().config.n") == 12
        assert inner.evaluate("window.flashviz.trace().outputs.O[11]") == pytest.approx(
            larger.outputs["O"][11].tolist(), rel=1e-6
        )
        run_cell(page, 2)
        expect(output_of(page, 2)).to_contain_text(f"shown: fa2 12 12 {len(larger.steps)}")

        # a launch set in Python (the model's config): computed there, shown in the page
        run_cell(page, 3)
        expect(counter).to_have_attribute("data-total", str(len(from_python.steps)))
        assert inner.evaluate("window.flashviz.trace().config.causal") is True
        assert inner.evaluate("window.flashviz.trace().outputs.L") == pytest.approx(
            from_python.outputs["L"].tolist(), rel=1e-6
        )
        expect(frame.locator("[data-testid=cfg-n]")).to_have_value("16")

        # a launch Python refuses: its one line in the widget's config bar, the page keeps what it showed
        frame.locator("[data-testid=cfg-n]").fill("4096")
        frame.locator("[data-testid=cfg-d]").fill("256")
        frame.locator("[data-testid=cfg-apply]").click()
        message = frame.locator("[data-testid=config-error]")
        expect(message).to_contain_text(re.compile(r"N\*N\*D must be at most"))
        expect(counter).to_have_attribute("data-total", str(len(from_python.steps)))
    except Exception:
        print("console:", *console[-30:], sep="\n  ")
        for k in range(len(CELLS)):  # what each cell printed or showed (an error, a widget that did not load)
            print(f"cell {k} output:", [t[:300] for t in output_of(page, k).all_inner_texts()])
        raise
    finally:
        context.close()
    assert not errors, errors
    # offline: JupyterLab's own loopback server, and nothing else
    assert hosts <= {"http://127.0.0.1", "ws://127.0.0.1", "data://", "blob://", "about://"}, hosts
