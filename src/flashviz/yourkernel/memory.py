"""HBM as the kernel sees it under the interpreter: the tensors flashviz passes, at their real addresses, each with a
guard zone after it (and before it) that belongs to no tensor, and the mapping of an address back to a tensor and an
element.

A pointer of the kernel is a raw address (the interpreter dereferences it in C++), so every address a load or a
store touches is looked up here before it is dereferenced: one that falls in a guard zone, or in no tensor at all,
is an out-of-bounds access, named and stopped, never read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

GUARD_MIN_ELEMENTS = 4096  # at least this much guard on each side; one head's N*D when that is more


@dataclass(frozen=True)
class Region:
    name: str  # Q, K, V, O, L
    base: int  # address of element 0
    elements: int
    itemsize: int
    shape: tuple[int, ...]  # (Z, H, N, D) or (Z, H, N): contiguous

    @property
    def end(self) -> int:
        return self.base + self.elements * self.itemsize


def guard_elements(shape: tuple[int, ...]) -> int:
    return max(GUARD_MIN_ELEMENTS, int(np.prod(shape[2:])))


def guarded(shape: tuple[int, ...], dtype: Any, fill: float) -> tuple[Any, Any]:
    """(a contiguous torch tensor of `shape` filled with `fill`, the buffer that holds it with its guard zones)."""
    import torch

    elements = int(np.prod(shape))
    guard = guard_elements(shape)
    itemsize = torch.empty((), dtype=dtype).element_size()
    pad = 128 // itemsize
    buffer = torch.full((elements + 2 * guard + pad,), fill, dtype=dtype)
    # start on a 128-byte boundary, as a GPU allocation does (tensor descriptors want 16)
    skew = (-(buffer.data_ptr() + guard * itemsize) % 128) // itemsize
    tensor = buffer[guard + skew : guard + skew + elements].view(shape)
    return tensor, buffer


class Memory:
    """The tensors the kernel may touch, sorted by address."""

    def __init__(self, tensors: dict[str, Any]):
        regions = []
        for name, t in tensors.items():
            regions.append(Region(name, t.data_ptr(), t.numel(), t.element_size(), tuple(t.shape)))
        self.regions = sorted(regions, key=lambda r: r.base)
        self.by_name = {r.name: r for r in self.regions}
        self._bases = np.array([r.base for r in self.regions], dtype=np.uint64)

    def locate(self, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index into `regions` per address, -1 outside every tensor; element index, -1 outside)."""
        a = np.asarray(addresses, dtype=np.uint64)
        k = np.searchsorted(self._bases, a, side="right").astype(np.int64) - 1
        region = np.full(a.shape, -1, dtype=np.int64)
        element = np.full(a.shape, -1, dtype=np.int64)
        for idx, r in enumerate(self.regions):
            here = k == idx
            if not here.any():
                continue
            offset = (a[here] - np.uint64(r.base)).astype(np.int64)
            inside = (offset < r.elements * r.itemsize) & (offset % r.itemsize == 0)
            sub_region = np.where(inside, idx, -1)
            region[here] = sub_region
            element[here] = np.where(inside, offset // r.itemsize, -1)
        return region, element

    def nearest(self, address: int) -> tuple[Region, int]:
        """The tensor an out-of-bounds address is nearest to, and how many elements past its end (negative: before
        its start)."""
        best = min(self.regions, key=lambda r: min(abs(address - r.base), abs(address - r.end)))
        if address >= best.end:
            return best, (address - best.end) // best.itemsize
        return best, -((best.base - address) // best.itemsize) if address < best.base else 0

    def coordinates(self, name: str, elements: np.ndarray) -> tuple[np.ndarray, ...]:
        """(z, h, row[, col]) of flat element indices of tensor `name`."""
        return np.unravel_index(np.asarray(elements, dtype=np.int64), self.by_name[name].shape)
