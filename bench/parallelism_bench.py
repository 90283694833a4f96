"""Why FA2 is faster, measured: the teaching kernels' grids on the H200's SMs, and matmul vs non-matmul rates.

    PYTHONPATH=src python bench/parallelism_bench.py [--out bench/results/parallelism] [--ncu ncu]

Part 1, parallelism. algos/fa1/fa1_forward.cu launches one block per head (its blocks of Q take turns inside it);
algos/fa2/fa2_forward.cu launches Tr blocks per head. Both are timed (CUDA events, median after a warm-up, head 0
checked against float64 first) at long N with few heads and at short N with many heads, D=64, Br=Bc=64, and
each launch is profiled once by Nsight Compute for its grid, its occupancy and how busy the SMs were:
  launch__grid_size, launch__block_size, launch__registers_per_thread, launch__shared_mem_per_block_dynamic,
  launch__occupancy_limit_{shared_mem,registers,warps,blocks}  blocks per SM each resource allows,
  launch__waves_per_multiprocessor                            grid / (blocks per SM x 132 SMs),
  sm__maximum_warps_per_active_cycle_pct                      theoretical occupancy,
  sm__warps_active.avg.pct_of_peak_sustained_active           achieved occupancy (on the SMs while active),
  sm__cycles_active.avg / sm__cycles_elapsed.avg              SM utilisation: the share of the launch an SM works,
  sm__cycles_active.{min,max}                                 the least and most busy SM,
  gpu__time_duration.sum                                      the launch's duration under the profiler.

Part 2, the FA2 paper's argument (section 3.1: a GPU does matmul FLOPs many times faster than other FLOPs): bf16
matmul on tensor cores (torch, 8192^3, random inputs) against fp32 FMA on the CUDA cores (a kernel of independent
fmaf chains) and fp32 exp (expf in a chain, the special-function unit), each in FLOP/s (FMA = 2 FLOPs, exp = 1).

Writes <out>/<date>-<gpu>.json and .md.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import functools
import io
import json
import math
import shutil
import statistics
import subprocess
from pathlib import Path

import event_timing  # bench/, beside this script

from flashviz.algos import get
from flashviz.gpu.device import device_info, require_gpu
from flashviz.gpu.launch import launcher, prepare
from flashviz.model.config import Config

D, TILE = 64, 64
# (N, heads): long N with few heads, then short N with many heads
SHAPES = [(4096, 1), (4096, 4), (1024, 32), (512, 128)]
NCU_METRICS = [
    "gpu__time_duration.sum",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_dynamic",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__waves_per_multiprocessor",
    "sm__maximum_warps_per_active_cycle_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__cycles_active.avg",
    "sm__cycles_active.min",
    "sm__cycles_active.max",
    "sm__cycles_elapsed.avg",
]

FMA_SRC = r"""
extern "C" __global__ void fma_chains(float* out, float b, float c, int iters) {
    float a0 = threadIdx.x, a1 = a0 + 1.f, a2 = a0 + 2.f, a3 = a0 + 3.f, a4 = a0 + 4.f, a5 = a0 + 5.f, a6 = a0 + 6.f,
          a7 = a0 + 7.f;
    for (int k = 0; k < iters; ++k) {
        #pragma unroll
        for (int u = 0; u < 16; ++u) {
            a0 = fmaf(a0, b, c); a1 = fmaf(a1, b, c); a2 = fmaf(a2, b, c); a3 = fmaf(a3, b, c);
            a4 = fmaf(a4, b, c); a5 = fmaf(a5, b, c); a6 = fmaf(a6, b, c); a7 = fmaf(a7, b, c);
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
extern "C" __global__ void exp_chains(float* out, float b, int iters) {
    float a0 = threadIdx.x * 1e-3f, a1 = a0 + 1e-4f, a2 = a0 + 2e-4f, a3 = a0 + 3e-4f;
    for (int k = 0; k < iters; ++k) {
        #pragma unroll
        for (int u = 0; u < 16; ++u) {
            a0 = expf(a0 * b); a1 = expf(a1 * b); a2 = expf(a2 * b); a3 = expf(a3 * b);
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3;
}
"""


# this benchmark's repeats: fewer than gpu_bench's (its launches run up to half a second each)
timed = functools.partial(event_timing.timed, warmup=1, min_reps=3, max_reps=30)


def reference_error(cp, q, k, v, o, scale: float) -> float:
    """max |o - ref| / max |ref| for one head, ref = float64 attention on the GPU."""
    q, k, v = (x.astype(cp.float64) for x in (q, k, v))
    s = (q @ k.T) * scale  # (N, N)
    s -= s.max(axis=1, keepdims=True)
    p = cp.exp(s, out=s)
    ref = (p @ v) / p.sum(axis=1, keepdims=True)
    return float(cp.abs(o.astype(cp.float64) - ref).max() / cp.abs(ref).max())


def ncu_metrics(ncu: str, cfg: Config, heads: int) -> dict[str, float]:
    """One launch of cfg's kernel under ncu: metric -> value (units as ncu's base units)."""
    cmd = [
        ncu,
        "--clock-control",
        "none",
        "--kernel-name",
        f"regex:^{cfg.algo}",
        "--launch-count",
        "1",
        "--metrics",
        ",".join(NCU_METRICS),
        "--csv",
        "--print-units",
        "base",
        *launcher(cfg, heads),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith('"')]
    out: dict[str, float] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        try:
            out[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
    if not out:
        raise RuntimeError(f"ncu measured nothing (exit {proc.returncode}): {proc.stderr.strip()[-400:]}")
    return out


def parallelism(cp, ncu: str | None, sms: int) -> list[dict]:
    rows = []
    for n, heads in SHAPES:
        for algo in ("fa1", "fa2"):
            cfg = get(algo).validated(Config(algo=algo, n=n, d=D, br=TILE, bc=TILE, seed=0))
            launch = prepare(cfg, heads)
            rng = cp.random.default_rng(n + heads)
            t = {x: rng.standard_normal((heads, n, D), dtype=cp.float32) for x in ("Q", "K", "V")}
            for name, shape in launch.spec.shapes.items():
                if name not in t:
                    t[name] = cp.full((heads, *shape(cfg)), cp.nan, dtype=cp.float32)
            launch(t)
            cp.cuda.Device().synchronize()
            err = reference_error(cp, t["Q"][0], t["K"][0], t["V"][0], t["O"][0], cfg.softmax_scale)
            ms = statistics.median(timed(cp, lambda launch=launch, t=t: launch(t)))
            k = launch.kernels[0]
            row = {
                "algo": algo,
                "n": n,
                "d": D,
                "br": TILE,
                "bc": TILE,
                "heads": heads,
                "grid": list(k.grid),
                "blocks": k.grid[0] * k.grid[1] * k.grid[2],
                "threads": k.block[0],
                "smem_bytes": k.smem_bytes,
                "registers": int(k.fn.num_regs),
                "ms": ms,
                "tflops": 4 * heads * n * n * D / ms / 1e9,
                "max_rel_err_head0": err,
            }
            if ncu:
                m = ncu_metrics(ncu, cfg, heads)
                row["ncu"] = m
                if m.get("sm__cycles_elapsed.avg"):
                    row["sm_utilisation_pct"] = 100 * m["sm__cycles_active.avg"] / m["sm__cycles_elapsed.avg"]
                    row["sms_busy_at_peak"] = min(sms, row["blocks"])
            rows.append(row)
            print(f"{algo} N={n} H={heads}: grid {row['blocks']} blocks, {ms:.2f} ms, err {err:.1e}", flush=True)
            del t
    return rows


def rates(cp) -> dict[str, float]:
    import torch

    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    ms = statistics.median(timed(cp, lambda: torch.matmul(a, b), warmup=3, min_reps=10))
    bf16 = 2 * n**3 / ms / 1e9
    mod = cp.RawModule(code=FMA_SRC)
    fma, ex = mod.get_function("fma_chains"), mod.get_function("exp_chains")
    blocks, threads, iters = 132 * 16, 256, 4096
    out = cp.empty(blocks * threads, dtype=cp.float32)
    ms = statistics.median(
        timed(cp, lambda: fma((blocks,), (threads,), (out, cp.float32(0.999), cp.float32(1e-3), cp.int32(iters))))
    )
    fp32_fma = 2 * 8 * 16 * iters * blocks * threads / ms / 1e9
    ms = statistics.median(timed(cp, lambda: ex((blocks,), (threads,), (out, cp.float32(-0.5), cp.int32(iters // 4)))))
    fp32_exp = 4 * 16 * (iters // 4) * blocks * threads / ms / 1e9
    assert bool(cp.isfinite(out).all()), "the exp chains overflowed"
    return {
        "bf16_matmul_tflops": bf16,
        "fp32_fma_tflops": fp32_fma,
        "fp32_exp_tflops": fp32_exp,
        "matmul_over_fma": bf16 / fp32_fma,
        "matmul_over_exp": bf16 / fp32_exp,
    }


def markdown(doc: dict) -> str:
    r = doc["rates"]
    lines = [
        "# Why FA2 is faster: the teaching kernels on the H200's SMs",
        "",
        f"{doc['date']}, {doc['device']['name']} ({doc['device']['multiprocessors']} SMs). Command: `{doc['command']}`",
        "",
        "D=64, Br=Bc=64, fp32 (algos/fa1/fa1_forward.cu, algos/fa2/fa2_forward.cu through NVRTC). Time: CUDA events, "
        "median after a warm-up. Occupancy and SM utilisation: Nsight Compute, one launch each "
        "(`--clock-control none`); SM utilisation = sm__cycles_active.avg / sm__cycles_elapsed.avg.",
        "",
        "| algo | N | heads | grid (blocks) | waves | ms | TFLOP/s | theoretical occ. | achieved occ. | SM utilisation "
        "| least busy SM |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in doc["rows"]:
        m = x.get("ncu", {})
        least = (
            m.get("sm__cycles_active.min", 0) / m["sm__cycles_elapsed.avg"] if m.get("sm__cycles_elapsed.avg") else 0
        )
        lines.append(
            f"| {x['algo']} | {x['n']} | {x['heads']} | {x['blocks']} "
            f"| {m.get('launch__waves_per_multiprocessor', 0):.2f} "
            f"| {x['ms']:.2f} | {x['tflops']:.3f} | {m.get('sm__maximum_warps_per_active_cycle_pct', 0):.0f}% "
            f"| {m.get('sm__warps_active.avg.pct_of_peak_sustained_active', 0):.1f}% "
            f"| {x.get('sm_utilisation_pct', 0):.1f}% | {100 * least:.1f}% |"
        )
    lines += [
        "",
        f"Rates in the same run: bf16 matmul on tensor cores {r['bf16_matmul_tflops']:.0f} TFLOP/s; fp32 FMA on the "
        f"CUDA cores {r['fp32_fma_tflops']:.1f} TFLOP/s ({r['matmul_over_fma']:.1f}x slower); "
        f"fp32 expf (the accurate one, not __expf) "
        f"{r['fp32_exp_tflops']:.2f} TFLOP/s ({r['matmul_over_exp']:.0f}x slower).",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench/results/parallelism")
    ap.add_argument("--ncu", default="ncu", help="Nsight Compute; '' to skip the profiles")
    args = ap.parse_args()
    cp = require_gpu()
    dev = device_info()
    ncu = shutil.which(args.ncu) if args.ncu else None
    doc = {
        "schema": "flashviz.parallelism_bench/1",
        "date": dt.date.today().isoformat(),
        "device": dev,
        "command": "PYTHONPATH=src python bench/parallelism_bench.py",
        "ncu_metrics": NCU_METRICS,
        "rows": parallelism(cp, ncu, dev["multiprocessors"]),
        "rates": rates(cp),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{doc['date']}-{dev['name'].lower().replace(' ', '-')}"
    (out / f"{stem}.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / f"{stem}.md").write_text(markdown(doc))
    print(markdown(doc))
    return 0 if all(math.isfinite(x["max_rel_err_head0"]) and x["max_rel_err_head0"] < 1e-4 for x in doc["rows"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
