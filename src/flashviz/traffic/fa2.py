"""FlashAttention-2 forward, one head: Q read once, K and V once per block of Q, O and L written once."""

from __future__ import annotations


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, dict[str, int]]:
    tr = -(-n // br)  # blocks of Q; each streams the K/V tiles it needs once
    if not causal:
        # Ragged N: the last tile is short, but rows past N are never loaded, so each pass over K (or V)
        # moves exactly N*D elements whatever Bc is.
        kv_rows = tr * n
    else:
        # Block i reads the tiles whose first column is <= its last row r_i = min(N, (i+1)Br) - 1:
        # tiles 0 .. r_i // Bc, i.e. min(N, (r_i // Bc + 1) * Bc) rows of K (and of V).
        kv_rows = sum(min(n, ((min(n, (i + 1) * br) - 1) // bc + 1) * bc) for i in range(tr))
    return {
        "Q": {"read": n * d, "written": 0},
        "K": {"read": kv_rows * d, "written": 0},
        "V": {"read": kv_rows * d, "written": 0},
        "O": {"read": 0, "written": n * d},
        "L": {"read": 0, "written": n},
    }
