"""What a tensor needs before a TMA descriptor is made of it (fa2's and fa3's launches, the ring's backward)."""

from __future__ import annotations


def tma_ready(t):
    """TMA wants a 16-byte aligned base and 16-byte multiples for every stride but the last: `t` when it has them,
    else a contiguous copy."""
    size = t.element_size()
    if t.data_ptr() % 16 == 0 and all(s * size % 16 == 0 for s in t.stride()[:-1]):
        return t
    return t.contiguous()
