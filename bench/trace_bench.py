"""Benchmark: tracing N=4096, D=128, Br=Bc=64 -- all 64 blocks executed, values recorded for one.

Target (issue 2): <= 2 s on the 2-core CPU machine, engine plus JSON. Prints a table and, with --record,
appends the figures to bench/results/trace.md.

    python bench/trace_bench.py [--repeat 5] [--record]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from flashviz.model.config import Config
from flashviz.tracing.build import make_trace

RESULTS = Path(__file__).parent / "results" / "trace.md"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--b", type=int, default=64)
    args = ap.parse_args()
    cfg = Config(n=args.n, d=args.d, br=args.b, bc=args.b, record=(0,))
    make_trace(Config())  # warm imports and caches
    engine, total, size = [], [], 0
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        trace = make_trace(cfg)
        t1 = time.perf_counter()
        size = len(trace.to_json())
        t2 = time.perf_counter()
        engine.append(t1 - t0)
        total.append(t2 - t0)
    assert trace.reference["ok"] and trace.model["matches"], "a fast wrong trace is no result"
    assert len(trace.blocks) == cfg.tr and trace.phases[-1]["hbm"] == trace.hbm
    machine = f"{platform.node() or 'cpu'} ({os.cpu_count()} cores, {platform.processor() or platform.machine()})"
    row = (
        f"| {dt.date.today()} | {machine} "
        f"| N={cfg.n} D={cfg.d} Br=Bc={cfg.br}, {cfg.tr} blocks run, 1 recorded, {len(trace.steps)} steps "
        f"| {statistics.median(engine):.2f} s | {statistics.median(total):.2f} s | {size / 1e6:.1f} MB "
        f"| median of {args.repeat} | `python bench/trace_bench.py --repeat {args.repeat}` |"
    )
    print("| date | machine | config | engine + checks | + JSON | JSON size | runs | command |")
    print("|---|---|---|---|---|---|---|---|")
    print(row)
    print(f"target <= 2.00 s: {'met' if statistics.median(total) <= 2.0 else 'MISSED'}", file=sys.stderr)
    if args.record:
        if not RESULTS.exists():
            RESULTS.write_text(
                "# Tracing speed (issue 2 target: <= 2 s for N=4096, D=128, Br=Bc=64 on the 2-core CPU machine)\n\n"
                "Engine + checks = running all blocks, the float64 reference and the traffic model;"
                " + JSON = serialising the whole Trace too.\n\n"
                "| date | machine | config | engine + checks | + JSON | JSON size | runs | command |\n"
                "|---|---|---|---|---|---|---|---|\n"
            )
        with RESULTS.open("a") as f:
            f.write(row + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
