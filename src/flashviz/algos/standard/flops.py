"""FLOPs of one head of standard.cu's three kernels in closed form, by kind (flashviz.engine.flops), checked against
the engine's counters. Kernel 1 computes Sij = τ·QiKjᵀ per (i, j) pair; kernel 2 one row of S at a time over its
w_i columns (max, then exp and sum, then exp again and divide: the kernel computes each exp twice); kernel 3 adds
Pij·Vj into Oi per pair."""

from __future__ import annotations

from flashviz.model.tiling import sum_tiles, sum_width

FORMULAS = {
    "matmul": "4·Br·Bc·D per pair: Sij = QiKjᵀ and Pij·Vj",
    "exp": "2 per entry of S a row uses: each exp computed twice",
    "max": "1 per entry of S a row uses",
    "add": "3 per entry of S a row uses, Br·D per pair (Oi +=)",
    "mul": "Br·Bc per pair: τ·Sij",
    "div": "1 per entry of P: exp / l",
    "log": "none",
}


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, int]:
    pairs = sum_tiles(n, br, bc, causal)
    entries = sum_width(n, br, bc, causal, weighted=True)  # entries of S the rows use: N² if not causal
    return {
        "matmul": 4 * br * bc * d * pairs,
        "exp": 2 * entries,
        "log": 0,
        "max": entries,
        "add": 3 * entries + br * d * pairs,
        "mul": br * bc * pairs,
        "div": entries,
    }
