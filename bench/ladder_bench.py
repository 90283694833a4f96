"""The ladder: one attention shape from the seed's fp32 kernel to tensor cores, every rung measured in one GPU run.

    PYTHONPATH=src python3 bench/ladder_bench.py --out "$OUT" --budget-s 200 [--quick]  # on the GPU machine
    PYTHONPATH=src python bench/ladder_bench.py --install FILE.json   # here: record a run (bench/results + package)
    PYTHONPATH=src python bench/ladder_compile_check.py               # no GPU: every config compiled for sm_90
    TRITON_INTERPRET=1 PYTHONPATH=src python bench/ladder_bench.py --smoke --out DIR    # no GPU: the plumbing

Shape: D=64, N=4096, B=4, H=32, non-causal: the FlashAttention papers' 16k tokens at hidden 2048 (D=64 x 32
heads), and a row of the attention benchmark's table (bench/results/attention), so the top rungs can be read
against it. D=64 rather than 128 and N=4096 rather than 16384 keep the seed's rung near a third of a second
per launch (5.5e11 FLOPs at its ~1.6 TFLOP/s) while every tensor is still larger than the 60 MB L2.

The rungs, bottom to top; each changes one thing from the rung below where it can, so that its sentence is a
measurement, not a guess:
 1. seed         algos/fa2/fa2_forward.cu through NVRTC, fp32, as the seed has it: Br=Bc=32, 128 threads;
 2. seed-best    the same kernel at the fastest of several (Br, Bc, threads), each measured;
 3. triton-fp32-ieee  algos/fa2_triton/kernel.py's fa2_fwd on fp32 Q, K, V with tl.dot(input_precision="ieee"):
                 still the CUDA cores; the fastest of a few tiles, one stage (no software pipelining);
 4. triton-fp32-tf32  the same tiles, only input_precision="tf32": the matmuls move to the tensor cores;
 5. triton-bf16  the same tiles in bf16 (half the bytes, bf16 tensor-core products);
 6. triton-bf16-tiles  the autotuner's tiles and warps for this shape, still one stage;
 7. triton-bf16-tuned  the autotuner's config as flashviz.attention launches it (its stages: pipelining);
 8-11. fa3-ws, fa3-pingpong, fa3-overlap, fa3-persistent  algos/fa3/kernel.py (Gluon): FlashAttention-3's
                 ablation, each adding one idea: a producer warp and two consumer warpgroups (warp specialization),
                 the consumers taking turns on the tensor cores, Sij of the next tile under this one's softmax,
                 persistent programs;
 12. sdpa-flash, 13. sdpa-cudnn  PyTorch's FlashAttention-2 and cuDNN backends, the ceiling.
They run in another order (the seed, PyTorch's backends, Triton's bf16, then the new fp32 path last, so that a
fault in it cannot cost the others) and are written in this one. Every rung is checked against float64 attention
of the inputs it was given (fp32, or their bf16 rounding) before it is timed, its output memory poisoned with NaN
first; a rung that fails records no time.
Time: triton.testing.do_bench median (L2 flushed before each launch) after a warm-up; launches over 25 ms by
CUDA events, a few, L2 flushed before each. TFLOP/s = 4*B*H*N^2*D / time. Peaks in the same run: bf16 and tf32
8192^3 matmuls and an fp32 one with TF32 off (torch), fp32 FMA chains on the CUDA cores (CuPy).
HBM bytes: the traffic model of flashviz.algos.fa2 at the rung's tiles (Q once, K and V once per block of Q,
O and L once) times the element size (L is fp32 throughout). SRAM per block: the seed's launch spec, Triton's
compiled kernel (metadata.shared).

Writes <out>/<date>-<gpu>.json (schema flashviz.ladder/1, docs/ladder-schema.md) and <date>-<gpu>.md (the
table, the sentences, the candidates) after every rung; prints the short table last. --quick: fewer candidates
and shorter timing (same shape).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import multiprocessing
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

import torch  # noqa: E402

from flashviz.algos.fa2 import traffic  # noqa: E402
from flashviz.algos.fa2_triton import launcher as ta  # noqa: E402
from flashviz.algos.fa2_triton.launch_tiles import FWD_TILES, INTERPRET_TILES  # noqa: E402
from flashviz.algos.fa2_triton.tiles import padded  # noqa: E402
from flashviz.model.units import human_bytes, kib  # noqa: E402
from flashviz.ops.fa2 import _forward_fp32  # noqa: E402
from flashviz.reports.ladder_table import render  # noqa: E402

try:
    from flashviz.hardware.ladder_schema import SCHEMA, check
except ImportError:  # no pydantic (the GPU machine's image has none): --install checks the file here
    SCHEMA, check = "flashviz.ladder/1", None
from flashviz.algos.fa2_triton.launch_tiles import Tiles  # noqa: E402

T0 = time.time()
SHAPE = {"batch": 4, "heads": 32, "n": 4096, "d": 64}
SMOKE_SHAPE = {"batch": 1, "heads": 2, "n": 128, "d": 64}
# the seed's kernel: (Br, Bc, threads); the first is the seed as written (the anchors' run: Br=Bc=32, 128 threads)
SEED_TILES = [(32, 32, 128), (64, 64, 128), (64, 64, 256), (16, 16, 128), (32, 64, 128), (64, 32, 128),
              (128, 64, 128), (128, 128, 128)]  # fmt: skip
SEED_TILES_QUICK = SEED_TILES[:3]
# Triton fp32 with ieee dots: one stage each. Compiled for sm_90 without a GPU (bench/ladder_compile_check.py): only
# 32x16 x 4 warps keeps Triton's FMA matmuls out of local memory (216 registers); the others spill 376-424 B/thread.
IEEE_TILES = [Tiles(32, 16, 4, 1), Tiles(32, 32, 4, 1), Tiles(64, 32, 8, 1), Tiles(64, 64, 8, 1)]
IEEE_TILES_QUICK = IEEE_TILES[:1] + IEEE_TILES[2:3]
# max |out - ref| / max |ref| against float64 that a rung must meet before it is timed (METHOD.md's ranges)
LIMITS = {"fp32": 1e-4, "tf32": 1e-2, "bf16": 2e-2}
SLOW_MS = 25.0  # launches slower than this are timed by a few CUDA-event pairs instead of do_bench
DEVICE = "cuda"


def log(msg: str) -> None:
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


def one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:200]}" if text else type(e).__name__


class CheckFailed(RuntimeError):
    pass


class OutOfBudget(RuntimeError):
    pass


# ----------------------------------------------------------------------------------------------------------
# Models: FLOPs, bytes
# ----------------------------------------------------------------------------------------------------------
def flops(s: dict) -> float:
    return 4.0 * s["batch"] * s["heads"] * s["n"] ** 2 * s["d"]


def hbm_bytes(s: dict, br: int, bc: int, element_bytes: int) -> int:
    """flashviz.algos.fa2's traffic model for every head: Q once, K and V once per block of Q, O and L once;
    Q, K, V, O at element_bytes each, L at 4 (fp32 in every kernel here)."""
    c = traffic.count(s["n"], s["d"], br, bc)
    per_head = sum(c[t]["read"] + c[t]["written"] for t in ("Q", "K", "V", "O")) * element_bytes
    per_head += (c["L"]["read"] + c["L"]["written"]) * 4
    return s["batch"] * s["heads"] * per_head


# ----------------------------------------------------------------------------------------------------------
# Timing and checking
# ----------------------------------------------------------------------------------------------------------
_FLUSH: list = []


def flush_l2() -> None:
    if not _FLUSH:
        _FLUSH.append(torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda"))
    _FLUSH[0].zero_()


def event_ms(fn, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        flush_l2()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end))
    return out


def time_ms(fn, quick: bool, beaten_at: float | None = None) -> tuple[float, str]:
    """Median milliseconds of fn() (already warmed up by its check), and how they were taken. A slow candidate
    that one launch shows to be 1.5x slower than beaten_at (the best candidate so far) is not repeated."""
    if DEVICE != "cuda":
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3, "one call, wall clock (CPU interpreter: meaningless as speed)"
    first = event_ms(fn, 1)
    if first[0] > SLOW_MS and beaten_at is not None and first[0] > 1.5 * beaten_at:
        return first[0], "one CUDA-event pair (over 1.5x the best candidate's time: not repeated)"
    if first[0] > SLOW_MS:
        reps = 2 if quick else 3
        return statistics.median(first + event_ms(fn, reps - 1)), f"median of {reps} CUDA-event pairs"
    from triton.testing import do_bench

    return do_bench(fn, warmup=25, rep=40 if quick else 100, return_mode="median"), "do_bench median"


def poison(*tensors) -> None:
    """NaN into memory the next allocations of these sizes will likely get (the caching allocator hands a freed
    block to the next request of its size): an output element a kernel leaves unwritten then stays NaN."""
    if DEVICE != "cuda":
        return
    blocks = [torch.full_like(t, float("nan")) for t in tensors]
    del blocks


def max_rel_err(out, ref) -> float:
    if not bool(torch.isfinite(out).all()):
        return math.inf
    err = 0.0
    for b in range(out.shape[0]):
        err = max(err, (out[b].double() - ref[b]).abs().max().item())
    return err / ref.abs().max().item()


def reference(q, k, v, scale: float):
    """float64 attention of (B, H, N, D) inputs, a few heads at a time."""
    out = torch.empty(q.shape, dtype=torch.float64, device=q.device)
    step = 8
    for b in range(q.shape[0]):
        for h in range(0, q.shape[1], step):
            qq, kk, vv = (t[b, h : h + step].double() for t in (q, k, v))
            p = torch.softmax((qq @ kk.transpose(-1, -2)) * scale, dim=-1)
            out[b, h : h + step] = p @ vv
            del p
    return out


# ----------------------------------------------------------------------------------------------------------
# Peaks, in the same run
# ----------------------------------------------------------------------------------------------------------
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
"""  # bench/parallelism_bench.py's FMA chains: 8 independent fmaf chains per thread, 16 SM-fuls of blocks


