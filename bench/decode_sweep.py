"""The split-KV forward's S on the H200: each decode case of the feature benchmark (B=1, Hq=32, Hkv=8, D=128, causal
bottom-right) timed at the heuristic's S and at fixed S (0 = the unsplit fa2_fwd, autotuned), and gqa causal N=8k's
forward by fa2 and by fa3 (grouped-query attention in fa3's forward), each O checked against the first's.
triton.testing.do_bench medians; TFLOP/s counted as bench/attention_features.py counts them.

  PYTHONPATH=src python bench/decode_sweep.py --out "$OUT/decode" [--budget-s 80]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
SPLITS = (0, None, 4, 8, 16, 32, 64, 128)  # None: the heuristic


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=80.0)
    args = ap.parse_args()
    import attention_features as af
    from triton.testing import do_bench

    import flashviz
    from flashviz.algos.fa2_triton import launcher as ta
    from flashviz.algos.fa2_triton.split_kv import split_plan, split_tiles

    t0 = time.time()
    run = ta.launcher()
    rows = []
    for nq in (1, 16, 128):
        for nk in (8192, 32768, 131072):
            q = torch.randn(1, 32, nq, 128, dtype=torch.bfloat16, device="cuda")
            k, v = (torch.randn(1, 8, nk, 128, dtype=torch.bfloat16, device="cuda") for _ in range(2))
            flops = 4.0 * 128 * af.visible_pairs(nq, nk, True) * 32
            ref = None
            for s in SPLITS:
                if time.time() - t0 > args.budget_s:
                    break
                fn = lambda s=s, q=q, k=k, v=v: run.forward(q, k, v, True, 128**-0.5, splits=s)  # noqa: E731
                o, _ = fn()
                ref = o if ref is None else ref
                ms = do_bench(fn, warmup=10, rep=40, return_mode="median")
                g = ta._geometry(q, k, ta.PLAIN)
                t = split_tiles(nq * 4, 128)
                plan = split_plan(1, 8, 4, nq, nk, True, -1, -1, t.Br, t.Bc, 132, s if s else None)
                row = {"nq": nq, "nk": nk, "splits": "heuristic" if s is None else s, "S": 1 if s == 0 else plan.S,
                       "ms": ms, "tflops": flops / ms / 1e9, "max_diff": (o.float() - ref.float()).abs().max().item(),
                       "B_Hkv": g.B * g.Hkv}  # fmt: skip
                rows.append(row)
                print(f"Nq={nq:4d} Nk={nk:6d} splits={row['splits']!s:9s} S={row['S']:3d} {ms:8.4f} ms "
                      f"{row['tflops']:7.1f} TFLOP/s diff {row['max_diff']:.2e}", flush=True)  # fmt: skip
    gqa = []
    if time.time() - t0 < args.budget_s + 20:
        q = torch.randn(2, 32, 8192, 128, dtype=torch.bfloat16, device="cuda")
        k, v = (torch.randn(2, 8, 8192, 128, dtype=torch.bfloat16, device="cuda") for _ in range(2))
        flops = 2 * 4.0 * 128 * af.visible_pairs(8192, 8192, True) * 32
        ref = None
        for backend in ("fa2", "fa3"):
            try:
                fn = lambda b=backend: flashviz.attention(q, k, v, causal=True, backend=b)  # noqa: E731
                o = fn()
                ref = o if ref is None else ref
                ms = do_bench(fn, warmup=10, rep=40, return_mode="median")
                gqa.append({"backend": backend, "ms": ms, "tflops": flops / ms / 1e9,
                            "max_diff": (o.float() - ref.float()).abs().max().item()})  # fmt: skip
                print(f"gqa causal N=8k {backend}: {ms:.3f} ms {flops / ms / 1e9:.1f} TFLOP/s", flush=True)
            except Exception as e:  # recorded, not hidden
                gqa.append({"backend": backend, "error": f"{type(e).__name__}: {str(e)[:200]}"})
                print(f"gqa causal N=8k {backend}: {gqa[-1]['error']}", flush=True)
    os.makedirs(args.out, exist_ok=True)
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": torch.cuda.get_device_name(),
           "command": " ".join(sys.argv), "decode": rows, "gqa_causal_8k_fwd": gqa}  # fmt: skip
    with open(os.path.join(args.out, "decode-sweep.json"), "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
