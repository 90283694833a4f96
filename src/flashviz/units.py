"""Units every layer shares: the kernels' element size, and bytes as a reader wants them."""

from __future__ import annotations

FLOAT_BYTES = 4  # the kernels are fp32


def human_bytes(b: float, digits: int = 2) -> str:
    """Decimal units (KB = 1000 B), as bandwidths are quoted: 136.31 MB."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if b < 1000 or unit == "TB":
            return f"{b:,} B" if unit == "B" else f"{b:.{digits}f} {unit}"
        b /= 1000
    raise AssertionError  # unreachable


def kib(b: int) -> str:
    """Binary units, as shared memory is sized: 80.5 KiB."""
    return f"{b / 1024:,.1f} KiB"
