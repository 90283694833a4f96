"""fa2-splitkv, one head, in closed form: the split kernel reads Qi once per chunk (S times in all) and K, V once
per block of Q, as fa2 does; each of its Tr x S blocks writes a partial (Oi of its rows, and their L), which the
combine kernel reads back once and merges into O and L, written once."""

from __future__ import annotations

from flashviz.algos.picture import Rule, times
from flashviz.model.tiling import count as blocks
from flashviz.model.units import FLOAT_BYTES

from .record import CHUNK, splits

SPLITS = f"((Tc+{CHUNK - 1})//{CHUNK})"  # S = ceil(Tc / CHUNK), as an expression in Tc (the rules' `read`)


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, dict[str, int]]:
    return rectangular(n, n, d, br, bc)


def rectangular(nq: int, nk: int, d: int, br: int, bc: int) -> dict[str, dict[str, int]]:
    """The count for Nq queries against Nk keys (decoding: Nq small), of which `count` is Nq = Nk = N. Rows past
    the end are neither loaded nor stored, so each pass over a tensor moves exactly its rows: Q once per chunk
    (S passes, S from the Nk keys), K and V once per block of Q (Tr passes, from the Nq queries, split among the
    chunks), each partial once each way."""
    s, tr = splits(nk, bc), blocks(nq, br)
    return {
        "Q": {"read": s * nq * d, "written": 0},
        "K": {"read": tr * nk * d, "written": 0},
        "V": {"read": tr * nk * d, "written": 0},
        "Opart": {"read": s * nq * d, "written": s * nq * d},
        "Lpart": {"read": s * nq, "written": s * nq},
        "O": {"read": 0, "written": nq * d},
        "L": {"read": 0, "written": nq},
    }


def sram_bytes(n: int, d: int, br: int, bc: int) -> int:
    """fa2_splitkv_smem_bytes in the .cu (the split kernel's, the larger): Qi, Oi (Br x D), Kj, Vj (Bc x D),
    Sij (Br x Bc), mi, li (Br)."""
    return FLOAT_BYTES * (2 * br * d + 2 * bc * d + br * bc + 2 * br)


def steps(n: int, d: int, br: int, bc: int, causal: bool = False) -> int:
    """Steps of the whole launch: per split block (i, s) load_q, 3 per tile of its chunk, write_partial (2S + 3Tc
    per block of Q); per combine block load_first, 2 per further partial, write_out (2S)."""
    s, tr, tc = splits(n, bc), blocks(n, br), blocks(n, bc)
    return tr * (2 * s + 3 * tc) + tr * 2 * s


def rules(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, Rule]:
    """Each tensor's count in words and as the page shows its closed form."""
    s, tr = splits(n, bc), blocks(n, br)
    kv = Rule(times(tr, "read once per block of Q"), f"Tr\u00b7N\u00b7D = {tr}\u00b7{n}\u00b7{d}", read="Tr*N*D")
    chunked = f"S = \u2308Tc/{CHUNK}\u2309 = {s}"
    return {
        "Q": Rule(
            times(s, "read once per chunk"),
            f"S\u00b7N\u00b7D = {s}\u00b7{n}\u00b7{d} ({chunked})",
            read=SPLITS + "*N*D",
        ),
        "K": kv,
        "V": kv,
        "Opart": Rule(
            "written once by the split blocks, read once by the combine",
            f"S\u00b7N\u00b7D = {s}\u00b7{n}\u00b7{d} each way",
            read=SPLITS + "*N*D",
            written=SPLITS + "*N*D",
        ),
        "Lpart": Rule(
            "written once by the split blocks, read once by the combine",
            f"S\u00b7N = {s}\u00b7{n} each way",
            read=SPLITS + "*N",
            written=SPLITS + "*N",
        ),
        "O": Rule("written once, by the combine", f"N\u00b7D = {n}\u00b7{d}", written="N*D"),
        "L": Rule("written once, by the combine", f"N = {n}", written="N"),
    }
