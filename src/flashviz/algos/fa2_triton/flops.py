"""FLOPs of one head of kernel.py's `fa2_fwd` in closed form, by kind (flashviz.engine.flops), checked against the
engine's counters. What the kernel computes, on whole tiles (Triton computes every row and column of a tile; masks
select, they do not skip): per (i, j) pair Sij = tl.dot(Qi, Kjᵀ), the online softmax in units of log2 with the
scale folded into one multiply, and tl.dot(bf16(P), Vj, Oi); per block Oi / li and L = (mi + log2 li)·ln 2.

The tiles are D wide with D the head dimension rounded up to a power of two (`tiles.padded`: 96 runs as 128, the
columns past it read as zeros): the products and Oi's operations are counted at that width, as the kernel runs them.
Under causal masking the loop over tiles runs in two stages, the tiles wholly below block i's diagonal (no mask) and
its diagonal tiles (masked); not causal, the tiles wholly inside N and the ragged last one (its columns >= N masked).
Every pair costs the same in each stage; `stages` gives how many pairs each runs."""

from __future__ import annotations

from flashviz.model.tiling import count as blocks
from flashviz.model.tiling import sum_tiles

from .tiles import padded

# per kind, how the count is made up: per (i, j) pair, and per block at write-back (D: the padded head dimension)
FORMULAS = {
    "matmul": "4·Br·Bc·D per pair: Sij = QiKjᵀ and P·Vj (the add into Oi is the tensor cores' accumulate, inside it)",
    "exp": "(Br·Bc + Br) per pair: P = exp2(Sij·qk_scale − m_new), α = exp2(mi − m_new)",
    "max": "(Br·Bc + Br) per pair: rowmax(Sij), max(mi, ·)",
    "add": "(2·Br·Bc + 2·Br) per pair: the fma's − m_new, mi − m_new, rowsum(P), li·α + rowsum; "
    "Br per block: mi + log2 li",
    "mul": "(Br·Bc + 2·Br + Br·D) per pair: Sij·qk_scale (in the fma), rowmax·qk_scale, li·α, Oi·α; "
    "Br per block: ·ln 2",
    "div": "Br·D per block: Oi / li, once, at write-back",
    "log": "Br per block: log2 li",
}


def stages(n: int, br: int, bc: int, causal: bool = False) -> dict[str, int]:
    """The (i, j) pairs each loop stage of the kernel runs, over all blocks i."""
    tr = blocks(n, br)
    if causal:  # block i runs i·Br/Bc tiles below its diagonal (Br is a multiple of Bc), then its diagonal tiles
        below = (br // bc) * tr * (tr - 1) // 2
        return {"NO_MASK": below, "MASK_CAUSAL": sum_tiles(n, br, bc, True) - below}
    return {"NO_MASK": tr * (n // bc), "MASK_COLUMNS": tr * (1 if n % bc else 0)}


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, int]:
    pairs, tr, dp = sum(stages(n, br, bc, causal).values()), blocks(n, br), padded(d)
    return {
        "matmul": 4 * br * bc * dp * pairs,
        "exp": (br * bc + br) * pairs,
        "log": br * tr,
        "max": (br * bc + br) * pairs,
        "add": (2 * br * bc + 2 * br) * pairs + br * tr,
        "mul": (br * bc + 2 * br + br * dp) * pairs + br * tr,
        "div": br * dp * tr,
    }
