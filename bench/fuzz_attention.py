"""A larger run of tests/test_attention_fuzz.py: calls of flashviz.attention and flashviz.attention_varlen under
Triton's interpreter at the edges of their options, each judged against float64 attention (or a one-line refusal
naming the argument), the same generator and judge as the test. Prints the outcome counts as a Markdown row for
bench/results/robustness.md.

    python bench/fuzz_attention.py [--calls 300] [--seed 0]
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
os.environ.setdefault("TRITON_INTERPRET", "1")  # CPU tensors for flashviz.attention, before Triton is imported

from fuzz_api import draws  # bench/fuzz_api.py (the script's folder is on sys.path)

import test_attention_fuzz as fz


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    outcomes: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    for case in draws(fz.calls(), args.calls, args.seed):
        try:
            outcomes[fz.run_and_judge(case)] += 1
        except Exception as exc:  # a wrong result (AssertionError) or anything the judge lets escape
            outcomes["failed"] += 1
            failures.append(f"{type(exc).__name__}: {exc}"[:400])
    took = time.perf_counter() - start
    for line in failures[:20]:
        print("FAILED", line)
    print(
        f"| {args.calls} | {outcomes['ok']} within tolerance of float64, {outcomes['refused']} refused in one line | "
        f"{outcomes['failed']} | `python bench/fuzz_attention.py --calls {args.calls} --seed {args.seed}` "
        f"({took:.0f} s) |"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
