"""The Triton FA2 forward, one head: Q read once, K and V once per block of Q (under causal masking up to the block's
last row), O and L written once. Elements here; bytes are 2 per element for Q, K, V, O (bf16) and 4 for L (fp32).

Under causal masking kernel.py's two stages (tiles below the diagonal, then the diagonal tiles, Br a multiple of Bc)
read keys 0 .. min(N, (i + 1)·Br) − 1 for block i: Σ_i = Br·Tr·(Tr − 1)/2 + N in closed form. Rows past N are
never fetched (TMA reads them as zeros).
"""

from __future__ import annotations

from flashviz.algos.picture import Rule, times

from . import tiles


def kv_rows(n: int, br: int, causal: bool) -> int:
    tr = -(-n // br)
    if not causal:
        return tr * n
    return br * tr * (tr - 1) // 2 + n  # blocks 0 .. Tr-2 read (i+1)·Br rows, the last one all N


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, dict[str, int]]:
    rows = kv_rows(n, br, causal)
    return {
        "Q": {"read": n * d, "written": 0},
        "K": {"read": rows * d, "written": 0},
        "V": {"read": rows * d, "written": 0},
        "O": {"read": 0, "written": n * d},
        "L": {"read": 0, "written": n},
    }


def sram_bytes(n: int, d: int, br: int, bc: int) -> int:
    """Shared memory per program at one pipeline stage: Qi, Kj, Vj in bf16 (Sij, Oi, mi, li are in registers).
    The engine's columns are D (the compiled kernel pads D to a power of two: 96 takes 128)."""
    return tiles.BYTES * (br * d + 2 * bc * d)


def steps(n: int, d: int, br: int, bc: int, causal: bool = False) -> int:
    """Per block: load_q, 3 steps per tile it streams, write_back. Causal block i streams ⌈min(N, (i+1)·Br)/Bc⌉
    tiles (its stages together), else Tc."""
    tr = -(-n // br)
    tc = -(-n // bc)
    if not causal:
        tiles_total = tr * tc
    else:
        per = br // bc  # tiles per block of rows (Br a multiple of Bc)
        tiles_total = per * tr * (tr - 1) // 2 + tc  # blocks 0 .. Tr-2: (i+1)·Br/Bc tiles; the last: Tc
    return 2 * tr + 3 * tiles_total


def rules(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, Rule]:
    tr = -(-n // br)
    streamed = (
        f"(Br\u00b7Tr(Tr\u22121)/2 + N)\u00b7D = ({br}\u00b7{tr}\u00b7{tr - 1}/2 + {n})\u00b7{d}"
        if causal
        else f"Tr\u00b7N\u00b7D = {tr}\u00b7{n}\u00b7{d}"
    )
    kv = Rule(times(tr, "read once per block of Q, in bf16"), streamed, read="Tr*N*D")
    return {
        "Q": Rule("read once, in bf16", f"N\u00b7D = {n}\u00b7{d}", read="N*D"),
        "K": kv,
        "V": kv,
        "O": Rule("written once in bf16, never read back", f"N\u00b7D = {n}\u00b7{d}", written="N*D"),
        "L": Rule("written once in fp32 (mi and li leave as one array)", f"N = {n}", written="N"),
    }
