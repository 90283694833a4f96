"""Launch an algorithm's kernels on the GPU on the engine's inputs, B x H heads at once, and check them.

The GPU output is held against the engine's (same float32 algorithm in the same loop order, so the
two differ by summation order and the last bit of expf only: max |gpu - engine| / max |engine| <= 1e-5)
and against the float64 reference (the tolerances every trace is held to, the algorithm's `expect.TOLERANCE`).
Outputs are poisoned with NaN before the launch, so an element the kernel never wrote fails both.

Head g (flattened b*H + h) draws its inputs from seed + g, so head 0 of any run is exactly what
`flashviz trace` with the same flags shows.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import reference
from ..algos import get
from ..config import Config, ConfigError
from ..inputs import random_inputs
from . import INSTALL_HINT, nvrtc
from .specs import MAX_THREADS, Kernel, KernelSpec, spec

ENGINE_TOLERANCE = 1e-5  # max |gpu - engine| / max |engine|, per output (gradients: their expect.TOLERANCE)
MAX_GRID_Y = 65535
# Plain cudaMalloc per tensor instead of CuPy's pool, so compute-sanitizer sees each tensor's true bounds.
NO_POOL = os.environ.get("FLASHVIZ_NO_POOL") == "1"


class GpuUnavailable(ConfigError):
    """No CuPy, or no CUDA device: the CLI prints one line naming the extra to install, exit code 2."""

    def __init__(self, message: str):
        super().__init__("GPU", message)


def require_gpu():
    """CuPy, once a CUDA device answers; else GpuUnavailable saying what to install."""
    try:
        import cupy
    except ImportError:
        raise GpuUnavailable(f"CuPy is not installed; {INSTALL_HINT}") from None
    except Exception as exc:  # a CuPy built for another CUDA fails on import with its own error
        raise GpuUnavailable(f"CuPy does not load ({type(exc).__name__}: {exc}); {INSTALL_HINT}") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        raise GpuUnavailable(f"no CUDA device ({str(exc).splitlines()[0]}); flashviz gpu needs an NVIDIA GPU") from None
    if count == 0:
        raise GpuUnavailable("no CUDA device; flashviz gpu needs an NVIDIA GPU")
    if NO_POOL:
        cupy.cuda.set_allocator(None)
    return cupy


def device_info() -> dict[str, Any]:
    cp = require_gpu()
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    attrs = dev.attributes
    return {
        "name": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
        "compute_capability": f"{props['major']}.{props['minor']}",
        "multiprocessors": int(props["multiProcessorCount"]),
        "l2_bytes": int(props["l2CacheSize"]),
        "smem_optin_bytes": int(attrs["MaxSharedMemoryPerBlockOptin"]),
        "memory_bytes": int(props["totalGlobalMem"]),
        "driver": cp.cuda.runtime.driverGetVersion(),
        "runtime": cp.cuda.runtime.runtimeGetVersion(),
        "cupy": cp.__version__,
    }


@dataclass
class Compiled:
    """One compiled kernel and its launch shape."""

    kernel: Kernel
    file: str  # the kernel file it was compiled from
    name: str  # the name expression, e.g. fa2<32,32,64>
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem_bytes: int
    fn: Any  # a CuPy RawKernel

    def describe(self) -> dict[str, Any]:
        return {
            "kernel": self.name,
            "file": self.file,
            "grid": list(self.grid),
            "block": list(self.block),
            "smem_bytes": self.smem_bytes,
            "registers": int(self.fn.num_regs),
            "local_bytes": int(self.fn.local_size_bytes),  # > 0 would mean spills or an array in local memory
        }


@dataclass
class Launch:
    """An algorithm's kernels, compiled, for `heads` heads of `cfg`: call it to launch them in order."""

    spec: KernelSpec
    cfg: Config
    heads: int
    kernels: list[Compiled]

    @property
    def name(self) -> str:
        return " -> ".join(k.name for k in self.kernels)

    def __call__(self, tensors: dict[str, Any]) -> None:
        """Launch on CuPy arrays (every tensor of `spec.shapes`, each (heads, ...) contiguous) on the current
        stream. A bad launch raises at once; a fault inside a kernel at the next synchronize."""
        for k in self.kernels:
            pointers = [tensors[name] for name in k.kernel.tensors]
            scalars = [np.int32(v) if t == "int" else np.float32(v) for t, v in k.kernel.scalars(self.cfg)]
            k.fn(k.grid, k.block, (*pointers, *scalars), shared_mem=k.smem_bytes)

    def describe(self) -> dict[str, Any]:
        facts = [k.describe() for k in self.kernels]
        return facts[0] if len(facts) == 1 else {"kernel": self.name, "launches": facts}


