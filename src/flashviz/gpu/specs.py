"""What it takes to launch each algorithm's kernels: one table entry per algorithm.

The algorithm registry (`flashviz.algorithms`) names each algorithm's kernel file, inputs and outputs.
A `KernelSpec` adds what only the GPU needs: the per-head shape of every HBM tensor (intermediates
such as S and P too) and the launches in order, each with its template arguments, pointer and scalar
arguments, grid and blockDim requirement. Adding an algorithm is one entry in `SPECS`. Each launch's
shared memory is read from the kernel file's own `<template>_smem_bytes` macro, so the runner and the
kernel cannot disagree about it. `spans` (fa2 only, so far) lists the contiguous runs of memory the
kernel's loops move, for the 32-byte-sector model of `profile`.
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
from ..config import Config, ConfigError

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
    file_of: str | None = None  # compile from this algorithm's kernel file (default: the spec's own)

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
    shapes: dict[str, Callable[[Config], tuple[int, ...]]]  # per-head shape of every tensor
    kernels: tuple[Kernel, ...]
    spans: Callable[[Config], dict[str, tuple[np.ndarray, np.ndarray]]] | None = None  # see fa2_spans
    counted: tuple[str, ...] | None = None  # templates whose traffic the model counts (default: all)
    reuse: str | None = None  # what the caches mostly serve, for the profile's summary

    @property
    def algorithm(self) -> Algorithm:
        return get(self.algo)

    def file_algo(self, k: Kernel) -> str:
        return k.file_of or self.algo

    def smem_bytes(self, k: Kernel, cfg: Config) -> int:
        args = k.smem_args(cfg) if k.smem_args is not None else k.template_args(cfg)
        return smem_macro(self.file_algo(k), k.template)(*args)

    def counts(self, template: str) -> bool:
        return self.counted is None or template in self.counted


def fa2_spans(cfg: Config) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per tensor, (first element, element count) of each contiguous run that one head's blocks move.

    Every loop of the kernel walks a tile's elements x = tid, tid + blockDim.x, ... with consecutive
    threads on consecutive elements, so one warp instruction covers 32 consecutive elements of a run,
    counted from the run's first element: the unit the 32-byte-sector model in `profile` rounds.
    """
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    rows0 = np.arange(cfg.tr) * br
    q_rows = np.minimum(n, rows0 + br) - rows0  # rows of block i (the last may be short)
    tiles = [cfg.tiles_of_block(i) for i in range(cfg.tr)]
    j = np.concatenate([np.arange(t) for t in tiles])  # the tile of every (block, tile) pair
    kv_rows = np.minimum(n, (j + 1) * bc) - j * bc
    return {
        "Q": (rows0 * d, q_rows * d),
        "K": (j * bc * d, kv_rows * d),
        "V": (j * bc * d, kv_rows * d),
        "O": (rows0 * d, q_rows * d),
        "L": (rows0, q_rows),
    }


def tr_grid(c: Config, heads: int) -> tuple[int, int, int]:
    return (c.tr, heads, 1)


def fa2_kernel(file_of: str | None = None) -> Kernel:
    return Kernel(
        "fa2",
        lambda c: (c.br, c.bc, c.d),
        ("Q", "K", "V", "O", "L"),
        lambda c: (("int", c.n), ("float", c.softmax_scale), ("int", int(c.causal))),
        tr_grid,
        min_threads=lambda c: c.br,  # one thread per row of Qi for the softmax and P @ V
        file_of=file_of,
    )


SPECS: dict[str, KernelSpec] = {
    "fa2": KernelSpec(
        "fa2",
        {"Q": nd, "K": nd, "V": nd, "O": nd, "L": rows},
        (fa2_kernel(),),
        spans=fa2_spans,
        reuse="mostly K and V, re-read by every block of Q",
    ),
    "fa1": KernelSpec(
        "fa1",
        {"Q": nd, "K": nd, "V": nd, "O": nd, "l": rows, "m": rows},
        (
            Kernel(
                "fa1",
                lambda c: (c.br, c.bc, c.d),
                ("Q", "K", "V", "O", "l", "m"),
                lambda c: (("int", c.n), ("float", c.softmax_scale), ("int", int(c.causal))),
                lambda c, heads: (heads, 1, 1),  # one block per head
                min_threads=lambda c: c.br,
            ),
        ),
    ),
    "standard": KernelSpec(
        "standard",
        {"Q": nd, "K": nd, "V": nd, "S": lambda c: (c.n, c.n), "P": lambda c: (c.n, c.n), "O": nd},
        (
            Kernel(
                "standard_scores",
                lambda c: (c.br, c.bc, c.d),
                ("Q", "K", "S"),
                lambda c: (("int", c.n), ("float", c.softmax_scale), ("int", int(c.causal))),
                tr_grid,
            ),
            Kernel(
                "standard_softmax",
                lambda c: (c.br, c.bc),
                ("S", "P"),
                lambda c: (("int", c.n), ("int", int(c.causal))),
                tr_grid,
                smem_args=lambda c: (c.n,),  # one whole row of S
            ),
            Kernel(
                "standard_pv",
                lambda c: (c.br, c.bc, c.d),
                ("P", "V", "O"),
                lambda c: (("int", c.n), ("int", int(c.causal))),
                tr_grid,
            ),
        ),
    ),
    "fa2-backward": KernelSpec(
        "fa2-backward",
        {
            **{name: nd for name in ("Q", "K", "V", "dO", "O", "dQ", "dK", "dV")},
            "L": rows,
            "Delta": rows,  # the trace's D (rowsum(dO * O)); D is the head dimension in the kernel
        },
        (
            fa2_kernel(file_of="fa2"),  # O and L from the forward kernel itself, as the engine takes them from its
            Kernel(
                "fa2_bwd_preprocess",
                lambda c: (c.br, c.d),
                ("O", "dO", "Delta", "dQ"),
                lambda c: (("int", c.n),),
                tr_grid,
                min_threads=lambda c: c.br,
            ),
            Kernel(
                "fa2_bwd",
                lambda c: (c.br, c.bc, c.d),
                ("Q", "K", "V", "dO", "L", "Delta", "dQ", "dK", "dV"),
                lambda c: (("int", c.n), ("float", c.softmax_scale), ("int", int(c.causal))),
                lambda c, heads: (c.tc, heads, 1),
            ),
        ),
        counted=("fa2_bwd_preprocess", "fa2_bwd"),  # the forward's traffic is fa2's model, not this one's
    ),
}


def spec(algo: str) -> KernelSpec:
    if algo not in SPECS:
        raise ConfigError("algo", f"{algo} has no GPU launch yet (flashviz gpu runs {', '.join(SPECS)})")
    return SPECS[algo]


_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


@cache
def smem_macro(algo: str, template: str) -> Callable[..., int]:
    """The kernel file's `#define <template>_smem_bytes(a, b, ...) (expr)` as a Python function.

    Only integer literals, the macro's parameters, +, - and * are accepted.
    """
    name = f"{template}_smem_bytes"
    m = re.search(rf"^#define\s+{name}\(([^)]*)\)\s+(.+)$", kernels.source(algo), re.MULTILINE)
    if m is None:
        raise LookupError(f"{kernels.kernel_file(algo)} defines no {name} macro")
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
