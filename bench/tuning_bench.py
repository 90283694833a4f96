"""What tuning costs a training job, on a GPU (issue "flashviz.attention where people train"): each scenario in a fresh
process of its own, forward + backward, B=2, H=16, D=128, bf16, causal, flashviz.attention (backend auto) with
cuDNN's SDPA beside where it takes the call.

1. empty cache: the first call at N=4096 in a process whose disk cache is empty, then the same shape again;
2. a new length in a bucket seen: N = 4000, 4001, 3333 after 4096 (the target: within 5 % of the steady step);
3. warm disk cache: a new process with the cache the first one left (the target: steady within 5 s);
4. a packed training loop: 8 steps of 6 sequences of 64-3,000 tokens each (attention_varlen), each step's time
   against the steady one (the target: every step after the first within 10 %).

    python bench/tuning_bench.py --out DIR    (prints a table; DIR/tuning.json holds every number)
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
if which == "packed":
    g = torch.Generator().manual_seed(1)
    steps = [[int(x) for x in torch.randint(64, 3001, (6,), generator=g)] for _ in range(8)]
    out["lengths"] = steps
    out["step_s"] = [packed_step(s) for s in steps]
    out["steady_s"] = [min(packed_step(s) for _ in range(3)) for s in steps]
print(json.dumps(out))
"""


def run(which: str, cache: Path) -> dict:
    env = {**os.environ, "FLASHVIZ_CACHE_DIR": str(cache), "PYTHONUNBUFFERED": "1"}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", SCENARIO, which], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"{which}: {done.stderr[-2000:]}")
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    doc["process_s"] = time.perf_counter() - start
    return doc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    import torch
    import triton

    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
                  "empty": run("empty", cache), "warm": run("warm", cache)}  # fmt: skip
        packed_cache = Path(tmp) / "packed"
        result["packed"] = run("packed", packed_cache)
    (args.out / "tuning.json").write_text(json.dumps(result, indent=1))
    e, w, p = result["empty"], result["warm"], result["packed"]
    print(f"{result['device']}, torch {result['torch']}, Triton {result['triton']}")
    print(f"empty cache: first call at N=4096 {e['first_4096_s']:.1f} s (cuDNN {e['cudnn_first_4096_s']:.2f} s)")
    for n in (4000, 4001, 3333):
        over = e[f"new_length_{n}_s"] / e[f"steady_{n}_s"] - 1
        print(f"new length {n} in a bucket seen: {e[f'new_length_{n}_s'] * 1e3:.1f} ms, {over:+.0%} over steady")
    print(f"warm disk cache: first call {w['first_4096_s']:.2f} s, steady after {w['to_steady_s']:.2f} s")
    worst = max(s / t - 1 for s, t in zip(p["step_s"][1:], p["steady_s"][1:], strict=True))
    print(f"packed loop: first step {p['step_s'][0]:.1f} s, later steps at most {worst:+.0%} over their steady time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
