"""Compile every kernel configuration bench/ladder_bench.py may launch, for sm_90, on a machine without a GPU.

Triton's fa2_fwd (fp32 with ieee and tf32 dots, bf16; the ladder's candidate tiles and the autotuner's, each with
one stage too) through triton.compile for GPUTarget("cuda", 90): registers, stack (spills), shared memory and the
matrix instructions in the PTX; the seed's fa2<Br, Bc, 64> through nvcc -arch=sm_90 -Xptxas -v (NVRTC to PTX
where nvcc is missing). Costs no device time; catches a config that does not compile or does not fit.

    PYTHONPATH=src python bench/ladder_compile_check.py [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "0"
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from ladder_bench import IEEE_TILES, SEED_TILES, mma_of, one_line, tiles_dict, tiles_text  # noqa: E402

from flashviz.algos.fa2_triton.launch_tiles import FWD_TILES, Tiles  # noqa: E402


def compile_triton(job) -> tuple:
    import tempfile

    import triton
    from attention_compile_check import signature
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from flashviz.algos.fa2_triton import kernel as km

    dtype, t, precision = job
    k = km.fa2_fwd
    ptrs = {name: f"*{dtype}" for name in "QKVO"} | {"L": "*fp32"}
    ce = {"D": 64, "Br": t.Br, "Bc": t.Bc, "CAUSAL": False, "WARP_SPECIALIZE": False,
          "INPUT_PRECISION": precision or "tf32"}  # fmt: skip
    sig = signature(k, ptrs, ce)
    div = [
        (i,)
        for i, n in enumerate(k.arg_names)
        if (n in ptrs or n in ("L", "Dv") or (n.startswith("s") and n != "scale")) and sig.get(n) != "constexpr"
    ]
    try:
        opts = {"num_warps": t.num_warps, "num_stages": t.num_stages}
        if t.maxnreg:
            opts["maxnreg"] = t.maxnreg
        ck = triton.compile(ASTSource(k, sig, ce, {i: [["tt.divisibility", 16]] for i in div}),
                            target=GPUTarget("cuda", 90, 32), options=opts)  # fmt: skip
    except Exception as e:
        return job, one_line(e)
    tool = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(ck.asm["cubin"])
        f.flush()
        res = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
    regs, stack = re.search(r"REG:(\d+)", res), re.search(r"STACK:(\d+)", res)
    return job, (
        f"registers {regs and regs[1]}, stack {stack and stack[1]} B, shared {ck.metadata.shared} B, "
        f"matrix instructions: {mma_of(ck.asm['ptx'])}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    jobs = [("fp32", t, p) for p in ("ieee", "tf32") for t in IEEE_TILES]
    jobs += [("bf16", t, None) for t in IEEE_TILES]
    for t in FWD_TILES[64]:
        for stages in (1, t.num_stages):
            job = ("bf16", Tiles(t.Br, t.Bc, t.num_warps, stages, t.maxnreg), None)
            if job not in jobs:
                jobs.append(job)
    bad = 0
    with ProcessPoolExecutor(args.workers) as pool:
        for (dtype, t, p), info in pool.map(compile_triton, jobs):
            bad += info.startswith(("CompilationError", "Error", "RuntimeError", "OutOfResources"))
            print(f"triton {dtype} {p or '':4s} {tiles_text(tiles_dict(t))}: {info}", flush=True)
    # the seed's kernel: nvcc for sm_90 (registers, spills) where it is installed, else NVRTC to PTX
    from flashviz.algos import get
    from flashviz.algos.launch import smem_macro

    smem = smem_macro(get("fa2").kernel, "fa2")
    tiles = sorted({(br, bc) for br, bc, _ in SEED_TILES})
    if shutil.which("nvcc"):
        import tempfile

        src = ROOT / "src/flashviz/algos/fa2/fa2_forward.cu"
        text = src.read_text()
        lines = [f'#include "{src}"'] + [
            f"template __global__ void fa2<{br},{bc},64>(const float*, const float*, const float*, float*, float*, "
            "int, float, int);"
            for br, bc in tiles
            if f"fa2<{br}, {bc}, 64>" not in text and f"fa2<{br},{bc},64>" not in text
        ]
        with tempfile.TemporaryDirectory() as d:
            Path(d, "w.cu").write_text("\n".join(lines) + "\n")
            out = subprocess.run(["nvcc", "-arch=sm_90", "-c", "w.cu", "-o", "w.o", "-Xptxas", "-v"], cwd=d,
                                 capture_output=True, text=True)  # fmt: skip
        found = {}
        for chunk in out.stderr.split("Compiling entry function")[1:]:
            m = re.search(r"fa2ILi(\d+)ELi(\d+)ELi64E", chunk)
            regs, spill = re.search(r"Used (\d+) registers", chunk), re.search(r"(\d+) bytes spill stores", chunk)
            if m and regs:
                found[int(m[1]), int(m[2])] = f"{regs[1]}, spill stores {spill[1] if spill else '?'} B"
        if out.returncode:
            bad += 1
            print(f"seed: nvcc failed: {out.stderr.strip()[-300:]}")
        for br, bc in tiles:
            print(f"seed fa2<{br},{bc},64>: registers {found.get((br, bc), '?')}, shared {smem(br, bc, 64)} B (nvcc)")
    else:
        from flashviz.gpu.nvrtc import compile_ptx

        compile_ptx("fa2", [f"fa2<{br},{bc},64>" for br, bc in tiles])
        for br, bc in tiles:
            print(f"seed fa2<{br},{bc},64>: compiles (NVRTC, compute_90), shared {smem(br, bc, 64)} B")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
