"""FLOPs of one head of fa2_forward.cu in closed form, by kind (flashviz.engine.flops), checked against the engine's
counters. Per (i, j) pair the block computes Sij = τ·QiKjᵀ, the online softmax and P·Vj on the whole tile; per block
the one division Oi / li and L = mi + log li at write-back."""

from __future__ import annotations

from flashviz.model.tiling import count as blocks
from flashviz.model.tiling import sum_tiles

# per kind, how the count is made up: per (i, j) pair, and per block at write-back
FORMULAS = {
    "matmul": "4·Br·Bc·D per pair: Sij = QiKjᵀ and P·Vj",
    "exp": "(Br·Bc + Br) per pair: P = exp(Sij − mi), α = exp(m_old − m_new)",
    "max": "(Br·Bc + Br) per pair: rowmax(Sij), max(mi, ·)",
    "add": "(2·Br·Bc + 2·Br + Br·D) per pair, Br per block (L = mi + log li)",
    "mul": "(Br·Bc + Br + Br·D) per pair: τ·Sij, α·li, α·Oi",
    "div": "Br·D per block: Oi / li, once, at write-back",
    "log": "Br per block: log li",
}


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, int]:
    pairs, tr = sum_tiles(n, br, bc, causal), blocks(n, br)
    return {
        "matmul": 4 * br * bc * d * pairs,
        "exp": (br * bc + br) * pairs,
        "log": br * tr,
        "max": (br * bc + br) * pairs,
        "add": (2 * br * bc + 2 * br + br * d) * pairs + br * tr,
        "mul": (br * bc + br + br * d) * pairs,
        "div": br * d * tr,
    }