def matmul_tflops(dtype, precision: str, rep: int) -> float:
    """A random 8192^3 matmul through torch (cuBLAS) at this float32 matmul precision, do_bench median."""
    from triton.testing import do_bench

    n = 8192
    x, y = (torch.randn(n, n, device="cuda", dtype=dtype) for _ in range(2))
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)  # "high": TF32 on the tensor cores; "highest": TF32 off
    try:
        return 2 * n**3 / do_bench(lambda: x @ y, warmup=50, rep=rep, return_mode="median") / 1e9
    finally:
        torch.set_float32_matmul_precision(before)


def peaks(quick: bool) -> dict:
    rep = 100 if quick else 300
    out = {
        "bf16_matmul": {
            "tflops": matmul_tflops(torch.bfloat16, "highest", rep),
            "what": "torch bf16 8192^3 matmul, random inputs (cuBLAS)",
        },
        "tf32_matmul": {
            "tflops": matmul_tflops(torch.float32, "high", rep),
            "what": "torch fp32 8192^3 matmul with TF32 on (cuBLAS, tensor cores)",
        },
        "fp32_sgemm": {
            "tflops": matmul_tflops(torch.float32, "highest", rep),
            "what": "torch fp32 8192^3 matmul with TF32 off (SGEMM, CUDA cores)",
        },
    }
    try:
        from flashviz.gpu.device import require_gpu

        cp = require_gpu()
        fma = cp.RawModule(code=FMA_SRC).get_function("fma_chains")
        blocks, threads, iters = 132 * 16, 256, 4096
        buf = cp.empty(blocks * threads, dtype=cp.float32)
        args = (buf, cp.float32(0.999), cp.float32(1e-3), cp.int32(iters))
        ms = statistics.median(event_ms(lambda: fma((blocks,), (threads,), args), 7))
        out["fp32_ffma"] = {
            "tflops": 2 * 8 * 16 * iters * blocks * threads / ms / 1e9,
            "what": "fp32 FMA chains on the CUDA cores (CuPy kernel, FMA = 2 FLOPs): the scalar fp32 ceiling",
        }
    except Exception as e:
        log(f"fp32 FMA peak not measured ({one_line(e)}); scalar rungs are compared with SGEMM")
    return out


# ----------------------------------------------------------------------------------------------------------
# The rungs
# ----------------------------------------------------------------------------------------------------------
@dataclass
class Inputs:
    q32: torch.Tensor
    k32: torch.Tensor
    v32: torch.Tensor
    q16: torch.Tensor
    k16: torch.Tensor
    v16: torch.Tensor
    ref32: torch.Tensor
    ref16: torch.Tensor
    scale: float


def tiles_dict(t: Tiles) -> dict:
    return {"br": t.Br, "bc": t.Bc, "warps": t.num_warps, "stages": t.num_stages}


def mma_of(ptx: str) -> str:
    if "wgmma.mma_async" in ptx:
        return "wgmma"
    if re.search(r"\bmma\.sync", ptx):
        return "mma.sync"
    return "none"


def compiled_facts(name: str = "fwd") -> dict:
    """The last fa2_fwd launch's compiled kernel: shared memory, registers, spills, matrix instructions."""
    ck = ta.launcher().compiled.get(name)
    if ck is None:  # the interpreter compiles nothing
        return {"sram_bytes_per_block": None, "registers": None, "spill_bytes": None, "mma": None}
    md = ck.metadata
    return {
        "sram_bytes_per_block": int(md.shared),
        "registers": int(ck.n_regs),
        "spill_bytes": int(ck.n_spills) * 4,
        "mma": mma_of(ck.asm["ptx"]) if "ptx" in ck.asm else None,  # None: not seen, so not claimed
        "tiles_seen": {"warps": int(md.num_warps), "stages": int(md.num_stages)},
    }


