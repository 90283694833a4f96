"""fa3's forward, one head, in closed form: Q read once (two TMA halves per block), K and V once per block of Q
(under causal masking up to the block's last row), O and L written once. Elements here; bytes are 2 per element for
Q, K, V, O (bf16) and 4 for L (fp32). With Br = Bc = 128 these are fa2-triton's closed forms at the same tiles (the
same loads, by the same rule: causal block i reads keys 0 .. min(N, (i + 1)·Br) − 1), so they are taken from there;
what differs is who issues them (a producer warp) and when (ahead, through the ring), not how many.
"""

from __future__ import annotations

from flashviz.algos.picture import Rule

from ..fa2_triton import traffic as same


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, dict[str, int]]:
    return same.count(n, d, br, bc, causal)


def sram_bytes(n: int, d: int, br: int, bc: int) -> int:
    """Shared memory the engine holds per block at one ring slot: Qi, Kj, Vj in bf16 (Sij, Oi, mi, li live in the
    consumers' registers). The kernel's whole ring and O's staging buffer are `tiles.shared_bytes`."""
    return same.sram_bytes(n, d, br, bc)


def steps(n: int, d: int, br: int, bc: int, causal: bool = False) -> int:
    """Per block: load_q, load_kv per tile, first_tile, scores and online_softmax per tile after the first,
    last_pv, write_back: 3 per tile + 2, as fa2-triton's."""
    return same.steps(n, d, br, bc, causal)


def rules(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, Rule]:
    return same.rules(n, d, br, bc, causal)