def prepare(cfg: Config, heads: int = 1, threads: int | None = None) -> Launch:
    """Validate the launches against the device, compile them (NVRTC, cached) and return them ready to call."""
    cp = require_gpu()
    cfg = cfg.validated()
    s = spec(cfg.algo)
    if not 1 <= heads <= MAX_GRID_Y:
        raise ConfigError("heads", f"batch*heads must be in 1..{MAX_GRID_Y} (got {heads})")
    limit = int(cp.cuda.Device().attributes["MaxSharedMemoryPerBlockOptin"])
    compiled = []
    for k in s.kernels:
        block = k.threads(cfg, threads)
        if not k.min_threads(cfg) <= block <= MAX_THREADS:
            raise ConfigError(
                "threads", f"must be in {k.min_threads(cfg)}..{MAX_THREADS} for {k.template} at Br={cfg.br}"
            )
        smem = s.smem_bytes(k, cfg)
        name = k.name_expression(cfg)
        if smem > limit:
            raise ConfigError("br", f"{name} at N={cfg.n} needs {smem:,} B of shared memory, the GPU allows {limit:,}")
        algo = s.file_algo(k)
        try:
            fn = nvrtc.function(algo, name, smem)
        except cp.cuda.compiler.CompileException as exc:
            raise GpuUnavailable(f"NVRTC could not compile {name}: {str(exc).strip().splitlines()[-1]}") from None
        compiled.append(Compiled(k, get(algo).kernel_file, name, k.grid(cfg, heads), (block, 1, 1), smem, fn))
    return Launch(s, cfg, heads, compiled)


def _to_device(x, cp):
    """A CuPy view of a NumPy array (copied), a CuPy array, or a CUDA torch tensor (DLPack, no copy)."""
    if isinstance(x, np.ndarray):
        return cp.asarray(np.ascontiguousarray(x, dtype=np.float32)), "numpy"
    if isinstance(x, cp.ndarray):
        return cp.ascontiguousarray(x, dtype=cp.float32), "cupy"
    if hasattr(x, "__dlpack__"):  # torch and friends
        arr = cp.from_dlpack(x)
        if arr.dtype != cp.float32 or not arr.flags.c_contiguous:
            raise ConfigError("inputs", f"tensors must be contiguous float32 (got {arr.dtype})")
        return arr, "torch" if type(x).__module__.startswith("torch") else "dlpack"
    raise ConfigError("inputs", f"expected NumPy, CuPy or a DLPack tensor (got {type(x).__name__})")


def _from_device(arr, kind: str):
    if kind == "numpy":
        return arr.get()
    if kind == "torch":
        import torch

        return torch.from_dlpack(arr)
    return arr


