"""FlashAttention(-1) forward, one head: K/V on the outer loop, so O, l and m are carried back and forth
through HBM (fa1_forward.cu).

K and V are read once. Every inner iteration (j, i) reads Qi, Oi, li, mi and writes Oi, li, mi; O, l and m
are also written once to initialise them. Not causal, every tile visits every block: Tc iterations per row.
"""

from __future__ import annotations

from flashviz.algos.picture import CAUSAL_SUM, Rule, times
from flashviz.model.tiling import sum_tiles
from flashviz.model.units import FLOAT_BYTES


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


def rules(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, Rule]:
    """Each tensor's count in words and as the page shows its closed form (`read`/`written`: without causal)."""
    tc = -(-n // bc)
    carried = Rule(
        "carried through HBM like O",
        CAUSAL_SUM if causal else f"read Tc\u00b7N, written (Tc+1)\u00b7N, Tc = {tc}",
        read="Tc*N",
        written="(Tc+1)*N",
    )
    once = Rule("read once: the outer loop", f"N\u00b7D = {n}\u00b7{d}", read="N*D")
    return {
        "Q": Rule(
            times(tc, "read once per tile of K/V"),
            CAUSAL_SUM if causal else f"Tc\u00b7N\u00b7D = {tc}\u00b7{n}\u00b7{d}",
            read="Tc*N*D",
        ),
        "K": once,
        "V": once,
        "O": Rule(
            "initialised, then read and written back on every inner iteration",
            CAUSAL_SUM if causal else f"read Tc\u00b7N\u00b7D, written (Tc+1)\u00b7N\u00b7D, Tc = {tc}",
            read="Tc*N*D",
            written="(Tc+1)*N*D",
        ),
        "l": carried,
        "m": carried,
    }
