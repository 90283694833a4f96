"""A larger run of the fuzzers of tests/test_fuzz_files.py: crafted trace files through the check every view runs
first (`flashviz view`, `export --trace`, `flashviz.show(path)`) and the page documents built from what passes, and
crafted ladder files through `flashviz.hardware.ladder.load` and its table. Same generators, same judges, in-process; a
failure is any exception other than the one-line refusal. Then the readers' own hazards, each judged more strictly:
arrays that inflate far past their config (refused within a bounded peak of memory), inputs and outputs of another
shape than the config makes and outputs that are not their stored verdict (refused), ring files of any P and layout
(shown by view's page, export's documents and flashviz.show). Prints the counts for bench/results/robustness.md.

    python bench/fuzz_traces.py [--traces 3000] [--ladders 2000] [--inflating 200] [--misshapen 1000]
                                [--verdicts 1000] [--rings 300] [--seed 0]
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzzing import generated  # bench/fuzzing.py (the script's folder is on sys.path)
from hypothesis import given

from test_fuzz_files import (
    GOOD,
    GOOD_FILE,
    LADDER,
    crafted_ladder,
    crafted_trace,
    false_verdict,
    inflating_trace,
    judge_ladder,
    judge_refused,
    judge_ring,
    judge_trace,
    judge_verdict,
    misshapen_trace,
    ring_file,
)


def run(name: str, count: int, strategy, judge, seed_: int) -> collections.Counter:
    counts: collections.Counter = collections.Counter()
    failures: list[str] = []

    @generated(count, seed_)
    @given(strategy)
    def one(data: bytes) -> None:
        try:
            counts[judge(data)] += 1
        except Exception:
            counts["failed"] += 1
            if len(failures) < 5:
                failures.append(traceback.format_exc(limit=3))

    t0 = time.perf_counter()
    one()
    print(f"{name}: {sum(counts.values())} tries, {dict(counts)}, {time.perf_counter() - t0:.1f} s")
    for f in failures:
        print(f)
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=3000)
    ap.add_argument("--ladders", type=int, default=2000)
    ap.add_argument("--inflating", type=int, default=200)
    ap.add_argument("--misshapen", type=int, default=1000)
    ap.add_argument("--verdicts", type=int, default=1000)
    ap.add_argument("--rings", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    traces = run("trace files", args.traces, crafted_trace(GOOD), judge_trace, args.seed)
    hazards = [
        run("arrays inflating past the config", args.inflating, inflating_trace(GOOD_FILE), judge_refused, args.seed),
        run("arrays of another shape", args.misshapen, misshapen_trace(GOOD_FILE), judge_refused, args.seed),
        run("outputs not their verdict", args.verdicts, false_verdict(GOOD_FILE), judge_verdict, args.seed),
        run("ring files of any P and layout", args.rings, ring_file(), judge_ring, args.seed),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.json"

        def ladder(data: bytes) -> str:
            path.write_bytes(data)
            return judge_ladder(path)

        ladders = run("ladder files", args.ladders, crafted_ladder(LADDER), ladder, args.seed)
    return 1 if traces["failed"] or ladders["failed"] or any(h["failed"] for h in hazards) else 0


if __name__ == "__main__":
    sys.exit(main())
