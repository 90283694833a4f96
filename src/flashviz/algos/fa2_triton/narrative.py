"""fa2-triton's step sentences, from each step's real numbers (shared helpers: `flashviz.algos.narrative`)."""

from __future__ import annotations

import numpy as np

from flashviz.algos.narrative import no_softmax, nonfinite_scores, num, row_list, row_range, span

STAGE_WORDS = {
    "NO_MASK": "the unmasked stage",
    "MASK_CAUSAL": "the diagonal stage (MASK_CAUSAL: key column > query row is masked)",
    "MASK_COLUMNS": "the ragged stage (MASK_COLUMNS: key columns ≥ N are masked)",
}


def load_q(i: int, first: int, end: int, br: int, d: int) -> str:
    valid = end - first
    pad = (
        ""
        if valid == br
        else f" Only {valid} of its {br} rows exist (N ends at {end}); the tensor descriptor reads the other "
        f"{br - valid} as zeros, and nothing past N is fetched."
    )
    return (
        f"Program {i} claims {row_range(first, end)} of Q: one TMA load brings Qi = Q[{first}:{end}] into shared "
        f"memory as bf16 ({valid * d} elements, {2 * valid * d} bytes) for the whole run, while the fp32 "
        f"accumulator Oi = 0 and the carries mi = −∞, li = 0 start in registers.{pad}"
    )


def load_kv(j: int, tc: int, first: int, end: int, bc: int, d: int, tr: int, stage: str, skipped: int = 0) -> str:
    valid = end - first
    pad = "" if valid == bc else f" The tile is ragged: only {valid} of {bc} rows exist; TMA fills the rest with zeros."
    which = "The first" if j == 0 else ("The last" if j == tc - 1 else f"Tile {j + 1} of {tc}:")
    reread = (
        f"Every one of the {tr} programs of Q reads this tile, so K and V are read {tr} time{'s' if tr != 1 else ''}"
        " in all."
        if not skipped
        else f"Causal: the {skipped} tile{'s' if skipped != 1 else ''} past the diagonal are never loaded here."
    )
    return (
        f"{which} tile of K and V arrives by TMA, in {STAGE_WORDS[stage]} of the loop: Kj, Vj = K[{first}:{end}], "
        f"V[{first}:{end}] ({2 * valid * d} bf16 elements, {4 * valid * d} bytes). {reread}{pad}"
    )


def scores(j: int, S: np.ndarray, valid_rows: int, valid_cols: int, stage: str, qk_scale: float) -> str:
    live = S[:valid_rows, :valid_cols]
    finite = live[np.isfinite(live)]
    text = (
        f"Sij = tl.dot(Qi, Kjᵀ) on the tensor cores: bf16 products, exact, summed in fp32, and not yet scaled (the "
        f"scale times log2 e = {num(qk_scale)} is folded into the exponent next)."
    )
    if finite.size:
        text += f" {finite.size} finite scores between {num(finite.min())} and {num(finite.max())}."
    text += nonfinite_scores(live)
    masked = int(np.isneginf(live).sum())
    if stage == "MASK_CAUSAL" and masked:
        text += f" A diagonal tile: {masked} scores with key column > query row are set to −∞."
    if valid_cols < S.shape[1]:
        text += f" Columns {valid_cols}–{S.shape[1] - 1} lie past N and are set to −∞ ({STAGE_WORDS[stage]})."
    return text


def online_softmax(
    j: int,
    m_old: np.ndarray,
    m_new: np.ndarray,
    alpha: np.ndarray,
    l_old: np.ndarray,
    l_new: np.ndarray,
    valid_rows: int,
    rounding: float,
) -> str:
    m_old, m_new, alpha = m_old[:valid_rows], m_new[:valid_rows], alpha[:valid_rows]
    l_old, l_new = l_old[:valid_rows], l_new[:valid_rows]
    bad = np.flatnonzero(~np.isfinite(l_new))
    note = no_softmax(bad) if bad.size else ""
    tail = (
        f" P is rounded to bf16 for the tensor cores' P·Vj (the largest change: {num(rounding)}); li sums the fp32 P."
    )
    good = np.flatnonzero(np.isfinite(l_new))
    if good.size == 0:
        return f"The carries move, but not to numbers: mi is {span(m_new)}.{note}"
    if bad.size:
        m_old, m_new, alpha, l_old, l_new = m_old[good], m_new[good], alpha[good], l_old[good], l_new[good]
    if j == 0:
        return (
            f"The first tile moves the carries: mi (in units of log2) goes from −∞ to {span(m_new)}, "
            f"li becomes the row sums of P = exp2(Sij·qk_scale − mi) ({span(l_new)}) and Oi = bf16(P)·Vj; the "
            f"rescale factor is exp2(−∞) = 0.{tail}{note}"
        )
    rise = m_new - m_old
    rose = np.flatnonzero(rise > 0)
    if rose.size == 0:
        return (
            f"No row's max rose, so every factor is exp2(0) = 1 and this tile's terms are added (li now "
            f"{span(l_new)}).{tail}{note}"
        )
    r = int(rose[np.argmax(rise[rose])])
    row = int(good[r]) if bad.size else r
    return (
        f"Row {row}'s max rose from {num(m_old[r])} to {num(m_new[r])} (log2 units), so its li ({num(l_old[r])}) "
        f"and Oi were scaled by exp2({num(m_old[r])} − {num(m_new[r])}) = {num(alpha[r])} before this tile was "
        f"added, giving li = {num(l_new[r])}; {rose.size} of {m_new.size} rows' maxima rose.{tail}{note}"
    )


def write_back(i: int, first: int, end: int, d: int, L: np.ndarray) -> str:
    valid = end - first
    bad = np.flatnonzero(~np.isfinite(L))
    nan = f" {row_list(first + bad).capitalize()} had no softmax: their O and L are NaN." if bad.size else ""
    return (
        f"The tiles are done: Oi is divided by li once and stored by TMA as bf16, O[{first}:{end}] ({valid * d} "
        f"elements, {2 * valid * d} bytes); L = (mi + log2 li)·ln 2 leaves in fp32, L[{first}:{end}] ({valid} "
        f"elements, {4 * valid} bytes: {span(L)}). Neither is read back.{nan}"
    )
