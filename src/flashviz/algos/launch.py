"""What it takes to launch an algorithm's kernels: the spec each algorithm's folder declares in its `gpu.py`
(`SPEC`; the registry finds one by name: `flashviz.algos.gpu_spec`). Two kinds: `KernelSpec` (CUDA C++ compiled
with NVRTC, launched through CuPy) and `TritonSpec` (a Triton kernel, compiled and launched by its own host code,
which the folder names).

The algorithm's record (`flashviz.algos`) names its kernel file, inputs and outputs. A `KernelSpec` adds what
only the GPU needs: the per-head shape of every HBM tensor (intermediates such as S and P too) and the launches
in order, each with its template arguments, pointer and scalar arguments, grid and blockDim requirement. Each
launch's shared memory is read from the kernel file's own `<template>_smem_bytes` macro, so the runner and the
kernel cannot disagree about it. `spans`, where an algorithm gives them, lists the contiguous runs of memory the
kernel's loops move, for the 32-byte-sector model of `sectors`.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from flashviz.model import kernels
from flashviz.model.config import Config
from flashviz.model.kernels import KernelFile

WARP = 32
MIN_THREADS = 128  # four warps: enough hands for the Br x Bc score loop when Br is small
MAX_THREADS = 1024


def nd(c: Config) -> tuple[int, ...]:
    return (c.n, c.d)


def rows(c: Config) -> tuple[int, ...]:
    return (c.n,)


@dataclass(frozen=True)
class Kernel:
    """One launch of one __global__ template."""

    template: str  # its name in the kernel file
    template_args: Callable[[Config], tuple[int, ...]]
    tensors: tuple[str, ...]  # the pointer arguments, in order
    scalars: Callable[[Config], tuple[tuple[str, float | int], ...]]  # then (C type, value) pairs
    grid: Callable[[Config, int], tuple[int, int, int]]  # (cfg, heads B*H) -> gridDim
    min_threads: Callable[[Config], int] = lambda c: 1  # the kernel's own requirement on blockDim.x
    smem_args: Callable[[Config], tuple[int, ...]] | None = None  # of <template>_smem_bytes; default template_args
    file_of: KernelFile | None = None  # compile from this kernel file (default: the spec's own)

    def name_expression(self, cfg: Config) -> str:
        return f"{self.template}<{','.join(str(a) for a in self.template_args(cfg))}>"

    def threads(self, cfg: Config, threads: int | None = None) -> int:
        """blockDim.x: the requested count, or the kernel's minimum rounded up to whole warps, >= 128."""
        if threads is not None:
            return threads
        return max(MIN_THREADS, -(-self.min_threads(cfg) // WARP) * WARP)


@dataclass(frozen=True)
class KernelSpec:
    """An algorithm on the GPU: the HBM tensors its launches touch, and the launches, in order."""

    algo: str
    kernel: KernelFile  # the algorithm's kernel file (Algorithm.kernel)
    shapes: dict[str, Callable[[Config], tuple[int, ...]]]  # per-head shape of every tensor
    kernels: tuple[Kernel, ...]
    spans: Callable[[Config], dict[str, tuple[np.ndarray, np.ndarray]]] | None = None  # e.g. fa2's gpu.spans
    counted: tuple[str, ...] | None = None  # templates whose traffic the model counts (default: all)
    reuse: str | None = None  # what the caches mostly serve, for the profile's summary

    def file_of(self, k: Kernel) -> KernelFile:
        """The kernel file launch `k` is compiled from."""
        return k.file_of or self.kernel

    def smem_bytes(self, k: Kernel, cfg: Config) -> int:
        args = k.smem_args(cfg) if k.smem_args is not None else k.template_args(cfg)
        return smem_macro(self.file_of(k), k.template)(*args)

    kind = "nvrtc"
    paths: dict[str, str] | None = None  # tensor -> how it moves: every CUDA C++ kernel here loads through the LSU

    def counts(self, template: str) -> bool:
        return self.counted is None or template in self.counted


TENSORMAP = 128  # bytes: one TMA tensor descriptor (CUtensorMap)


def tr_grid(c: Config, heads: int) -> tuple[int, int, int]:
    return (c.tr, heads, 1)


@dataclass(frozen=True)
class TritonKernel:
    """A Triton kernel's name as Nsight Compute sees it, and the HBM tensors it takes.

    `descriptors`: the tensors whose descriptors (`tl.make_tensor_descriptor`) each program builds on the device. Triton
    (3.4 on) writes each one's 128-byte tensormap into global scratch memory and publishes it with
    `tensormap.cp_fenceproxy` before the TMA may read it: bytes to memory that are no tensor's, which Nsight Compute
    counts in the LSU's atomic pipe (`l1tex__t_bytes_pipe_lsu_mem_global_op_atom.sum`)."""

    template: str
    tensors: tuple[str, ...]
    descriptors: tuple[str, ...] = ()
    grid: Callable[[Config, int], tuple[int, int, int]] = tr_grid  # (cfg, heads B*H) -> the launch grid

    def programs(self, cfg: Config, heads: int) -> int:
        g = self.grid(cfg, heads)
        return g[0] * g[1] * g[2]


@dataclass(frozen=True)
class TritonSpec:
    """An algorithm whose kernel is Triton: the folder gives the host code that compiles and launches it.

    `launch(cfg, inputs)`: inputs {name: (heads, ...) float32 NumPy} -> (outputs {name: (heads, ...) float32 NumPy},
    facts about the launch: kernel, grid, warps, stages, shared memory, registers, the matrix instructions in its
    compiled code, time_ms); it imports torch and Triton itself. `paths`: per tensor, how the kernel moves it ("tma":
    tensor descriptors, "lsu": ordinary loads and stores), which decides the Nsight Compute counters that see it."""

    algo: str
    shapes: dict[str, Callable[[Config], tuple[int, ...]]]
    kernels: tuple[TritonKernel, ...]
    launch: Callable[[Config, dict[str, np.ndarray]], tuple[dict[str, np.ndarray], dict]]
    paths: dict[str, str]
    reuse: str | None = None
    # cfg -> what one program takes of an SM (threads, smem, registers, each with its source), for the hardware view
    resources: Callable[[Config], dict] | None = None
    spans: None = None  # TMA moves whole tiles: no 32-byte-sector model of warp accesses
    counted: tuple[str, ...] | None = None
    kind = "triton"

    def counts(self, template: str) -> bool:
        return self.counted is None or template in self.counted

    def descriptors(self, cfg: Config, heads: int) -> dict | None:
        """The tensormaps the counted launches write (programs x descriptors per program x 128 bytes), or None."""
        counted = [k for k in self.kernels if self.counts(k.template) and k.descriptors]
        if not counted:
            return None
        return {
            "programs": sum(k.programs(cfg, heads) for k in counted),
            "per_program": {k.template: list(k.descriptors) for k in counted},
            "tensormap_bytes": TENSORMAP,
            "bytes": sum(k.programs(cfg, heads) * len(k.descriptors) * TENSORMAP for k in counted),
        }


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


@cache
def smem_macro(kernel: KernelFile, template: str) -> Callable[..., int]:
    """The kernel file's `#define <template>_smem_bytes(a, b, ...) (expr)` as a Python function.

    Only integer literals, the macro's parameters, +, - and * are accepted.
    """
    name = f"{template}_smem_bytes"
    m = re.search(rf"^#define\s+{name}\(([^)]*)\)\s+(.+)$", kernels.source(kernel), re.MULTILINE)
    if m is None:
        raise LookupError(f"{kernel.name} defines no {name} macro")
    params = [p.strip() for p in m[1].split(",")]
    tree = ast.parse(m[2].split("//")[0].strip(), mode="eval").body  # a trailing // comment is not the value

    def value(node: ast.AST, env: dict[str, int]) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and node.id in env:
            return env[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](value(node.left, env), value(node.right, env))
        raise ValueError(f"{name}: cannot evaluate {ast.unparse(node)}")

    def smem(*args: int) -> int:
        return value(tree, dict(zip(params, args, strict=True)))

    return smem
