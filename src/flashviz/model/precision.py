"""Low-precision storage in NumPy: the values a bf16 or fp16 tensor holds, kept in float32 arrays.

A tensor-core kernel reads Q, K, V in bf16 (or fp16) and rounds P to that type before P·V; its engine does the
same arithmetic on float32 arrays whose values are exactly representable in the low type. Rounding is to nearest,
ties to even, as the GPU's `cvt.rn` and torch do; ±inf stay, NaN stays NaN.
"""

from __future__ import annotations

import numpy as np

from flashviz.model.echo import cut

DTYPES = ("float32", "bfloat16", "float16")


def bf16(x: np.ndarray) -> np.ndarray:
    """x (float32) rounded to bfloat16, returned as float32: the 16 low bits of each value become zero."""
    a = np.ascontiguousarray(x, dtype=np.float32)
    bits = a.view(np.uint32)
    # round to nearest, ties to even, in uint32: only NaNs' bits (past 0xFF800000) can wrap around, and they are
    # replaced below; every other value rounds as in 64-bit arithmetic
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> 16) & np.uint32(1))) >> 16 << 16
    out = rounded.view(np.float32).reshape(a.shape)
    return np.where(np.isnan(a), np.float32(np.nan), out)


def stored(x: np.ndarray, dtype: str) -> np.ndarray:
    """x as a tensor of `dtype` holds it, in float32 (float32: unchanged)."""
    if dtype == "bfloat16":
        return bf16(x)
    if dtype == "float16":
        with np.errstate(over="ignore"):
            return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float32)
    if dtype == "float32":
        return np.asarray(x, dtype=np.float32)
    raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {cut(repr(dtype))}")


def fma(a: np.ndarray, b: np.ndarray | np.float32, c: np.ndarray) -> np.ndarray:
    """a·b + c rounded once to float32, as the GPU's fused multiply-add (the product of two float32 is exact in
    float64; the sum is then rounded to float64 and to float32, which differs from one rounding only in ties)."""
    return (np.asarray(a, np.float64) * np.float64(b) + np.asarray(c, np.float64)).astype(np.float32)