def checked(fn, outputs, ref, limit: float) -> float:
    """Run fn once (outputs poisoned first), return its error against ref; CheckFailed above limit."""
    poison(*outputs)
    out = fn()
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    err = max_rel_err(out, ref)
    if not err <= limit:
        raise CheckFailed(f"max rel err {err:.3g} against float64, limit {limit:g} (NaN/inf: unwritten or overflow)")
    return err


def triton_rung(
    x: Inputs, dtype: str, tiles: Tiles | None, precision: str | None, quick: bool, beaten_at: float | None = None
) -> dict:
    """fa2_fwd at fixed tiles (None: the autotuner's choice, as flashviz.attention launches it)."""
    run = ta.launcher()
    failed = PRECHECK.get((torch.float32 if dtype == "fp32" else torch.bfloat16, tiles, precision))
    if failed:
        raise CheckFailed(f"not launched: in the compile step at N=256 it failed: {failed}")
    if dtype == "fp32":
        assert precision is not None

        def fn():
            return _forward_fp32(x.q32, x.k32, x.v32, tiles, precision, scale=x.scale)[0]

        ref, q = x.ref32, x.q32
        limit = LIMITS["fp32" if precision == "ieee" else "tf32"]
    else:

        def fn():
            return run.forward(x.q16, x.k16, x.v16, False, x.scale, tiles=tiles)[0]

        ref, q = x.ref16, x.q16
        limit = LIMITS["bf16"]
    err = checked(fn, [q], ref, limit)
    facts = compiled_facts()
    ms, how = time_ms(fn, quick, beaten_at)
    return {"ms": ms, "max_rel_err": err, "timing": how, **facts}


def seed_rung(x: Inputs, s: dict, br: int, bc: int, threads: int, quick: bool, beaten_at: float | None = None) -> dict:
    """algos/fa2/fa2_forward.cu through NVRTC (flashviz.gpu.launch.prepare), on every head at once."""
    from flashviz.gpu.device import require_gpu
    from flashviz.gpu.launch import prepare
    from flashviz.model.config import Config

    cp = require_gpu()
    heads = s["batch"] * s["heads"]
    n, d = s["n"], s["d"]
    launch = prepare(Config(algo="fa2", n=n, d=d, br=br, bc=bc, seed=0), heads, threads)  # prepare validates
    o = torch.empty_like(x.q32)
    lse = torch.empty(x.q32.shape[:-1], dtype=torch.float32, device=x.q32.device)
    arrays = {
        "Q": cp.from_dlpack(x.q32.view(heads, n, d)),
        "K": cp.from_dlpack(x.k32.view(heads, n, d)),
        "V": cp.from_dlpack(x.v32.view(heads, n, d)),
        "O": cp.from_dlpack(o.view(heads, n, d)),
        "L": cp.from_dlpack(lse.view(heads, n)),
    }

    def fn():
        launch(arrays)
        return o

    o.fill_(float("nan"))  # poisoned: an element the kernel does not write stays NaN
    lse.fill_(float("nan"))
    err = checked(fn, [], x.ref32, LIMITS["fp32"])
    if not bool(torch.isfinite(lse).all()):
        raise CheckFailed("L has NaN or inf: unwritten rows")
    ms, how = time_ms(fn, quick, beaten_at)
    k = launch.kernels[0]
    return {
        "ms": ms,
        "max_rel_err": err,
        "timing": how,
        "sram_bytes_per_block": int(k.smem_bytes),
        "registers": int(k.fn.num_regs),
        "spill_bytes": int(k.fn.local_size_bytes),
        "mma": "none",  # fa2_forward.cu is scalar C++: no matrix instructions
    }


def fa3_rung(x: Inputs, rung: str, quick: bool) -> tuple[dict, dict]:
    """algos/fa3/kernel.py's forward at one rung of its ablation, on the bf16 inputs; (tiles, measurement)."""
    from flashviz.algos.fa3 import launcher as fa3

    cfg = fa3.ablation_config(x.q16.shape[-1], rung)

    def fn():
        return fa3.forward(x.q16, x.k16, x.v16, False, x.scale, cfg)[0]

    err = checked(fn, [x.q16], x.ref16, LIMITS["bf16"])
    ck = fa3.compile_sm90("fwd", x.q16.shape[-1], False, config=cfg)
    facts = {
        "sram_bytes_per_block": int(ck.metadata.shared),
        "registers": 240,  # each consumer thread's, set by setmaxnreg (the kernel's cap at entry: MAXNREG)
        "spill_bytes": int(ck.n_spills) * 4 if getattr(ck, "n_spills", None) is not None else None,
        "mma": mma_of(ck.asm["ptx"]),
    }
    ms, how = time_ms(fn, quick)
    tiles = {"br": fa3.BR, "bc": cfg.Bc, "warps": 9, "stages": cfg.stages}  # 2 warpgroups + the producer warp
    return tiles, {"ms": ms, "max_rel_err": err, "timing": how, **facts}


def sdpa_rung(x: Inputs, backend: str, quick: bool) -> dict:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    which = getattr(SDPBackend, backend)

    def fn():
        with sdpa_kernel(which):
            return F.scaled_dot_product_attention(x.q16, x.k16, x.v16, scale=x.scale)

    err = checked(fn, [x.q16], x.ref16, LIMITS["bf16"])
    ms, how = time_ms(fn, quick)
    return {"ms": ms, "max_rel_err": err, "timing": how, "sram_bytes_per_block": None, "mma": None}


# ----------------------------------------------------------------------------------------------------------
# What changed: one sentence per rung, from the numbers
# ----------------------------------------------------------------------------------------------------------
def change(below: dict | None, r: dict) -> str:
    """How r's time compares with the rung it is set against, in words and numbers."""
    if below is None:
        return ""
    f = below["ms"] / r["ms"]
    was = f"{below['ms']:.4g} → {r['ms']:.4g} ms"
    if f >= 1.05:
        return f"{f:.1f}× faster than {below['label']} ({was})"
    if f <= 1 / 1.05:
        return f"{1 / f:.1f}× slower than {below['label']} ({was})"
    return f"within 5% of {below['label']} ({was})"


def tiles_text(t: dict | None) -> str:
    if not t:
        return "?"
    return f"{t['br']}×{t['bc']}, {t['warps']} warps, {t['stages']} stage{'s' if t['stages'] > 1 else ''}"


def _spills(r: dict) -> str:
    b = r.get("spill_bytes")
    if b is None:
        return ""
    return f", {b} bytes of register spills per thread" if b else ", no register spills"


def _mma(r: dict) -> str:
    return {
        None: "",
        "none": "; no matrix instructions in its compiled code",
        "mma.sync": "; mma.sync in its compiled code",
        "wgmma": "; wgmma in its compiled code",
    }[r.get("mma")]


