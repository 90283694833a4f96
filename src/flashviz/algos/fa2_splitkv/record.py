"""What every part of the folder may know of its record: the algorithm's name, its kernel file, and its one launch
rule of its own, the split: how many chunks S the K/V sequence is cut into (the rest of the record, and the parts,
make `ALGORITHM` in `__init__`)."""

from __future__ import annotations

from flashviz.model.kernels import KernelFile
from flashviz.model.tiling import count

NAME = "fa2-splitkv"
KERNEL = KernelFile(__package__ or __name__, "fa2_splitkv.cu")
CHUNK = 2  # tiles of K/V per chunk: the K/V sequence's Tc tiles are cut into S = ceil(Tc / 2) chunks


def splits(n: int, bc: int) -> int:
    """S, the chunks of K/V (and the blocks each block of Q becomes): ceil(Tc / CHUNK)."""
    return count(count(n, bc), CHUNK)


def chunk(s: int, n: int, bc: int) -> tuple[int, int]:
    """[first, end) tiles of chunk s: CHUNK tiles, the last chunk fewer when Tc is odd."""
    return s * CHUNK, min(count(n, bc), (s + 1) * CHUNK)
