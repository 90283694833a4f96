"""flashviz.attention against PyTorch's attention backends on one GPU, in one run: forward and backward TFLOP/s.

Runs on the GPU machine. In order, stopping early (and saying so) when --budget-s runs out:
1. compiles every candidate tile config in parallel worker processes (Triton's cache then serves the autotuner);
2. measures the ceilings: a bf16 8192^3 matmul and a 2 GiB device copy;
3. the correctness gate: every candidate config, and the autotuned public function, against float64 attention
   (O, L, dQ, dK, dV; causal and not; ragged N) with attention_reference's tolerance; a failure records no
   flashviz number;
4. the benchmark: the FlashAttention papers' shapes (16k tokens, hidden 2048: D=64 x 32 heads, D=128 x 16 heads;
   N = 1024, 4096, 16384, batch = 16384 / N), causal and not, bf16; providers flashviz, sdpa-flash, sdpa-cudnn,
   sdpa-efficient, flex; triton.testing.do_bench medians after warm-up. FLOPs: forward 4*B*H*N^2*D (halved when
   causal), backward 2.5 x forward; backward time = (forward + backward) - forward;
5. writes <out>/<date>-<gpu>.json ({"date", "gpu", "versions", "rows"}), <date>-<gpu>.md (the table, ceilings,
   peak memory) and <date>-<gpu>-extra.json (ceilings, memory, gate, tuned configs, backward variants).

  PYTHONPATH=src python bench/attention_bench.py --out "$OUT" --budget-s 450
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

from flashviz import triton_attention as ta
from flashviz.attention_reference import judge

PROVIDERS = ("flashviz", "sdpa-cudnn", "flex", "sdpa-flash", "sdpa-efficient")
SHAPES = [(128, 16384), (64, 16384), (128, 4096), (64, 4096), (128, 1024), (64, 1024)]  # (D, N), most wanted first
TOKENS, HIDDEN = 16384, 2048
T0 = time.time()
DEVICE = "cuda"  # a smoke test sets "cpu" and TRITON_INTERPRET=1


def log(msg: str) -> None:
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


def jobs_for(d: int) -> list:
    """One job per candidate config of each kernel: (D, causal, kernel, tiles, variant)."""
    jobs = []
    for causal in (False, True):
        for t in ta.FWD_TILES[d]:
            if not causal or t.Br % t.Bc == 0:
                jobs.append((d, causal, "fwd", t, None))
        for t in ta.DKDV_TILES[d]:
            if not causal or t.Bc % t.Br == 0:
                jobs += [(d, causal, "dkdv", t, v) for v in ta.BWD_VARIANTS]
        for t in ta.DQ_TILES[d]:
            if not causal or t.Br % t.Bc == 0:
                jobs.append((d, causal, "dq", t, "two_kernels"))
        for (br, bc), (brq, bcq), warps, stages in ta.FUSED_TILES[d]:
            if not causal or (bc % br == 0 and brq % bcq == 0):
                t = ta.Tiles(br, bc, warps, stages)
                jobs.append((d, causal, "fused", (t, ta.Tiles(brq, bcq, warps, stages)), "fused"))
    return jobs


def tiles_of(job) -> tuple[ta.Tiles, dict, str]:
    d, _, kernel, t, variant = job
    if kernel == "fused":
        return ta.FWD_TILES[d][0], {"dkdv": t[0], "dq": t[1]}, "fused"
    fwd = t if kernel == "fwd" else ta.FWD_TILES[d][0]
    bwd = {"dkdv": t if kernel == "dkdv" else ta.DKDV_TILES[d][0]}
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


def describe(job) -> str:
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
                o, lse = ta.attention(q, k, v, causal=causal, return_lse=True)
                o.backward(do)
                ours = {"O": o, "L": lse, "dQ": q.grad, "dK": k.grad, "dV": v.grad}
                verdict = judge(ours, q.detach(), k.detach(), v.detach(), causal, d**-0.5, do)
                name = f"attention() D={d} causal={int(causal)} B={B} H={H} N={N}"
                results[name] = {"ok": verdict.ok, "errors": verdict.errors, "plain": verdict.plain}
                if not verdict.ok:
                    log(f"GATE FAIL {name}: {verdict.failures()}")
    return results


def providers(q, k, v, causal: bool, flex_fn):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fns = {"flashviz": lambda: ta.attention(q, k, v, causal=causal)}
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

    def fwd_bwd(fn):
        return lambda: torch.autograd.grad(fn(), (q, k, v), do)

    for name, fn in providers(q, k, v, causal, flex_fn).items():
        if name not in args.providers or (name == "flashviz" and not extra.get("gate_ok")):
            continue
        try:
            start = time.time()
            fn()  # warm-up: compiles, autotunes, picks the backward variant
            fwd_bwd(fn)()
            torch.cuda.synchronize()
            first = time.time() - start
            if name == "flashviz":
                extra.setdefault("autotune_ms", {})[f"D={d} N={n} causal={int(causal)}"] = autotune_timings()
            t_f = do_bench(fn, warmup=args.warmup, rep=args.rep, return_mode="median")
            t_fb = do_bench(fwd_bwd(fn), warmup=args.warmup, rep=args.rep, return_mode="median")
        except Exception as e:
            log(f"D={d} N={n} causal={int(causal)} {name}: ERROR {type(e).__name__}: {str(e)[:150]}")
            continue
        t_b = t_fb - t_f
        for mode, ms, flops in (("fwd", t_f, fwd_flops), ("bwd", t_b, 2.5 * fwd_flops)):
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
        log(
            f"D={d:3d} N={n:5d} causal={int(causal)} {name:14s} fwd {fwd_flops / t_f / 1e9:6.1f} "
            f"bwd {2.5 * fwd_flops / t_b / 1e9:6.1f} TFLOP/s (first call {first:.1f}s)"
        )
    if n == 16384 and d == 128 and "flashviz" in args.providers and extra.get("gate_ok"):
        try:
            extra.setdefault("forward_overhead_ms", {})[f"causal={int(causal)}"] = overhead_probe(args, q, k, v, causal)
        except Exception as e:
            log(f"overhead probe failed: {type(e).__name__}: {str(e)[:150]}")
    if n == 16384 and "flashviz" in args.providers and extra.get("gate_ok"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fwd_bwd(lambda: ta.attention(q, k, v, causal=causal))()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
        extra.setdefault("peak_memory", []).append(
            {
                "provider": "flashviz",
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
    best = run.best[("fwd", d, n, d, causal, q.dtype)]
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
        "attention(), no grad": lambda: ta.attention(qd, kd, vd, causal=causal),
        "attention(), requires_grad": lambda: ta.attention(q, k, v, causal=causal),
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
                f"- D={m['d']} causal={'yes' if m['causal'] else 'no'}: {m['peak_above_inputs_mb']} MB above "
                f"q, k, v, dO ({m['inputs_mb']} MB); one N×N bf16 score matrix per head would be "
                f"{m['n2_scores_would_be_mb']} MB"
            )
    floors = []
    for causal in (False, True):
        ours_f, ours_b = (
            cell.get(("flashviz", "fwd", causal, 128, 16384)),
            cell.get(("flashviz", "bwd", causal, 128, 16384)),
        )
        cudnn, flex = cell.get(("sdpa-cudnn", "fwd", causal, 128, 16384)), cell.get(("flex", "bwd", causal, 128, 16384))
        if None not in (ours_f, cudnn):
            ok = "met" if ours_f >= 0.9 * cudnn else "NOT met"
            floors.append(
                f"- D=128 N=16384 causal={'yes' if causal else 'no'}: forward {ours_f:.0f} vs 0.9 × cuDNN "
                f"{0.9 * cudnn:.0f} ({ours_f / cudnn:.2f} × cuDNN): {ok}"
            )
        if None not in (ours_b, flex):
            ok = "met" if ours_b >= flex else "NOT met"
            floors.append(
                f"- D=128 N=16384 causal={'yes' if causal else 'no'}: backward {ours_b:.0f} vs FlexAttention "
                f"{flex:.0f} ({ours_b / flex:.2f} × Flex): {ok}"
            )
    if floors:
        lines += ["", "Floors (same run):", "", *floors]
    skipped = sum("skipped" in v for v in extra.get("gate", {}).values())
    lines += [
        "",
        f"Correctness gate: {'passed' if extra.get('gate_ok') else 'FAILED'} ({extra.get('gate_cases')} cases: every "
        f"candidate config and the autotuned function vs float64; {skipped} skipped as not fitting the GPU).",
    ]
    if extra.get("stopped"):
        lines += ["", f"Stopped early: {extra['stopped']}."]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or "bench/results/attention")
    ap.add_argument("--budget-s", type=float, default=450, help="start no new step after this many seconds")
    ap.add_argument("--workers", type=int, default=12, help="processes compiling configs in parallel")
    ap.add_argument("--providers", default=",".join(PROVIDERS))
    ap.add_argument("--quick", action="store_true", help="only D=128, N=16384")
    ap.add_argument("--warmup", type=int, default=50, help="do_bench warm-up, ms")
    ap.add_argument("--rep", type=int, default=300, help="do_bench repetitions, ms")
    args = ap.parse_args()
    args.providers = args.providers.split(",")
    budget_end = T0 + args.budget_s
    os.makedirs(args.out, exist_ok=True)
    dims = (128, 64)

    # 1. compile in parallel, before this process touches CUDA (fork)
    jobs = [j for d in dims for j in jobs_for(d)]
    log(f"compiling {len(jobs)} configs in {args.workers} processes")
    compile_log = {}
    with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("fork")) as pool:
        for job, status, secs in pool.map(precompile, jobs):
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

    rows: list = []
    try:
        bench_shapes(args, budget_end, rows, extra)
    finally:
        extra["tuned"] = tuned_configs()
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