PEAK_WORDS = {
    "fp32_ffma": "the CUDA cores' fp32 FMA rate",
    "fp32_sgemm": "SGEMM's rate (TF32 off)",
    "tf32_matmul": "cuBLAS's tf32 matmul",
    "bf16_matmul": "cuBLAS's bf16 matmul",
}
FA3_RUNGS = {  # rung name -> fa3_launcher.ABLATION's rung
    "fa3-ws": "warp specialization",
    "fa3-pingpong": "+ ping-pong",
    "fa3-overlap": "+ intra-warpgroup overlap",
    "fa3-persistent": "+ persistent",
}
# bottom to top, whatever order they ran in
ORDER = ["seed", "seed-best", "triton-fp32-ieee", "triton-fp32-tf32", "triton-bf16", "triton-bf16-tiles",
         "triton-bf16-tuned", *FA3_RUNGS, "sdpa-flash", "sdpa-cudnn"]  # fmt: skip
# the rung each is set against, in order of preference (a rung that was not measured is passed over)
AGAINST = {
    "seed-best": ("seed",),
    "triton-fp32-ieee": ("seed-best", "seed"),
    "triton-fp32-tf32": ("triton-fp32-ieee",),
    "triton-bf16": ("triton-fp32-tf32",),
    "triton-bf16-tiles": ("triton-bf16",),
    "triton-bf16-tuned": ("triton-bf16-tiles", "triton-bf16"),
    "fa3-ws": ("triton-bf16-tuned",),
    "fa3-pingpong": ("fa3-ws",),
    "fa3-overlap": ("fa3-pingpong", "fa3-ws"),
    "fa3-persistent": ("fa3-overlap",),
    "sdpa-flash": ("triton-bf16-tuned",),
    "sdpa-cudnn": ("sdpa-flash", "triton-bf16-tuned"),
}


def _same_tiles(a: dict | None, b: dict | None, stages: bool = True) -> bool:
    if not a or not b or not a.get("tiles") or not b.get("tiles"):
        return False
    keys = ("br", "bc", "warps", "stages") if stages else ("br", "bc", "warps")
    return all(a["tiles"][k] == b["tiles"][k] for k in keys)


def explain(rungs: list[dict], peaks_: dict) -> None:
    """Fill each rung's what_changed: what differs from the rung it is set against (AGAINST) and what that bought,
    each claim backed by a number recorded beside it (tiles, mma, spills, bytes, peaks, times)."""
    by = {r["name"]: r for r in rungs}
    for r in rungs:
        want = AGAINST.get(r["name"], ())
        below = next((by[n] for n in want if n in by), None)
        r["what_changed"] = _sentence(r, below, peaks_, by)
        if want and below is None:
            r["what_changed"] += f" (Not compared: {' or '.join(want)} was not measured.)"


def _sentence(r: dict, below: dict | None, peaks_: dict, by: dict) -> str:
    name, t = r["name"], r["tiles"]
    ch = change(below, r)
    tail = f": {ch}." if ch else "."
    cands = r.get("candidates") or []
    measured = sum(1 for c in cands if c["ms"] is not None)
    if name == "seed":
        fastest = min((c for c in cands if c["ms"]), key=lambda c: c["ms"], default=None)
        best = ""
        if fastest is not None and fastest["tiles"] == t:
            best = f" Its own tile was the fastest of the {measured} measured, so no seed-best rung follows."
        return (
            f"The start: the seed's CUDA kernel as written, fp32 and scalar ({t['br']}×{t['bc']} tiles, "
            f"{32 * t['warps']} threads; one thread per row of Qi does the softmax and P·V{_mma(r)}), every product "
            f"on the CUDA cores: {100 * r['share_of_peak']:.1f}% of {PEAK_WORDS.get(r['peak'], r['peak'])}.{best}"
        )
    if name == "seed-best":  # the candidates tried are recorded on the seed rung
        measured = sum(1 for c in by.get("seed", {}).get("candidates") or [] if c["ms"] is not None)
        return (
            f"Same kernel; only the tile and block size changed, to {t['br']}×{t['bc']} and {32 * t['warps']} "
            f"threads, the fastest of {measured} measured{tail}"
        )
    if name == "triton-fp32-ieee":
        return (
            f'Another kernel for the same algorithm, still fp32 on the CUDA cores (tl.dot with input_precision="ieee"'
            f"{_mma(r)}): Triton's FA2, with Qi and Oi in registers, K/V tiles by TMA and exp2 with the scale folded "
            f"in, at {tiles_text(t)} (the fastest of {measured} measured){_spills(r)}{tail} Several things change "
            "at once here; this table does not separate them."
        )
    if name == "triton-fp32-tf32":
        if not _same_tiles(r, below):
            return f"Triton's kernel in fp32 with tf32 dots at {tiles_text(t)}{_mma(r)}{tail}"
        moved = {
            "wgmma": "the matmuls run on the tensor cores (wgmma in the compiled code) on fp32 data",
            "mma.sync": "the matmuls run on the tensor cores (mma.sync in the compiled code) on fp32 data",
            "none": "yet the compiled code has no matrix instructions",
            None: "the matmuls go to the tensor cores",
        }[r.get("mma")]
        gone = ""
        if below and below.get("spill_bytes") and r.get("spill_bytes") == 0:
            gone = f", and the ieee build's {below['spill_bytes']} bytes of spills per thread are gone too"
        return f"Same kernel and tiles; only tl.dot's input_precision changed, ieee → tf32: {moved}{gone}{tail}"
    if name == "triton-bf16":
        rate = ""
        if "bf16_matmul" in peaks_ and "tf32_matmul" in peaks_:
            x = peaks_["bf16_matmul"]["tflops"] / peaks_["tf32_matmul"]["tflops"]
            rate = f" (cuBLAS in this run: bf16 at {x:.1f}× tf32's rate)"
        same = "Same kernel and tiles; " if _same_tiles(r, below) else f"At {tiles_text(t)}: "
        bytes_ = ""
        if below and r["hbm_bytes"] is not None and below["hbm_bytes"]:
            bytes_ = f"{_gb(r['hbm_bytes'])} of modeled traffic against {_gb(below['hbm_bytes'])}, "
        where = {
            "wgmma": " on the tensor cores (wgmma)",
            "mma.sync": " on the tensor cores (mma.sync)",
            "none": " (yet no matrix instructions in the compiled code)",
            None: "",
        }[r.get("mma")]
        return (
            f"{same}Q, K, V and O in bf16 instead of fp32: {bytes_}bf16 products{where}{rate}, "
            f"P rounded to bf16 before P·V{tail}"
        )
    if name == "triton-bf16-tiles":
        fewer = ""
        if below and below.get("tiles") and r["hbm_bytes"] and below["hbm_bytes"] > r["hbm_bytes"]:
            fewer = (
                f"; {below['hbm_bytes'] / r['hbm_bytes']:.1f}× fewer modeled bytes, as each head's K and V are "
                f"read once per block of {t['br']} rows of Q instead of {below['tiles']['br']}"
            )
        return (
            f"Same kernel, bf16 and one stage; the tiles and warps the autotuner picks for this shape, "
            f"{t['br']}×{t['bc']} with {t['warps']} warps (was {_tiles_of(below)}){fewer}{tail}"
        )
    if name == "triton-bf16-tuned":
        if below is not None and below["name"] == "triton-bf16-tiles" and _same_tiles(r, below, stages=False):
            return (
                f"Same kernel and tiles; only num_stages changed, 1 → {t['stages']}: Triton's software pipeline "
                f"keeps the next K/V tiles loading (TMA) while the tensor cores work on this one. This is the "
                f"autotuner's pick ({tiles_text(t)}{f', the fastest of its {len(cands)}' if cands else ''}), as "
                f"flashviz.attention launches it{tail}"
            )
        return f"The autotuner's pick, {tiles_text(t)}, as flashviz.attention launches it{tail}"
    if name in FA3_RUNGS:
        return _fa3_sentence(name, r, tail)
    if name == "sdpa-flash":
        return (
            "PyTorch's FLASH_ATTENTION backend: Tri Dao's FlashAttention-2 CUDA kernels, written for Ampere's "
            "mma.sync, without Hopper's wgmma or TMA (the FlashAttention-3 paper, introduction); its tiles are not "
            f"reported{tail}"
        )
    if name == "sdpa-cudnn":
        tr = by.get("triton-bf16-tuned")
        vs = f" The Triton kernel runs at {r['ms'] / tr['ms']:.2f}× its speed." if tr else ""
        return (
            "PyTorch's CUDNN_ATTENTION backend: NVIDIA's cuDNN fused attention, closed source, so what it does "
            f"inside (its tiles, its use of wgmma and TMA) is not visible here{tail}{vs}"
        )
    return r.get("what_changed") or r["label"]


