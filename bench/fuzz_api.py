"""A larger run of the Python API and widget fuzzers of tests/test_python_api_fuzz.py: thousands of calls of
flashviz.trace, flashviz.show and flashviz.attention (its kernels stubbed: the argument checks are fuzzed), messages
to the widget's handler and values set as its `config`.

The same generators and the same judges as the tests (a documented result or the one-line ConfigError / ValueError /
TypeError; the handler lets nothing escape, refuses in one line naming the field, never says "internal error", keeps
its launch). Counts are printed as a Markdown table for bench/results/robustness.md.

    python bench/fuzz_api.py [--calls 2000] [--seed 0]
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

from fuzzing import generated  # bench/fuzzing.py (the script's folder is on sys.path)
from hypothesis import given
from hypothesis import strategies as st

import test_python_api_fuzz as fz


def draws(strategy, count: int, seed_: int) -> list:
    drawn: list = []

    @generated(count, seed_)
    @given(strategy)
    def draw(value):
        drawn.append(value)

    draw()
    return drawn


def attention_judge():
    """flashviz.attention's judge with its kernels replaced by zeros (as the test's fixture does)."""
    import numpy as np
    import torch

    import flashviz
    from flashviz.ops import library

    def zeros(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, left, right, softcap, backend):
        if type(causal) is not bool or type(scale) is not float:
            raise AssertionError(f"the kernel got causal={causal!r}, scale={scale!r}")
        return torch.zeros_like(q), torch.zeros(q.shape[:3], dtype=torch.float32)

    library.run_forward = zeros
    good = torch.randn(1, 1, 4, 32, dtype=torch.bfloat16)
    tensors = fz.tensors_of(good)
    args = st.fixed_dictionaries(
        {
            "q": tensors,
            "k": tensors,
            "v": tensors,
            "causal": fz.argument(st.sampled_from([True, False, np.True_, np.False_])),
            "scale": fz.argument(st.one_of(st.none(), st.floats(-4, 4), st.just(np.float32(0.5)))),
            "return_lse": fz.argument(st.booleans()),
            "backend": fz.argument(st.sampled_from(["auto", "fa2", "fa3", "FA2"])),
        }
    )

    def judge(kwargs) -> list[str]:
        try:
            flashviz.attention(**kwargs)
        except (ValueError, TypeError) as exc:
            line = str(exc)
            return [] if line and "\n" not in line and len(line) < fz.ONE_LINE else [f"not one line: {line[:200]!r}"]
        except Exception as exc:
            return [f"{type(exc).__name__} escaped: {str(exc)[:200]}"]
        return []

    return args, judge


class Counted:
    """Counts the calls of a function that return (an accepted call) as well as the ones that raise."""

    def __init__(self, function) -> None:
        self.function = function
        self.returned = 0

    def __call__(self, *args, **kwargs):
        out = self.function(*args, **kwargs)
        self.returned += 1
        return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000, help="calls per surface")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    viewer = fz.fresh_widget()
    attention_args, attention = attention_judge()
    import flashviz

    counted = {name: Counted(getattr(flashviz, name)) for name in ("trace", "show", "attention")}
    for name, wrapped in counted.items():
        setattr(flashviz, name, wrapped)  # the judges call flashviz.<name>: count the calls that were accepted
    surfaces = {
        "flashviz.trace(...)": (fz.trace_kwargs(), fz.judge_trace),
        "flashviz.show(..., height=)": (
            st.tuples(fz.trace_kwargs(), fz.argument(st.integers(100, 2000))),
            lambda a: fz.judge_show(*a),
        ),
        "flashviz.attention(...) (kernels stubbed)": (attention_args, attention),
        "widget: messages to its handler": (fz.message(), lambda m: fz.judge_message(viewer, m)),
        "widget: `w.config = ...` from Python": (
            st.one_of(fz.page_config(), fz.JSON),
            lambda v: fz.judge_config(viewer, v),
        ),
    }
    print(f"seed {args.seed}, {args.calls} calls per surface\n")
    print("| surface | calls | accepted | failures | seconds |")
    print("|---|---:|---:|---:|---:|")
    failed = 0
    examples: dict[str, list] = collections.defaultdict(list)
    for name, (strategy, judge) in surfaces.items():
        cases = draws(strategy, args.calls, args.seed)
        before = {k: c.returned for k, c in counted.items()}
        t0 = time.perf_counter()
        bad = 0
        for case in cases:
            found = judge(case)
            if found:
                bad += 1
                if len(examples[name]) < 3:
                    examples[name].append((case, found))
        failed += bad
        took = time.perf_counter() - t0
        key = next((k for k in counted if f"flashviz.{k}(" in name), None)
        accepted = str(counted[key].returned - before[key]) if key else "-"
        print(f"| {name} | {len(cases)} | {accepted} | {bad} | {took:.1f} |", flush=True)
    for name, found in examples.items():
        print(f"\n{name}:")
        for case, problems in found:
            print(f"  {str(case)[:300]}\n    {problems}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
