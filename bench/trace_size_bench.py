"""The trace's size and the page's load at N = 4096 (issue 17, item 20's targets), on this machine.

1. `GET /api/trace?n=4096&d=64&br=64&bc=64&arrays=auto` (what the page asks: the steps' arrays left out at this size,
   served per step by /api/trace/arrays) from `flashviz serve` (a subprocess; raw HTTP/1.1 with `Accept-Encoding:
   gzip`): the bytes on the wire (headers and body), and the time to the answer's last byte, cold (the server runs the
   engine: a fresh server that has answered one small trace of another seed, so its engine's modules are imported)
   and warm (the answer cached), median of --runs. Targets: <= 5 MB, <= 0.5 s. Beside it, for reference, the
   whole trace (`arrays=all`), the same as /2 sent it (plain lists, no gzip) and plain lists gzipped.
2. `flashviz trace --n 4096 --d 128 --br 64 --bc 64 -o FILE` (a trace file: the seed's inputs left out, arrays in
   base85, shuffled and deflated) and with `--plain`: bytes on disk, seconds to write, and seconds to read it back as
   `flashviz view` does (drawing the inputs again). Target <= 10 MB. With --triton also fa2-triton at that launch.
3. The page interactive at that launch in headless Chromium: from `page.goto` to the page's `flashviz:interactive`
   mark (its first step painted, its arrays fetched), cold (the launch not cached: the server runs the engine; its
   modules imported as above) and warm (the answer cached).
   Target <= 2 s. And the same at the seed's example (N = 8), which must not change.

    python bench/trace_size_bench.py [--runs 3] [--triton] [--json out.json]

Needs the built viewer (cd web && npm run build), Playwright and Debian's chromium (/usr/bin/chromium).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
BIG = "n=4096&d=64&br=64&bc=64&seed=0"
SEED = "n=8&d=4&br=4&bc=4&seed=0"
WARM = "n=8&d=4&br=4&bc=4&seed=1"  # a small launch of another seed: imports the engine, caches nothing measured
MB = 1e6


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "flashviz", "serve", "--no-browser", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    line = proc.stdout.readline()
    found = re.search(r"http://(127\.0\.0\.1):(\d+)/", line)
    if not found:
        proc.terminate()
        raise SystemExit(f"flashviz serve printed no URL: {line!r}")
    return proc, found[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, path: str, gzip_ok: bool) -> tuple[float, int, bytes, dict[str, str]]:
    """(seconds to the last byte, bytes on the wire, the body as sent, headers), over a raw socket."""
    host, port = re.match(r"http://([^:/]+):(\d+)/", url).groups()
    enc = "gzip" if gzip_ok else "identity"
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAccept-Encoding: {enc}\r\nConnection: close\r\n\r\n"
    t0 = time.perf_counter()
    with socket.create_connection((host, int(port))) as s:
        s.sendall(request.encode())
        chunks = []
        while chunk := s.recv(1 << 20):
            chunks.append(chunk)
    took = time.perf_counter() - t0
    raw = b"".join(chunks)
    head, _, body = raw.partition(b"\r\n\r\n")
    headers = dict(line.split(": ", 1) for line in head.decode("latin-1").split("\r\n")[1:])
    headers = {k.lower(): v for k, v in headers.items()}
    status = head.split(b" ", 2)[1]
    if status != b"200":
        raise SystemExit(f"GET {path}: {head.decode('latin-1')[:200]}")
    return took, len(raw), body, headers


def bench_api(runs: int) -> dict:
    out: dict = {}
    # (arrays=auto at N=4096: the trace without the steps' arrays, /api/trace/arrays serving them per step)
    for name, query in (("n4096", f"{BIG}&arrays=auto"), ("n4096-all", BIG), ("n8", f"{SEED}&arrays=auto")):
        cold, warm, wire = [], [], 0
        for _ in range(runs):
            proc, url = start_server()
            try:
                get(url, "/api/limits", True)  # the server is up
                if name != "n8":  # the engine's modules imported by one small trace (another seed: not cached)
                    get(url, f"/api/trace?{WARM}", True)
                took, wire, body, headers = get(url, f"/api/trace?{query}", True)
                cold.append(took)
                for _ in range(3):
                    warm.append(get(url, f"/api/trace?{query}", True)[0])
                _, ident_wire, ident, _ = get(url, f"/api/trace?{query}", False)
            finally:
                proc.terminate()
                proc.wait(timeout=10)
        assert headers.get("content-encoding") == "gzip", headers
        assert gzip.decompress(body) == ident
        out[name] = {
            "query": query,
            "wire_bytes": wire,
            "identity_bytes": ident_wire,
            "cold_s": cold,
            "warm_s": warm,
            "cold_median_s": statistics.median(cold),
            "warm_median_s": statistics.median(warm),
        }
    # the same launch as /2 sent it: plain lists, no gzip (and gzipped, had it been)
    from flashviz.algos import get as algorithm
    from flashviz.model.config import Config
    from flashviz.tracing.build import make_trace

    plain = make_trace(algorithm("fa2").api_validated(Config(n=4096, d=64, br=64, bc=64))).to_json()
    out["n4096-all"]["plain_bytes"] = len(plain)
    out["n4096-all"]["plain_gzip_bytes"] = len(gzip.compress(plain, 6))
    return out


def bench_files(triton: bool) -> dict:
    out = {}
    algos = ["fa2"] + (["fa2-triton"] if triton else [])
    with tempfile.TemporaryDirectory() as tmp:
        for algo in algos:
            sizes = {}
            for form, extra in (("compact", []), ("plain", ["--plain"])):
                path = Path(tmp) / f"{algo}-{form}.json"
                cmd = [sys.executable, "-m", "flashviz", "trace", "--algo", algo]
                cmd += ["--n", "4096", "--d", "128", "--br", "64", "--bc", "64", "-o", str(path), *extra]
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True, capture_output=True)
                sizes[form] = {"bytes": path.stat().st_size, "seconds": time.perf_counter() - t0}
                if form == "compact":
                    from flashviz.share.trace_files import read_trace_file

                    sizes["compact_gzip_bytes"] = len(gzip.compress(path.read_bytes(), 6))
                    t0 = time.perf_counter()
                    _, whole = read_trace_file(path)  # as `flashviz view` reads it: inputs drawn again, checked
                    sizes["read_seconds"] = time.perf_counter() - t0
                    sizes["read_as_bytes"] = len(whole)
            out[algo] = sizes
    return out


INTERACTIVE = (
    "(() => { const m = performance.getEntriesByName('flashviz:interactive')[0]; return m ? m.startTime : null; })()"
)


def bench_page(runs: int) -> dict:
    from playwright.sync_api import sync_playwright

    out: dict = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        out["browser"] = browser.version
        for name, query in (("n4096", BIG), ("n8", SEED)):
            cold, warm, fetched = [], [], []
            for _ in range(runs):
                proc, url = start_server()
                try:
                    get(url, "/api/limits", True)
                    get(url, f"/api/trace?{WARM}", True)  # the engine's modules imported (not this launch)
                    for into in (cold, warm):  # the first visit runs the engine, the second finds it cached
                        page = browser.new_page(viewport={"width": 1280, "height": 800})
                        answers: list = []
                        page.on(
                            "requestfinished", lambda r, seen=answers: seen.append(r) if "/api/trace" in r.url else None
                        )
                        t0 = time.perf_counter()
                        page.goto(f"{url}?{query}")
                        at = None
                        deadline = time.perf_counter() + 120
                        while at is None and time.perf_counter() < deadline:
                            at = page.evaluate(INTERACTIVE)  # ms since the navigation started
                            if at is None:
                                time.sleep(0.01)
                        if at is None:
                            raise SystemExit(f"the page at {query} never marked flashviz:interactive")
                        total = page.evaluate("window.flashviz.trace().steps.length")
                        into.append(at / 1000)
                        # the trace and the steps' arrays the page fetched by then (bodies as sent: gzip)
                        wire = sum(r.sizes()["responseBodySize"] for r in list(answers))
                        fetched.append({"requests": len(answers), "body_bytes": wire})
                        page.close()
                        del t0
                finally:
                    proc.terminate()
                    proc.wait(timeout=10)
            out[name] = {
                "query": query,
                "steps": total,
                "fetched": fetched,
                "cold_s": cold,
                "warm_s": warm,
                "cold_median_s": statistics.median(cold),
                "warm_median_s": statistics.median(warm),
            }
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="fresh servers per measure (medians over them)")
    ap.add_argument("--triton", action="store_true", help="also write fa2-triton's trace at N=4096 D=128 (slow)")
    ap.add_argument("--no-page", action="store_true", help="skip the browser")
    ap.add_argument("--json", help="also write the numbers here")
    a = ap.parse_args()

    load_start = os.getloadavg()
    api = bench_api(a.runs)
    files = bench_files(a.triton)
    page = None if a.no_page else bench_page(a.runs)
    load_end = os.getloadavg()

    big, seed, whole = api["n4096"], api["n8"], api["n4096-all"]
    print(
        f"flashviz trace-size benchmark, {os.cpu_count()} CPUs, {platform.platform()}, load average "
        f"{load_start[0]:.2f} at the start, {load_end[0]:.2f} at the end"
    )
    print(f"{'measure':58} {'value':>14} {'target':>10}")
    rows = [
        ("/api/trace N=4096 D=64 Br=Bc=64 arrays=auto, on the wire", f"{big['wire_bytes'] / MB:.2f} MB", "5 MB"),
        ("  its time to answer, cold (the engine runs)", f"{big['cold_median_s']:.3f} s", "0.5 s"),
        ("  its time to answer, warm (cached)", f"{big['warm_median_s']:.3f} s", "0.5 s"),
        ("  identity (no gzip)", f"{big['identity_bytes'] / MB:.2f} MB", ""),
        ("/api/trace N=4096 arrays=all, on the wire (gzip)", f"{whole['wire_bytes'] / MB:.2f} MB", ""),
        ("  its time to answer, warm / cold", f"{whole['warm_median_s']:.3f} / {whole['cold_median_s']:.3f} s", ""),
        ("  identity (compact, no gzip)", f"{whole['identity_bytes'] / MB:.2f} MB", ""),
        ("  as /2 sent it (plain lists, no gzip)", f"{whole['plain_bytes'] / MB:.2f} MB", ""),
        ("  plain lists, gzipped", f"{whole['plain_gzip_bytes'] / MB:.2f} MB", ""),
        ("/api/trace N=8 arrays=auto, on the wire (gzip)", f"{seed['wire_bytes'] / 1e3:.1f} kB", ""),
        ("/api/trace N=8, time to answer, cold", f"{seed['cold_median_s']:.3f} s", ""),
        ("/api/trace N=8, time to answer, warm", f"{seed['warm_median_s']:.3f} s", ""),
    ]
    for algo, s in files.items():
        on_disk = f"{s['compact']['bytes'] / MB:.2f} MB"
        rows.append((f"flashviz trace --algo {algo} N=4096 D=128 Br=Bc=64, on disk", on_disk, "10 MB"))
        rows.append(
            (
                "  seconds to write it / to read it back (as view does)",
                f"{s['compact']['seconds']:.2f} / {s['read_seconds']:.2f} s",
                "",
            )
        )
        rows.append(("  the document it reads back as", f"{s['read_as_bytes'] / MB:.2f} MB", ""))
        rows.append(("  --plain", f"{s['plain']['bytes'] / MB:.2f} MB", ""))
        rows.append(("  the file gzipped", f"{s['compact_gzip_bytes'] / MB:.2f} MB", ""))
    if page:
        for name, label in (("n4096", "N=4096 D=64 Br=Bc=64"), ("n8", "N=8 (the seed's example)")):
            q = page[name]
            rows.append((f"page interactive, {label}, warm", f"{q['warm_median_s']:.2f} s", "2 s"))
            rows.append((f"page interactive, {label}, cold", f"{q['cold_median_s']:.2f} s", "2 s"))
            got = q["fetched"][0]
            rows.append(
                (
                    "  /api/trace* it fetched (requests, bytes)",
                    f"{got['requests']}, {got['body_bytes'] / MB:.2f} MB",
                    "",
                )
            )
    for name, value, target in rows:
        print(f"{name:58} {value:>14} {target:>10}")
    if a.json:
        doc = {
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_average": {"start": load_start, "end": load_end},
            "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
            "api": api,
            "files": files,
            "page": page,
        }
        Path(a.json).write_text(json.dumps(doc, indent=2))


if __name__ == "__main__":
    main()
