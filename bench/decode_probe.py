"""Where a decode call's time goes: the feature run's decode cases (B=1, Hq=32, Hkv=8, D=128, bf16, causal
bottom-right) timed five ways, flashviz's and cuDNN's, to tell the kernels from the host work around them.

- bench: triton.testing.do_bench median of the call as the feature run times it (its clock starts before the call,
  so host time that its L2 flush does not hide counts);
- graph: do_bench of a CUDA graph's replay of the same call (the kernels alone, back to back);
- kernels: the sum of the call's kernels' durations by torch.profiler (CUDA activity), averaged over 20 calls;
- host: microseconds of Python per call (perf_counter around 200 calls, the GPU kept busy so no launch waits);
- and, for flashviz, the split forward at fixed S (4 .. 64) timed as bench and graph.
A cProfile of 300 calls of flashviz.attention at Nq=1 Nk=8k is written last (top 25 by cumulative time).

  PYTHONPATH=src python bench/decode_probe.py --out "$OUT/decode-probe"
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def graph_ms(fn, do_bench) -> float | None:
    """do_bench of fn's CUDA graph replayed (attention_features.capture_graph); None where capture fails (said)."""
    from attention_features import capture_graph

    try:
        graph, _ = capture_graph(fn)
    except Exception as e:  # recorded, not hidden
        print(f"  graph capture failed: {type(e).__name__}: {str(e)[:160]}", flush=True)
        return None
    return do_bench(graph.replay, warmup=10, rep=60, return_mode="median")


def kernel_us(fn, calls: int = 20) -> float:
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    total = sum(e.device_time_total for e in prof.key_averages())  # microseconds, all kernels
    return total / calls


def host_us(fn, calls: int = 200) -> float:
    big = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    for _ in range(4):
        big @ big  # a few ms of GPU work queued first: no launch below waits for the GPU
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    us = (time.perf_counter() - t0) / calls * 1e6
    torch.cuda.synchronize()
    return us


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import attention_features as af
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench

    import flashviz
    from flashviz.algos.fa2_triton import launcher as ta

    run = ta.launcher()
    rows = []
    for nq in (1, 16, 128):
        for nk in (8192, 32768, 131072):
            torch.manual_seed(nq * 7 + nk)
            q = torch.randn(1, 32, nq, 128, dtype=torch.bfloat16, device="cuda")
            k, v = (torch.randn(1, 8, nk, 128, dtype=torch.bfloat16, device="cuda") for _ in range(2))
            flops = 4.0 * 128 * af.visible_pairs(nq, nk, True) * 32
            bias = None
            if nq != nk:
                from torch.nn.attention.bias import causal_lower_right

                bias = causal_lower_right(nq, nk)

            def cudnn(q=q, k=k, v=v, bias=bias):
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, enable_gqa=True)

            fns = {"flashviz": lambda q=q, k=k, v=v: flashviz.attention(q, k, v, causal=True, backend="fa2"),
                   "launcher": lambda q=q, k=k, v=v: run.forward(q, k, v, True, 128**-0.5),
                   "cudnn": cudnn}  # fmt: skip
            for s in (4, 8, 16, 32, 64):
                fns[f"S={s}"] = lambda q=q, k=k, v=v, s=s: run.forward(q, k, v, True, 128**-0.5, splits=s)
            ref = fns["flashviz"]()
            for name, fn in fns.items():
                row: dict = {"nq": nq, "nk": nk, "fn": name}
                try:
                    o = fn()
                    o = o[0] if isinstance(o, tuple) else o
                    row["max_diff"] = (o.float() - ref.float()).abs().max().item()
                    row["bench_us"] = do_bench(fn, warmup=10, rep=60, return_mode="median") * 1e3
                    g = graph_ms(fn, do_bench)
                    row["graph_us"] = None if g is None else g * 1e3
                    if not name.startswith("S="):
                        row["kernels_us"] = kernel_us(fn)
                        row["host_us"] = host_us(fn)
                    row["tflops_bench"] = flops / row["bench_us"] / 1e6
                except Exception as e:  # recorded, not hidden
                    row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
                rows.append(row)
                print(json.dumps(row), flush=True)
    os.makedirs(args.out, exist_ok=True)
    q = torch.randn(1, 32, 1, 128, dtype=torch.bfloat16, device="cuda")
    k, v = (torch.randn(1, 8, 8192, 128, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    flashviz.attention(q, k, v, causal=True)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(300):
        flashviz.attention(q, k, v, causal=True)
    pr.disable()
    torch.cuda.synchronize()
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats("cumulative").print_stats(25)
    with open(os.path.join(args.out, "profile.txt"), "w") as f:
        f.write(buf.getvalue())
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": torch.cuda.get_device_name(),
           "command": " ".join(sys.argv), "rows": rows}  # fmt: skip
    with open(os.path.join(args.out, "decode-probe.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(f"{'case':18s} {'fn':9s} {'bench':>8s} {'graph':>8s} {'kernels':>8s} {'host':>8s} {'TF':>6s}  (us)")
    for r in rows:
        if "error" in r:
            print(f"Nq={r['nq']} Nk={r['nk']:6d} {r['fn']:9s} {r['error'][:80]}")
            continue
        cells = [r.get(c) for c in ("bench_us", "graph_us", "kernels_us", "host_us")]
        txt = " ".join(f"{c:8.1f}" if c is not None else f"{'-':>8s}" for c in cells)
        print(f"Nq={r['nq']:<4d} Nk={r['nk']:6d} {r['fn']:9s} {txt} {r['tflops_bench']:6.1f}")
    print(buf.getvalue()[:3000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
