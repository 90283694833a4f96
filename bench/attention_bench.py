"""flashviz.attention against PyTorch's attention backends on one GPU, in one run: forward and backward TFLOP/s.

Runs on the GPU machine. In order, stopping early (and saying so) when --budget-s runs out:
1. compiles every candidate tile config in parallel worker processes (Triton's cache then serves the autotuner);
2. measures the ceilings: a bf16 8192^3 matmul and a 2 GiB device copy;
3. the correctness gate: every candidate config, and the autotuned public function, against float64 attention
   (O, L, dQ, dK, dV; causal and not; ragged N) with attention_reference's tolerance; a failure records no
   flashviz number; the same for every fa3 candidate (forward configs, each run three times: identical bits
   required; backward kernels), a failing one left out of fa3's tuning, and for FlashAttention-4's output;
4. the benchmark: the FlashAttention papers' shapes (16k tokens, hidden 2048: D=64 x 32 heads, D=128 x 16 heads;
   N = 1024, 4096, 8192, 16384, batch = 16384 / N), causal and not, bf16; providers flashviz
   (flashviz.attention(backend="fa2"): FlashAttention-2 in Triton, the default before fa3), fa3
   (backend="fa3": FlashAttention-3 in Gluon), fa4 (flash-attn-4's flash_attn.cute.flash_attn_func on (B, N, H, D)
   copies, when importable), sdpa-flash, sdpa-cudnn, sdpa-efficient, flex; triton.testing.do_bench medians after
   warm-up. FLOPs: forward 4*B*H*N^2*D (halved when causal), backward 2.5 x forward; backward time =
   (forward + backward) - forward. At ABLATION_SHAPES, fa3's forward ablation (FlashAttention-3's table: warp
   specialization alone, + ping-pong, + intra-warpgroup overlap, + persistent) as rows "fa3 <rung>", forward only;
5. writes <out>/<date>-<gpu>.json ({"date", "gpu", "versions", "rows"}), <date>-<gpu>.md (the table, ceilings,
   peak memory) and <date>-<gpu>-extra.json (ceilings, memory, gate, tuned configs, backward variants).

  PYTHONPATH=src python bench/attention_bench.py --out "$OUT" --budget-s 450

With --features: issue 22's cases instead (GQA, KV caches, packed sequences, windows, softcap; providers flashviz,
sdpa-cudnn, flex, fa4): bench/attention_features.py says what it runs and writes.
  PYTHONPATH=src python bench/attention_bench.py --features --out "$OUT" --budget-s 200
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import platform
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # attention_features
if "--smoke" in sys.argv and not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before Triton is first imported (by fa3_launcher below)

from flashviz.algos.fa2_triton import launcher as ta
from flashviz.algos.fa2_triton.launch_tiles import BWD_VARIANTS, DKDV_TILES, DQ_TILES, FUSED_TILES, FWD_TILES, Tiles
from flashviz.algos.fa3 import launcher as fa3
from flashviz.ops import attention as api
from flashviz.ops import fa3 as fa3_backend
from flashviz.ops.reference import judge

PROVIDERS = ("flashviz", "fa3", "fa4", "sdpa-cudnn", "flex", "sdpa-flash", "sdpa-efficient")
SHAPES = [(128, 16384), (64, 16384), (128, 4096), (64, 4096), (128, 8192), (64, 8192), (128, 1024), (64, 1024)]
ABLATION_SHAPES = {(128, 16384), (128, 8192), (64, 16384), (64, 4096)}  # (D, N): the paper's 8k and the ladder's
TOKENS, HIDDEN = 16384, 2048
T0 = time.time()
# --smoke without a GPU: the interpreter. (No CUDA call here otherwise: the compile workers fork after this.)
DEVICE = "cuda" if "--smoke" not in sys.argv or torch.cuda.is_available() else "cpu"


def log(msg: str) -> None:
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


def jobs_for(d: int) -> list:
    """One job per candidate config of each kernel: (D, causal, kernel, tiles, variant)."""
    jobs = []
    for causal in (False, True):
        for t in FWD_TILES[d]:
            if not causal or t.Br % t.Bc == 0:
                jobs.append((d, causal, "fwd", t, None))
        for t in DKDV_TILES[d]:
            if not causal or t.Bc % t.Br == 0:
                jobs += [(d, causal, "dkdv", t, v) for v in BWD_VARIANTS]
        for t in DQ_TILES[d]:
            if not causal or t.Br % t.Bc == 0:
                jobs.append((d, causal, "dq", t, "two_kernels"))
        for (br, bc), (brq, bcq), warps, stages in FUSED_TILES[d]:
            if not causal or (bc % br == 0 and brq % bcq == 0):
                t = Tiles(br, bc, warps, stages)
                jobs.append((d, causal, "fused", (t, Tiles(brq, bcq, warps, stages)), "fused"))
    return jobs


def tiles_of(job) -> tuple[Tiles, dict, str]:
    d, _, kernel, t, variant = job
    if kernel == "fused":
        return FWD_TILES[d][0], {"dkdv": t[0], "dq": t[1]}, "fused"
    fwd = t if kernel == "fwd" else FWD_TILES[d][0]
    bwd = {"dkdv": t if kernel == "dkdv" else DKDV_TILES[d][0]}
    if kernel == "dq":
        bwd["dq"] = t
    return fwd, bwd, variant or "two_kernels"  # the forward's and dq's jobs: a backward whose tiles fit


def run_job(job, B, H, N, dtype=torch.bfloat16, dl=False):
    """Forward and backward with the job's config forced; returns inputs and outputs."""
    d, causal = job[0], job[1]
    fwd, bwd, variant = tiles_of(job)
    q, k, v, do = (torch.randn(B, H, N, d, device=DEVICE, dtype=dtype) for _ in range(4))
    run = ta.launcher()
    scale = d**-0.5
    o, lse = run.forward(q, k, v, causal, scale, tiles=fwd)
    dq, dk, dv = run.backward(q, k, v, o, lse, do, None, causal, scale, variant=variant, tiles=bwd)
    return (q, k, v, do, scale), {"O": o, "L": lse, "dQ": dq, "dK": dk, "dV": dv}


