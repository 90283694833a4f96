"""FlashAttention-2 forward, one head: Q read once, K and V once per block of Q, O and L written once."""

from __future__ import annotations


def count(n: int, d: int, br: int, bc: int) -> dict[str, dict[str, int]]:
    tr = -(-n // br)  # blocks of Q; each streams every K/V tile once
    # Ragged N: the last tile is short, but the rows past N are never loaded, so each pass over
    # K (or V) moves exactly N*D elements whatever Bc is.
    return {
        "Q": {"read": n * d, "written": 0},
        "K": {"read": tr * n * d, "written": 0},
        "V": {"read": tr * n * d, "written": 0},
        "O": {"read": 0, "written": n * d},
        "L": {"read": 0, "written": n},
    }
