"""FLOPs of one head of fa2_backward.cu's two kernels in closed form, by kind (flashviz.engine.flops), checked against
the engine's counters (the forward it runs first for O and L is fa2's, not counted here). The preprocessing kernel
forms Deltai = rowsum(dOi ∘ Oi); per (j, i) pair the main kernel rebuilds Pij = exp(τ·QiKjᵀ − Li) and makes four
more tile products (dVj, dPij, dKj, dQi), the last on the block's real rows only."""

from __future__ import annotations

from flashviz.model.tiling import count as blocks
from flashviz.model.tiling import sum_tiles

FORMULAS = {
    "matmul": "8·Br·Bc·D per pair, and 2·Bc·D per real row of each pair: dQi += dSij·Kj",
    "exp": "Br·Bc per pair: Pij = exp(Sij − Li), with no max: L holds it",
    "max": "none",
    "add": "Br·D per block (Δ), (2·Br·Bc + 2·Bc·D) per pair, D per real row of each pair",
    "mul": "Br·D per block (Δ), (2·Br·Bc + Bc·D) per pair, D per real row of each pair",
    "div": "none",
    "log": "none",
}


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, int]:
    pairs, tr = sum_tiles(n, br, bc, causal), blocks(n, br)
    rows = sum_tiles(n, br, bc, causal, weighted=True)  # real rows summed over the pairs
    return {
        "matmul": 8 * br * bc * d * pairs + 2 * bc * d * rows,
        "exp": br * bc * pairs,
        "log": 0,
        "max": 0,
        "add": tr * br * d + (2 * br * bc + 2 * bc * d) * pairs + d * rows,
        "mul": tr * br * d + (2 * br * bc + bc * d) * pairs + d * rows,
        "div": 0,
    }
