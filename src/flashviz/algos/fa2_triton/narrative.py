"""fa2-triton's step sentences, from each step's real numbers (shared helpers: `flashviz.algos.narrative`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos.narrative import no_softmax, nonfinite_scores, num, row_list, row_range, span

if TYPE_CHECKING:
    from flashviz.model.band import Segment
    from flashviz.model.config import Config

STAGE_WORDS = {
    "MASK_BAND (left edge)": "the stage of the window's left edge (BAND_LEFT, MASK_BAND: keys left of a row's "
    "window are masked)",
    "NO_MASK": "the unmasked stage (NO_MASK: every key of the tile is inside every row's band)",
    "MASK_BAND": "the masked stage (MASK_BAND: keys past the band's right edge, the diagonal under causal, or past "
    "the keys are masked)",
}


def short(cfg: Config, seg: Segment) -> str:
    """A segment in a few characters, for labels: 'h1 ·', 's2 ·', 'h1 s2 ·' (q head, packed sequence)."""
    parts = ([f"h{seg.head}"] if cfg.group > 1 else []) + ([f"s{seg.seq}"] if cfg.seqlens is not None else [])
    return " ".join(parts) + " \u00b7" if parts else ""


def where_words(cfg: Config, seg: Segment) -> str:
    """Which q head and sequence a block belongs to, as the code header says it."""
    parts = []
    if cfg.group > 1:
        parts.append(f"q head {seg.head} of {cfg.group} (K/V head 0)")
    if cfg.seqlens is not None:
        parts.append(f"sequence {seg.seq} (Nq = {seg.nq}, Nk = {seg.nk})")
    return ", ".join(parts)


def skipped(cfg: Config, seg: Segment, tiles: list[tuple[int, str]]) -> tuple[int, int]:
    """The tiles of its sequence's keys the block never visits: (left of its first, right of its last)."""
    total = -(-seg.nk // cfg.bc)
    if not tiles:
        return (0, total)
    first, last = tiles[0][0] // cfg.bc, tiles[-1][0] // cfg.bc
    return (first, total - 1 - last)


def load_q(i: int, first: int, end: int, br: int, d: int, where: str = "") -> str:
    valid = end - first
    pad = (
        ""
        if valid == br
        else f" Only {valid} of its {br} rows exist (its sequence ends at {end}); the tensor descriptor, which ends "
        f"there, reads the other {br - valid} as zeros, and nothing past it is fetched."
    )
    whose = f" ({where})" if where else ""
    return (
        f"Program i = {i}{whose} claims {row_range(first, end)} of Q: one TMA load brings Qi = Q[{first}:{end}] into "
        f"shared memory as bf16 ({valid * d} elements, {2 * valid * d} bytes) for the whole run, while the fp32 "
        f"accumulator Oi = 0 and the carries mi = −∞, li = 0 start in registers.{pad}"
    )


def load_kv(
    k: int, tc: int, first: int, end: int, bc: int, d: int, stage: str, skipped: tuple[int, int] | None = None
) -> str:
    valid = end - first
    pad = "" if valid == bc else f" The tile is ragged: only {valid} of {bc} rows exist; TMA fills the rest with zeros."
    which = "The first" if k == 0 else ("The last" if k == tc - 1 else f"Tile {k + 1} of {tc}:")
    left, right = skipped or (0, 0)
    if left or right:
        parts = ([f"{left} left of the band (the window's left edge)"] if left else []) + (
            [f"{right} right of it (past the diagonal or the window's right edge)"] if right else []
        )
        reread = f"This block never loads {' and '.join(parts)}: tiles of no key any of its rows sees."
    else:
        reread = "This block reads every tile of K and V."
    return (
        f"{which} tile of K and V arrives by TMA, in {STAGE_WORDS[stage]} of the loop: Kj, Vj = K[{first}:{end}], "
        f"V[{first}:{end}] ({2 * valid * d} bf16 elements, {4 * valid * d} bytes). {reread}{pad}"
    )


def scores(
    S: np.ndarray,
    valid_rows: int,
    valid_cols: int,
    stage: str,
    qk_scale: float,
    softcap: float = 0.0,
    scale_first: bool = False,
) -> str:
    live = S[:valid_rows, :valid_cols]
    finite = live[np.isfinite(live)]
    if softcap > 0:
        text = (
            f"Sij = tl.dot(Qi, Kjᵀ) on the tensor cores (bf16 products summed in fp32), then soft-capped: scaled by "
            f"qk_scale = scale/{softcap:g} = {num(qk_scale)} and mapped through softcap2·tanh, softcap2 = "
            f"{softcap:g}·log2 e, so that every score lies within ±{num(softcap * 1.4426950408889634)} (log2 units)."
        )
    elif scale_first:
        text = (
            f"Sij = tl.dot(Qi, Kjᵀ) on the tensor cores, then scaled at once by qk_scale = {num(qk_scale)} (a scale "
            "≤ 0: SCALE_FIRST, the max of the scaled scores is not the scaled max)."
        )
    else:
        text = (
            f"Sij = tl.dot(Qi, Kjᵀ) on the tensor cores: bf16 products, exact, summed in fp32, and not yet scaled "
            f"(the scale times log2 e = {num(qk_scale)} is folded into the exponent next)."
        )
    if finite.size:
        text += f" {finite.size} finite scores between {num(finite.min())} and {num(finite.max())}."
    text += nonfinite_scores(live)
    masked = int(np.isneginf(live).sum())
    if stage != "NO_MASK" and masked:
        text += f" {masked} scores of keys outside their row's band are set to −∞ ({STAGE_WORDS[stage]})."
    if valid_cols < S.shape[1]:
        text += f" Columns {valid_cols}–{S.shape[1] - 1} lie past the keys and are set to −∞."
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


def write_back(first: int, end: int, d: int, L: np.ndarray) -> str:
    valid = end - first
    bad = np.flatnonzero(np.isnan(L) | np.isposinf(L))
    nan = f" {row_list(first + bad).capitalize()} had no softmax: their O and L are NaN." if bad.size else ""
    none = np.flatnonzero(np.isneginf(L))
    if none.size:
        nan += (
            f" {row_list(first + none).capitalize()} saw no key (their band holds none): li = 0, so O = 0 and "
            "L = −∞, as FlashAttention-2 leaves them."
        )
    return (
        f"The tiles are done: Oi is divided by li once and stored by TMA as bf16, O[{first}:{end}] ({valid * d} "
        f"elements, {2 * valid * d} bytes); L = (mi + log2 li)·ln 2 leaves in fp32, L[{first}:{end}] ({valid} "
        f"elements, {4 * valid} bytes: {span(L)}). Neither is read back.{nan}"
    )
