"""A larger run of the kernel-file fuzzer of tests/test_yourkernel_fuzz.py: hundreds of `python -m flashviz trace
--kernel ...` invocations, each on a kernel file and flags drawn by the same generator and held to the same judge
(exit code 0/1/2, no traceback, one error line naming the flag, bad input exits 2, no `correct` verdict for a kernel
that must fail, and a correct one held to float64). Cases run a few at a time in subprocesses, each in a folder of
its own; the counts are printed for bench/results.

    python bench/fuzz_kernels.py [--cases 300] [--jobs 2] [--seed 0]
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzzing import generated  # bench/fuzzing.py (the script's folder is on sys.path)
from hypothesis import given

from test_yourkernel_fuzz import BAD, FAILS, Case, case, problems, run


def generate(count: int, seed_: int) -> list[Case]:
    drawn: list[Case] = []

    @generated(count, seed_)
    @given(case())
    def draw(c):
        drawn.append(c)

    draw()
    return drawn


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=300, help="seconds before a case counts as a hang")
    args = ap.parse_args()
    cases = generate(args.cases, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()

        def one(k_c: tuple[int, Case]) -> tuple[Case, subprocess.CompletedProcess, list[str]]:
            k, c = k_c
            folder = root / f"case{k}"
            try:
                out = run(c, folder, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                out = subprocess.CompletedProcess(c.argv, "hang", "", f"no answer in {args.timeout:g} s")
                return c, out, ["hang"]
            return c, out, problems(c, out, folder)

        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(one, enumerate(cases)))
        wall = time.perf_counter() - t0
    by_code = collections.Counter(str(out.returncode) for _, out, _ in results)
    by_expect = collections.Counter({0: "any", FAILS: "must fail", BAD: "bad input"}[c.expect] for c, _, _ in results)
    failures = [(c, out, p) for c, out, p in results if p]
    print(f"cases: {len(results)} in {wall:.0f} s ({args.jobs} at a time), seed {args.seed}")
    print("drawn as: " + ", ".join(f"{k} {v}" for k, v in sorted(by_expect.items())))
    print("exit codes: " + ", ".join(f"{k}: {v}" for k, v in sorted(by_code.items())))
    print(f"failures: {len(failures)}")
    for c, out, p in failures[:20]:
        print(f"  {'; '.join(c.why)} | {' '.join(c.argv[3:])}: {'; '.join(p)} | exit {out.returncode} | "
              f"{out.stderr.strip()[-300:]!r}")  # fmt: skip
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
