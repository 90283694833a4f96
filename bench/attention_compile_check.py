"""Compile flashviz's Triton attention kernels for sm_90 on a machine without a GPU (no device time spent).

Catches compile errors and reports registers, spills and shared memory of every candidate tile config, so
that configs that cannot fit are dropped before the GPU run. Uses the cuobjdump that Triton ships.
  PYTHONPATH=src python bench/attention_compile_check.py [--only fwd,dkdv,dq] [--d 64,128]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor

os.environ["TRITON_INTERPRET"] = "0"


PLAIN_FLAGS = ("SOFTCAP", "VARLEN", "BAND_LEFT")  # the fa2 launcher's option constexprs
KERNELS = {"fwd": "fa2_fwd", "dkdv": "fa2_bwd_dkdv", "dq": "fa2_bwd_dq", "split": "fa2_fwd_split",
           "combine": "fa2_fwd_combine"}  # fmt: skip


def signature(kernel, ptr_types: dict, constexprs: dict):
    """Triton's signature of `kernel` as the launcher specialises it; adds to `constexprs` the defaults of the
    constexpr parameters not given, None for cu_q, cu_k, GROUP = 1 and False for the option flags (plain attention,
    as the launcher passes them for PLAIN: packed sequences, softcap and windows are not compiled here)."""
    sig = {}
    for p in kernel.params:
        name = p.name
        if name in ("cu_q", "cu_k") and name not in ptr_types:
            constexprs[name] = None
        elif name in PLAIN_FLAGS and name not in constexprs:
            constexprs[name] = False
        elif name == "GROUP" and p.is_constexpr and name not in constexprs:
            constexprs[name] = 1  # one q head per K/V head
        elif p.is_constexpr and p.has_default and name not in constexprs:
            constexprs[name] = p.default
        if name in constexprs:
            sig[name] = "constexpr"
        elif name in ptr_types:
            sig[name] = ptr_types[name]
        elif name in ("scale", "qk_scale", "softcap2"):
            sig[name] = "fp32"
        else:
            sig[name] = "i32"
    return sig


def compile_one(job):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from flashviz.algos.fa2_triton import kernel as km

    name, d, causal, t, extra = job
    kernel = getattr(km, KERNELS[name])
    bf16 = "*bf16"
    ptrs = {n: bf16 for n in ("Q", "K", "V", "O", "dO", "dK", "dV")}
    ptrs.update(L="*fp32", Delta="*fp32", dQ="*fp32" if extra.get("DQ_ATOMIC") else bf16)
    ptrs.update(Opart="*fp32", Lpart="*fp32")
    if name == "combine":  # one block of packed rows; no Br, Bc, CAUSAL
        constexprs = {"D": d, "BLOCK": t[0], **extra}
    else:
        constexprs = {"D": d, "Br": t[0], "Bc": t[1], "CAUSAL": causal, **extra}
    sig = signature(kernel, ptrs, constexprs)
    # the launcher's specialisation: pointers 16-byte aligned, strides and Dv multiples of 16 (H, N not)
    div16 = [
        (i,)
        for i, n in enumerate(kernel.arg_names)
        if (n in ptrs or n in ("L", "Delta", "Dv") or (n.startswith("s") and n != "scale"))
        and n in sig
        and sig[n] != "constexpr"
    ]
    attrs = {k: [["tt.divisibility", 16]] for k in div16}
    src = ASTSource(kernel, sig, constexprs, attrs)
    start = time.time()
    try:
        ck = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": t[2], "num_stages": t[3]})
    except Exception as e:
        return job, f"ERROR {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}", time.time() - start
    secs = time.time() - start
    cubin = ck.asm["cubin"]
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        tool = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/cuobjdump")
        res = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
        sass = subprocess.run([tool, "--dump-sass", f.name], capture_output=True, text=True).stdout
    regs = re.search(r"REG:(\d+)", res)
    stack = re.search(r"STACK:(\d+)", res)
    shared = ck.metadata.shared
    n_gmma = len(re.findall(r"HGMMA", sass))
    n_ldl = len(re.findall(r"\bLDL", sass))
    ptx = ck.asm["ptx"]
    ws = "setmaxnreg" in ptx
    tma = "cp.async.bulk.tensor" in ptx
    red = "cp.reduce.async.bulk.tensor" in ptx
    info = (
        f"regs {regs and regs[1]} stack {stack and stack[1]} LDL {n_ldl} smem {shared // 1024}KB HGMMA {n_gmma} "
        f"tma {tma} reduce {red} setmaxnreg {ws}"
    )
    return job, info, secs


def split_jobs(ds: list, causals: list) -> list:
    """fa2_fwd_split at the tiles split_kv.split_tiles picks for Nq = 1, 16, 128 and GQA groups 1, 4, 8,
    with each option set the feature benchmark's decode cases use (plain, a left window, softcap), and the combine."""
    from flashviz.algos.fa2_triton.split_kv import split_tiles
    from flashviz.algos.fa2_triton.tiles import padded

    jobs = []
    for d in ds:
        for group in (1, 4, 8):
            for nq in (1, 16, 128):
                t = split_tiles(nq * group, padded(d))
                tt = (t.Br, t.Bc, t.num_warps, t.num_stages)
                for causal in causals:
                    for flags in ({}, {"BAND_LEFT": True}, {"SOFTCAP": True}):  # the launcher: always SCALE_FIRST
                        jobs.append(("split", d, causal, tt, {"GROUP": group, "SCALE_FIRST": True, **flags}))
        jobs.append(("combine", d, False, (32, 0, 4, 1), {"GROUP": 4}))
    return jobs


def main() -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
    from flashviz.algos.fa2_triton.launch_tiles import DKDV_TILES, DQ_TILES, FWD_TILES

    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="fwd,dkdv,dq")
    ap.add_argument("--d", default="64,128")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--split", action="store_true", help="the split-KV decode kernels instead (GQA groups 1, 4, 8; "
                    "the tiles split_tiles picks for 1, 16, 128 queries; plain, window and softcap)")  # fmt: skip
    args = ap.parse_args()
    jobs = []
    if args.split:
        jobs = split_jobs([int(x) for x in args.d.split(",")], [bool(int(c)) for c in args.causal.split(",")])
    for d in [] if args.split else map(int, args.d.split(",")):
        for causal in (bool(int(c)) for c in args.causal.split(",")):
            for name in args.only.split(","):
                tiles = {"fwd": FWD_TILES, "dkdv": DKDV_TILES, "dq": DQ_TILES}[name][d]
                for t in tiles:
                    if causal and name in ("fwd", "dq") and t.Br % t.Bc:
                        continue
                    if causal and name == "dkdv" and t.Bc % t.Br:
                        continue
                    tt = (t.Br, t.Bc, t.num_warps, t.num_stages)
                    if name == "fwd":
                        jobs.append((name, d, causal, tt, {"WARP_SPECIALIZE": t.warp_specialize}))
                    elif name == "dkdv":
                        jobs.append((name, d, causal, tt, {"DQ_ATOMIC": False, "TMA_REDUCE": False}))
                        jobs.append((name, d, causal, tt, {"DQ_ATOMIC": True, "TMA_REDUCE": True}))
                    else:
                        jobs.append((name, d, causal, tt, {}))
    with ProcessPoolExecutor(args.workers) as pool:
        for job, info, secs in pool.map(compile_one, jobs):
            print(
                f"{job[0]:5s} D={job[1]:3d} causal={int(job[2])} tiles={job[3]} {job[4]} {secs:5.1f}s: {info}",
                flush=True,
            )


if __name__ == "__main__":
    main()