def _fa3_sentence(name: str, r: dict, tail: str) -> str:
    t = r.get("tiles") or {}
    if name == "fa3-ws":
        return (
            "Another kernel: FlashAttention-3 in Gluon (algos/fa3/kernel.py), warp-specialized: a producer warp "
            f"loads Qi and a ring of {t.get('stages', '?')} Kj, Vj buffers by TMA (mbarriers say when a buffer is "
            "full or free), two consumer warpgroups own 64 rows of Qi each, with 24 and 240 registers per thread "
            f"(setmaxnreg); {t.get('br', '?')}×{t.get('bc', '?')} tiles, one block after another{_mma(r)}{tail}"
        )
    if name == "fa3-pingpong":
        return (
            "Same kernel; the two consumers now take turns issuing their products (a pair of mbarriers passes the "
            f"turn), so that one's exp2 and row sums run while the other's products are on the tensor cores{tail}"
        )
    if name == "fa3-overlap":
        return (
            "Same kernel; within a warpgroup, Sij of tile j+1 is issued together with P·V of tile j, and the "
            f"softmax of tile j+1 runs while P·V is still on the tensor cores{tail}"
        )
    return (
        "Same kernel; as many programs as SMs, each looping over blocks in a fixed order, the next block's loads "
        f"overlapping this one's epilogue{tail}"
    )


def _gb(b: int | None) -> str:  # bytes moved: decimal units, as units.py writes them everywhere
    return "?" if b is None else human_bytes(b)


def _kib(b: int | None) -> str:  # shared memory: KiB, as units.py writes it everywhere
    return "–" if b is None else kib(b)


def _tiles_of(r: dict | None) -> str:
    t = r and r.get("tiles")
    return f"{t['br']}×{t['bc']} with {t['warps']} warps" if t else "?"


# ----------------------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------------------
class Run:
    """The document being measured, written after every rung."""

    def __init__(self, args, shape: dict, gpu: str, versions: dict):
        self.args = args
        suffix = "" if args.mode == "full" else "-" + args.mode
        self.path = Path(args.out) / f"{dt.date.today().isoformat()}-{slug(gpu)}{suffix}.json"
        self.doc = {
            "schema": SCHEMA,
            "date": dt.date.today().isoformat(),
            "gpu": gpu,
            "mode": args.mode,
            "complete": False,
            "command": " ".join(["PYTHONPATH=src python bench/ladder_bench.py", *flags(sys.argv[1:])]),
            "versions": versions,
            "shape": {**shape, "causal": False, "tokens": shape["batch"] * shape["n"], "flops": flops(shape)},
            "timing": (
                "triton.testing.do_bench median after warm-up (L2 flushed before each launch); launches over "
                f"{SLOW_MS:g} ms: median of a few CUDA-event pairs, L2 flushed before each"
            ),
            "check": (
                "before timing, every rung's O against float64 attention of its own inputs (fp32, or their bf16 "
                "rounding), outputs poisoned with NaN: max |O - ref| / max |ref| must be <= "
                + ", ".join(f"{v:g} ({k})" for k, v in LIMITS.items())
            ),
            "peaks": {},
            "rungs": [],
            "skipped": [],
        }

    def add(self, rung: dict) -> None:
        peak = self.doc["peaks"][rung["peak"]]["tflops"]
        rung["tflops"] = sig(self.doc["shape"]["flops"] / rung["ms"] / 1e9)
        rung["share_of_peak"] = sig(rung["tflops"] / peak)
        rung["ms"] = sig(rung["ms"])
        rung["what_changed"] = "?"
        self.doc["rungs"].append(rung)
        try:
            self.write()
        except Exception:
            self.doc["rungs"] = [r for r in self.doc["rungs"] if r is not rung]  # the file keeps its last good state
            raise

    def skip(self, name: str, why: str) -> None:
        self.doc["skipped"].append({"name": name, "why": why[:300]})
        log(f"{name}: not measured: {why}")
        self.write()

    def write(self) -> None:
        self.doc["rungs"].sort(key=lambda r: ORDER.index(r["name"]) if r["name"] in ORDER else len(ORDER))
        explain(self.doc["rungs"], self.doc["peaks"])
        if self.doc["rungs"] and check is not None:
            check(json.loads(json.dumps(self.doc)))  # never write what flashviz ladder would refuse
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.doc, indent=1, ensure_ascii=False) + "\n")
        self.path.with_suffix(".md").write_text(markdown(self.doc))


def flags(argv: list[str]) -> list[str]:
    """The command's flags without --out and its folder (a path on the machine that ran it)."""
    out, skip = [], False
    for a in argv:
        if skip or a.startswith("--out="):
            skip = False
            continue
        if a == "--out":
            skip = True
            continue
        out.append(a)
    return out


