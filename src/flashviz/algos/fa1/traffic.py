"""FlashAttention(-1) forward, one head: K/V on the outer loop, so O, l and m are carried back and forth
through HBM (fa1_forward.cu).

K and V are read once. Every inner iteration (j, i) reads Qi, Oi, li, mi and writes Oi, li, mi; O, l and m
are also written once to initialise them. Not causal, every tile visits every block: Tc iterations per row.
"""

from __future__ import annotations

from ...tiling import sum_tiles
from ...units import FLOAT_BYTES


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, dict[str, int]]:
    # rows visited by inner iterations, summed over tiles: sum over blocks of nr_i * tc_i (Tc * N if not causal)
    visits = sum_tiles(n, br, bc, causal, weighted=True)
    return {
        "Q": {"read": visits * d, "written": 0},
        "K": {"read": n * d, "written": 0},
        "V": {"read": n * d, "written": 0},
        "O": {"read": visits * d, "written": (n + visits) * d},
        "l": {"read": visits, "written": n + visits},
        "m": {"read": visits, "written": n + visits},
    }


def sram_bytes(n: int, d: int, br: int, bc: int) -> int:
    """fa1_smem_bytes in the .cu: Qi, Oi (Br x D), Kj, Vj (Bc x D), Sij (Br x Bc), mi, li (Br)."""
    return FLOAT_BYTES * (2 * br * d + 2 * bc * d + br * bc + 2 * br)


def steps(n: int, d: int, br: int, bc: int, causal: bool = False) -> int:
    """Steps of the whole launch: init per block of Q, load_kv per tile, and per (tile, block) pair
    visited load_qi, scores, update, write_back."""
    tr, tc = -(-n // br), -(-n // bc)
    return tr + tc + 4 * sum_tiles(n, br, bc, causal)
