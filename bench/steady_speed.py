"""Steady speed of flashviz.attention (backend auto) from two source trees, each in a fresh process, in turn
(A, B, A: the repeat of A gives the run-to-run variance), cuDNN's SDPA beside in each: forward and backward
TFLOP/s by triton.testing.do_bench medians after a warm-up call that tunes. bf16; the attention benchmark's
shapes of bench/results/attention (B x H x N x D, causal or not).

    python bench/steady_speed.py --tree new=src --tree old=.gpu_before/src --out DIR   (prints a table)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SHAPES = [(1, 16, 16384, 128, True), (1, 16, 16384, 128, False), (4, 16, 4096, 128, True), (2, 24, 8192, 128, True)]

CHILD = r"""
import json, sys, torch, triton.testing
import flashviz
from torch.nn.attention import SDPBackend, sdpa_kernel
shapes = json.loads(sys.argv[1])
rows = []
torch.manual_seed(0)
for B, H, N, D, causal in shapes:
    q, k, v = (torch.randn(B, H, N, D, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in "qkv")
    do = torch.randn_like(q)
    flops = 4 * B * H * N * N * D / (2 if causal else 1)
    def flashviz_fwd():
        return flashviz.attention(q, k, v, causal=causal)
    def cudnn_fwd():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    for name, fwd in (("flashviz", flashviz_fwd), ("sdpa-cudnn", cudnn_fwd)):
        fwd().backward(do)  # tunes both directions
        f_ms = triton.testing.do_bench(fwd, warmup=25, rep=200, return_mode="median")
        o = fwd()
        b_ms = triton.testing.do_bench(lambda: o.backward(do, retain_graph=True), warmup=25, rep=200,
                                       return_mode="median", grad_to_none=[q, k, v])
        rows.append({"shape": [B, H, N, D], "causal": causal, "provider": name, "fwd_ms": f_ms, "bwd_ms": b_ms,
                     "fwd_tflops": flops / f_ms / 1e9, "bwd_tflops": 2.5 * flops / b_ms / 1e9})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                  "triton": __import__("triton").__version__, "rows": rows}))
"""


def run(src: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(SHAPES)], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"{src}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="LABEL=SRC_DIR (two: run A, B, A)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    trees = [t.split("=", 1) for t in args.tree]
    order = [trees[0], trees[1], trees[0]] if len(trees) == 2 else trees
    runs = []
    for i, (label, src) in enumerate(order):
        runs.append({"label": label, "run": i, **run(src)})
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "steady-speed.json").write_text(json.dumps(runs, indent=1))
    print(f"{runs[0]['device']}, torch {runs[0]['torch']}, Triton {runs[0]['triton']}; TFLOP/s forward / backward")
    print(f"{'B x H x N x D':<18}{'causal':<8}" + "".join(f"{r['label'] + ' #' + str(r['run']):>16}" for r in runs)
          + f"{'sdpa-cudnn':>16}")  # fmt: skip
    for i, (B, H, N, D, causal) in enumerate(SHAPES):
        cells = []
        for r in runs:
            row = r["rows"][2 * i]
            cells.append(f"{row['fwd_tflops']:.0f} / {row['bwd_tflops']:.0f}")
        cudnn = runs[0]["rows"][2 * i + 1]
        print(f"{f'{B}x{H}x{N}x{D}':<18}{'yes' if causal else 'no':<8}" + "".join(f"{c:>16}" for c in cells)
              + f"{cudnn['fwd_tflops']:.0f} / {cudnn['bwd_tflops']:.0f}".rjust(16))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
