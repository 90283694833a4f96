"""Benchmark the FlashAttention-2 kernel as written (fp32, scalar) on the GPU, against the GPU's own ceilings.

    PYTHONPATH=src python bench/gpu_bench.py [--out bench/results] [--quick]

For N from 1k to 16k (D=64; Br=Bc=32 and 64; batch x N = 16k tokens and 16 heads, the FlashAttention
papers' standard shape) it times one launch over all B*H heads with CUDA events (median of repeats
after warm-up), rotating among enough input sets that each launch's inputs are not in L2 (60 MB on
an H200) when it starts. Before timing, head 0 of each config is checked against float64 attention
computed on the GPU. Reported per config: time, GFLOP/s (4*B*H*N^2*D) against the fp32 rate
measured in the same run (cuBLAS SGEMM, TF32 off), and GB/s of the traffic model's bytes against the
measured device-to-device copy bandwidth. Writes gpu_bench.json (raw) and gpu_bench.md to --out.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import platform
import statistics
import sys
from pathlib import Path

import numpy as np
from event_timing import timed  # bench/, beside this script

from flashviz.algos import get
from flashviz.gpu.device import device_info, require_gpu
from flashviz.gpu.launch import prepare
from flashviz.gpu.sectors import model
from flashviz.model.config import Config

TOKENS = 16384  # batch x N, as in the FlashAttention papers' benchmarks
HEADS = 16  # hidden 1024 at D=64


def ceilings(cp) -> dict[str, float]:
    """fp32 FMA rate through cuBLAS SGEMM (TF32 off) and device copy bandwidth (read + write), measured now."""
    n = 8192
    rng = cp.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=cp.float32)
    b = rng.standard_normal((n, n), dtype=cp.float32)
    c = cp.empty_like(a)
    ms = statistics.median(timed(cp, lambda: cp.matmul(a, b, out=c), warmup=3))
    sgemm = 2 * n**3 / ms / 1e6  # GFLOP/s (ms: 1e-3 s, GFLOP: 1e9)
    x = cp.empty(2 * 1024**3, dtype=cp.uint8)
    y = cp.empty_like(x)
    rt = cp.cuda.runtime

    def copy():
        rt.memcpyAsync(y.data.ptr, x.data.ptr, x.nbytes, rt.memcpyDeviceToDevice, cp.cuda.get_current_stream().ptr)

    ms = statistics.median(timed(cp, copy, warmup=3))
    copy = 2 * x.nbytes / ms / 1e6  # GB/s
    return {"fp32_sgemm_gflops": sgemm, "copy_gbs": copy, "sgemm_n": n, "copy_bytes": 2 * 1024**3}


def reference_error(cp, q, k, v, o, scale: float) -> float:
    """max |o - ref| / max |ref| for one head, ref = float64 attention on the GPU."""
    q, k, v = (x.astype(cp.float64) for x in (q, k, v))
    s = (q @ k.T) * scale  # (N, N)
    s -= s.max(axis=1, keepdims=True)
    p = cp.exp(s, out=s)
    ref = (p @ v) / p.sum(axis=1, keepdims=True)
    return float(cp.abs(o.astype(cp.float64) - ref).max() / cp.abs(ref).max())


def bench_one(cp, n: int, d: int, br: int, bc: int, l2_bytes: int, threads: int | None = None) -> dict:
    batch = max(1, TOKENS // n)
    heads = batch * HEADS
    cfg = get("fa2").validated(Config(n=n, d=d, br=br, bc=bc, seed=0))
    launch = prepare(cfg, heads, threads)
    shape = (heads, n, d)
    set_bytes = 4 * heads * n * (4 * d + 1)  # Q, K, V, O and L
    sets = max(1, math.ceil(3 * l2_bytes / set_bytes))  # each launch starts with its inputs out of L2
    rng = cp.random.default_rng(n * 1000 + br)
    bufs = []
    for _ in range(sets):
        t = {name: rng.standard_normal(shape, dtype=cp.float32) for name in ("Q", "K", "V")}
        t["O"] = cp.full(shape, cp.nan, dtype=cp.float32)
        t["L"] = cp.full((heads, n), cp.nan, dtype=cp.float32)
        bufs.append(t)
    launch(bufs[0])
    cp.cuda.Device().synchronize()
    err = reference_error(cp, *(bufs[0][x][0] for x in ("Q", "K", "V", "O")), cfg.softmax_scale)
    unwritten = int(cp.isnan(bufs[0]["O"]).sum() + cp.isnan(bufs[0]["L"]).sum())
    turn = iter(range(10**9))
    times = timed(cp, lambda: launch(bufs[next(turn) % sets]), warmup=2)
    ms = statistics.median(times)
    flops = 4 * heads * n * n * d
    m = model(cfg, heads)
    model_bytes = m["load_bytes"] + m["store_bytes"]
    return {
        "kernel": launch.name,
        "n": n,
        "d": d,
        "br": br,
        "bc": bc,
        "batch": batch,
        "heads_per_batch": HEADS,
        "heads": heads,
        "block": launch.kernels[0].block[0],
        "smem_bytes": launch.kernels[0].smem_bytes,
        "input_sets": sets,
        "reps": len(times),
        "ms_median": ms,
        "ms_min": min(times),
        "ms_max": max(times),
        "gflops": flops / ms / 1e6,
        "model_bytes": model_bytes,
        "model_gbs": model_bytes / ms / 1e6,
        "unique_bytes": m["unique_input_bytes"] + m["unique_output_bytes"],
        "max_rel_err_head0": err,
        "unwritten": unwritten,
    }


def markdown(doc: dict) -> str:
    c = doc["ceilings"]
    lines = [
        "# fa2 kernel as written (fp32): GPU benchmark",
        "",
        f"{doc['date']}, {doc['device']['name']} ({doc['device']['multiprocessors']} SMs, "
        f"L2 {doc['device']['l2_bytes'] / 1e6:.0f} MB), CuPy {doc['device']['cupy']}, "
        f"CUDA runtime {doc['device']['runtime']}, driver {doc['device']['driver']}.",
        f"Command: `{doc['command']}`",
        "",
        f"Ceilings measured in the same run: fp32 SGEMM (cuBLAS, TF32 off) {c['fp32_sgemm_gflops'] / 1e3:.1f} "
        f"TFLOP/s; device copy {c['copy_gbs'] / 1e3:.2f} TB/s (read + write).",
        "Shapes: batch x N = 16k tokens, 16 heads, D = 64; FLOPs 4*B*H*N^2*D; model bytes = Q once, K and V once "
        "per block of Q, O and L once (flashviz.algos.fa2.traffic) x 4 B. Time: CUDA events, median after 2 warm-ups, "
        "input sets rotated so that no launch finds its inputs in L2.",
        "",
        "| N | Br=Bc | threads | B x H | ms (median) | GFLOP/s | % of SGEMM | model GB | GB/s (model) | % of copy "
        "| err vs f64 |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in doc["rows"]:
        lines.append(
            f"| {r['n']} | {r['br']} | {r['block']} | {r['batch']} x {r['heads_per_batch']} | {r['ms_median']:.2f} | "
            f"{r['gflops']:.0f} | {100 * r['gflops'] / c['fp32_sgemm_gflops']:.1f}% | {r['model_bytes'] / 1e9:.2f} | "
            f"{r['model_gbs']:.0f} | {100 * r['model_gbs'] / c['copy_gbs']:.1f}% | {r['max_rel_err_head0']:.1e} |"
        )
    lines += ["", *doc.get("notes", [])]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench/results", help="folder for gpu_bench.json and gpu_bench.md")
    ap.add_argument("--quick", action="store_true", help="N up to 4096 only")
    ap.add_argument("--n", type=int, nargs="*", default=None, help="sequence lengths (default 1k..16k)")
    ap.add_argument("--tiles", type=int, nargs="*", default=[32, 64], help="Br = Bc values")
    ap.add_argument(
        "--sweep",
        type=int,
        nargs="*",
        default=[32, 64, 256, 512],
        help="blockDim.x values tried at N=4096 besides the default",
    )
    args = ap.parse_args()
    cp = require_gpu()
    dev = device_info()
    ns = args.n or ([1024, 2048, 4096] if args.quick else [1024, 2048, 4096, 8192, 16384])
    doc = {
        "schema": "flashviz.gpu_bench/1",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python", *sys.argv]),
        "device": dev,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "ceilings": ceilings(cp),
        "rows": [],
    }
    cp.get_default_memory_pool().free_all_blocks()
    print(
        f"{dev['name']}: SGEMM {doc['ceilings']['fp32_sgemm_gflops']:.0f} GFLOP/s, copy "
        f"{doc['ceilings']['copy_gbs']:.0f} GB/s",
        flush=True,
    )
    for tile in args.tiles:
        for n in ns:
            r = bench_one(cp, n, 64, tile, tile, dev["l2_bytes"])
            cp.get_default_memory_pool().free_all_blocks()
            doc["rows"].append(r)
            print(
                f"N={n:6d} Br=Bc={tile:3d} B*H={r['heads']:4d}: {r['ms_median']:9.2f} ms {r['gflops']:8.0f} "
                f"GFLOP/s {r['model_gbs']:7.0f} GB/s err {r['max_rel_err_head0']:.1e}",
                flush=True,
            )
    for tile in args.tiles:  # blockDim is the launcher's choice, not the kernel's: how much does it matter?
        for threads in args.sweep:
            if threads < tile:
                continue
            r = bench_one(cp, 4096, 64, tile, tile, dev["l2_bytes"], threads)
            cp.get_default_memory_pool().free_all_blocks()
            doc["rows"].append(r)
            print(f"N=  4096 Br=Bc={tile:3d} threads={threads:4d}: {r['ms_median']:9.2f} ms {r['gflops']:8.0f} GFLOP/s")
    best = max(doc["rows"], key=lambda r: r["gflops"])
    doc["notes"] = [
        f"Best: {best['gflops']:.0f} GFLOP/s at N={best['n']}, Br=Bc={best['br']}, {best['block']} threads "
        f"({100 * best['gflops'] / doc['ceilings']['fp32_sgemm_gflops']:.1f}% of the measured fp32 rate). "
        "The kernel is the seed's teaching kernel: scalar fp32 FMAs on operands read from shared memory, one "
        "thread per row for the softmax and P @ V. It reaches neither ceiling: a few percent of the fp32 rate, "
        "and its model bytes move at a few percent of the copy bandwidth (most of its loads are served by L2, "
        "see the profiles). What binds it (shared-memory bandwidth, issue, or the serial per-row loops) is not "
        "measured here.",
    ]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_bench.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "gpu_bench.md").write_text(markdown(doc))
    print(markdown(doc))
    return 0 if all(r["max_rel_err_head0"] < 1e-5 and r["unwritten"] == 0 for r in doc["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
