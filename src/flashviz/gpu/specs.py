"""What it takes to launch each algorithm's kernel: one table entry per algorithm.

The algorithm registry (`flashviz.algorithms`) already names each kernel's file, its __global__
template, its inputs and outputs. A `KernelSpec` adds what only a launch needs: the template
arguments, the scalar arguments after the tensors, each output's per-head shape, blockDim and grid,
and the contiguous runs of memory the kernel's loops move (for the 32-byte-sector model of
`profile`). Adding a kernel (standard attention, FlashAttention-1, backward) is one entry in
`SPECS`. The shared-memory size is read from the kernel file's own `<template>_smem_bytes` macro,
so the runner and the kernel cannot disagree about it.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from .. import kernels
from ..algorithms import Algorithm, get
from ..config import Config

WARP = 32
MIN_THREADS = 128  # four warps: enough hands for the Br x Bc score loop when Br is small
MAX_THREADS = 1024


@dataclass(frozen=True)
class KernelSpec:
    algo: str
    # after the tensor pointers (inputs, then outputs, in the registry's order): (C type, value) pairs
    scalars: Callable[[Config], tuple[tuple[str, float | int], ...]]
    template_args: Callable[[Config], tuple[int, ...]]
    outputs: dict[str, Callable[[Config], tuple[int, ...]]]  # per-head shape of each output
    min_threads: Callable[[Config], int]  # the kernel's own requirement on blockDim.x
    grid: Callable[[Config, int], tuple[int, int, int]]  # (cfg, heads B*H) -> gridDim
    spans: Callable[[Config], dict[str, tuple[np.ndarray, np.ndarray]]]  # see fa2_spans

    @property
    def algorithm(self) -> Algorithm:
        return get(self.algo)

    def name_expression(self, cfg: Config) -> str:
        return f"{self.algorithm.kernel_name}<{','.join(str(a) for a in self.template_args(cfg))}>"

    def smem_bytes(self, cfg: Config) -> int:
        return smem_macro(self.algo)(*self.template_args(cfg))

    def threads(self, cfg: Config, threads: int | None = None) -> int:
        """blockDim.x: the requested count, or the kernel's minimum rounded up to whole warps."""
        if threads is not None:
            return threads
        return max(MIN_THREADS, -(-self.min_threads(cfg) // WARP) * WARP)


def fa2_spans(cfg: Config) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per tensor, (first element, element count) of each contiguous run that one head's blocks move.

    Every loop of the kernel walks a tile's elements x = tid, tid + blockDim.x, ... with consecutive
    threads on consecutive elements, so one warp instruction covers 32 consecutive elements of a run,
    counted from the run's first element: the unit the 32-byte-sector model in `profile` rounds.
    """
    from ..engine.fa2 import tiles_of_block

    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    rows0 = np.arange(cfg.tr) * br
    q_rows = np.minimum(n, rows0 + br) - rows0  # rows of block i (the last may be short)
    tiles = [tiles_of_block(cfg, i) for i in range(cfg.tr)]
    j = np.concatenate([np.arange(t) for t in tiles])  # the tile of every (block, tile) pair
    kv_rows = np.minimum(n, (j + 1) * bc) - j * bc
    return {
        "Q": (rows0 * d, q_rows * d),
        "K": (j * bc * d, kv_rows * d),
        "V": (j * bc * d, kv_rows * d),
        "O": (rows0 * d, q_rows * d),
        "L": (rows0, q_rows),
    }


SPECS: dict[str, KernelSpec] = {
    "fa2": KernelSpec(
        algo="fa2",
        scalars=lambda c: (("int", c.n), ("float", c.softmax_scale), ("int", int(c.causal))),
        template_args=lambda c: (c.br, c.bc, c.d),
        outputs={"O": lambda c: (c.n, c.d), "L": lambda c: (c.n,)},
        min_threads=lambda c: c.br,  # one thread per row of Qi for the softmax and P @ V
        grid=lambda c, heads: (c.tr, heads, 1),
        spans=fa2_spans,
    ),
}


def spec(algo: str) -> KernelSpec:
    return SPECS[algo]


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


@cache
def smem_macro(algo: str) -> Callable[..., int]:
    """The kernel file's `#define <template>_smem_bytes(a, b, ...) (expr)` as a Python function.

    Only integer literals, the macro's parameters, +, - and * are accepted.
    """
    name = f"{get(algo).kernel_name}_smem_bytes"
    m = re.search(rf"^#define\s+{name}\(([^)]*)\)\s+(.+)$", kernels.source(algo), re.MULTILINE)
    if m is None:
        raise LookupError(f"{kernels.kernel_file(algo)} defines no {name} macro")
    params = [p.strip() for p in m[1].split(",")]
    tree = ast.parse(m[2].strip(), mode="eval").body

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
