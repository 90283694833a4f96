"""fa1's step sentences, from each step's real numbers."""

from __future__ import annotations

import numpy as np

from flashviz.algos.narrative import no_softmax, num, span
from flashviz.algos.narrative import scores as scores  # the score tile's sentence, said alike by fa2


def init(i: int, first: int, end: int, d: int) -> str:
    valid = end - first
    return (
        f"Before any tile, block {i}'s carries are set up in HBM, not in SRAM: O[{first}:{end}] = 0, "
        f"l = 0, m = −∞ ({valid * d} + {valid} + {valid} elements written). The blocks of Q take turns inside the "
        f"loop over K/V, so nothing of theirs can stay in SRAM between turns."
    )


def load_kv(j: int, tc: int, first: int, end: int, bc: int, d: int, visits: int) -> str:
    valid = end - first
    pad = "" if valid == bc else f" The tile is ragged: only {valid} of {bc} rows exist, the rest are zero in SRAM."
    return (
        f"Outer loop, tile {j + 1} of {tc}: Kj, Vj = K[{first}:{end}], V[{first}:{end}] ({2 * valid * d} elements) "
        f"are loaded once and stay while {visits} block{'s' if visits != 1 else ''} of Q pass by. K and V cross HBM "
        f"once in all.{pad}"
    )


def load_qi(i: int, j: int, first: int, end: int, d: int, li: np.ndarray, mi: np.ndarray) -> str:
    valid = end - first
    moved = f"{2 * valid * d} + {2 * valid} elements"
    if j == 0:
        came = "Oi, li, mi are the zeros and −∞ just initialised"
    else:
        came = (
            f"Oi, li ({span(li)}) and mi ({span(mi)}) are what the "
            "previous tile wrote back: the carries travel through HBM"
        )
    return f"Block {i}'s turn with tile {j}: Qi, Oi, li, mi = Q, O, l, m[{first}:{end}] are read ({moved}). {came}."


def update(j: int, m_old: np.ndarray, m_new: np.ndarray, alpha: np.ndarray, l_old: np.ndarray,
               l_new: np.ndarray, valid_rows: int) -> str:  # fmt: skip
    m_old, m_new, alpha = m_old[:valid_rows], m_new[:valid_rows], alpha[:valid_rows]
    l_new = l_new[:valid_rows]
    bad = np.flatnonzero(~np.isfinite(l_new))
    div = (
        f" Oi is divided by the new li ({span(l_new)}) right away: FA1 keeps Oi "
        "normalised, one division per visit, where FA2 divides once at the end."
    ) + (no_softmax(bad) if bad.size else "")
    if j == 0 or bad.size:
        return (
            f"{'The first tile: m' if j == 0 else 'M'}i becomes {'the row maxima ' if j == 0 else ''}({span(m_new)}) "
            f"and li {'the row sums of exp(Sij − mi)' if j == 0 else span(l_new)}"
            f"{'; nothing held was stale (exp(−∞) = 0)' if j == 0 else ''}.{div}"
        )
    rise = m_new - m_old
    rose = np.flatnonzero(rise > 0)
    if rose.size == 0:
        return f"No row's max rose on this tile: the old li and Oi keep factor 1 and this tile's terms are added.{div}"
    r = int(rose[np.argmax(rise[rose])])
    return (
        f"Row {r}'s max rose from {num(m_old[r])} to {num(m_new[r])}, so its li and Oi were scaled by "
        f"exp({num(m_old[r])} − {num(m_new[r])}) = {num(alpha[r])} before this tile was added.{div}"
    )


def write_back(i: int, j: int, tc: int, first: int, end: int, d: int) -> str:
    valid = end - first
    moved = f"{valid * d} + {valid} + {valid} elements"
    if j < tc - 1:
        return (
            f"Oi, li, mi go back to O, l, m[{first}:{end}] in HBM ({moved}), only to be read again when tile {j + 1} "
            f"visits block {i}. This round trip, every tile, is what FA2 removes."
        )
    return (
        f"The last tile: O[{first}:{end}] is final ({moved} written). Over the run these rows' O, l and m were "
        f"read {tc} times and written {tc + 1} times; FA2 writes O once and never reads it."
    )
