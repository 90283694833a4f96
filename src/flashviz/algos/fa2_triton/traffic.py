"""The Triton FA2 forward in closed form: Q read once, K and V once per block of Q (only the tiles its band
reaches), O and L written once. Elements here; bytes are 2 per element for Q, K, V, O (bf16) and 4 for L (fp32).

One head of plain attention: block i reads the keys its rows can see, tile by tile: all Tc tiles, or under causal
masking those up to the block's last row (Σ_i = Br·Tr·(Tr − 1)/2 + N when Br is a multiple of Bc). Rows past N are
never fetched (TMA reads them as zeros).

With the options of real models (flashviz.model.config, issue 22) a trace runs one K/V head: its `group` q heads
each read all of Q's rows of that head and the same K and V, so the K/V loads of a K/V head are `group` times one
head's (per K/V head: the loads are what each q head's programs issue; GQA shrinks what K and V hold in HBM, not
how often they are loaded, `kv_unique`); packed sequences (`seqs`: each (Nq, Nk)) sum over the sequences, each
block against its own sequence's keys; a window (with causal, and Nq ≠ Nk aligned to the bottom-right) reads only
the tiles between the band's edges (flashviz.model.band: `band_sums`, in O(log N)).
"""

from __future__ import annotations

from flashviz.algos.picture import CAUSAL_SUM, Rule, times
from flashviz.model import band

from . import tiles


def kv_rows(n: int, br: int, causal: bool) -> int:
    tr = -(-n // br)
    if not causal:
        return tr * n
    return br * tr * (tr - 1) // 2 + n  # blocks 0 .. Tr-2 read (i+1)·Br rows, the last one all N


def sums(
    n: int,
    br: int,
    bc: int,
    causal: bool,
    group: int = 1,
    seqs: list[tuple[int, int]] | None = None,
    window: tuple[int, int] = (-1, -1),
) -> dict[str, int]:
    """Over one K/V head's launch: its blocks of Q, (block, tile) pairs and rows of K (or V) read."""
    left, right = band.sides(window, causal)
    out = {"blocks": 0, "pairs": 0, "kv_rows": 0}
    for nq, nk in seqs or [(n, n)]:
        blocks, pairs, rows = band.band_sums(nq, nk, br, bc, left, right)
        out["blocks"] += group * blocks
        out["pairs"] += group * pairs
        out["kv_rows"] += group * rows
    return out


def count(
    n: int,
    d: int,
    br: int,
    bc: int,
    causal: bool = False,
    *,
    group: int = 1,
    seqs: list[tuple[int, int]] | None = None,
    window: tuple[int, int] = (-1, -1),
) -> dict[str, dict[str, int]]:
    """Per tensor, elements read and written: one head (no options), or one K/V head and its group of q heads.
    `seqs`: each sequence's (Nq, Nk) (None: one of N and N); N is the sum of their Nq."""
    plain = seqs is None and group == 1 and tuple(window) == (-1, -1)
    rows = kv_rows(n, br, causal) if plain else sums(n, br, bc, causal, group, seqs, window)["kv_rows"]
    q = group * n  # the rows of Q of the group's q heads
    return {
        "Q": {"read": q * d, "written": 0},
        "K": {"read": rows * d, "written": 0},
        "V": {"read": rows * d, "written": 0},
        "O": {"read": 0, "written": q * d},
        "L": {"read": 0, "written": q},
    }


def kv_unique(d: int, nk_total: int, group: int) -> dict[str, int]:
    """Elements of K and V in HBM for one K/V head (the K/V cache), and what `group` heads of their own would hold
    (multi-head attention with as many K/V heads as q heads): what grouped-query attention saves in memory."""
    return {"gqa": 2 * nk_total * d, "mha": 2 * group * nk_total * d}


def sram_bytes(n: int, d: int, br: int, bc: int) -> int:
    """Shared memory per program at one pipeline stage: Qi, Kj, Vj in bf16 (Sij, Oi, mi, li are in registers).
    The engine's columns are D (the compiled kernel pads D to a power of two: 96 takes 128)."""
    return tiles.BYTES * (br * d + 2 * bc * d)


def steps(
    n: int,
    d: int,
    br: int,
    bc: int,
    causal: bool = False,
    *,
    group: int = 1,
    seqs: list[tuple[int, int]] | None = None,
    window: tuple[int, int] = (-1, -1),
) -> int:
    """Per block: load_q, 3 steps per tile it streams, write_back."""
    s = sums(n, br, bc, causal, group, seqs, window)
    return 2 * s["blocks"] + 3 * s["pairs"]


def rules(
    n: int,
    d: int,
    br: int,
    bc: int,
    causal: bool = False,
    *,
    group: int = 1,
    seqs: list[tuple[int, int]] | None = None,
    window: tuple[int, int] = (-1, -1),
) -> dict[str, Rule]:
    tr = -(-n // br)
    if seqs is None and group == 1 and tuple(window) == (-1, -1):
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
    heads = "G\u00b7" if group > 1 else ""
    each = f" by each of the {group} q heads of this K/V head" if group > 1 else ""
    rows = sums(n, br, bc, causal, group, seqs, window)["kv_rows"]
    kv = Rule(
        f"read once per block of Q{each}, only the tiles its band reaches, in bf16",
        f"{CAUSAL_SUM}: {rows}\u00b7{d}",
    )
    q = group * n
    return {
        "Q": Rule(f"read once{each}, in bf16", f"{heads}N\u00b7D = {q}\u00b7{d}"),
        "K": kv,
        "V": kv,
        "O": Rule(f"written once{each} in bf16, never read back", f"{heads}N\u00b7D = {q}\u00b7{d}"),
        "L": Rule("written once in fp32 (mi and li leave as one array)", f"{heads}N = {q}"),
    }
