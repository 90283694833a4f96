"""Bytes and times of /api/trace with arrays=auto (what the page asks) and of /api/trace/arrays (issue 17, item 20)
against a real `flashviz serve`: the answer without the steps' arrays, the whole one, one step's arrays and the steps a
jump far ahead reads (gzip on the wire, as a browser asks).

    PYTHONPATH=src python bench/trace_arrays_bench.py [--n 4096 --d 64 --br 64 --bc 64]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from serving import get, serving


def main() -> None:
    ap = argparse.ArgumentParser()
    for name, default in (("n", 4096), ("d", 64), ("br", 64), ("bc", 64)):
        ap.add_argument(f"--{name}", type=int, default=default)
    a = ap.parse_args()
    q = {"algo": "fa2", "n": a.n, "d": a.d, "br": a.br, "bc": a.bc}
    gz = {"Accept-Encoding": "gzip"}
    rows = []
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}, N={a.n} D={a.d} Br={a.br} Bc={a.bc}"
    )
    with serving("serve", "--no-browser", "--port", "0") as (_p, base, _port):

        def timed(what: str, path: str, **extra: object) -> bytes:
            t = time.perf_counter()
            status, _, body = get(f"{base}api/{path}?{urllib.parse.urlencode({**q, **extra})}", gz)
            s = time.perf_counter() - t
            assert status == 200, body[:200]
            rows.append((what, len(body), s))
            return body

        timed("/api/trace arrays=auto, cold (engine runs)", "trace", arrays="auto")
        timed("/api/trace arrays=auto, warm", "trace", arrays="auto")
        timed("/api/trace (all arrays), first (encodes them)", "trace")
        timed("/api/trace (all arrays), warm", "trace")
        for k in (0, 1, 2, 3, 100):
            timed(f"/api/trace/arrays step={k}", "trace/arrays", step=k)
        # what the page asks before it draws step 150 after a jump: the step, and the SRAM it reads (steps 148, 149)
        timed("/api/trace/arrays steps=150,148,149 (a jump ahead)", "trace/arrays", steps="150,148,149")
    print("| answer | bytes on the wire (gzip) | seconds |\n|---|---:|---:|")
    for what, size, s in rows:
        print(f"| {what} | {size / 1e6:.3f} MB | {s:.3f} |")


if __name__ == "__main__":
    main()
