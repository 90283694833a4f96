"""Does the viewer still draw the same picture? Snapshots of the memory picture of many frames, compared between two
builds of the viewer: a tool for a refactoring that must not change what the page shows (issue 10), not a test (it
needs the built viewer, Playwright and Debian's chromium, and takes minutes).

For each config below and each step (every step up to 140, else about 60 spread over the launch) it records: hashes of
the HBM layer and the step's layer (the two canvases under the pointer, as PNG), the canvas's text alternative, the
boxes of every label, boundary and connector drawn (`window.flashviz.layout().drawn`), the step counter, and on some
steps the tooltip of three cells of every grid. From the repository root:

    PYTHONPATH=src python web/test/pixels.py snap after.json [--width 1280] [--static DIR]
    PYTHONPATH=src python web/test/pixels.py compare before.json after.json

`--static` serves another build of the viewer (default: the one in src/flashviz/viewer/static). To build the viewer of
an older commit there: `git archive COMMIT web | tar -x -C /tmp/old`, link web/node_modules into /tmp/old/web, then
`npx vite build --outDir /tmp/old-static` in /tmp/old/web.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import socket
import threading
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CONFIGS = [
    "n=8&d=4&br=4&bc=4&seed=0",
    "n=12&d=4&br=4&bc=4&seed=0&causal=true",
    "n=10&d=4&br=4&bc=3&seed=1&causal=true",
    "algo=fa1&n=8&d=4&br=4&bc=4&seed=0",
    "algo=fa1&n=10&d=4&br=4&bc=3&seed=2&causal=true",
    "algo=standard&n=8&d=4&br=4&bc=4&seed=0&causal=true",
    "algo=standard&n=6&d=3&br=4&bc=4&seed=0",
    "algo=fa2-backward&n=8&d=4&br=4&bc=4&seed=0",
    "algo=fa2-backward&n=10&d=4&br=4&bc=3&seed=0&causal=true",
    "n=1024&d=64&br=64&bc=64&seed=0",
    "n=300&d=16&br=32&bc=16&seed=3&causal=true",
    "algo=standard&n=256&d=16&br=32&bc=32&seed=0",
    "algo=fa2-backward&n=200&d=8&br=16&bc=32&seed=0&causal=true",
    "algo=fa1&n=100&d=8&br=16&bc=16&seed=0&causal=true",
]

GRAB = """() => {
  const cs = Array.from(document.querySelectorAll('#memory-host canvas'));
  return { layers: cs.slice(0, 2).map((c) => c.toDataURL()), label: cs[1].getAttribute('aria-label'),
           drawn: JSON.stringify(window.flashviz.layout().drawn),
           counter: document.querySelector('[data-testid=step-counter]').textContent };
}"""
FRAME = "new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)))"
TIP = "document.querySelector('[data-testid=cell-tooltip]').textContent"


def serve(static: Path | None) -> str:
    import uvicorn

    from flashviz import server

    if static is not None:
        server.static_dir = lambda: static  # create_app serves the viewer from static_dir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(server.create_app(), host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    srv = uvicorn.Server(config)
    threading.Thread(target=srv.run, daemon=True).start()
    while not srv.started:
        time.sleep(0.02)
    return f"http://127.0.0.1:{port}"


def tooltips(page) -> list[str]:
    """The tooltip of the first, last and middle cell of every grid."""
    layout = page.evaluate("window.flashviz.layout()")
    box = page.locator("#memory-host canvas").nth(2).bounding_box()
    out = []
    for g in layout["grids"].values():
        for r, c in [(0, 0), (g["rows"] - 1, g["cols"] - 1), (g["rows"] // 2, g["cols"] // 2)]:
            page.mouse.move(box["x"] + g["x"] + (c + 0.5) * g["cw"], box["y"] + g["y"] + (r + 0.5) * g["ch"])
            out.append(page.evaluate(TIP))
    page.mouse.move(1, 1)
    return out


def snap(out: Path, width: int, static: Path | None) -> None:
    from playwright.sync_api import sync_playwright

    base = serve(static)
    frames = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for cfg in CONFIGS:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto(f"{base}/?{cfg}")
            page.wait_for_selector("html[data-ready=true]", timeout=60_000)
            total = page.evaluate("window.flashviz.trace().steps.length")
            ks = list(range(total)) if total <= 140 else sorted({*range(0, total, max(1, total // 60)), total - 1})
            every = max(1, len(ks) // 6)
            for n, k in enumerate(ks):
                page.evaluate(f"window.flashviz.goto({k})")
                page.evaluate(FRAME)
                f = page.evaluate(GRAB)
                f["layers"] = [hashlib.sha1(x.encode()).hexdigest() for x in f["layers"]]
                f["tips"] = tooltips(page) if n % every == 0 else []
                frames[f"{cfg}#step={k + 1}"] = f
            page.close()
        browser.close()
    out.write_text(json.dumps(frames), encoding="utf-8")
    print(f"{len(frames)} frames of {len(CONFIGS)} configs at {width} px written to {out}")


def compare(a: Path, b: Path) -> int:
    x = json.loads(a.read_text(encoding="utf-8"))
    y = json.loads(b.read_text(encoding="utf-8"))
    if x.keys() != y.keys():
        print(f"different frames: {sorted(set(x) ^ set(y))[:5]}")
        return 1
    bad = [(k, f) for k in x for f in x[k] if x[k][f] != y[k][f]]
    for k, f in bad[:10]:
        print(f"{k}: {f} differs: {str(x[k][f])[:120]!r} | {str(y[k][f])[:120]!r}")
    print(f"{len(x)} frames compared, {len(bad)} differences")
    return 1 if bad else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snap", help="snapshot the frames into a JSON file")
    s.add_argument("out", type=Path)
    s.add_argument("--width", type=int, default=1280, help="viewport width in px (below 680 HBM stacks above SRAM)")
    s.add_argument("--static", type=Path, default=None, help="serve this built viewer instead of the package's")
    c = sub.add_parser("compare", help="compare two snapshots; exit 1 when any frame differs")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = ap.parse_args()
    if args.cmd == "snap":
        snap(args.out, args.width, args.static)
    else:
        raise SystemExit(compare(args.a, args.b))


if __name__ == "__main__":
    main()
