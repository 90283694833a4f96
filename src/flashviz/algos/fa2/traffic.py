"""FlashAttention-2 forward, one head: Q read once, K and V once per block of Q, O and L written once."""

from __future__ import annotations

from flashviz.algos.picture import CAUSAL_SUM, Rule, times
from flashviz.model.tiling import sum_tiles, sum_width
from flashviz.model.units import FLOAT_BYTES


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, dict[str, int]]:
    # Each block of Q streams the K/V tiles it needs once. Not causal: all of them, and as rows past N are
    # never loaded each pass over K (or V) moves exactly N*D elements whatever Bc is (Tr*N rows in all).
    # Causal: block i reads the tiles whose first column is <= its last row r_i = min(N, (i+1)Br) - 1,
    # tiles 0 .. r_i // Bc, i.e. min(N, (r_i // Bc + 1) * Bc) rows of K (and of V); summed in closed form.
    kv_rows = sum_width(n, br, bc, causal)
    return {
        "Q": {"read": n * d, "written": 0},
        "K": {"read": kv_rows * d, "written": 0},
        "V": {"read": kv_rows * d, "written": 0},
        "O": {"read": 0, "written": n * d},
        "L": {"read": 0, "written": n},
    }


def sram_bytes(n: int, d: int, br: int, bc: int) -> int:
    """fa2_smem_bytes in the .cu: Qi, Oi (Br x D), Kj, Vj (Bc x D), Sij (Br x Bc), mi, li (Br)."""
    return FLOAT_BYTES * (2 * br * d + 2 * bc * d + br * bc + 2 * br)


def steps(n: int, d: int, br: int, bc: int, causal: bool = False) -> int:
    """Steps of the whole launch: per block i, load_q, (load_kv, scores, online_softmax) per tile it
    streams, write_back."""
    tr = -(-n // br)
    return 2 * tr + 3 * sum_tiles(n, br, bc, causal)


def rules(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, Rule]:
    """Each tensor's count in words and as the page shows its closed form (`read`/`written`: without causal)."""
    tr = -(-n // br)
    streamed = CAUSAL_SUM if causal else f"Tr\u00b7N\u00b7D = {tr}\u00b7{n}\u00b7{d}"
    kv = Rule(times(tr, "read once per block of Q"), streamed, read="Tr*N*D")
    return {
        "Q": Rule("read once", f"N\u00b7D = {n}\u00b7{d}", read="N*D"),
        "K": kv,
        "V": kv,
        "O": Rule("written once, never read back", f"N\u00b7D = {n}\u00b7{d}", written="N*D"),
        "L": Rule("written once (mi and li leave as one array)", f"N = {n}", written="N"),
    }
