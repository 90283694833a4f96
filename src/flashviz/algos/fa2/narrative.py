"""fa2's step sentences, from each step's real numbers (shared helpers: `flashviz.algos.narrative`)."""

from __future__ import annotations

import numpy as np

from flashviz.algos.narrative import no_softmax, num, row_list, row_range, span
from flashviz.algos.narrative import scores as scores  # the score tile's sentence, said alike by fa1


def load_q(i: int, first: int, end: int, br: int, d: int) -> str:
    valid = end - first
    pad = (
        ""
        if valid == br
        else f" Only {valid} of its {br} rows exist (N ends at {end}); the other {br - valid} are padding, "
        "zero in SRAM and never loaded."
    )
    return (
        f"Block {i} claims {row_range(first, end)} of Q: Qi = Q[{first}:{end}] is loaded once "
        f"({valid * d} elements) and stays for the whole run, while Oi = 0, mi = −∞ and li = 0 start "
        f"empty.{pad}"
    )


def load_kv(j: int, tc: int, first: int, end: int, bc: int, d: int, tr: int, skipped: int = 0) -> str:
    valid = end - first
    pad = "" if valid == bc else f" The tile is ragged: only {valid} of {bc} rows exist, the rest are zero in SRAM."
    which = "The first" if j == 0 else ("The last" if j == tc - 1 else f"Tile {j + 1} of {tc}:")
    return (
        (
            f"{which} tile of K and V arrives: Kj, Vj = K[{first}:{end}], V[{first}:{end}] "
            f"({2 * valid * d} elements across HBM). Every one of the {tr} blocks of Q reads this same tile, "
            f"so K and V are read {tr} time{'s' if tr != 1 else ''} in all.{pad}"
        )
        if not skipped
        else (
            f"{which} tile of K and V this block needs arrives: Kj, Vj = K[{first}:{end}], V[{first}:{end}] "
            f"({2 * valid * d} elements across HBM). Causal: the {skipped} tile{'s' if skipped != 1 else ''} after "
            f"the diagonal lie wholly above it and are never loaded by this block.{pad}"
        )
    )


def online_softmax(
    j: int,
    m_old: np.ndarray,
    m_new: np.ndarray,
    alpha: np.ndarray,
    l_old: np.ndarray,
    l_new: np.ndarray,
    valid_rows: int,
) -> str:
    m_old, m_new, alpha = m_old[:valid_rows], m_new[:valid_rows], alpha[:valid_rows]
    l_old, l_new = l_old[:valid_rows], l_new[:valid_rows]
    bad = np.flatnonzero(~np.isfinite(l_new))  # rows with no softmax: NaN, as the kernel computes it
    good = np.flatnonzero(np.isfinite(l_new))
    note = no_softmax(bad) if bad.size else ""
    if good.size == 0:
        return f"The carries move, but not to numbers: mi is {span(m_new)}.{note}"
    if bad.size:  # the sentences below are about the rows that still have a softmax
        m_old, m_new, alpha, l_old, l_new = m_old[good], m_new[good], alpha[good], l_old[good], l_new[good]
        valid_rows = good.size
    if j == 0:
        return (
            f"The first tile moves the carries for the first time: mi goes from −∞ to the row maxima "
            f"({span(m_new)}), li becomes the row sums of exp(Sij − mi) "
            f"({span(l_new)}) and Oi = exp(Sij − mi)·Vj. Nothing held was stale: "
            f"the rescale factor is exp(−∞) = 0.{note}"
        )
    if np.isneginf(m_old).any():  # a row whose earlier tiles were all −∞ is NaN already; kept for safety
        return f"mi is now {span(m_new)} and li {span(l_new)}.{note}"
    rise = m_new - m_old
    rose = np.flatnonzero(rise > 0)
    if rose.size == 0:
        return (
            f"No row's max rose on this tile, so every rescale factor is exp(0) = 1: li and Oi keep what "
            f"they held and this tile's terms are simply added (li now {span(l_new)}).{note}"
        )
    r = int(rose[np.argmax(rise[rose])])
    others = (
        "every row's max rose"
        if rose.size == valid_rows
        else f"{rose.size} of {valid_rows} rows' maxima rose; the others keep factor 1"
    )
    row = int(good[r]) if bad.size else r
    return (
        f"What was held is stale: row {row}'s max rose from {num(m_old[r])} to {num(m_new[r])} "
        f"(+{num(rise[r])}), so its li ({num(l_old[r])}) and Oi were scaled by exp({num(m_old[r])} − "
        f"{num(m_new[r])}) = {num(alpha[r])} before this tile was added, giving li = {num(l_new[r])}. "
        f"On this tile {others}.{note}"
    )


def write_back(i: int, first: int, end: int, d: int, L: np.ndarray) -> str:
    valid = end - first
    bad = np.flatnonzero(~np.isfinite(L))
    nan = (
        f" {row_list(first + bad).capitalize()} had no softmax (NaN li): their O and L are written as NaN, the "
        "kernel's own result; the float64 check fails on them."
        if bad.size
        else ""
    )
    return (
        f"The tiles are done, so only now is Oi divided by li — the one division — and mi and li leave "
        f"together as L = mi + log(li) ({span(L)}). O[{first}:{end}] and "
        f"L[{first}:{end}] are written ({valid * d} + {valid} elements) and never read back.{nan}"
    )
