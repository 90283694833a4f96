"""Load run against a real `flashviz serve` (issue 8, item 17): many requests at once, mixing /api/trace,
/api/compare and /api/limits, some abandoned mid-way (the client closes the connection, as a page that navigates
away or drops `<img>` tags does). Then the issue's own case: 20 compares abandoned at 0.5 s, and the time a
tiny trace takes right after them.

Reports latency p50/p99 per endpoint, the count of 503s (the bounded queue saying "busy"), other 5xx (must be 0)
and the server's RSS. Loopback only; bounded in count and time; stops the server it started.

    python bench/load_bench.py [--requests 200] [--abandon 0.2] [--seed 0] [--json out.json]

Set PYTHONPATH to measure another checkout's server (e.g. the code before the fix).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

URL_LINE = re.compile(r"flashviz: serving the FlashAttention-2 walkthrough at http://127\.0\.0\.1:(\d+)/")
REQUEST_LIMIT_S = 300.0  # a request still unanswered after this long counts as timed out (and the run goes on)


@dataclass
class Result:
    endpoint: str
    query: str
    abandoned: bool
    status: int | None = None  # None: abandoned before an answer, or timed out
    seconds: float = 0.0


@dataclass
class Rss:
    """The server's resident memory, sampled every 50 ms from /proc (Linux)."""

    pid: int
    samples: list[int] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def read(self) -> int | None:
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            return None
        return None

    def run(self) -> None:
        while not self.stop.wait(0.05):
            value = self.read()
            if value is not None:
                self.samples.append(value)


def mix(rng: random.Random, count: int, abandon: float) -> list[tuple[str, str, float | None]]:
    """(endpoint, query, abandon after seconds or None) for `count` requests: 40% limits, 30% trace, 30% compare;
    a fraction `abandon` of the engine requests is dropped after 0.05-0.5 s."""
    out = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.4:
            out.append(("/api/limits", "", None))
            continue
        b = rng.choice((4, 8, 16, 32, 64))
        if kind < 0.7:
            n, d = rng.choice((8, 64, 256, 1024, 2048)), rng.choice((4, 16, 32, 64))
            algo = rng.choice(("standard", "fa1", "fa2", "fa2-backward"))
            query = f"algo={algo}&n={n}&d={d}&br={b}&bc={b}&seed={rng.randrange(2**32)}&block=0"
            endpoint = "/api/trace"
        else:
            n, d = rng.choice((64, 256, 512, 1024, 4096)), rng.choice((16, 32, 64, 128))
            query = f"n={n}&d={d}&br={b}&bc={rng.choice((4, 8, 16, 32, 64))}&causal={rng.choice(('true', 'false'))}"
            endpoint = "/api/compare"
        out.append((endpoint, query, rng.uniform(0.05, 0.5) if rng.random() < abandon else None))
    return out


async def request(port: int, endpoint: str, query: str, abandon_s: float | None) -> Result:
    """One GET on its own connection; with `abandon_s`, the connection is closed after that long."""
    result = Result(endpoint, query, abandon_s is not None)
    start = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    target = f"{endpoint}?{query}" if query else endpoint
    writer.write(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    try:
        data = await asyncio.wait_for(reader.read(), abandon_s if abandon_s is not None else REQUEST_LIMIT_S)
        result.status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None
    except asyncio.TimeoutError:
        result.status = None
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    result.seconds = time.perf_counter() - start
    return result


async def load(port: int, plan: list[tuple[str, str, float | None]]) -> list[Result]:
    return list(await asyncio.gather(*(request(port, e, q, a) for e, q, a in plan)))


async def after_abandoned_compares(port: int, rng: random.Random) -> tuple[float, int | None]:
    """The issue's case: 20 compares dropped at 0.5 s, then a tiny trace: how long it takes, and its status. The
    comparison's engine work is /api/curves since issue 17 (/api/compare is closed forms only, never queued)."""
    drops = [
        request(port, "/api/curves", f"n=4096&d=64&br=32&bc={rng.choice((32, 33, 34, 35))}&causal=false", 0.5)
        for _ in range(20)
    ]
    await asyncio.gather(*drops)
    tiny = await request(port, "/api/trace", f"seed={rng.randrange(2**32)}", None)
    return tiny.seconds, tiny.status


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def start_server() -> tuple[subprocess.Popen, int]:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")} | {"CI": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "flashviz", "serve", "--no-browser", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    line = proc.stdout.readline()
    match = URL_LINE.match(line)
    if not match:
        proc.kill()
        raise SystemExit(f"load_bench: the server did not start: {line!r}")
    return proc, int(match.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=200, help="requests sent at once (default 200)")
    ap.add_argument("--abandon", type=float, default=0.2, help="fraction of engine requests dropped (default 0.2)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the request mix")
    ap.add_argument("--json", dest="json_path", default=None, help="also write the figures here")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    proc, port = start_server()
    rss = Rss(proc.pid)
    sampler = threading.Thread(target=rss.run, daemon=True)
    sampler.start()
    try:
        idle_rss = rss.read()
        wall = time.perf_counter()
        results = asyncio.run(load(port, mix(rng, args.requests, args.abandon)))
        wall = time.perf_counter() - wall
        tiny_s, tiny_status = asyncio.run(after_abandoned_compares(port, rng))
    finally:
        rss.stop.set()
        sampler.join()
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    answered = [r for r in results if r.status is not None]
    figures = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.node() or 'cpu'} ({os.cpu_count()} cores, {platform.machine()})",
        "command": " ".join(["python bench/load_bench.py", *sys.argv[1:]]),
        "requests": len(results),
        "abandoned": sum(r.abandoned for r in results),
        "answered": len(answered),
        "timed_out": sum(1 for r in results if r.status is None and not r.abandoned),
        "status": {str(s): sum(1 for r in answered if r.status == s) for s in sorted({r.status for r in answered})},
        "503": sum(1 for r in answered if r.status == 503),
        "other_5xx": sum(1 for r in answered if r.status >= 500 and r.status != 503),
        "wall_s": round(wall, 2),
        "latency_s": {},
        "rss_mb": {
            "idle": round((idle_rss or 0) / 1e6, 1),
            "peak": round(max(rss.samples, default=0) / 1e6, 1),
            "end": round((rss.samples[-1] if rss.samples else 0) / 1e6, 1),
        },
        "tiny_trace_after_20_abandoned_compares_s": round(tiny_s, 3),
        "tiny_trace_status": tiny_status,
    }
    for endpoint in ("/api/limits", "/api/trace", "/api/compare"):
        for label, keep in (("200", lambda r: r.status == 200), ("503", lambda r: r.status == 503)):
            times = [r.seconds for r in answered if r.endpoint == endpoint and keep(r)]
            if times:
                figures["latency_s"][f"{endpoint} {label}"] = {
                    "count": len(times),
                    "p50": round(statistics.median(times), 3),
                    "p99": round(percentile(times, 99), 3),
                    "max": round(max(times), 3),
                }
    print(json.dumps(figures, indent=2))
    if args.json_path:
        with open(args.json_path, "w") as f:
            json.dump(figures, f, indent=2)
    ok = figures["other_5xx"] == 0 and figures["timed_out"] == 0 and tiny_status == 200
    print(f"load_bench: {'ok' if ok else 'FAILED'}: other 5xx {figures['other_5xx']}, timed out {figures['timed_out']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