def precompile(job):
    """In a worker process: compile (and launch once) one config, so that the parent finds it in the cache."""
    start = time.time()
    try:
        run_job(job, 1, 2, 256)
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        return job, "ok", time.time() - start
    except Exception as e:
        return job, f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}", time.time() - start


def fa3_jobs() -> list:
    """One job per fa3 kernel variant: ("fa3", D, causal, forward config or backward kernel name)."""
    jobs = []
    for d in fa3.SUPPORTED_D:
        for causal in (False, True):
            cfgs = list(dict.fromkeys([*fa3.FWD_CANDIDATES[d], *(fa3.ablation_config(d, r) for r in fa3.ABLATION)]))
            jobs += [("fa3", d, causal, c) for c in cfgs]
            jobs += [("fa3", d, causal, k) for k in fa3_backend.BWD_CANDIDATES if k.startswith("gluon")]
    return jobs


def precompile_fa3(job):
    start = time.time()
    _, d, causal, what = job
    try:
        q, k, v, do = (torch.randn(1, 2, 300, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
        if isinstance(what, str):
            o, lse = fa3.forward(q, k, v, causal, d**-0.5, fa3.FWD_CONFIGS[d])
            fa3_backend.backward(q, k, v, o, lse, do, None, causal, d**-0.5, kernel=what)
            fa3_backend.backward(q, k, v, o, lse, do, lse, causal, d**-0.5, kernel=what)  # the Delta kernel with dL
        else:
            fa3.forward(q, k, v, causal, d**-0.5, what)
        torch.cuda.synchronize()
        return job, "ok", time.time() - start
    except Exception as e:
        return job, f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}", time.time() - start


def precompile_any(job):
    return precompile_fa3(job) if job[0] == "fa3" else precompile(job)


def describe(job) -> str:
    if job[0] == "fa3":
        what = job[3] if isinstance(job[3], str) else job[3].name()
        return f"fa3 D={job[1]} causal={int(job[2])} {what}"
    d, causal, kernel, t, variant = job
    if kernel == "fused":
        a, q = t
        return (
            f"D={d} causal={int(causal)} fused dkdv Br={a.Br} Bc={a.Bc} dq Br={q.Br} Bc={q.Bc} "
            f"warps={a.num_warps} stages={a.num_stages}"
        )
    extra = f" maxnreg={t.maxnreg}" if t.maxnreg else ""
    return (
        f"D={d} causal={int(causal)} {kernel}{'/' + variant if kernel == 'dkdv' else ''} "
        f"Br={t.Br} Bc={t.Bc} warps={t.num_warps} stages={t.num_stages}{extra}"
    )


def ceilings() -> dict:
    from triton.testing import do_bench

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    ms = do_bench(lambda: a @ b, warmup=50, rep=300, return_mode="median")
    out = {"matmul_bf16_tflops": 2 * 8192**3 / ms / 1e9}
    x = torch.empty(2 * 1024**3, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    ms = do_bench(lambda: y.copy_(x), warmup=50, rep=300, return_mode="median")
    out["copy_tb_s"] = 2 * x.numel() / ms / 1e9
    return out


def gate(dims, budget_end) -> dict:
    """Every candidate config and the autotuned public function against float64: {case: verdict summary}."""
    results = {}
    for d in dims:
        for job in jobs_for(d):
            if time.time() > budget_end:
                results["(stopped)"] = {"ok": False, "why": "budget ran out during the gate"}
                return results
            for B, H, N in ((1, 2, 1000), (2, 3, 77)):
                name = f"{describe(job)} B={B} H={H} N={N}"
                try:
                    (q, k, v, do, scale), ours = run_job(job, B, H, N)
                    verdict = judge(ours, q, k, v, job[1], scale, do)
                    results[name] = {"ok": verdict.ok, "errors": verdict.errors, "plain": verdict.plain}
                    if not verdict.ok:
                        log(f"GATE FAIL {name}: {verdict.failures()}")
                except Exception as e:
                    if "OutOfResources" in type(e).__name__ or "out of resource" in str(e):
                        results[name] = {"ok": True, "skipped": f"does not fit: {str(e).splitlines()[0][:120]}"}
                    else:
                        results[name] = {"ok": False, "why": f"{type(e).__name__}: {str(e)[:200]}"}
                        log(f"GATE ERROR {name}: {traceback.format_exc(limit=3)}")
    # the public function, autotuned, through autograd, N = 1 and ragged
    for d in dims:
        for causal in (False, True):
            for B, H, N in ((2, 4, 1000), (1, 1, 1)):
                q, k, v, do = (torch.randn(B, H, N, d, device=DEVICE, dtype=torch.bfloat16) for _ in range(4))
                q, k, v = (t.requires_grad_() for t in (q, k, v))
                o, lse = api.attention(q, k, v, causal=causal, return_lse=True, backend="fa2")
                o.backward(do)
                ours = {"O": o, "L": lse, "dQ": q.grad, "dK": k.grad, "dV": v.grad}
                verdict = judge(ours, q.detach(), k.detach(), v.detach(), causal, d**-0.5, do)
                name = f"attention(backend='fa2') D={d} causal={int(causal)} B={B} H={H} N={N}"
                results[name] = {"ok": verdict.ok, "errors": verdict.errors, "plain": verdict.plain}
                if not verdict.ok:
                    log(f"GATE FAIL {name}: {verdict.failures()}")
    return results


def fa3_gate(dims, budget_end) -> dict:
    """Every fa3 candidate against float64: forward configs (three runs, identical bits), backward kernels; a failure
    is recorded in FA3_FAILED (fa3 is then not timed where it would run that candidate). Then the public function
    with backend="fa3"."""
    results = {}
    for d in dims:
        for causal in (False, True):
            for B, H, N in ((1, 2, 1000), (2, 3, 77)):
                if time.time() > budget_end:
                    results["(stopped)"] = {"ok": False, "why": "budget ran out during the fa3 gate"}
                    return results
                q, k, v, do = (torch.randn(B, H, N, d, device=DEVICE, dtype=torch.bfloat16) for _ in range(4))
                scale = d**-0.5
                cfgs = list(dict.fromkeys([*fa3.FWD_CANDIDATES[d], *(fa3.ablation_config(d, r) for r in fa3.ABLATION)]))
                for cfg in cfgs:
                    name = f"fa3 fwd {cfg.name()} D={d} causal={int(causal)} B={B} H={H} N={N}"
                    try:
                        runs = [fa3.forward(q, k, v, causal, scale, cfg) for _ in range(3)]
                        same = all(torch.equal(o, runs[0][0]) and torch.equal(l, runs[0][1]) for o, l in runs[1:])
                        verdict = judge({"O": runs[0][0], "L": runs[0][1]}, q, k, v, causal, scale, do)
                        ok = verdict.ok and same
                        results[name] = {"ok": ok, "errors": verdict.errors, "plain": verdict.plain,
                                         "repeatable": same}  # fmt: skip
                    except Exception as e:
                        ok = False
                        results[name] = {"ok": False, "why": f"{type(e).__name__}: {str(e)[:200]}"}
                    if not ok:
                        FA3_FAILED.add((d, causal, cfg))
                        log(f"FA3 GATE FAIL {name}: {results[name]}")
                o, lse = fa3.forward(q, k, v, causal, scale, fa3.FWD_CONFIGS[d])
                for kernel in fa3_backend.BWD_CANDIDATES:
                    name = f"fa3 bwd {kernel} D={d} causal={int(causal)} B={B} H={H} N={N}"
                    try:
                        dq, dk, dv = fa3_backend.backward(q, k, v, o, lse, do, None, causal, scale, kernel=kernel)
                        verdict = judge({"dQ": dq, "dK": dk, "dV": dv}, q, k, v, causal, scale, do)
                        results[name] = {"ok": verdict.ok, "errors": verdict.errors, "plain": verdict.plain}
                    except Exception as e:
                        results[name] = {"ok": False, "why": f"{type(e).__name__}: {str(e)[:200]}"}
                    if not results[name]["ok"]:
                        FA3_FAILED.add((d, causal, kernel))
                        log(f"FA3 GATE FAIL {name}: {results[name]}")
    for d in dims:
        for causal in (False, True):
            for B, H, N in ((2, 4, 1000), (1, 1, 1)):
                q, k, v, do = (torch.randn(B, H, N, d, device=DEVICE, dtype=torch.bfloat16) for _ in range(4))
                q, k, v = (t.requires_grad_() for t in (q, k, v))
                o, lse = api.attention(q, k, v, causal=causal, return_lse=True, backend="fa3")
                o.backward(do)
                ours = {"O": o, "L": lse, "dQ": q.grad, "dK": k.grad, "dV": v.grad}
                verdict = judge(ours, q.detach(), k.detach(), v.detach(), causal, d**-0.5, do)
                name = f"attention(backend='fa3') D={d} causal={int(causal)} B={B} H={H} N={N}"
                results[name] = {"ok": verdict.ok, "errors": verdict.errors, "plain": verdict.plain}
                if not verdict.ok:
                    log(f"FA3 GATE FAIL {name}: {verdict.failures()}")
    return results


def fa4_function():
    """flash-attn-4's flash_attn_func, or None (with the reason logged) when it is not importable."""
    try:
        from flash_attn.cute import flash_attn_func

        return flash_attn_func
    except Exception as e:
        log(f"fa4 unavailable: {type(e).__name__}: {str(e)[:200]}")
        return None


def fa4_gate(fn) -> dict:
    """FlashAttention-4's O, dQ, dK, dV against float64 before any of its times is recorded."""
    results = {}
    for d in (128, 64):
        for causal in (False, True):
            q, k, v, do = (torch.randn(2, 3, 1000, d, device=DEVICE, dtype=torch.bfloat16) for _ in range(4))
            q4, k4, v4 = (t.transpose(1, 2).contiguous().requires_grad_() for t in (q, k, v))  # (B, N, H, D)
            name = f"fa4 D={d} causal={int(causal)} B=2 H=3 N=1000"
            try:
                o4 = fn(q4, k4, v4, causal=causal)[0]
                o4.backward(do.transpose(1, 2))
                ours = {"O": o4.transpose(1, 2), "dQ": q4.grad.transpose(1, 2), "dK": k4.grad.transpose(1, 2),
                        "dV": v4.grad.transpose(1, 2)}  # fmt: skip
                verdict = judge(ours, q, k, v, causal, d**-0.5, do)
                results[name] = {"ok": verdict.ok, "errors": verdict.errors, "plain": verdict.plain}
            except Exception as e:
                results[name] = {"ok": False, "why": f"{type(e).__name__}: {str(e)[:200]}"}
            if not results[name]["ok"]:
                log(f"FA4 GATE FAIL {name}: {results[name]}")
    return results


FA4 = None  # flash_attn_func once main() has found it importable and correct
FA3_FAILED: set = set()  # (D, causal, forward config or backward kernel) that failed the fa3 gate


def fa3_ready(extra: dict, d: int, n: int, causal: bool) -> bool:
    """fa3 is timed at a shape when its gate ran and passed the forward config and backward kernel it runs there."""
    runs = {(d, causal, fa3.forward_config(d, n, causal)), (d, causal, fa3_backend.BACKWARD)}
    return bool(extra.get("fa3_gate_ran")) and not runs & FA3_FAILED


def providers(q, k, v, causal: bool, flex_fn, fa4_fn=None):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fns = {
        "flashviz": lambda: api.attention(q, k, v, causal=causal, backend="fa2"),
        "fa3": lambda: api.attention(q, k, v, causal=causal, backend="fa3"),
    }
    if fa4_fn is not None:
        fns["fa4"] = fa4_fn
    for name, backend in (
        ("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION),
        ("sdpa-flash", SDPBackend.FLASH_ATTENTION),
        ("sdpa-efficient", SDPBackend.EFFICIENT_ATTENTION),
    ):

        def f(backend=backend):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

        fns[name] = f
    if flex_fn is not None:
        fns["flex"] = flex_fn
    return fns


def make_flex(q, k, v, causal: bool):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    compiled = torch.compile(flex_attention, dynamic=False)
    n = q.shape[2]
    mask = None
    if causal:
        mask = create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, n, n, device="cuda")
    return lambda: compiled(q, k, v, block_mask=mask)


def bench_shapes(args, budget_end, rows, extra) -> None:
    import torch._dynamo

    for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 256)  # flex_attention is compiled once per shape
    for d, n in SHAPES:
        if args.quick and (d, n) != (128, 16384):
            continue
        for causal in (False, True):
            if time.time() > budget_end:
                extra["stopped"] = f"budget ran out before D={d} N={n} causal={causal}"
                log(extra["stopped"])
                return
            bench_one(args, d, n, causal, budget_end, rows, extra)
            torch.cuda.empty_cache()


def bench_one(args, d: int, n: int, causal: bool, budget_end: float, rows: list, extra: dict) -> None:
    from triton.testing import do_bench

    heads, batch = HIDDEN // d, TOKENS // n
    q, k, v = (
        torch.randn(batch, heads, n, d, device=DEVICE, dtype=torch.bfloat16, requires_grad=True) for _ in range(3)
    )
    do = torch.randn(batch, heads, n, d, device=DEVICE, dtype=torch.bfloat16)
    fwd_flops = 4 * batch * heads * n * n * d * (0.5 if causal else 1.0)
    flex_fn = None
    if "flex" in args.providers and time.time() < budget_end - 30:
        try:
            flex_fn = make_flex(q, k, v, causal)
        except Exception as e:
            log(f"flex unavailable: {e}")

    def fwd_bwd(fn, inputs=(q, k, v), grad=do):
        return lambda: torch.autograd.grad(fn(), inputs, grad)

    fa4_fn = None
    if "fa4" in args.providers and extra.get("fa4_gate_ok") and FA4 is not None:
        q4, k4, v4 = (t.detach().transpose(1, 2).contiguous().requires_grad_() for t in (q, k, v))  # (B, N, H, D)
        do4 = do.transpose(1, 2).contiguous()

        def fa4_fn():
            return FA4(q4, k4, v4, causal=causal)[0]

    def add_rows(name, t_f, t_b):
        for mode, ms, flops in (("fwd", t_f, fwd_flops), ("bwd", t_b, 2.5 * fwd_flops)):
            if ms is None:
                continue
            rows.append(
                {
                    "provider": name,
                    "mode": mode,
                    "causal": causal,
                    "d": d,
                    "n": n,
                    "batch": batch,
                    "heads": heads,
                    "dtype": "bf16",
                    "tflops": round(flops / ms / 1e9, 1),
                    "ms": round(ms, 4),
                }
            )

    gated = {"flashviz": extra.get("gate_ok"), "fa3": fa3_ready(extra, d, n, causal)}
    for name, fn in providers(q, k, v, causal, flex_fn, fa4_fn).items():
        if name not in args.providers or not gated.get(name, True):
            continue
        grads = fwd_bwd(fn, (q4, k4, v4), do4) if name == "fa4" else fwd_bwd(fn)
        try:
            start = time.time()
            fn()  # warm-up: compiles, autotunes, picks the backward variant
            grads()
            torch.cuda.synchronize()
            first = time.time() - start
            if name == "flashviz":
                extra.setdefault("autotune_ms", {})[f"D={d} N={n} causal={int(causal)}"] = autotune_timings()
            t_f = do_bench(fn, warmup=args.warmup, rep=args.rep, return_mode="median")
            t_fb = do_bench(grads, warmup=args.warmup, rep=args.rep, return_mode="median")
        except Exception as e:
            log(f"D={d} N={n} causal={int(causal)} {name}: ERROR {type(e).__name__}: {str(e)[:150]}")
            continue
        t_b = t_fb - t_f
        add_rows(name, t_f, t_b)
        log(
            f"D={d:3d} N={n:5d} causal={int(causal)} {name:14s} fwd {fwd_flops / t_f / 1e9:6.1f} "
            f"bwd {2.5 * fwd_flops / t_b / 1e9:6.1f} TFLOP/s (first call {first:.1f}s)"
        )
    if (d, n) in ABLATION_SHAPES and "fa3" in args.providers and gated["fa3"]:
        qd, kd, vd = q.detach(), k.detach(), v.detach()
        for rung in fa3.ABLATION:
            cfg = fa3.ablation_config(d, rung)
            if (d, causal, cfg) in FA3_FAILED:
                continue
            try:
                t_f = do_bench(lambda cfg=cfg: fa3.forward(qd, kd, vd, causal, d**-0.5, cfg), warmup=args.warmup,
                               rep=args.rep, return_mode="median")  # fmt: skip
            except Exception as e:
                log(f"D={d} N={n} causal={int(causal)} fa3 {rung}: ERROR {type(e).__name__}: {str(e)[:150]}")
                continue
            add_rows(f"fa3 {rung}", t_f, None)
            log(f"D={d:3d} N={n:5d} causal={int(causal)} fa3 {rung:26s} fwd {fwd_flops / t_f / 1e9:6.1f}")
    if args.overhead and n == 16384 and d == 128 and "flashviz" in args.providers and extra.get("gate_ok"):
        try:
            extra.setdefault("forward_overhead_ms", {})[f"causal={int(causal)}"] = overhead_probe(args, q, k, v, causal)
        except Exception as e:
            log(f"overhead probe failed: {type(e).__name__}: {str(e)[:150]}")
    for provider, backend in (("flashviz", "fa2"), ("fa3", "fa3")):
        if n != 16384 or provider not in args.providers or not gated[provider]:
            continue
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fwd_bwd(lambda backend=backend: api.attention(q, k, v, causal=causal, backend=backend))()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
        extra.setdefault("peak_memory", []).append(
            {
                "provider": provider,
                "d": d,
                "n": n,
                "batch": batch,
                "heads": heads,
                "causal": causal,
                "inputs_mb": round(4 * q.numel() * 2 / 2**20, 1),
                "peak_above_inputs_mb": round(peak / 2**20, 1),
                "n2_scores_would_be_mb": round(batch * heads * n * n * 2 / 2**20, 1),
            }
        )


def overhead_probe(args, q, k, v, causal: bool) -> dict:
    """The same forward timed four ways, to separate the kernel from the work around it: do_bench starts its
    clock before calling fn, so host time not hidden behind its cache flush counts."""
    from triton.testing import do_bench

    run = ta.launcher()
    d, n = q.shape[-1], q.shape[2]
    qd, kd, vd = q.detach(), k.detach(), v.detach()
    best = run.choice("fwd", d, ta._geometry(q, k, ta.PLAIN).key(causal, q.dtype, ta.PLAIN))
    o = torch.empty_like(qd)
    lse = torch.empty(q.shape[:3], device=q.device, dtype=torch.float32)
    grid = (triton_cdiv(n, best["Br"]), q.shape[0] * q.shape[1])
    scale = d**-0.5

    def raw():
        run.km.fa2_fwd[grid](
            qd, kd, vd, o, lse, *ta._strides(qd), *ta._strides(kd), *ta._strides(vd), *ta._strides(o),
            q.shape[1], n, d, scale * ta._LOG2E, D=d, CAUSAL=causal, **best,
        )  # fmt: skip

    fns = {
        "kernel launch": raw,
        "Launcher.forward": lambda: run.forward(qd, kd, vd, causal, scale),
        "attention(), no grad": lambda: api.attention(qd, kd, vd, causal=causal),
        "attention(), requires_grad": lambda: api.attention(q, k, v, causal=causal),
    }
    return {
        name: round(do_bench(fn, warmup=args.warmup, rep=args.rep, return_mode="median"), 4) for name, fn in fns.items()
    }


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def autotune_timings() -> dict:
    """The autotuners' last timings (each kernel's candidates at the shape just tuned), median ms."""
    out = {}
    for (name, d), tuner in ta.launcher().tuned.items():
        timings = getattr(tuner, "configs_timings", None) or {}
        if timings:
            out[f"{name} D={d}"] = {str(c): round(t[0] if isinstance(t, list) else t, 4) for c, t in timings.items()}
            tuner.configs_timings = None  # so that the next shape shows only its own
    return out


def tuned_configs() -> dict:
    run = ta.launcher()
    out = {}
    for (name, d), tuner in run.tuned.items():
        for key, config in getattr(tuner, "cache", {}).items():
            out[f"{name} D={d} key={key}"] = str(config)
    for key, ms in run.variant_ms.items():
        out[f"backward variant key={key}"] = {k: round(v, 4) for k, v in ms.items()} | {"chosen": run.bwd_variant[key]}
    return out


def markdown(doc: dict, extra: dict) -> str:
    rows = doc["rows"]
    cell = {(r["provider"], r["mode"], r["causal"], r["d"], r["n"]): r["tflops"] for r in rows}
    lines = [
        f"# Attention on {doc['gpu']}, {doc['date']}",
        "",
        f"Versions: {', '.join(f'{k} {v}' for k, v in doc['versions'].items())}.",
        "bf16, 16k tokens, hidden 2048; TFLOP/s forward / backward (triton.testing.do_bench medians); "
        "FLOPs 4·B·H·N²·D (halved when causal), backward 2.5×; backward time = (fwd+bwd) − fwd.",
        "",
    ]
    if "ceilings" in extra:
        c = extra["ceilings"]
        lines += [
            f"Ceilings, same run: bf16 8192³ matmul {c['matmul_bf16_tflops']:.0f} TFLOP/s; "
            f"device copy {c['copy_tb_s']:.2f} TB/s.",
            "",
        ]
    lines += [
        "| D | causal | N | batch×heads | " + " | ".join(PROVIDERS) + " |",
        "|---|---|---|---|" + "---|" * len(PROVIDERS),
    ]
    for d, n in SHAPES:
        for causal in (False, True):
            if not any(r["d"] == d and r["n"] == n and r["causal"] == causal for r in rows):
                continue
            vals = []
            for p in PROVIDERS:
                f, b = cell.get((p, "fwd", causal, d, n)), cell.get((p, "bwd", causal, d, n))
                vals.append("–" if f is None else f"{f:.0f} / {b:.0f}")
            lines.append(
                f"| {d} | {'yes' if causal else 'no'} | {n} | {TOKENS // n}×{HIDDEN // d} | " + " | ".join(vals) + " |"
            )
    if extra.get("forward_overhead_ms"):
        lines += ["", "The D=128, N=16384 forward timed four ways (ms, do_bench medians):", ""]
        for key, ms in extra["forward_overhead_ms"].items():
            lines.append(f"- {key}: " + "; ".join(f"{name} {t:.3f}" for name, t in ms.items()))
    if extra.get("peak_memory"):
        lines += ["", "Peak memory of flashviz forward+backward at N=16384 (torch.cuda.max_memory_allocated):", ""]
        for m in extra["peak_memory"]:
            lines.append(
                f"- {m['provider']} D={m['d']} causal={'yes' if m['causal'] else 'no'}: "
                f"{m['peak_above_inputs_mb']} MB above "
                f"q, k, v, dO ({m['inputs_mb']} MB); one N×N bf16 score matrix per head would be "
                f"{m['n2_scores_would_be_mb']} MB"
            )
    abl = [r for r in rows if r["provider"].startswith("fa3 ")]
    if abl:
        rungs = list(dict.fromkeys(r["provider"] for r in abl))
        lines += ["", "fa3's forward ablation (FlashAttention-3's table), TFLOP/s, same run:", "",
                  "| D | causal | N | " + " | ".join(r.removeprefix("fa3 ") for r in rungs) + " |",
                  "|---|---|---|" + "---|" * len(rungs)]  # fmt: skip
        for d, n in SHAPES:
            for causal in (False, True):
                vals = [cell.get((r, "fwd", causal, d, n)) for r in rungs]
                if any(v is not None for v in vals):
                    cells = " | ".join("–" if v is None else f"{v:.0f}" for v in vals)
                    lines.append(f"| {d} | {'yes' if causal else 'no'} | {n} | {cells} |")
    floors = []
    for d, n in SHAPES:
        if n < 4096:
            continue
        for causal in (False, True):
            for mode in ("fwd", "bwd"):
                ours, cudnn = cell.get(("fa3", mode, causal, d, n)), cell.get(("sdpa-cudnn", mode, causal, d, n))
                if None not in (ours, cudnn):
                    ok = "met" if ours >= cudnn else "NOT met"
                    floors.append(f"- D={d} N={n} causal={'yes' if causal else 'no'} {mode}: fa3 {ours:.0f} vs "
                                  f"cuDNN {cudnn:.0f} ({ours / cudnn:.2f} ×): {ok}")  # fmt: skip
    for causal in (False, True):
        for mode in ("fwd", "bwd"):
            ours, fa4 = cell.get(("fa3", mode, causal, 128, 16384)), cell.get(("fa4", mode, causal, 128, 16384))
            if None not in (ours, fa4):
                ok = "met" if ours >= fa4 else "NOT met"
                floors.append(f"- goal, D=128 N=16384 causal={'yes' if causal else 'no'} {mode}: fa3 {ours:.0f} vs "
                              f"FlashAttention-4 {fa4:.0f} ({ours / fa4:.2f} ×): {ok}")  # fmt: skip
    if floors:
        lines += [
            "",
            "Floors (fa3 ≥ 1.0 × cuDNN at N ≥ 4096) and the goal (≥ FlashAttention-4), same run:",
            "",
            *floors,
        ]
    if extra.get("fa3_choices"):
        lines += ["", "fa3 ran, per shape: the forward config of flashviz.algos.fa3.launcher.forward_config and the "
                  f"backward kernel {next(iter(extra['fa3_choices'].values()))['bwd']!r} (flashviz.ops.fa3.BACKWARD):",
                  ""]  # fmt: skip
        for key, v in extra["fa3_choices"].items():
            lines.append(f"- {key}: forward {v['fwd']}")
    if extra.get("fa3_tuned"):  # runs before the fixed table (fa3-run2): the in-process tuner's choices
        lines += ["", "fa3's tuner, per shape (timed once, the fastest kept): forward config; backward kernel:", ""]
        for key, v in sorted(extra["fa3_tuned"].items()):
            lines.append(f"- {key}: forward {v['fwd']}; backward {v['bwd']} {v['bwd_ms']}")
    if extra.get("fa3_gate_ran"):
        g = extra.get("fa3_gate", {})
        lines += ["", f"fa3 gate: {sum(v['ok'] for v in g.values())} of {len(g)} cases passed (every forward config "
                  f"three times, identical bits required; every backward kernel; backend='fa3' through autograd); "
                  f"failed: {', '.join(extra.get('fa3_excluded') or []) or 'none'}."]  # fmt: skip
    if "fa4_gate" in extra:
        lines += ["", f"FlashAttention-4 gate (O, dQ, dK, dV vs float64): "
                  f"{'passed' if extra.get('fa4_gate_ok') else 'FAILED, no fa4 times recorded'}."]  # fmt: skip
    skipped = sum("skipped" in v for v in extra.get("gate", {}).values())
    lines += [
        "",
        f"Correctness gate: {'passed' if extra.get('gate_ok') else 'FAILED'} ({extra.get('gate_cases')} cases: every "
        f"candidate config and the autotuned function vs float64; {skipped} skipped as not fitting the GPU).",
    ]
    if extra.get("stopped"):
        lines += ["", f"Stopped early: {extra['stopped']}."]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or "bench/results/attention")
    ap.add_argument("--budget-s", type=float, default=None,
                    help="start no new step after this many seconds (default 450; --features 200)")  # fmt: skip
    ap.add_argument("--workers", type=int, default=12, help="processes compiling configs in parallel")
    ap.add_argument("--providers", default=None, help="comma-separated (default: all of the mode's)")
    ap.add_argument("--quick", action="store_true", help="only D=128, N=16384")
    ap.add_argument("--warmup", type=int, default=None, help="do_bench warm-up, ms (default 50; --features 10)")
    ap.add_argument("--rep", type=int, default=None, help="do_bench repetitions, ms (default 300; --features 40)")
    ap.add_argument("--overhead", action="store_true", help="time the D=128 N=16384 fa2 forward four ways (run 4)")
    features = ap.add_argument_group("--features: issue 22's cases (bench/attention_features.py)")
    features.add_argument("--features", action="store_true", help="GQA, decode, prefill with a cache, varlen, "
                          "window, softcap against sdpa-cudnn, flex and fa4")  # fmt: skip
    features.add_argument("--case", action="append", help="only the cases whose name contains this (repeatable)")
    features.add_argument("--dry-run", action="store_true", help="print the cases, their FLOPs and the providers")
    smoke = "every case shrunk (lengths / 256, 4 heads, D=32); the interpreter without a GPU"
    features.add_argument("--smoke", action="store_true", help=smoke)
    args = ap.parse_args(argv)
    if (args.dry_run or args.smoke or args.case) and not args.features:
        ap.error("--dry-run, --smoke and --case go with --features")
    args.budget_s = args.budget_s if args.budget_s is not None else (200 if args.features else 450)
    args.warmup = args.warmup if args.warmup is not None else (10 if args.features else 50)
    args.rep = args.rep if args.rep is not None else (40 if args.features else 300)
    if args.providers is None:
        import attention_features

        args.providers = ",".join(attention_features.PROVIDERS if args.features else PROVIDERS)
    args.providers = args.providers.split(",")
    args.device = DEVICE
    return args


