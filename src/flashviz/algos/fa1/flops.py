"""FLOPs of one head of fa1_forward.cu in closed form, by kind (flashviz.engine.flops), checked against the engine's
counters. Every (j, i) visit computes Sij = τ·QiKjᵀ, the tile's max and sum, the new max and sum, and Oi rescaled
and divided by the new li: the division by diag(l) is on every visit, not once at the end as in fa2."""

from __future__ import annotations

from flashviz.model.tiling import sum_tiles

FORMULAS = {
    "matmul": "4·Br·Bc·D per pair: Sij = QiKjᵀ and P̃·Vj",
    "exp": "(Br·Bc + 2·Br) per pair: P̃ = exp(Sij − m̃), α, β",
    "max": "(Br·Bc + Br) per pair: rowmax(Sij), max(mi, m̃)",
    "add": "(2·Br·Bc + 3·Br + Br·D) per pair",
    "mul": "(Br·Bc + 3·Br + 2·Br·D) per pair: τ·Sij, α·li, β·l̃, li·α, (li·α)·Oi, β·P̃Vj",
    "div": "Br·D per pair: Oi / li_new on every visit",
    "log": "none: l and m leave as two arrays",
}


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, int]:
    pairs = sum_tiles(n, br, bc, causal)
    return {
        "matmul": 4 * br * bc * d * pairs,
        "exp": (br * bc + 2 * br) * pairs,
        "log": 0,
        "max": (br * bc + br) * pairs,
        "add": (2 * br * bc + 3 * br + br * d) * pairs,
        "mul": (br * bc + 3 * br + 2 * br * d) * pairs,
        "div": br * d * pairs,
    }