def launch(cfg: Config, inputs: dict[str, Any], threads: int | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the algorithm's kernels once on every head of `inputs` and return (outputs, launch facts).

    inputs: each of the algorithm's inputs (Q, K, V) as float32 (..., N, D), the leading dimensions
    (e.g. B, H) being the heads; NumPy arrays, CuPy arrays or CUDA torch tensors (through DLPack).
    Outputs come back of the same kind, shaped (..., N, D) for O and (..., N) for L.
    """
    cp = require_gpu()
    algo = get(cfg.algo)
    device, kinds = {}, set()
    for name in algo.inputs:
        device[name], kind = _to_device(inputs[name], cp)
        kinds.add(kind)
    lead = device[algo.inputs[0]].shape[:-2]
    for name in algo.inputs:
        if device[name].shape != (*lead, cfg.n, cfg.d):
            raise ConfigError(name, f"must have shape (..., {cfg.n}, {cfg.d}) (got {device[name].shape})")
    heads = math.prod(lead)
    run = prepare(cfg, heads, threads)
    for name, shape in run.spec.shapes.items():  # outputs and intermediates, poisoned: unwritten stays NaN
        if name not in device:
            device[name] = cp.full((*lead, *shape(cfg)), cp.nan, dtype=cp.float32)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    run(device)
    end.record()
    end.synchronize()
    facts = {**run.describe(), "heads": heads, "time_ms": cp.cuda.get_elapsed_time(start, end)}
    kind = kinds.pop() if len(kinds) == 1 else "numpy"
    return {name: _from_device(device[name], kind) for name in algo.outputs}, facts


def head_inputs(cfg: Config, heads: int) -> dict[str, np.ndarray]:
    """Inputs of every head stacked (heads, N, D); head g draws from seed + g (head 0 = the engine's)."""
    algo = get(cfg.algo)
    per_head = [random_inputs(cfg.n, cfg.d, (cfg.seed + g) % 2**32, algo.inputs) for g in range(heads)]
    return {name: np.stack([h[name] for h in per_head]) for name in algo.inputs}


def engine_outputs(cfg: Config, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One head through the NumPy engine (no steps recorded), outputs in their per-head shapes."""
    algo = get(cfg.algo)
    rec = algo.engine.execute(cfg.replace(record=()), inputs)
    return {name: rec.hbm.tensors[name].reshape(spec(cfg.algo).shapes[name](cfg)) for name in algo.outputs}


def compare(
    cfg: Config, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray], seed: int | None = None
) -> dict[str, Any]:
    """Per head: GPU vs engine and GPU vs float64 for every output; `ok` when all are within tolerance.

    inputs (..., N, D) and outputs as `launch` returns them, in NumPy; `seed` (of head 0) is only reported."""
    algo = get(cfg.algo)
    lead = inputs[algo.inputs[0]].shape[:-2]
    flat_in = {k: v.reshape(-1, cfg.n, cfg.d) for k, v in inputs.items()}
    flat_out = {k: v.reshape(-1, *spec(cfg.algo).shapes[k](cfg)) for k, v in outputs.items()}
    heads = []
    for g in range(math.prod(lead)):
        one_in = {k: v[g] for k, v in flat_in.items()}
        got = {k: v[g] for k, v in flat_out.items()}
        engine = engine_outputs(cfg, one_in)
        vs_engine = {}
        for name in algo.outputs:
            e = reference.errors(got[name], engine[name].astype(np.float64))
            # gradients carry more rounding than O (fa2-backward's expect.TOLERANCE says why): their own bound
            e["tolerance_rel"] = max(ENGINE_TOLERANCE, algo.expect.TOLERANCE.get(name, 0.0))
            e["nan"] = int(np.isnan(got[name]).sum())
            e["ok"] = bool(e["nan"] == 0 and e["max_rel"] <= e["tolerance_rel"])
            vs_engine[name] = e
        refs = algo.expect.expected(cfg, one_in)
        vs_ref = reference.check({k: got[k] for k in refs}, refs, algo.expect.TOLERANCE, algo.expect.LOG_DOMAIN)
        heads.append(
            {
                "head": g,
                "seed": None if seed is None else (seed + g) % 2**32,
                "engine": vs_engine,
                "float64": vs_ref,
                "ok": all(e["ok"] for e in vs_engine.values()) and vs_ref["ok"],
            }
        )
    worst = {
        name: {
            "engine_max_rel": max(h["engine"][name]["max_rel"] for h in heads),
            "engine_tolerance": heads[0]["engine"][name]["tolerance_rel"],
            "float64_max_rel": max(
                (h["float64"][name]["max_rel"] for h in heads if name in h["float64"]), default=None
            ),
        }
        for name in algo.outputs
    }
    return {"heads": heads, "worst": worst, "ok": all(h["ok"] for h in heads)}


def run(
    cfg: Config,
    heads: int = 1,
    batch: int = 1,
    inputs: dict[str, np.ndarray] | None = None,
    threads: int | None = None,
    check: bool = True,
) -> dict[str, Any]:
    """`flashviz gpu run`: launch batch x heads heads at once on the engine's inputs; check when asked."""
    cfg = cfg.validated()
    require_gpu()
    if inputs is not None:
        if heads * batch != 1:
            raise ConfigError("--inputs", "holds one head (N, D); use it with --heads 1 --batch 1")
        inputs = {k: v[None, None] for k, v in inputs.items()}
        seed = None
    else:
        inputs = {k: v.reshape(batch, heads, cfg.n, cfg.d) for k, v in head_inputs(cfg, batch * heads).items()}
        seed = cfg.seed
    t0 = time.perf_counter()
    outputs, facts = launch(cfg, inputs, threads)
    report: dict[str, Any] = {
        "config": {**config_dict(cfg), "seed": seed, "heads": heads, "batch": batch},
        "launch": facts,
        "device": device_info(),
        "wall_s": {"launch": time.perf_counter() - t0},
    }
    if check:
        t0 = time.perf_counter()
        report["check"] = compare(cfg, inputs, outputs, seed)
        report["wall_s"]["check"] = time.perf_counter() - t0
        report["ok"] = report["check"]["ok"]
    else:
        nan = {k: int(np.isnan(v).sum()) for k, v in outputs.items()}
        report["unwritten_or_nan"] = nan
        report["ok"] = not any(nan.values())
    return report


def config_dict(cfg: Config) -> dict[str, Any]:
    return {
        "algo": cfg.algo,
        "n": cfg.n,
        "d": cfg.d,
        "br": cfg.br,
        "bc": cfg.bc,
        "causal": cfg.causal,
        "scale": cfg.softmax_scale,
        "seed": cfg.seed,
        "tr": cfg.tr,
        "tc": cfg.tc,
    }
