"""Soft-capping on a GPU: fa2's and fa3's kernels against float64 from caps among the scores to far above them, and
the time of Gemma 2's cap (50) at N = 8k beside no cap, for the tanh of this tree (its series near 0) or another
tree's (run it again with PYTHONPATH at that tree's src/ to time the kernels before a change).

    PYTHONPATH=src python bench/softcap_gpu.py [--check] [--time] [--label NAME] [--out DIR]

--check: B=1, H=4, N=1000 (ragged), D=128, causal, bf16, fresh random inputs; O, L, dQ, dK, dV of each backend
against float64 attention with the cap (ops.reference.judge: at most FACTOR x bf16 attention's error + FLOOR).
--time: B=2, H=32/8 (GQA), N=8192, D=128, causal, bf16 (the feature benchmark's softcap case): forward and backward
TFLOP/s by triton.testing.do_bench medians, each backend with softcap 50 and with none, one process, after a warm-up
call that autotunes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import torch

import flashviz
from flashviz.ops.reference import judge


def check(rows: list[dict]) -> bool:
    ok = True
    scale = 1.0 / math.sqrt(128)
    for backend in ("fa2", "fa3"):
        for cap in (50.0, 1e4, 1e6, 1e30, _largest_cap(scale)):
            row = _check_one(backend, cap, scale)
            ok &= row["ok"] and row["as_no_cap"] is not False
            rows.append(row)
            print(f"check {backend} softcap {cap:9.3g}: {'ok' if row['ok'] else 'FAILED'} {row['errors']} "
                  f"limits {row['limits']} as no cap: {row['as_no_cap']}", flush=True)  # fmt: skip
    return ok


def _largest_cap(scale: float) -> float:
    from flashviz.ops.checks import softcap_range  # this tree's only (--time also runs a tree from before it)

    return softcap_range(scale)[1]


def _check_one(backend: str, cap: float, scale: float) -> dict:
    q, k, v, do = (torch.randn(1, 4, 1000, 128, dtype=torch.bfloat16, device="cuda") for _ in range(4))
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    o, lse = flashviz.attention(q, k, v, causal=True, softcap=cap, return_lse=True, backend=backend)
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), do)
    ours = {"O": o, "L": lse, "dQ": dq, "dK": dk, "dV": dv}
    q, k, v = q.detach(), k.detach(), v.detach()
    capped = judge(ours, q, k, v, True, scale, do, softcap=cap)
    plain = judge({"O": o, "L": lse}, q, k, v, True, scale, do) if cap >= 1e4 else None
    return {
        "backend": backend,
        "softcap": cap,
        "ok": capped.ok,
        "failures": capped.failures(),
        "errors": {n: float(f"{e:.3g}") for n, e in capped.errors.items()},
        "limits": {n: float(f"{e:.3g}") for n, e in capped.limits.items()},
        "as_no_cap": None if plain is None else plain.ok,
    }


def time_cases(rows: list[dict]) -> None:
    for backend in ("fa2", "fa3"):
        for cap in (50.0, 0.0):
            row = _time_one(backend, cap)
            rows.append(row)
            print(f"time {backend} softcap {cap:4g}: fwd {row['fwd_tflops']:.0f} TFLOP/s ({row['fwd_ms']:.3f} ms), "
                  f"bwd {row['bwd_tflops']:.0f} TFLOP/s ({row['bwd_ms']:.3f} ms)", flush=True)  # fmt: skip


def _time_one(backend: str, cap: float) -> dict:
    import triton.testing

    B, Hq, Hkv, N, D = 2, 32, 8, 8192, 128
    flops = 4 * B * Hq * N * N * D / 2  # causal: half the pairs
    q = torch.randn(B, Hq, N, D, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    k, v = (torch.randn(B, Hkv, N, D, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in "kv")
    do = torch.randn_like(q)

    def fwd():
        return flashviz.attention(q, k, v, causal=True, softcap=cap, backend=backend)

    fwd().backward(do)  # autotunes both directions
    f_ms = triton.testing.do_bench(fwd, warmup=50, rep=300, return_mode="median")
    o = fwd()
    b_ms = triton.testing.do_bench(lambda: o.backward(do, retain_graph=True), warmup=50, rep=300,
                                   return_mode="median", grad_to_none=[q, k, v])  # fmt: skip
    return {"backend": backend, "softcap": cap, "fwd_ms": f_ms, "bwd_ms": b_ms,
            "fwd_tflops": flops / f_ms / 1e9, "bwd_tflops": 2.5 * flops / b_ms / 1e9}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--time", action="store_true")
    parser.add_argument("--label", default="this tree")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    torch.manual_seed(int.from_bytes(os.urandom(4), "little"))
    rows: list[dict] = []
    ok = check(rows) if args.check else True
    if args.time:
        time_cases(rows)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        doc = {"label": args.label, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "triton": __import__("triton").__version__, "rows": rows}  # fmt: skip
        (args.out / f"softcap-{args.label.replace(' ', '-')}.json").write_text(json.dumps(doc, indent=1, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
