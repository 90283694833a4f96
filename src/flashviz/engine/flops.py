"""The engine's FLOP counter: every executor does its arithmetic through these helpers, which compute with NumPy
and count what they computed, by kind, from the arrays' own shapes.

Kinds (one floating-point operation each, except a matrix product's multiply-add, which is two, as FLOP/s are
quoted): `matmul`, the products of tiles (2·m·n·k each: what tensor cores run in a real kernel); and the rest, the
"non-matmul" FLOPs of the FlashAttention-2 paper (section 3.1), which run on the CUDA cores and the special-function
units: `exp`, `log`, `max` (a comparison), `add` (an addition or a subtraction), `mul` and `div`. Counted as the
kernel's threads execute them: on whole tiles (padding rows and masked scores included) unless the kernel skips
them; a row max or sum of n elements is n operations (the kernels start from −∞ or 0).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from flashviz.model.flop_kinds import KINDS, MATMUL, NON_MATMUL, total
from flashviz.model.precision import fma

__all__ = ["KINDS", "MATMUL", "NON_MATMUL", "Flops", "total"]


class Flops:
    """Counts as it computes; `take()` hands over what was counted since the last take (the recorder files it under
    the phase of the step it emits)."""

    def __init__(self) -> None:
        self.pending: Counter[str] = Counter()

    def take(self) -> Counter[str]:
        out, self.pending = self.pending, Counter()
        return out

    def count(self, kind: str, n: int) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown FLOP kind {kind!r}")
        self.pending[kind] += int(n)

    # ---- tile products ----
    def matmul(self, a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """a @ b, (m, k) @ (k, n): 2·m·n·k FLOPs; a stack of them, (..., m, k) @ (..., k, n), counts each matrix of
        the (broadcast) stack (NumPy runs each as its own product of that shape: the same numbers as one by one)."""
        (m, k), (k2, n) = a.shape[-2:], b.shape[-2:]
        assert k == k2, (a.shape, b.shape)
        stack = math.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
        self.count(MATMUL, 2 * m * n * k * stack)
        return np.matmul(a, b, out=out) if out is not None else a @ b

    # ---- elementwise: one FLOP per element of the (broadcast) result ----
    def _elementwise(self, kind: str, result: np.ndarray) -> np.ndarray:
        self.count(kind, np.size(result))
        return result

    def add(self, a, b) -> np.ndarray:
        return self._elementwise("add", np.add(a, b))

    def sub(self, a, b) -> np.ndarray:
        return self._elementwise("add", np.subtract(a, b))

    def mul(self, a, b) -> np.ndarray:
        return self._elementwise("mul", np.multiply(a, b))

    def div(self, a, b) -> np.ndarray:
        return self._elementwise("div", np.divide(a, b))

    def exp(self, x) -> np.ndarray:
        return self._elementwise("exp", np.exp(x))

    def log(self, x) -> np.ndarray:
        return self._elementwise("log", np.log(x))

    def exp2(self, x) -> np.ndarray:
        """2**x: one `exp` (the special-function unit's ex2, which exp(x) becomes once x is scaled by log2 e)."""
        return self._elementwise("exp", np.exp2(x))

    def log2(self, x) -> np.ndarray:
        return self._elementwise("log", np.log2(x))

    def fma(self, a, b, c) -> np.ndarray:
        """a·b + c rounded once (the GPU's fused multiply-add): one `mul` and one `add` per element."""
        out = fma(a, b, c)
        self.count("mul", np.size(out))
        return self._elementwise("add", out)

    def fmax(self, a, b) -> np.ndarray:
        """fmaxf, elementwise (a NaN is passed over)."""
        return self._elementwise("max", np.fmax(a, b))

    # ---- reductions over the last axis: one FLOP per element reduced ----
    def rowmax(self, x: np.ndarray) -> np.ndarray:
        """fmaxf over each row, from −∞ (a row of n elements: n comparisons)."""
        self.count("max", np.size(x))
        return np.fmax.reduce(x, axis=-1, initial=-np.inf)

    def running_max(self, x: np.ndarray, start: np.ndarray) -> np.ndarray:
        """fmaxf(start, x[0]), then fmaxf of that and x[1], ...: what `fmax` gives tile after tile, for all tiles at
        once (stacked on the first axis; one comparison per element of x)."""
        self.count("max", np.size(x))
        return np.fmax.accumulate(np.concatenate([start[None], x]), axis=0)[1:]

    def rowsum(self, x: np.ndarray) -> np.ndarray:
        """The sum of each row, from 0 (a row of n elements: n additions)."""
        self.count("add", np.size(x))
        return x.sum(axis=-1)
