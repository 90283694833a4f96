"""The viewer's speed in real headless Chromium against the real server (issue 3's budgets).

1. A step repaints within one frame (16 ms) at N=1024, D=64, Br=Bc=64: for every step of the trace (several
   passes), the JavaScript of the repaint (`flashviz:repaint`, a Performance measure around render()) and the
   whole frame's work: the step is dispatched at the start of a frame (in a requestAnimationFrame callback)
   and timed until a task posted from there runs, which is after that frame's style, layout and paint.
   Chrome's own counters (CDP Performance.getMetrics: RecalcStyleDuration, LayoutDuration, ScriptDuration,
   TaskDuration) split the frame into style, layout and the rest.
2. Interactive within 1.5 s of the command: `flashviz serve --no-browser` is started, the page opened at the URL
   it prints, and the time taken until the page's `flashviz:interactive` mark (set once the first step's frame
   has painted), measured on the wall clock from just before the command starts.

    python bench/viewer_bench.py [--passes 4] [--algo fa2] [--json out.json] [--check]

Prints a table; numbers are medians (and p90) over all steps. With --check it exits 1 when a median is over its
budget: the speed checks live here, not in tests/browser (which assert no durations: a loaded CI machine must
pass them). Needs the built viewer, Playwright and Debian's
chromium (/usr/bin/chromium), as the browser tests do.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
CONFIG = "n=1024&d=64&br=64&bc=64&seed=0"

# Runs in the page: step through every step `passes` times; per step the repaint's JS time and the full frame.
STEP_LOOP = """async ([passes]) => {
  const fv = window.flashviz;
  const total = fv.trace().steps.length;
  const nextFrame = () => new Promise((r) => requestAnimationFrame(r));
  const afterPaint = () => new Promise((r) => setTimeout(r, 0));
  await nextFrame();
  await afterPaint();
  const js = [], full = [];
  for (let p = 0; p < passes; p++) {
    for (let k = 0; k < total; k++) {
      const step = p % 2 ? total - 1 - k : k;  // forward, then backward
      performance.clearMeasures("flashviz:repaint");
      // the step starts a frame (as playback's timer does between frames); the frame's style, layout and
      // paint follow the callback, and a task posted from it runs once they are done
      const t0 = await new Promise((r) =>
        requestAnimationFrame(() => { const t = performance.now(); fv.goto(step); r(t); }));
      await afterPaint();
      full.push(performance.now() - t0);
      const m = performance.getEntriesByName("flashviz:repaint");
      if (m.length) js.push(m[m.length - 1].duration);
    }
  }
  return { js, full, total };
}"""

# Per view: the durations of its update in render() (`flashviz:repaint:NAME`, main.ts's part()), over the steps above.
VIEWS = """(() => {
  const r = {};
  for (const m of performance.getEntriesByType("measure"))
    if (m.name.startsWith("flashviz:repaint:")) (r[m.name.slice(17)] ||= []).push(m.duration);
  return r;
})()"""


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_in_thread():
    import uvicorn

    from flashviz import server

    port = free_port()
    srv = uvicorn.Server(
        uvicorn.Config(server.create_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    threading.Thread(target=srv.run, daemon=True).start()
    while not srv.started:
        time.sleep(0.02)
    return srv, f"http://127.0.0.1:{port}"


def metrics(cdp) -> dict[str, float]:
    return {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}


def bench_steps(browser, base: str, passes: int, algo: str) -> dict:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    q = CONFIG if algo == "fa2" else f"algo={algo}&{CONFIG}"
    page.goto(f"{base}/?{q}")
    page.wait_for_selector("html[data-ready=true]", timeout=60_000)
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    before = metrics(cdp)
    page.evaluate("performance.clearMeasures()")  # the views' measures of start-up are not the steps'
    out = page.evaluate(STEP_LOOP, [passes])
    after = metrics(cdp)
    views = page.evaluate(VIEWS)
    steps = len(out["full"])
    per = {
        k: 1000 * (after[k] - before[k]) / steps
        for k in ("RecalcStyleDuration", "LayoutDuration", "ScriptDuration", "TaskDuration")
    }
    per["LayoutCount"] = (after["LayoutCount"] - before["LayoutCount"]) / steps
    per["RecalcStyleCount"] = (after["RecalcStyleCount"] - before["RecalcStyleCount"]) / steps
    page.close()
    return {
        "algo": algo,
        "steps": steps,
        "trace_steps": out["total"],
        "js": out["js"],
        "full": out["full"],
        "per_step": per,
        "views": views,
    }


def bench_interactive(browser, runs: int) -> list[float]:
    """Wall time from starting `flashviz serve --no-browser` to the first step painted (the browser already open)."""
    times = []
    for _ in range(runs):
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        t0 = time.time()
        proc = subprocess.Popen(
            [sys.executable, "-m", "flashviz", "serve", "--no-browser"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            line = proc.stdout.readline()
            url = re.search(r"http://\S+/", line).group(0)
            page.goto(url)
            # polled with evaluate (wait_for_function evaluates a string, which the page's CSP forbids)
            at = None
            deadline = time.time() + 30
            while at is None and time.time() < deadline:
                at = page.evaluate(
                    "(() => { const m = performance.getEntriesByName('flashviz:interactive')[0];"
                    " return m ? performance.timeOrigin + m.startTime : null; })()"
                )
                if at is None:
                    time.sleep(0.01)
            if at is None:
                raise RuntimeError("the page never marked flashviz:interactive")
            times.append(at / 1000 - t0)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
            page.close()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--passes", type=int, default=4, help="passes over the trace's steps (alternately forward, backward)"
    )
    ap.add_argument("--algo", default="fa2", help="fa2 (the budget's config), fa1, standard or fa2-backward")
    ap.add_argument("--startup-runs", type=int, default=5)
    ap.add_argument("--json", help="also write the numbers here")
    ap.add_argument("--views", action="store_true", help="also list each view's share of the repaint's JS")
    ap.add_argument("--check", action="store_true", help="exit 1 when a median is over its budget (16 ms, 1.5 s)")
    a = ap.parse_args()

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        # start-up first, while nothing else of this benchmark runs (a 2-core machine feels every process)
        startup = bench_interactive(browser, a.startup_runs)
        srv, base = serve_in_thread()
        steps = bench_steps(browser, base, a.passes, a.algo)
        version = browser.version
        browser.close()
    srv.should_exit = True

    js, full, per = steps["js"], steps["full"], steps["per_step"]
    rows = [
        ("repaint, JavaScript (flashviz:repaint)", f"{statistics.median(js):.2f}", f"{pct(js, 0.9):.2f}", "16"),
        ("repaint, whole frame (dispatch to painted)", f"{statistics.median(full):.2f}", f"{pct(full, 0.9):.2f}", "16"),
        ("  of which style recalc (mean, CDP)", f"{per['RecalcStyleDuration']:.2f}", "", ""),
        ("  of which layout (mean, CDP)", f"{per['LayoutDuration']:.2f}", "", ""),
        ("  of which script (mean, CDP)", f"{per['ScriptDuration']:.2f}", "", ""),
        (
            "interactive after `flashviz serve` (ms)",
            f"{1000 * statistics.median(startup):.0f}",
            f"{1000 * max(startup):.0f} (max)",
            "1500",
        ),
    ]
    cfg = CONFIG.replace("&", " ")
    print(f"flashviz viewer benchmark: {a.algo} {cfg}, {steps['steps']} steps ({steps['trace_steps']} x {a.passes}),")
    print(f"headless {version} --disable-gpu, 1280x800, {os.cpu_count()} CPUs, {platform.platform()}")
    print(f"{'':46} {'median ms':>10} {'p90 ms':>14} {'budget':>7}")
    for name, med, p90, budget in rows:
        print(f"{name:46} {med:>10} {p90:>14} {budget:>7}")
    print(f"layouts per step {per['LayoutCount']:.2f}, style recalcs per step {per['RecalcStyleCount']:.2f}")
    if a.views:
        print(f"{'each view (flashviz:repaint:NAME)':46} {'median ms':>10} {'p90 ms':>14} {'mean ms':>7}")
        for name, xs in sorted(steps["views"].items(), key=lambda kv: -sum(kv[1])):
            mean = sum(xs) / len(xs)
            print(f"  {name:44} {statistics.median(xs):>10.2f} {pct(xs, 0.9):>14.2f} {mean:>7.2f}")
    if a.json:
        doc = {
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "browser": version,
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "config": a.algo + " " + cfg,
            "repaint_js_ms": {"median": statistics.median(js), "p90": pct(js, 0.9)},
            "frame_ms": {"median": statistics.median(full), "p90": pct(full, 0.9)},
            "per_step_cdp_ms": per,
            "views_ms": {k: {"median": statistics.median(v), "p90": pct(v, 0.9)} for k, v in steps["views"].items()},
            "interactive_s": startup,
        }
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=2)

    if a.check:
        over = [
            f"{name}: median {med} over {budget}"
            for name, med, _, budget in rows
            if budget and float(med) > float(budget)
        ]
        for line in over:
            print(f"over budget: {line}", file=sys.stderr)
        sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
