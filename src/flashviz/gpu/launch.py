"""Launching an algorithm's kernels: compiled with NVRTC from its kernel file and checked against the device
(`prepare`), launched on B x H heads at once (`launch`), or launched once in a child process (`launcher`: the
command that `profile` and `sanitize` run under their tools). A Triton kernel (`TritonSpec`) is compiled and
launched by the host code its folder names; here it is only dispatched to."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from flashviz.algos.launch import MAX_THREADS, Kernel, KernelSpec, TritonSpec
from flashviz.model.config import Config, ConfigError

from ..algos import get
from ..algos import gpu_spec as spec
from . import device, nvrtc

MAX_GRID_Y = 65535


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


@dataclass
class TritonLaunch:
    """A Triton kernel after one launch (compiled, in Triton's cache for a child process to reuse): its facts."""

    facts: dict[str, Any]

    def describe(self) -> dict[str, Any]:
        return {k: v for k, v in self.facts.items() if k not in ("time_ms", "heads")}


def _no_threads(threads: int | None) -> None:
    if threads is not None:
        raise ConfigError(
            "--threads", "sets blockDim.x of a CUDA C++ kernel; a Triton kernel's warps come with its tiles"
        )


def _triton_heads(s: TritonSpec, cfg: Config, heads: int) -> dict[str, np.ndarray]:
    from flashviz.model.inputs import random_inputs

    one = random_inputs(cfg.n, cfg.d, cfg.seed, get(s.algo).inputs)
    return {k: np.broadcast_to(v, (heads, *v.shape)).copy() for k, v in one.items()}


def prepare(cfg: Config, heads: int = 1, threads: int | None = None) -> Launch | TritonLaunch:
    """Validate the launches against the device, compile them (NVRTC, cached) and return them ready to call. A
    Triton kernel is compiled by launching it once."""
    cp = device.require_gpu()
    cfg = get(cfg.algo).validated(cfg)
    s = spec(cfg.algo)
    if not 1 <= heads <= MAX_GRID_Y:
        raise ConfigError("heads", f"batch*heads must be in 1..{MAX_GRID_Y} (got {heads})")
    if isinstance(s, TritonSpec):
        _no_threads(threads)
        return TritonLaunch(s.launch(cfg, _triton_heads(s, cfg, heads))[1])
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
        file = s.file_of(k)
        try:
            fn = nvrtc.function(file, name, smem)
        except cp.cuda.compiler.CompileException as exc:
            last = str(exc).strip().splitlines()[-1]
            raise device.GpuUnavailable(f"NVRTC could not compile {name}: {last}") from None
        compiled.append(Compiled(k, file.name, name, k.grid(cfg, heads), (block, 1, 1), smem, fn))
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
    cp = device.require_gpu()
    algo = get(cfg.algo)
    s = spec(cfg.algo)
    if isinstance(s, TritonSpec):
        _no_threads(threads)
        return _launch_triton(s, cfg, inputs)
    arrays, kinds = {}, set()
    for name in algo.inputs:
        arrays[name], kind = _to_device(inputs[name], cp)
        kinds.add(kind)
    lead = arrays[algo.inputs[0]].shape[:-2]
    for name in algo.inputs:
        if arrays[name].shape != (*lead, cfg.n, cfg.d):
            raise ConfigError(name, f"must have shape (..., {cfg.n}, {cfg.d}) (got {arrays[name].shape})")
    heads = math.prod(lead)
    run = prepare(cfg, heads, threads)
    assert isinstance(run, Launch)  # a Triton spec returned above
    for name, shape in run.spec.shapes.items():  # outputs and intermediates, poisoned: unwritten stays NaN
        if name not in arrays:
            arrays[name] = cp.full((*lead, *shape(cfg)), cp.nan, dtype=cp.float32)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    run(arrays)
    end.record()
    end.synchronize()
    facts = {**run.describe(), "heads": heads, "time_ms": cp.cuda.get_elapsed_time(start, end)}
    kind = kinds.pop() if len(kinds) == 1 else "numpy"
    return {name: _from_device(arrays[name], kind) for name in algo.outputs}, facts


def _launch_triton(s: TritonSpec, cfg: Config, inputs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The folder's host code on every head of `inputs` (NumPy, (..., N, D)); outputs come back as NumPy."""
    algo = get(s.algo)
    arrays = {name: np.asarray(inputs[name], dtype=np.float32) for name in algo.inputs}
    lead = arrays[algo.inputs[0]].shape[:-2]
    for name in algo.inputs:
        if arrays[name].shape != (*lead, cfg.n, cfg.d):
            raise ConfigError(name, f"must have shape (..., {cfg.n}, {cfg.d}) (got {arrays[name].shape})")
    heads = math.prod(lead)
    if not 1 <= heads <= MAX_GRID_Y:
        raise ConfigError("heads", f"batch*heads must be in 1..{MAX_GRID_Y} (got {heads})")
    flat = {k: v.reshape(heads, cfg.n, cfg.d) for k, v in arrays.items()}
    outputs, facts = s.launch(cfg, flat)
    shaped = {name: outputs[name].reshape(*lead, *s.shapes[name](cfg)) for name in algo.outputs}
    return shaped, {**facts, "heads": heads}


def launcher(
    cfg: Config,
    heads: int = 1,
    batch: int = 1,
    threads: int | None = None,
    inputs_path: str | None = None,
    check: bool = False,
) -> list[str]:
    """The command that launches the kernel once: `python -m flashviz gpu run` with the same settings."""
    args = [sys.executable, "-m", "flashviz", "gpu", "run", "--algo", cfg.algo, "--br", str(cfg.br)]
    args += ["--bc", str(cfg.bc), "--heads", str(heads), "--batch", str(batch), "--quiet"]
    if inputs_path is not None:
        args += ["--inputs", str(inputs_path)]
    else:
        args += ["--n", str(cfg.n), "--d", str(cfg.d), "--seed", str(cfg.seed)]
    if cfg.scale is not None:
        args += ["--scale", repr(float(cfg.scale))]
    if cfg.causal:
        args += ["--causal"]
    if threads is not None:
        args += ["--threads", str(threads)]
    args += ["--check" if check else "--no-check"]
    return args
