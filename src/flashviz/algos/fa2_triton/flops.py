"""FLOPs of kernel.py's `fa2_fwd` in closed form, by kind (flashviz.engine.flops), checked against the engine's
counters. What the kernel computes, on whole tiles (Triton computes every row and column of a tile; masks select,
they do not skip): per (i, j) pair Sij = tl.dot(Qi, Kjᵀ), the online softmax in units of log2 with the scale folded
into one multiply, and tl.dot(bf16(P), Vj, Oi); per block Oi / li and L = (mi + log2 li)·ln 2.

The tiles are D wide with D the head dimension rounded up to a power of two (`tiles.padded`: 96 runs as 128, the
columns past it read as zeros): the products and Oi's operations are counted at that width, as the kernel runs them.
The loop over tiles runs in kernel.py's three stages (the band's left edge, masked; the tiles wholly inside it; its
right edge and the ragged end, masked); every pair costs the same in each, so the count needs only the pairs and the
blocks (`traffic.sums`: one head, or one K/V head with its group of q heads, its packed sequences and its window).

SCALE_FIRST (a scale <= 0, or soft-capping) scales each score before its max: Br·Bc multiplies where the plain path
multiplies the row max (Br) and folds the scale into the fma of the exponent (Br·Bc); soft-capping then computes
softcap2·tanh(s) as kernel.py's `_tanh` does, both of its forms on every score before it selects one: 1 − 2 /
(exp2(2·log2e·s) + 1), two multiplies, an exp2, two additions and a division, and the series near 0,
s + s·s·s·(−1/3), three multiplies and an addition."""

from __future__ import annotations

from .tiles import padded
from .traffic import sums

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
SOFTCAP_FORMULAS = {  # what soft-capping adds per pair (tanh by one exp2), and SCALE_FIRST's multiplies
    "exp": "+ Br·Bc per pair with softcap: the exp2 of tanh",
    "add": "+ 3·Br·Bc per pair with softcap: tanh's + 1 and 1 −, and its series' one",
    "mul": "with SCALE_FIRST Br·Bc per pair scale the scores (Br fewer: no rowmax·qk_scale); with softcap + 5·Br·Bc: "
    "2·log2e·s, softcap2·tanh and the series' three",
    "div": "+ Br·Bc per pair with softcap: tanh's 2 / (…)",
}


def count(
    n: int,
    d: int,
    br: int,
    bc: int,
    causal: bool = False,
    *,
    group: int = 1,
    seqs: list[tuple[int, int]] | None = None,
    window: tuple[int, int] = (-1, -1),
    softcap: float = 0.0,
    scale_first: bool = False,
) -> dict[str, int]:
    s = sums(n, br, bc, causal, group, seqs, window)
    pairs, blocks, dp = s["pairs"], s["blocks"], padded(d)
    tile = br * bc
    capped = softcap > 0
    first = scale_first or capped
    return {
        "matmul": 4 * tile * dp * pairs,
        "exp": (tile + br + (tile if capped else 0)) * pairs,
        "log": br * blocks,
        "max": (tile + br) * pairs,
        "add": (2 * tile + 2 * br + (3 * tile if capped else 0)) * pairs + br * blocks,
        "mul": (tile + (br if first else 2 * br) + br * dp + (5 * tile if capped else 0)) * pairs + br * blocks,
        "div": (tile if capped else 0) * pairs + br * dp * blocks,
    }