def main() -> int:
    args = parse_args()
    if args.features:
        import attention_features

        return attention_features.main(args)
    budget_end = T0 + args.budget_s
    os.makedirs(args.out, exist_ok=True)
    dims = (128, 64)

    # 1. compile in parallel, before this process touches CUDA (fork)
    jobs = [j for d in dims for j in jobs_for(d)]
    if "fa3" in args.providers:
        jobs = fa3_jobs() + jobs
    log(f"compiling {len(jobs)} configs in {args.workers} processes")
    compile_log = {}
    with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("fork")) as pool:
        for job, status, secs in pool.map(precompile_any, jobs):
            compile_log[describe(job)] = f"{status} ({secs:.1f}s)"
            if status != "ok":
                log(f"  {describe(job)}: {status}")
    log("compiled")

    import triton

    props = torch.cuda.get_device_properties(0)
    gpu = torch.cuda.get_device_name()
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
    versions = {
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "python": platform.python_version(),
        "flashviz": os.environ.get("FLASHVIZ_COMMIT", "unknown"),
    }
    log(f"{gpu}, {props.multi_processor_count} SMs; {versions}")
    extra: dict = {"compile": compile_log}
    extra["ceilings"] = ceilings()
    log(f"ceilings {extra['ceilings']}")

    verdicts = gate(dims, budget_end)
    extra["gate"] = verdicts
    extra["gate_cases"] = len(verdicts)
    extra["gate_ok"] = bool(verdicts) and all(v["ok"] for v in verdicts.values())
    worst = max(
        (
            (v["errors"][k] / v["plain"][k], name, k)
            for name, v in verdicts.items()
            if "errors" in v
            for k in v["errors"]
            if v["plain"][k] > 0
        ),
        default=None,
    )
    log(f"gate {'passed' if extra['gate_ok'] else 'FAILED'}: {len(verdicts)} cases; worst error/plain {worst}")
    if "fa3" in args.providers and fa3.unavailable() is None:
        extra["fa3_gate"] = fa3_gate(dims, budget_end)
        extra["fa3_gate_ran"] = True
        extra["fa3_excluded"] = sorted(
            f"D={d} causal={int(c)} {w if isinstance(w, str) else w.name()}" for d, c, w in FA3_FAILED
        )
        bad = [n for n, v in extra["fa3_gate"].items() if not v["ok"]]
        log(f"fa3 gate: {len(extra['fa3_gate']) - len(bad)} of {len(extra['fa3_gate'])} passed; excluded "
            f"{extra['fa3_excluded']}")  # fmt: skip
    if "fa4" in args.providers:
        global FA4
        fn = fa4_function()
        if fn is not None:
            extra["fa4_gate"] = fa4_gate(fn)
            extra["fa4_gate_ok"] = all(v["ok"] for v in extra["fa4_gate"].values())
            log(f"fa4 gate {'passed' if extra['fa4_gate_ok'] else 'FAILED'}")
            FA4 = fn if extra["fa4_gate_ok"] else None

    rows: list = []
    try:
        bench_shapes(args, budget_end, rows, extra)
    finally:
        extra["tuned"] = tuned_configs()
        extra["fa3_choices"] = {
            f"D={d} N={n} causal={int(c)}": {"fwd": fa3.forward_config(d, n, c).name(), "bwd": fa3_backend.BACKWARD}
            for d, n in SHAPES
            for c in (False, True)
        }
        doc = {"date": date, "gpu": gpu, "versions": versions, "rows": rows}
        stem = os.path.join(args.out, f"{date}-{gpu.lower().replace(' ', '-')}")
        with open(stem + ".json", "w") as fh:
            json.dump(doc, fh, indent=1)
        with open(stem + "-extra.json", "w") as fh:
            json.dump(extra, fh, indent=1, default=str)
        md = markdown(doc, extra)
        with open(stem + ".md", "w") as fh:
            fh.write(md)
        print(md, flush=True)
    return 0 if extra["gate_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
