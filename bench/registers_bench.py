"""Registers per thread of every kernel flashviz launches, at a grid of tile sizes, as NVRTC builds them for the GPU.

    PYTHONPATH=src python bench/registers_bench.py [--out bench/results/parallelism]

The occupancy of a launch (flashviz.hardware) depends on the registers each thread of its kernel needs, which only
the compiler knows. This compiles each kernel file exactly as `flashviz gpu run` does (NVRTC through CuPy, the file
byte for byte, `-std=c++17`, the device's own -arch, no fast math) with every template instance of the grid below
in one module, loads it on the GPU and reads each function's attributes: registers per thread (CU_FUNC_ATTRIBUTE_
NUM_REGS), local memory per thread (spills would show here) and the most threads a block of it may have. Nothing
is launched. Writes <out>/registers-<date>-<gpu>.json; the page reads a copy in src/flashviz/data/hardware/.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time
from pathlib import Path

from flashviz.algos import gpu_specs as specs
from flashviz.gpu import nvrtc
from flashviz.gpu.device import device_info, require_gpu
from flashviz.model import kernels as kernel_files
from flashviz.model.config import Config

TILES = (4, 8, 16, 32, 64, 128, 256)  # Br, Bc and D: powers of two over the page's range


def instances(algo: str, kernel) -> dict[str, tuple[int, ...]]:
    """Every name expression of the grid for one kernel (a kernel with fewer template arguments has fewer)."""
    out: dict[str, tuple[int, ...]] = {}
    for br in TILES:
        for bc in TILES:
            for d in TILES:
                cfg = Config(algo=algo, n=256, d=d, br=br, bc=bc)
                out.setdefault(kernel.name_expression(cfg), tuple(kernel.template_args(cfg)))
    return out


def config_of(algo: str, kernel, targs: tuple[int, ...]) -> Config:
    """A config whose template arguments for `kernel` are `targs` (N=256: standard_softmax's row of S)."""
    for br in TILES:
        for bc in TILES:
            for d in TILES:
                cfg = Config(algo=algo, n=256, d=d, br=br, bc=bc)
                if tuple(kernel.template_args(cfg)) == targs:
                    return cfg
    raise LookupError(targs)


def thread_counts(kernel, cfg: Config) -> list[int]:
    """blockDim.x as `flashviz gpu run` picks it, and a few more for the occupancy calculator's tests (nothing is
    launched: a count below the kernel's own minimum is asked about all the same)."""
    return sorted({kernel.threads(cfg), 64, 256, 1024})


def driver_blocks(cp, fn, threads: int, smem: int, optin: int) -> int | str:
    """cuOccupancyMaxActiveBlocksPerMultiprocessor for this launch, or why it could not be asked."""
    if smem > optin:
        return "smem over the opt-in limit"
    if threads > fn.max_threads_per_block:
        return "too many threads for its registers"
    try:
        if smem > 48 * 1024 and fn.max_dynamic_shared_size_bytes < smem:
            fn.max_dynamic_shared_size_bytes = smem
        func = getattr(fn, "kernel", None) or fn._kernel
        return int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(func.ptr, threads, smem))
    except Exception as exc:  # recorded, not fatal: the registers are the point of the run
        return f"{type(exc).__name__}: {exc}"[:120]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="bench/results/parallelism")
    args = ap.parse_args()
    cp = require_gpu()
    dev = device_info()
    optin = int(cp.cuda.Device().attributes["MaxSharedMemoryPerBlockOptin"])
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    wanted = (
        "multiProcessorCount", "maxThreadsPerMultiProcessor", "maxBlocksPerMultiProcessor", "regsPerMultiprocessor",
        "regsPerBlock", "sharedMemPerMultiprocessor", "sharedMemPerBlock", "sharedMemPerBlockOptin",
        "reservedSharedMemPerBlock", "warpSize", "maxThreadsPerBlock",
    )  # fmt: skip
    dev["properties"] = {k: int(props[k]) for k in wanted if k in props}
    kernels: dict[str, dict] = {}
    for algo, spec in specs().items():
        for k in spec.kernels:
            file = spec.file_of(k)
            key = k.template
            if key in kernels:  # fa2-backward launches fa2's own forward: measured once, under fa2
                continue
            names = instances(algo, k)
            t0 = time.perf_counter()
            mod = cp.RawModule(
                code=nvrtc.source(file), options=nvrtc.OPTIONS, name_expressions=list(names), backend="nvrtc"
            )
            rows = []
            for expr, targs in names.items():
                fn = mod.get_function(expr)
                cfg = config_of(algo, k, targs)
                smem = spec.smem_bytes(k, cfg)
                rows.append(
                    {
                        "template_args": list(targs),
                        "registers": int(fn.num_regs),
                        "local_bytes": int(fn.local_size_bytes),
                        "max_threads_per_block": int(fn.max_threads_per_block),
                        "smem_bytes": smem,
                        # the driver's own answer, for the occupancy calculator's tests
                        "blocks_per_sm": {str(t): driver_blocks(cp, fn, t, smem, optin) for t in thread_counts(k, cfg)},
                    }
                )
            kernels[key] = {"file": kernel_files.kernel_file(file), "template": key, "instances": rows}
            regs = sorted({r["registers"] for r in rows})
            print(f"{key}: {len(rows)} instances in {time.perf_counter() - t0:.1f} s, registers {regs}", flush=True)
    doc = {
        "schema": "flashviz.registers/1",
        "date": dt.date.today().isoformat(),
        "device": dev,
        "nvrtc": ".".join(map(str, cp.cuda.nvrtc.getVersion())),
        "options": list(nvrtc.OPTIONS),
        "command": "PYTHONPATH=src python bench/registers_bench.py",
        "tiles": list(TILES),
        "kernels": kernels,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"registers-{doc['date']}-{dev['name'].lower().replace(' ', '-')}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {path}")
    for key, want in (("fa1", (64, 64, 64)), ("fa2", (64, 64, 64))):
        rows = kernels.get(key, {}).get("instances", [])
        got = next((r["registers"] for r in rows if tuple(r["template_args"]) == want), None)
        print(f"{key}<{','.join(map(str, want))}>: {got} registers")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
