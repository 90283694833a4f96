"""Units every layer shares: the kernels' element size, the shared memory a block may have, and bytes as a reader
wants them.

One convention, the one Nsight Compute and CUDA use: bytes moved across HBM in decimal units (1 kB = 1000 B,
1 MB = 10^6 B, as ncu and bandwidths quote them), shared memory in binary units (1 KiB = 1024 B, as CUDA sizes
it: 48 KiB static, 227 KiB opt-in). Both round half up on the exact integer, never through a float, so the web
viewer's `web/src/format.ts` (the same two functions) prints the very same strings as the CLI.
"""

from __future__ import annotations

import math

FLOAT_BYTES = 4  # the kernels are fp32

# Shared memory per block on Hopper (H100/H200): 48 KiB without opting in, 227 KiB with
# cudaFuncAttributeMaxDynamicSharedMemorySize.
SMEM_STATIC_BYTES = 48 * 1024
SMEM_OPTIN_BYTES = 227 * 1024

DECIMAL_UNITS = ("B", "kB", "MB", "GB", "TB", "PB", "EB")


def _rounded(b: int, unit: int, digits: int) -> tuple[int, int]:
    """b / unit rounded half up to `digits` decimals, as (whole, fraction in units of 10^-digits)."""
    scale = 10**digits
    q, r = divmod(b * scale, unit)
    if 2 * r >= unit:
        q += 1
    return divmod(q, scale)


def _fixed(whole: int, frac: int, digits: int) -> str:
    return f"{whole:,}" + (f".{frac:0{digits}d}" if digits else "")


def _whole(b: float) -> tuple[str, int]:
    """The sign and |b| rounded half up to whole bytes (ints exactly, however large)."""
    a = abs(b) if isinstance(b, int) else math.floor(abs(b) + 0.5)
    return ("-" if b < 0 and a else ""), a


def human_bytes(b: float, digits: int = 1) -> str:
    """Bytes moved, in decimal units: 352 B, 1.5 kB, 136.3 MB (1 kB = 1000 B)."""
    sign, a = _whole(b)
    if a < 1000:
        return f"{sign}{a} B"
    k = 1
    while k < len(DECIMAL_UNITS) - 1 and a >= 1000 ** (k + 1):
        k += 1
    whole, frac = _rounded(a, 1000**k, digits)
    if whole >= 1000 and k < len(DECIMAL_UNITS) - 1:  # 999.95 kB rounds to 1.0 MB, not 1,000.0 kB
        k += 1
        whole, frac = _rounded(a, 1000**k, digits)
    return f"{sign}{_fixed(whole, frac, digits)} {DECIMAL_UNITS[k]}"


def kib(b: float) -> str:
    """Shared memory, in binary units as CUDA sizes it: 352 B, 48.0 KiB, 80.5 KiB (1 KiB = 1024 B)."""
    sign, a = _whole(b)
    if a < 1024:
        return f"{sign}{a} B"
    whole, frac = _rounded(a, 1024, 1)
    return f"{sign}{_fixed(whole, frac, 1)} KiB"
