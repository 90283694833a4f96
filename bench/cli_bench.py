"""Benchmark: the answers that need no engine come at once, even at N = 2^31 - 1 with one-row tiles.

The speed checks that used to sit in tests/test_cli.py and tests/test_compare.py (tests there now judge the
work by the Python lines it runs, not by a clock, so that a loaded CI machine passes):

- each traffic model's `count` and `steps` at N = 2^31 - 1, Br = 1, Bc = 3, causal and not: target <= 0.5 s
  for all four calls of an algorithm, in process;
- `python -m flashviz count --algo A --n 2147483647 --d 4096 --br 1 --bc 1 --json [--causal]`: <= 5 s each;
- `python -m flashviz compare --n 2147483647 --d 128 --br 4096 --bc 4096 --causal --json`: <= 10 s as a process.

    python bench/cli_bench.py [--repeat 3]

Prints a table (median of the repeats) and whether each target was met; exit code 1 if one was missed.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

N = 2**31 - 1


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cli(*args: str) -> None:
    out = subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"flashviz {' '.join(args)} failed: {out.stderr.strip()}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from flashviz.algos import REGISTRY

    rows = []
    for algo, entry in REGISTRY.items():
        model = entry.traffic

        def closed_forms(model=model):
            for causal in (False, True):
                model.count(N, 128, 1, 3, causal=causal)
                model.steps(N, 128, 1, 3, causal=causal)

        what = f"{algo}: count + steps, N=2^31-1 Br=1 Bc=3, both masks (in process)"
        rows.append((what, timed(closed_forms, 1), 0.5))
    for algo in REGISTRY:
        for causal in (False, True):
            flags = ["count", "--algo", algo, "--n", str(N), "--d", "4096", "--br", "1", "--bc", "1", "--json"]
            flags += ["--causal"] if causal else []
            rows.append((f"flashviz {' '.join(flags)}", timed(lambda f=flags: cli(*f), args.repeat), 5.0))
    flags = ["compare", "--n", str(N), "--d", "128", "--br", "4096", "--bc", "4096", "--causal", "--json"]
    rows.append((f"flashviz {' '.join(flags)}", timed(lambda: cli(*flags), args.repeat), 10.0))

    print("| what | median s | target s | |")
    print("|---|---|---|---|")
    missed = 0
    for what, seconds, target in rows:
        ok = seconds <= target
        missed += not ok
        print(f"| `{what}` | {seconds:.3f} | {target:g} | {'met' if ok else 'MISSED'} |")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
