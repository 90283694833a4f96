"""fa3's forward with issue 22's options against fa2-triton and SDPA cuDNN, on the feature benchmark's cases
(bench/attention_features.py) that fa3 now takes: prefill with a cache (Nq = 2k, Nk = 16k), a sliding window of
4096 at N = 32k, softcap 50 at N = 8k; GQA 32/8, D = 128, bf16, causal, B as the feature benchmark has them.

Forward only: fa3's backward of an option is fa2's (`flashviz.ops.fa3.backward`), so a forward + backward comparison
differs by the forward alone. Per case, in one process, after compiling everything in parallel worker processes
(forked before this one touches CUDA): fa3 with the config the launcher picks (`forward_config`), fa3 with persistent
programs switched the other way, fa3 with `fast_tanh` (softcap's tanh.approx.f32) where softcap is on,
flashviz.attention(backend="fa2") (autotuned), and cuDNN where SDPA takes the case (only the cache: SDPA has no
window and no softcap). Each provider's first output is compared with fa3's (max |diff|, recorded) before it is
timed (triton.testing.do_bench medians); TFLOP/s counted as the feature benchmark counts them (4·D·(pairs the mask
lets through)·Hq). Writes <out>/fa3-options-bench.json and .md; prints the table last.

  PYTHONPATH=src python bench/fa3_options_bench.py --out "$OUT/fa3-options" --budget-s 120
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # attention_features
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
import attention_features as af

T0 = time.time()
CASES = ("prefill with cache", "window 4096", "softcap 50")


def log(msg: str) -> None:
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


def cases() -> list[af.Case]:
    return [replace(c, backward=False) for c in af.cases() if any(c.name.startswith(n) for n in CASES)]


def options(case: af.Case):
    from flashviz.algos.fa2_triton import launcher as ta

    return ta.Options(case.window[0], case.window[1], float(case.softcap))


def fa3_variants(case: af.Case) -> dict:
    """name -> FwdConfig (None: the launcher's own pick)."""
    from flashviz.algos.fa3 import launcher as f

    left = case.window[0] if case.window[0] >= 0 else f.UNBOUNDED
    picked = f.forward_config(case.d, min(case.nk, left + f.BR), case.causal)
    out = {"fa3": None, f"fa3 persistent={not picked.persistent}": replace(picked, persistent=not picked.persistent)}
    if case.softcap:
        out["fa3 fast_tanh"] = replace(picked, fast_tanh=True)
    return out


def warm(job) -> tuple[str, float]:
    """In a forked worker: compile one fa2 candidate (attention_features.precompile) or launch one fa3 variant once
    at a small size with the case's constexprs (window and cache kept smaller than the keys)."""
    start = time.time()
    if job[0] != "fa3":
        return af.precompile(job)
    try:
        import torch

        from flashviz.algos.fa3 import launcher as f

        _, case, cfg = job
        nq = min(case.nq, 256)  # Nq = Nk stays so (no band), Nq != Nk too; the window stays bounded
        small = replace(case, B=1, nq=nq, nk=nq if case.nq == case.nk else min(case.nk, 1024))
        x = af.make_inputs(small, "cuda", 0)
        f.forward(x.q, x.k, x.v, case.causal, case.d**-0.5, cfg, opts=options(case))
        torch.cuda.synchronize()
        return "ok", time.time() - start
    except Exception as e:
        return f"{type(e).__name__}: {str(e)[:160]}", time.time() - start


def timer(args, fn) -> float:
    from triton.testing import do_bench

    return do_bench(fn, warmup=args.warmup, rep=args.rep, return_mode="median")


def run_case(args, case: af.Case, index: int, rows: list, notes: dict, budget_end: float) -> None:
    import torch

    from flashviz.algos.fa3 import launcher as f
    from flashviz.ops import attention as api

    x = af.make_inputs(case, "cuda", 1000 + index)
    scale = case.d**-0.5
    opts = options(case)
    providers: dict = {}
    for name, cfg in fa3_variants(case).items():
        providers[name] = lambda cfg=cfg: f.forward(x.q, x.k, x.v, case.causal, scale, cfg, opts=opts)[0]
    providers["fa2"] = lambda: api.attention(x.q, x.k, x.v, causal=case.causal, window=case.window,
                                            softcap=case.softcap, backend="fa2")  # fmt: skip
    fn, why = af.sdpa_cudnn_fn(case, x)
    if fn is None:
        notes.setdefault(case.name, {})["sdpa-cudnn"] = f"unsupported: {why}"
    else:
        providers["sdpa-cudnn"] = fn
    ref = None
    flops = case.fwd_flops()
    for name, run in providers.items():
        if time.time() > budget_end:
            notes.setdefault(case.name, {})[name] = "skipped: budget ran out"
            continue
        try:
            start = time.time()
            o = run()
            torch.cuda.synchronize()
            first = time.time() - start
            diff = None
            if ref is None:
                ref = o.detach()
            else:
                diff = (o.detach().float() - ref.float()).abs().max().item()
            del o
            ms = timer(args, run)
        except Exception as e:
            notes.setdefault(case.name, {})[name] = f"error: {type(e).__name__}: {str(e)[:200]}"
            log(f"{case.name}: {name} ERROR {traceback.format_exc(limit=3)[-600:]}")
            continue
        rows.append({"case": case.name, "provider": name, "mode": "fwd", "ms": round(ms, 4),
                     "tflops": round(flops / ms / 1e9, 1), "first_call_s": round(first, 2),
                     "max_abs_diff_vs_fa3": diff})  # fmt: skip
        shown = "" if diff is None else f", max |O - fa3's| {diff:.3g}"
        log(f"{case.name}: {name:24s} {ms:.3f} ms {flops / ms / 1e9:.1f} TFLOP/s (first call {first:.1f} s{shown})")
    providers.clear()  # the inputs go with the closures


def markdown(doc: dict) -> str:
    names = []
    for r in doc["rows"]:
        if r["provider"] not in names:
            names.append(r["provider"])
    cell = {(r["case"], r["provider"]): r for r in doc["rows"]}
    lines = [
        f"# fa3's forward with issue 22's options on {doc['gpu']}, {doc['date']}",
        "",
        "GQA 32/8, D=128, bf16, causal, forward; TFLOP/s (do_bench medians; FLOPs 4·D·pairs·Hq); – not run "
        "(the JSON's notes say why). fa3 = the launcher's config.",
        "",
        "| case | " + " | ".join(names) + " | fa3 / fa2 | fa3 / best other |",
        "|---|" + "---|" * (len(names) + 2),
    ]
    for case in doc["cases"]:
        vals = [cell.get((case, n)) for n in names]
        row = ["–" if v is None else f"{v['tflops']:.0f}" for v in vals]
        ours, fa2 = cell.get((case, "fa3")), cell.get((case, "fa2"))
        others = [v["ms"] for n, v in zip(names, vals, strict=True) if v and not n.startswith("fa3")]
        r_fa2 = "–" if not (ours and fa2) else f"{fa2['ms'] / ours['ms']:.2f}"
        r_best = "–" if not (ours and others) else f"{min(others) / ours['ms']:.2f}"
        lines.append(f"| {case} | " + " | ".join(row) + f" | {r_fa2} | {r_best} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--budget-s", type=float, default=120, help="start nothing new after this many seconds")
    ap.add_argument("--workers", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=10, help="do_bench warm-up, ms")
    ap.add_argument("--rep", type=int, default=50, help="do_bench repetitions, ms")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    budget_end = T0 + args.budget_s
    case_list = cases()
    jobs = af.compile_jobs(case_list) + [("fa3", c, cfg) for c in case_list for cfg in fa3_variants(c).values()]
    log(f"compiling {len(jobs)} configs (fa2's candidates, fa3's variants) in {args.workers} processes")
    compiled = {}
    with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("fork")) as pool:
        for job, (status, secs) in zip(jobs, pool.map(warm, jobs), strict=True):
            what = f"fa3 {job[1].name} {job[2].name() if job[2] else 'picked'}" if job[0] == "fa3" else af.describe(job)
            compiled[what] = f"{status} ({secs:.1f}s)"
            if status != "ok":
                log(f"  {what}: {status}")
    log("compiled")
    import torch

    rows: list = []
    notes: dict = {"compile": compiled}
    try:
        for index, case in enumerate(case_list):
            if time.time() > budget_end:
                notes.setdefault("stopped", []).append(f"budget ran out before {case.name}")
                break
            run_case(args, case, index, rows, notes, budget_end)
            torch.cuda.empty_cache()
    finally:
        gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
        doc = {"date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d"), "gpu": gpu,
               "versions": {"torch": torch.__version__, "cuda": torch.version.cuda,
                            "flashviz": os.environ.get("FLASHVIZ_COMMIT", "unknown")},
               "cases": [c.name for c in case_list], "rows": rows, "notes": notes}  # fmt: skip
        with open(os.path.join(args.out, "fa3-options-bench.json"), "w") as fh:
            json.dump(doc, fh, indent=1, default=str)
        md = markdown(doc)
        with open(os.path.join(args.out, "fa3-options-bench.md"), "w") as fh:
            fh.write(md)
        print(md, flush=True)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