def sig(x: float) -> float:
    """x to 6 significant digits (the schema checks derived numbers to 0.2%)."""
    return float(f"{x:.6g}")


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def rung_record(name, label, kernel, dtype, tc, tiles, peak, element_bytes, shape, m, candidates=None) -> dict:
    t = tiles_dict(tiles) if isinstance(tiles, Tiles) else tiles
    r = {
        "name": name,
        "label": label,
        "kernel": kernel,
        "dtype": dtype,
        "tensor_cores": tc,
        "mma": m.get("mma"),
        "tiles": t,
        "ms": m["ms"],
        "peak": peak,
        "hbm_bytes": None if t is None else hbm_bytes(shape, t["br"], t["bc"], element_bytes),
        "sram_bytes_per_block": m.get("sram_bytes_per_block"),
        "registers": m.get("registers"),
        "spill_bytes": m.get("spill_bytes"),
        "max_rel_err": m["max_rel_err"],
    }
    seen = m.get("tiles_seen")
    if t is not None and seen and (seen["warps"], seen["stages"]) != (t["warps"], t["stages"]):
        log(f"{name}: asked for {t}, the compiled kernel has {seen}: recording what ran")
        r["tiles"] = {**t, **seen}
    if candidates is not None:
        r["candidates"] = candidates
    log(f"{name}: {r['ms']:.4g} ms, err {r['max_rel_err']:.2g}, tiles {tiles_text(t)}, timing: {m.get('timing')}")
    return r


def autotuned(config, timing) -> dict:
    """One of the autotuner's candidates and its own timing (median ms; inf when it did not compile or launch)."""
    ms = float(timing[0] if isinstance(timing, list | tuple) else timing)
    tiles = {"br": config.kwargs["Br"], "bc": config.kwargs["Bc"], "warps": config.num_warps,
             "stages": config.num_stages}  # fmt: skip
    if math.isfinite(ms) and ms > 0:
        return {"tiles": tiles, "ms": sig(ms)}
    return {"tiles": tiles, "ms": None, "why": "the autotuner could not run it (timed as inf)"}


def pick(run: Run, name: str, trials: list, measure, budget_end: float) -> tuple:
    """Measure each trial (checked first); return (best trial, its measurement, the candidates' record)."""
    cands, best, measured = [], None, {}
    for trial, tiles in trials:
        if time.time() > budget_end:
            cands.append({"tiles": tiles, "ms": None, "why": "not measured: the budget ran out"})
            continue
        try:
            m = measure(trial, None if best is None else best[1]["ms"])
            measured[trial] = m
            cands.append({"tiles": tiles, "ms": sig(m["ms"]), "max_rel_err": m["max_rel_err"]})
            log(f"  {name} {tiles_text(tiles)}: {m['ms']:.4g} ms, err {m['max_rel_err']:.2g}")
            if best is None or m["ms"] < best[1]["ms"]:
                best = (trial, m)
        except Exception as e:
            cands.append({"tiles": tiles, "ms": None, "why": one_line(e)})
            log(f"  {name} {tiles_text(tiles)}: {one_line(e)}")
    if best is None:
        raise RuntimeError(f"no candidate ran: {'; '.join(str(c.get('why')) for c in cands)[:250]}")
    return best[0], best[1], cands, measured


