"""A larger run of the CLI fuzzer of tests/test_cli_fuzz.py: thousands of `python -m flashviz ...` invocations.

The same generator (every command's flags read from click, valid, boundary and garbage values, hostile files)
and the same judge (exit code 0/1/2, no traceback, one error line naming a --flag or field; gpu without a GPU
exits 2). Invocations run a few at a time in subprocesses; the counts are printed for bench/results.

    python bench/fuzz_cli.py [--invocations 2000] [--jobs 2] [--seed 0]
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
from hypothesis import strategies as st

from test_cli_fuzz import invocation, make_files, problems, run


def generate(count: int, pools: dict, seed_: int) -> list[list[str]]:
    drawn: list[list[str]] = []

    @generated(count, seed_)
    @given(st.data())
    def draw(data):
        drawn.append(data.draw(invocation(pools)))

    draw()
    return drawn


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--invocations", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=300, help="seconds before an invocation counts as a hang")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pools = make_files(root)
        argvs = generate(args.invocations, pools, args.seed)
        t0 = time.perf_counter()

        def one(argv):
            try:
                return argv, run(argv, str(root), timeout=args.timeout)
            except subprocess.TimeoutExpired:
                return argv, subprocess.CompletedProcess(argv, "hang", "", f"no answer in {args.timeout:g} s")

        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(one, argvs))
        wall = time.perf_counter() - t0
    by_command = collections.Counter(" ".join(a[:2] if a[0] == "gpu" else a[:1]) for a, _ in results)
    by_code = collections.Counter(str(out.returncode) for _, out in results)
    failures = [(a, out, p) for a, out in results if (p := problems(a, out))]
    print(f"invocations: {len(results)} in {wall:.0f} s ({args.jobs} at a time), seed {args.seed}")
    print("per command: " + ", ".join(f"{k} {v}" for k, v in sorted(by_command.items())))
    print("exit codes: " + ", ".join(f"{k}: {v}" for k, v in sorted(by_code.items())))
    print(f"failures: {len(failures)}")
    for a, out, p in failures[:20]:
        shown = [x if len(x) <= 60 else x[:57] + "..." for x in a]
        print(f"  {shown!r}: {'; '.join(p)} | exit {out.returncode} | {out.stderr.strip()[-300:]!r}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
