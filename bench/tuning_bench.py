"""What tuning costs a training job, on a GPU (issue "flashviz.attention where people train"): each scenario in a fresh
process of its own, forward + backward, B=2, H=16, D=128, bf16, causal, flashviz.attention (backend auto) with
cuDNN's SDPA beside where it takes the call.

1. empty cache: the first call at N=4096 in a process whose disk cache is empty, then the same shape again;
2. a new length in a bucket seen: N = 4000, 4001, 3333 after 4096 (the target: within 5 % of the steady step);
3. warm disk cache: a new process with the cache the first one left (the target: steady within 5 s);
4. a new (D, options) in a fresh process: GQA 16/2 with a window (1024, 0) and softcap 50 at N=3333, then plain
   D=64 at N=4096 (the target: each at most 10 s);
5. a packed training loop: 8 steps of 6 sequences of 64-3,000 tokens each (attention_varlen), each step's time
   against the steady one (the target: every step after the first within 10 %).

    python bench/tuning_bench.py --out DIR    (prints a table; DIR/tuning.json holds every number)

FLASHVIZ_COMPILE_WORKERS=0 compiles the autotuner's candidates one by one (flashviz.runtime.precompile: the default
compiles them in one process per CPU first).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCENARIO = r"""
import json, sys, time, torch
import flashviz
torch.manual_seed(0)
which = sys.argv[1]
out = {}
B, H, D = 2, 16, 128

def step(n, provider="flashviz"):
    q, k, v = (torch.randn(B, H, n, D, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in "qkv")
    torch.cuda.synchronize()
    start = time.perf_counter()
    if provider == "flashviz":
        o = flashviz.attention(q, k, v, causal=True)
    else:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    o.backward(torch.randn_like(o))
    torch.cuda.synchronize()
    return time.perf_counter() - start

def step_d(n, d):
    q, k, v = (torch.randn(B, H, n, d, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in "qkv")
    torch.cuda.synchronize()
    start = time.perf_counter()
    flashviz.attention(q, k, v, causal=True).backward(torch.randn_like(q))
    torch.cuda.synchronize()
    return time.perf_counter() - start

def packed_step(lengths):
    total = sum(lengths)
    q, k, v = (torch.randn(total, H, D, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in "qkv")
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32, device="cuda")
    torch.cuda.synchronize()
    start = time.perf_counter()
    o = flashviz.attention_varlen(q, k, v, cu, cu, max(lengths), max(lengths), causal=True)
    o.backward(torch.randn_like(o))
    torch.cuda.synchronize()
    return time.perf_counter() - start

start = time.perf_counter()
if which in ("empty", "warm"):
    out["first_4096_s"] = step(4096)
    out["again_4096_s"] = step(4096)
    out["to_steady_s"] = time.perf_counter() - start
    out["cudnn_first_4096_s"] = step(4096, "cudnn")
    out["cudnn_again_4096_s"] = step(4096, "cudnn")
if which == "empty":
    out["steady_4096_s"] = min(step(4096) for _ in range(5))
    for n in (4000, 4001, 3333):
        out[f"new_length_{n}_s"] = step(n)
        out[f"steady_{n}_s"] = min(step(n) for _ in range(3))
if which == "options":  # a new (group, window, softcap) in a process whose cache is empty
    q = torch.randn(B, 16, 3333, D, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    k, v = (torch.randn(B, 2, 3333, D, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in "kv")
    for name in ("first_options_s", "again_options_s"):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        o = flashviz.attention(q, k, v, causal=True, window=(1024, 0), softcap=50.0)
        o.backward(torch.randn_like(o))
        torch.cuda.synchronize()
        out[name] = time.perf_counter() - t0
    out["first_d64_s"] = step_d(4096, 64)
    out["again_d64_s"] = step_d(4096, 64)
if which == "packed":
    g = torch.Generator().manual_seed(1)
    steps = [[int(x) for x in torch.randint(64, 3001, (6,), generator=g)] for _ in range(8)]
    out["lengths"] = steps
    out["step_s"] = [packed_step(s) for s in steps]
    out["steady_s"] = [min(packed_step(s) for _ in range(3)) for s in steps]
print(json.dumps(out))
"""


def run(which: str, cache: Path) -> dict:
    """One scenario in a fresh process whose tuning cache and Triton kernel cache are `cache` (empty the first time:
    the kernels are compiled again, as on a machine that never ran them)."""
    env = {**os.environ, "FLASHVIZ_CACHE_DIR": str(cache), "TRITON_CACHE_DIR": str(cache / "triton"),
           "PYTHONUNBUFFERED": "1"}  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", SCENARIO, which], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"{which}: {done.stderr[-2000:]}")
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    doc["process_s"] = time.perf_counter() - start
    return doc


SCENARIOS = ("empty", "warm", "options", "packed")


def report(result: dict) -> None:
    workers = os.environ.get("FLASHVIZ_COMPILE_WORKERS", "one per CPU")
    print(f"{result['device']}, torch {result['torch']}, Triton {result['triton']}, compile workers: {workers}")
    if e := result.get("empty"):
        print(f"empty cache: first call at N=4096 {e['first_4096_s']:.1f} s (cuDNN {e['cudnn_first_4096_s']:.2f} s)")
        for n in (4000, 4001, 3333):
            over = e[f"new_length_{n}_s"] / e[f"steady_{n}_s"] - 1
            print(f"new length {n} in a bucket seen: {e[f'new_length_{n}_s'] * 1e3:.1f} ms, {over:+.0%} over steady")
    if w := result.get("warm"):
        print(f"warm disk cache: first call {w['first_4096_s']:.2f} s, steady after {w['to_steady_s']:.2f} s")
    if o := result.get("options"):
        print(f"empty cache, GQA 16/2 + window + softcap N=3333: first call {o['first_options_s']:.1f} s "
              f"(again {o['again_options_s']:.2f} s); D=64 N=4096: {o['first_d64_s']:.1f} s "
              f"(again {o['again_d64_s']:.2f} s)")  # fmt: skip
    if p := result.get("packed"):
        worst = max(s / t - 1 for s, t in zip(p["step_s"][1:], p["steady_s"][1:], strict=True))
        print(f"packed loop: first step {p['step_s'][0]:.1f} s, later steps at most {worst:+.0%} over steady")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated, of " + ", ".join(SCENARIOS))
    args = parser.parse_args()
    wanted = args.scenarios.split(",")
    if unknown := set(wanted) - set(SCENARIOS):
        parser.error(f"--scenarios: unknown {', '.join(sorted(unknown))}; of {', '.join(SCENARIOS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    import torch
    import triton

    result: dict = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
                    "compile_workers": os.environ.get("FLASHVIZ_COMPILE_WORKERS")}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for which in wanted:  # warm reads the cache that empty left
            result[which] = run(which, Path(tmp) / ("empty" if which == "warm" else which))
    (args.out / "tuning.json").write_text(json.dumps(result, indent=1))
    report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