def ladder(run: Run, x: Inputs, shape: dict, budget_end: float) -> None:
    args = run.args
    quick = args.mode == "quick"
    scalar_peak = "fp32_ffma" if "fp32_ffma" in run.doc["peaks"] else "fp32_sgemm"
    seed_file = "algos/fa2/fa2_forward.cu (NVRTC)"
    triton_file = "algos/fa2_triton/kernel.py fa2_fwd"

    def step(name: str, body) -> None:
        if time.time() > budget_end:
            raise OutOfBudget(name)
        try:
            body()
        except OutOfBudget:
            raise
        except Exception as e:
            run.skip(name, one_line(e))
            if not isinstance(e, CheckFailed):
                traceback.print_exc(limit=4)

    # 1-2: the seed's kernel
    def seeds():
        trials = [((br, bc, th), {"br": br, "bc": bc, "warps": th // 32, "stages": 1})
                  for br, bc, th in (SEED_TILES_QUICK if quick else SEED_TILES)]  # fmt: skip
        trial, m, cands, measured = pick(
            run, "seed", trials, lambda tr, best: seed_rung(x, shape, *tr, quick, best), budget_end
        )
        as_written = measured.get(trials[0][0])
        if as_written is None:
            raise RuntimeError(f"the seed's own tile did not run: {cands[0].get('why')}")
        run.add(rung_record("seed", "seed kernel, as written", seed_file, "fp32", False, trials[0][1], scalar_peak,
                            4, shape, as_written, cands))  # fmt: skip
        if trial != trials[0][0]:
            tiles = next(t for tr, t in trials if tr == trial)
            run.add(rung_record("seed-best", "seed kernel, best tile", seed_file, "fp32", False, tiles, scalar_peak,
                                4, shape, m))  # fmt: skip

    if DEVICE == "cuda":
        step("seed", seeds)
    else:
        run.skip("seed", "the seed's CUDA kernel needs a GPU (CuPy and NVRTC); this is a CPU smoke run")

    # 8-9: the ceiling, measured before the new fp32 Triton path runs (a fault there would end the run)
    for name, backend, label in (("sdpa-flash", "FLASH_ATTENTION", "SDPA FlashAttention-2"),
                                 ("sdpa-cudnn", "CUDNN_ATTENTION", "SDPA cuDNN")):  # fmt: skip

        def sdpa(name=name, backend=backend, label=label):
            m = sdpa_rung(x, backend, quick)
            run.add(rung_record(name, label, f"torch.nn.functional.scaled_dot_product_attention, {backend}", "bf16",
                                True, None, "bf16_matmul", 2, shape, m))  # fmt: skip

        step(name, sdpa)

    # 6-7: the autotuner's config (flashviz.attention's), then its tiles without pipelining
    def tuned():
        r = ta.launcher()
        r.forward(x.q16, x.k16, x.v16, False, x.scale)  # tunes once for this shape, as flashviz.attention does
        if r.interpret:
            best = INTERPRET_TILES["fwd"]
            cands = None
        else:
            # the launcher's own key for this launch (its geometry and options: plain attention)
            geometry = ta._geometry(x.q16, x.k16, ta.PLAIN)
            kw = r.choice("fwd", padded(shape["d"]), geometry.key(False, torch.bfloat16, ta.PLAIN))
            best = Tiles(kw["Br"], kw["Bc"], kw["num_warps"], kw["num_stages"], kw.get("maxnreg"))
            timings = getattr(r.tuned["fwd", padded(shape["d"])], "configs_timings", None) or {}
            cands = [autotuned(c, v) for c, v in timings.items()] or None
        m = triton_rung(x, "bf16", best, None, quick)
        label = "Triton bf16, autotuned"
        run.add(rung_record("triton-bf16-tuned", label, triton_file, "bf16", m["mma"] != "none", best,
                            "bf16_matmul", 2, shape, m, cands))  # fmt: skip
        flat = Tiles(best.Br, best.Bc, best.num_warps, 1, best.maxnreg)

        def unpipelined():  # the same tiles and warps, one stage
            m = triton_rung(x, "bf16", flat, None, quick)
            run.add(rung_record("triton-bf16-tiles", "Triton bf16, tuned tiles", triton_file, "bf16",
                                m["mma"] != "none", flat, "bf16_matmul", 2, shape, m))  # fmt: skip

        if best.num_stages != 1:
            step("triton-bf16-tiles", unpipelined)

    step("triton-bf16-tuned", tuned)

    # 8-11: FlashAttention-3 in Gluon, one idea at a time (needs an sm_90 GPU)
    from flashviz.algos.fa3 import launcher as fa3

    why = fa3.unavailable() if DEVICE == "cuda" else "Gluon has no interpreter; this is a CPU smoke run"
    for name, rung in FA3_RUNGS.items():
        if why:
            run.skip(name, f"fa3 cannot run here: {why}")
            continue

        def fa3_step(name=name, rung=rung):
            tiles, m = fa3_rung(x, rung, quick)
            run.add(rung_record(name, f"FA3 Gluon, {rung.removeprefix('+ ')}", "algos/fa3/kernel.py fa3_fwd",
                                "bf16", True, tiles, "bf16_matmul", 2, shape, m))  # fmt: skip

        step(name, fa3_step)

    # 3-5: Triton, fp32 (CUDA cores, tensor cores), then bf16, at one set of tiles: the new fp32 path, last
    chosen: dict = {}

    def ieee():
        ieee_tiles = IEEE_TILES_QUICK if quick else IEEE_TILES
        if DEVICE != "cuda":
            ieee_tiles = [Tiles(32, 16, 4, 1)]
        trials = [(t, tiles_dict(t)) for t in ieee_tiles]
        t, m, cands, _ = pick(run, "triton-fp32-ieee", trials,
                           lambda t, b: triton_rung(x, "fp32", t, "ieee", quick, b), budget_end)  # fmt: skip
        chosen["t0"] = t
        run.add(rung_record("triton-fp32-ieee", "Triton fp32, CUDA cores", triton_file + ' input_precision="ieee"',
                            "fp32", False, t, scalar_peak, 4, shape, m, cands))  # fmt: skip

    def tf32():
        m = triton_rung(x, "fp32", chosen["t0"], "tf32", quick)
        run.add(rung_record("triton-fp32-tf32", "Triton fp32, tensor cores",
                            triton_file + ' input_precision="tf32"', "fp32", m["mma"] != "none", chosen["t0"],
                            "tf32_matmul", 4, shape, m))  # fmt: skip

    def bf16():
        m = triton_rung(x, "bf16", chosen["t0"], None, quick)
        run.add(rung_record("triton-bf16", "Triton bf16, same tiles", triton_file, "bf16", m["mma"] != "none",
                            chosen["t0"], "bf16_matmul", 2, shape, m))  # fmt: skip

    step("triton-fp32-ieee", ieee)
    if "t0" in chosen:
        step("triton-fp32-tf32", tf32)
        step("triton-bf16", bf16)


# ----------------------------------------------------------------------------------------------------------
# Compiling ahead: worker processes fill Triton's cache before the parent touches CUDA
# ----------------------------------------------------------------------------------------------------------
PRECHECK: dict = {}  # (torch dtype, Tiles, precision) -> why it failed at N=256 in a worker: not launched again


def precompile(job) -> tuple:
    """In a worker: compile one config and check it at N=256 against float64, so that the parent finds it in
    Triton's cache, and a config that fails (or faults, which would poison the parent's CUDA context) is known
    before the parent launches it."""
    dtype, t, precision = job
    start = time.time()
    try:
        q, k, v = (torch.randn(1, 2, 256, 64, device="cuda", dtype=dtype) for _ in range(3))
        if dtype == torch.float32:
            o = _forward_fp32(q, k, v, t, precision)[0]
            limit = LIMITS["fp32" if precision == "ieee" else "tf32"]
        else:
            o = ta.launcher().forward(q, k, v, False, 0.125, tiles=t)[0]
            limit = LIMITS["bf16"]
        torch.cuda.synchronize()
        err = max_rel_err(o, reference(q, k, v, 0.125))
        status = "ok" if err <= limit else f"max rel err {err:.3g} at N=256, limit {limit:g}"
        return job, status, time.time() - start
    except Exception as e:
        return job, one_line(e), time.time() - start


def precompile_all(args) -> None:
    from concurrent.futures.process import BrokenProcessPool

    ieee = IEEE_TILES_QUICK if args.mode == "quick" else IEEE_TILES
    jobs = [(torch.float32, t, p) for p in ("ieee", "tf32") for t in ieee]
    jobs += [(torch.bfloat16, t, None) for t in ieee]
    for t in FWD_TILES[64]:
        for job in ((torch.bfloat16, t, None), (torch.bfloat16, Tiles(t.Br, t.Bc, t.num_warps, 1, t.maxnreg), None)):
            if job not in jobs:
                jobs.append(job)
    log(f"compiling and checking {len(jobs)} Triton configs at N=256 in {args.workers} processes")
    done = set()
    try:
        with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("fork")) as pool:
            for job, status, secs in pool.map(precompile, jobs):
                done.add(job)
                if status != "ok":
                    PRECHECK[job] = status
                    log(f"  {job[0]} {tiles_text(tiles_dict(job[1]))} {job[2] or ''}: {status} ({secs:.1f}s)")
    except BrokenProcessPool as e:  # a worker died (a fault in a kernel): the unfinished configs are not trusted
        for job in jobs:
            if job not in done:
                PRECHECK[job] = f"its compile worker died ({one_line(e)})"
        log(f"  a compile worker died; {len(jobs) - len(done)} configs not checked: they will not be launched")
    log(f"compiled; {len(PRECHECK)} of {len(jobs)} failed")


# ----------------------------------------------------------------------------------------------------------
# Markdown, install, main
# ----------------------------------------------------------------------------------------------------------
def markdown(doc: dict) -> str:
    s = doc["shape"]
    lines = [
        f"# The ladder on {doc['gpu']}, {doc['date']}{'' if doc['mode'] == 'full' else ' (' + doc['mode'] + ' run)'}",
        "",
        f"Versions: {', '.join(f'{k} {v}' for k, v in doc['versions'].items())}. Command: `{doc['command']}`.",
        "",
        f"Shape: D={s['d']}, N={s['n']}, B={s['batch']}, H={s['heads']} ({s['tokens']:,} tokens), non-causal, "
        f"forward; {s['flops']:.3g} FLOPs (4·B·H·N²·D). Timing: {doc['timing']}. Check: {doc['check']}.",
        "",
        "Peaks in the same run: "
        + "; ".join(f"{k} {v['tflops']:.1f} TFLOP/s ({v['what']})" for k, v in doc["peaks"].items())
        + ".",
        "",
        "| # | rung | dtype | tensor cores | tiles (Br×Bc, warps, stages) | ms | TFLOP/s | share of peak | HBM (model) "
        "| SRAM/block | registers | spills B/thread | max rel err |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(doc["rungs"], 1):
        tc = ("yes" if r["tensor_cores"] else "no") + (f" ({r['mma']})" if r["mma"] not in (None, "none") else "")
        lines.append(
            f"| {i} | {r['label']} | {r['dtype']} | {tc} | {tiles_text(r['tiles']) if r['tiles'] else 'not reported'} "
            f"| {r['ms']:.4g} | {r['tflops']:.4g} | {100 * r['share_of_peak']:.1f}% of {r['peak']} "
            f"| {_gb(r['hbm_bytes']) if r['hbm_bytes'] is not None else '–'} "
            f"| {_kib(r['sram_bytes_per_block'])} "
            f"| {r.get('registers') if r.get('registers') is not None else '–'} "
            f"| {r.get('spill_bytes') if r.get('spill_bytes') is not None else '–'} | {r['max_rel_err']:.1e} |"
        )
    lines += ["", "What changed, rung by rung:", ""]
    lines += [f"{i}. **{r['label']}**: {r['what_changed']}" for i, r in enumerate(doc["rungs"], 1)]
    for r in doc["rungs"]:
        if r.get("candidates"):
            how = "the autotuner's own timings" if r["name"] == "triton-bf16-tuned" else "each checked, then timed"
            lines += ["", f"Candidates of {r['name']} ({how}):", ""]
            lines += [
                f"- {tiles_text(c['tiles'])}: " + (f"{c['ms']:.4g} ms" if c["ms"] is not None else c.get("why", "?"))
                for c in r["candidates"]
            ]
    if doc["skipped"]:
        lines += ["", "Not measured:", ""] + [f"- {x['name']}: {x['why']}" for x in doc["skipped"]]
    lines += [
        "",
        "HBM bytes are the traffic model's global loads and stores at each rung's tiles (flashviz.algos.fa2): the L2 "
        "serves many of the re-reads of K and V, so DRAM sees fewer. SRAM per block: shared memory per block (the "
        "seed's launch spec; Triton's compiled kernel). Registers and spills: per thread, from the loaded kernels.",
    ]
    return "\n".join(lines) + "\n"


def install(path: str) -> int:
    """Record a run: copy FILE (and the .md beside it) into bench/results/ladder and the package's data."""
    from flashviz.hardware.ladder import load  # validates (pydantic)
    from flashviz.hardware.ladder_schema import LadderError

    src = Path(path)
    try:
        doc = load(src)
    except LadderError as e:
        print(f"--install: {e}", file=sys.stderr)
        return 2
    if doc["mode"] != "full":
        print(f"{src}: a {doc['mode']} run; only full runs are recorded", file=sys.stderr)
        return 2
    name = f"{doc['date']}-{slug(doc['gpu'])}"
    results, shipped = ROOT / "bench/results/ladder", ROOT / "src/flashviz/data/ladder"
    results.mkdir(parents=True, exist_ok=True)
    shipped.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, results / f"{name}.json")
    shutil.copyfile(src, shipped / f"{name}.json")
    md = src.with_suffix(".md")
    (results / f"{name}.md").write_text(md.read_text() if md.exists() else markdown(doc))
    print(f"recorded {results / (name + '.json')} and {shipped / (name + '.json')}")
    return 0


def versions() -> dict:
    import triton

    v = {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if DEVICE == "cuda" else None,
        "python": platform.python_version(),
        "flashviz": os.environ.get("FLASHVIZ_COMMIT") or _git_commit(),
    }
    try:
        import cupy

        v["cupy"] = cupy.__version__
    except Exception:
        v["cupy"] = None
    return v


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def main() -> int:
    global DEVICE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "bench/results/ladder"))
    ap.add_argument("--budget-s", type=float, default=240, help="start no new rung or candidate after this many s")
    ap.add_argument("--quick", action="store_true", help="fewer candidates, shorter timing; the same shape")
    ap.add_argument("--smoke", action="store_true", help="no GPU: a tiny shape under TRITON_INTERPRET=1")
    ap.add_argument("--workers", type=int, default=12, help="processes compiling Triton configs ahead")
    ap.add_argument("--install", metavar="FILE", help="record FILE (a full run) in bench/results and the package")
    args = ap.parse_args()
    if args.install:
        return install(args.install)
    args.mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    if args.smoke:
        if not ta.launcher().interpret:
            print("--smoke needs TRITON_INTERPRET=1 (set before Triton is imported)", file=sys.stderr)
            return 2
        DEVICE = "cpu"
    elif not (os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1") and torch.cuda.is_available()):
        print(
            "no CUDA GPU: run this on the GPU machine (here: --smoke, or bench/ladder_compile_check.py)",
            file=sys.stderr,
        )
        return 2
    shape = SMOKE_SHAPE if args.smoke else SHAPE
    budget_end = T0 + args.budget_s
    if DEVICE == "cuda" and args.workers > 0:
        precompile_all(args)  # fork before this process touches CUDA

    gpu = torch.cuda.get_device_name() if DEVICE == "cuda" else "CPU (Triton interpreter)"
    run = Run(args, shape, gpu, versions())
    log(f"{gpu}; {run.doc['versions']}; writing {run.path}")
    if DEVICE == "cuda":
        run.doc["peaks"] = peaks(args.mode == "quick")
    else:
        run.doc["peaks"] = {
            k: {"tflops": 1.0, "what": "a smoke run on the CPU measures no peak: 1.0 stands in"}
            for k in ("bf16_matmul", "tf32_matmul", "fp32_sgemm")
        }
    log("peaks: " + ", ".join(f"{k} {v['tflops']:.1f}" for k, v in run.doc["peaks"].items()))

    seed = int.from_bytes(os.urandom(4), "little")
    torch.manual_seed(seed)
    b, h, n, d = shape["batch"], shape["heads"], shape["n"], shape["d"]
    q32, k32, v32 = (torch.randn(b, h, n, d, device=DEVICE, dtype=torch.float32) for _ in range(3))
    q16, k16, v16 = (t.to(torch.bfloat16) for t in (q32, k32, v32))
    scale = d**-0.5
    x = Inputs(q32, k32, v32, q16, k16, v16, reference(q32, k32, v32, scale), reference(q16, k16, v16, scale), scale)
    run.doc["input_seed"] = seed
    log(f"inputs drawn (torch seed {seed}), float64 references computed")
    try:
        ladder(run, x, shape, budget_end)
        run.doc["complete"] = not run.doc["skipped"]
    except OutOfBudget as e:
        run.skip(str(e), f"the budget of {args.budget_s:g} s ran out before this rung and those after it")
    finally:
        run.write()
        print_table(run.path)  # short: the sentences, candidates and notes are in the .md beside the JSON
    return 0 if run.doc["rungs"] and run.doc["complete"] else 1


def print_table(path: Path) -> None:
    from rich.console import Console

    try:
        doc = json.loads(path.read_text())
        Console(width=150).print(render(doc)[0])
        for sk in doc["skipped"]:
            print(f"not measured: {sk['name']}: {sk['why'][:150]}")
        print(f"wrote {path} and {path.with_suffix('.md').name}")
    except Exception as e:
        print(f"(no table: {one_line(e)}; {path})")


if __name__ == "__main__":
    sys.exit(main())
