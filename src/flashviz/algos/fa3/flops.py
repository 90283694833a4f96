"""FLOPs of one head of fa3's forward in closed form, by kind (flashviz.engine.flops), checked against the engine's
counters. Per (i, j) pair the same operations as fa2-triton's kernel (Sij, the base-2 online softmax, Oi·alpha and
P·V), only moved: Oi·alpha and P·V of tile j run in tile j+1's step, the last in `last_pv`; per block Oi / li and
L. D is 64 or 128, already a power of two, so fa2-triton's closed form at the same tiles is this one."""

from __future__ import annotations

from ..fa2_triton import flops as same

FORMULAS = same.FORMULAS


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, int]:
    return same.count(n, d, br, bc, causal)
