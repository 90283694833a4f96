"""fa3 (FlashAttention-3 in Gluon) on the H200 in one call: compile, check, time. Each phase runs in a child
process with a time limit, so that a kernel that hangs (a barrier nobody arrives at) costs that phase, not the call.

1. warm: every fa3 kernel variant launched once on small inputs, in parallel processes (fills Triton's cache);
2. test: `pytest -m gpu tests/test_fa3.py` (O, L, dQ, dK, dV against float64; ragged N; repeated forwards);
3. time: at a few shapes, each forward rung of the ablation, the fa3 backward (Gluon) and FlashAttention-2's Triton
   backward on fa3's O and L, flashviz.attention(backend="fa2"), and SDPA cuDNN: do_bench medians, bf16.
Writes $OUT/fa3-check.json and a log per phase; prints a table last.

  PYTHONPATH=src python bench/fa3_check.py --out "$OUT"
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "src"))
T0 = time.time()


def log(msg: str) -> None:
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


def warm_jobs():
    from flashviz.algos.fa3 import launcher as f

    jobs = []
    for d in f.SUPPORTED_D:
        for causal in (False, True):
            for rung in f.ABLATION:
                if rung != "+ persistent":
                    jobs.append(("fwd", d, causal, rung))
            jobs.append(("bwd", d, causal, None))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import attention_bench  # FlashAttention-2's candidate configs, compiled as its benchmark compiles them

    jobs += [("fa2", j[0], j[1], j) for d in (128, 64) for j in attention_bench.jobs_for(d)]
    return jobs


def warm_one(job):
    import torch

    from flashviz.algos.fa3 import launcher as f
    from flashviz.ops import fa3 as fa3_backend

    kind, d, causal, rung = job
    start = time.time()
    if kind == "fa2":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import attention_bench

        _, status, secs = attention_bench.precompile(rung)
        return job[:3], status, secs
    try:
        q, k, v, do = (torch.randn(1, 2, 300, d, device="cuda", dtype=torch.bfloat16) for _ in range(4))
        if kind == "fwd":
            f.forward(q, k, v, causal, d**-0.5, f.ablation_config(d, rung))
        else:
            o, lse = f.forward(q, k, v, causal, d**-0.5)
            fa3_backend.backward(q, k, v, o, lse, do, None, causal, d**-0.5, kernel="gluon")
            fa3_backend.backward(q, k, v, o, lse, do, lse, causal, d**-0.5, kernel="gluon")  # with dL
        torch.cuda.synchronize()
        return job, "ok", time.time() - start
    except Exception as e:
        return job, f"{type(e).__name__}: {str(e)[:300]}", time.time() - start


def phase_warm(args) -> int:
    jobs = warm_jobs()
    bad = 0
    with ProcessPoolExecutor(14, mp_context=multiprocessing.get_context("spawn")) as pool:
        for job, status, secs in pool.map(warm_one, jobs):
            log(f"warm {job}: {status} ({secs:.1f}s)")
            bad += status != "ok"
    return 1 if bad else 0


SHAPES = [  # B, H, N, D
    (1, 16, 16384, 128),
    (1, 32, 16384, 64),
    (4, 16, 4096, 128),
    (4, 32, 4096, 64),
]


def time_shape(args, B, H, N, D, causal, rows) -> None:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from triton.testing import do_bench

    import flashviz
    from flashviz.algos.fa3 import launcher as f
    from flashviz.ops import fa3 as fa3_backend

    def bench(fn):
        return do_bench(fn, warmup=args.warmup, rep=args.rep, return_mode="median")

    flops = 4 * B * H * N * N * D * (0.5 if causal else 1.0)
    q, k, v, do = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(4))
    scale = D**-0.5
    name = f"B={B} H={H} N={N} D={D} causal={int(causal)}"

    def add(provider, mode, ms):
        tf = (flops if mode == "fwd" else 2.5 * flops) / ms / 1e9
        rows.append({"shape": name, "provider": provider, "mode": mode, "ms": round(ms, 4), "tflops": round(tf, 1)})
        log(f"{name} {provider:32s} {mode} {ms:8.3f} ms {tf:6.1f} TFLOP/s")

    try:
        for rung in f.ABLATION:
            cfg = f.ablation_config(D, rung)
            add(f"fa3 {rung}", "fwd", bench(lambda cfg=cfg: f.forward(q, k, v, causal, scale, cfg)))
        o, lse = f.forward(q, k, v, causal, scale)
        add("fa3 gluon", "bwd", bench(lambda: fa3_backend.backward(q, k, v, o, lse, do, None, causal, scale, "gluon")))
        fa3_backend.backward(q, k, v, o, lse, do, None, causal, scale, "triton")  # tunes
        add(
            "fa3 triton-bwd",
            "bwd",
            bench(lambda: fa3_backend.backward(q, k, v, o, lse, do, None, causal, scale, "triton")),
        )
    except Exception as e:
        log(f"{name} fa3 ERROR {type(e).__name__}: {str(e)[:300]}")
    qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))

    def cudnn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)

    for provider, fn in (
        ("fa2 (flashviz)", lambda: flashviz.attention(qg, kg, vg, causal=causal, backend="fa2")),
        ("sdpa-cudnn", cudnn),
    ):
        try:
            torch.autograd.grad(fn(), (qg, kg, vg), do)  # warm-up (fa2: tunes)
            t_f = bench(fn)
            t_fb = bench(lambda fn=fn: torch.autograd.grad(fn(), (qg, kg, vg), do))
            add(provider, "fwd", t_f)
            add(provider, "bwd", t_fb - t_f)
        except Exception as e:
            log(f"{name} {provider} ERROR {type(e).__name__}: {str(e)[:300]}")


def phase_time(args) -> int:
    import torch

    from flashviz.algos.fa2_triton import launcher as ta
    from flashviz.algos.fa3 import launcher as f

    rows: list = []
    for B, H, N, D in SHAPES:
        for causal in (False, True):
            if time.time() - T0 > args.time_budget_s:
                log(f"time budget reached before B={B} H={H} N={N} D={D} causal={int(causal)}")
                break
            time_shape(args, B, H, N, D, causal, rows)
            torch.cuda.empty_cache()
    doc = {
        "rows": rows,
        "versions": {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version()},
        "gpu": torch.cuda.get_device_name(),
        "fwd_configs": {d: f.FWD_CONFIGS[d].name() for d in f.FWD_CONFIGS},
        "tuned_triton_bwd": {str(k): v for k, v in ta.launcher().bwd_variant.items()},
    }
    with open(os.path.join(args.out, "fa3-check.json"), "w") as fh:
        json.dump(doc, fh, indent=1)
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    providers = list(dict.fromkeys((r["provider"], r["mode"]) for r in rows))
    cell = {(r["shape"], r["provider"], r["mode"]): r["tflops"] for r in rows}
    print("\nTFLOP/s (bf16, do_bench medians); columns N/D/causal")
    heads = [s.split("N=")[1].replace(" D=", "/").replace(" causal=", "/") for s in shapes]
    print("provider mode".ljust(38) + "".join(h.rjust(13) for h in heads))
    for p, m in providers:
        print(f"{p} {m}".ljust(38) + "".join(f"{cell.get((s, p, m), math.nan):13.1f}" for s in shapes))
    return 0


def run_phase(name: str, argv: list, timeout: float, out: str) -> int:
    log(f"phase {name} (limit {timeout:.0f}s)")
    path = os.path.join(out, f"fa3-{name}.log")
    with open(path, "w") as fh:
        try:
            proc = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, timeout=timeout, cwd=ROOT)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = 124
    with open(path) as fh:
        tail = fh.read().splitlines()[-40:]
    print("\n".join(f"  | {line}" for line in tail), flush=True)
    log(f"phase {name}: rc {rc}")
    return rc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.environ.get("OUT") or "/tmp/fa3-check")
    ap.add_argument("--phase", choices=("warm", "time"), help="run one phase in this process")
    ap.add_argument("--skip", default="", help="phases to leave out, comma-separated")
    ap.add_argument("--warmup", type=int, default=25)
    ap.add_argument("--rep", type=int, default=100)
    ap.add_argument("--time-budget-s", type=float, default=240)
    ap.add_argument("--limits", default="warm=150,test=200,time=300", help="seconds per phase")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.phase == "warm":
        return phase_warm(args)
    if args.phase == "time":
        return phase_time(args)
    limits = dict(kv.split("=") for kv in args.limits.split(","))
    me = [sys.executable, os.path.abspath(__file__), "--out", args.out]
    rcs = {}
    skip = set(filter(None, args.skip.split(",")))
    if "warm" not in skip:
        rcs["warm"] = run_phase("warm", [*me, "--phase", "warm"], float(limits["warm"]), args.out)
    if "test" not in skip:
        test = [sys.executable, "-m", "pytest", "-m", "gpu", "tests/test_fa3.py", "-q", "-p", "no:cacheprovider", "-rf"]
        rcs["test"] = run_phase("test", test, float(limits["test"]), args.out)
    if "time" not in skip:
        rcs["time"] = run_phase("time", [*me, "--phase", "time", "--warmup", str(args.warmup), "--rep",
                                         str(args.rep), "--time-budget-s", str(args.time_budget_s)],
                                float(limits["time"]), args.out)  # fmt: skip
    log(f"done: {rcs}")
    return max(rcs.values(), default=0)


if __name__ == "__main__":
    sys.exit(main())
