"""fa3's step sentences, from each step's real numbers (shared helpers: `flashviz.algos.narrative`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from flashviz.algos.narrative import no_softmax, nonfinite_scores, num, row_list, row_range, span

MASK_WORDS = {
    "NO_MASK": "no mask",
    "MASK_CAUSAL": "the diagonal mask (MASK_CAUSAL: key column > query row is −∞)",
    "MASK_COLUMNS": "the ragged mask (MASK_COLUMNS: key columns ≥ N are −∞)",
}


def load_q(i: int, first: int, end: int, br: int, d: int, program: int) -> str:
    valid = end - first
    pad = "" if valid == br else f" Only {valid} of its {br} rows exist (N ends at {end}); TMA reads the rest as zeros."
    return (
        f"Program {program} takes block {i}, {row_range(first, end)} of Q. Its producer warp issues two TMA loads, "
        f"one half of Qi per consumer warpgroup (64 rows each: warpgroup 0 rows {first}–{first + 63}, warpgroup 1 "
        f"rows {first + 64}–{first + 127}), bf16 into shared memory ({2 * valid * d} bytes), and goes on to the "
        f"tiles of K and V without waiting; each consumer starts Oi = 0, mi = −∞, li = 0 in its registers.{pad}"
    )


def load_kv(j: int, tc: int, first: int, end: int, bc: int, d: int, tr: int, ring: dict[str, Any],
            skipped: int = 0) -> str:  # fmt: skip
    valid = end - first
    pad = "" if valid == bc else f" Only {valid} of {bc} rows exist; TMA fills the rest with zeros."
    wait = (
        "a fresh slot: nothing to wait for"
        if ring["use"] == 0
        else f"it waits until both consumers have released the slot's tile {j - ring['stages']}"
    )
    later = f" The {skipped} tiles past the diagonal are never loaded." if skipped and j == tc - 1 else ""
    return (
        f"The producer puts Kj, Vj = K[{first}:{end}], V[{first}:{end}] ({4 * valid * d} bytes, bf16) into ring "
        f"slot {ring['slot']} of {ring['stages']} ({wait}); the copy engine completes the slot's ready mbarrier "
        f"when the bytes land. Each of the {tr} blocks of Q whose rows reach this tile reads it too.{later}{pad}"
    )


def _scores_range(S: np.ndarray, valid_rows: int, valid_cols: int) -> str:
    live = S[:valid_rows, :valid_cols]
    finite = live[np.isfinite(live)]
    text = f" {finite.size} finite scores between {num(finite.min())} and {num(finite.max())}." if finite.size else ""
    return text + nonfinite_scores(live)


def first_tile(raw: np.ndarray, mi: np.ndarray, li: np.ndarray, valid_rows: int, valid_cols: int, mask: str,
               qk_scale: float) -> str:  # fmt: skip
    masked = int(np.isneginf(raw[:valid_rows]).sum())
    return (
        "Tile 0 is peeled off the loop: each warpgroup issues S = Qi K0ᵀ for its 64 rows on the tensor cores and "
        f"waits for it (nothing to overlap yet), applies {MASK_WORDS[mask]} and takes the first softmax in base 2 "
        f"(qk_scale = {num(qk_scale)}): mi becomes {span(mi[:valid_rows])}, li {span(li[:valid_rows])}."
        + _scores_range(raw, valid_rows, valid_cols)
        + (f" {masked} of the live rows' scores are masked." if masked else "")
        + " Its P·V waits for tile 1's scores, to run under them."
    )


def scores(j: int, S: np.ndarray, valid_rows: int, valid_cols: int, qk_scale: float) -> str:
    return (
        f"Each warpgroup issues S = Qi Kjᵀ for tile {j} (its turn on the tensor cores: ping-pong) and does not wait: "
        f"the wgmma runs while the next step rescales Oi and issues tile {j - 1}'s P·V. Raw fp32 scores, not yet "
        f"scaled or masked." + _scores_range(S, valid_rows, valid_cols)
    )


def online_softmax(j: int, m_old: np.ndarray, m_new: np.ndarray, alpha: np.ndarray, l_old: np.ndarray,
                   l_new: np.ndarray, valid_rows: int, mask: str) -> str:  # fmt: skip
    m_old, m_new, l_new = m_old[:valid_rows], m_new[:valid_rows], l_new[:valid_rows]
    bad = np.flatnonzero(~np.isfinite(l_new))
    note = no_softmax(bad) if bad.size else ""
    rise = m_new - m_old
    rose = int((rise[np.isfinite(rise)] > 0).sum())
    return (
        f"Tile {j - 1}'s P·V goes first: Oi is rescaled by tile {j - 1}'s alpha and bf16(P) times V{j - 1} is issued "
        f"into it (V{j - 1} still in its ring slot). Then the wait for S{j} returns, Kj's slot is released, "
        f"{MASK_WORDS[mask]} is applied and tile {j}'s softmax runs while P·V is still on the tensor cores: "
        f"{rose} of {m_new.size} rows' maxima rose, li is now {span(l_new)}. Only then does the warpgroup wait for "
        f"P·V and release V{j - 1}'s slot.{note}"
    )


def last_pv(j: int, out: np.ndarray, valid_rows: int) -> str:
    return (
        f"After the loop, the last tile's P·V: Oi is rescaled by tile {j}'s alpha and bf16(P)·V{j} is added "
        f"(its first row's values {span(out[0]) if valid_rows else '—'}); Qi's buffer was released just before, so "
        "the producer may already load the next block's Qi."
    )


def write_back(i: int, first: int, end: int, d: int, L: np.ndarray) -> str:
    valid = end - first
    bad = np.flatnonzero(~np.isfinite(L))
    nan = f" {row_list(first + bad).capitalize()} had no softmax: their O and L are NaN." if bad.size else ""
    return (
        f"Each warpgroup divides its 64 rows of Oi by li (the only division), stages them in shared memory as bf16 "
        f"and stores them by TMA: O[{first}:{end}] ({2 * valid * d} bytes); L = (mi + log2 li)·ln 2 leaves in fp32 "
        f"by ordinary stores, L[{first}:{end}] ({span(L)}).{nan}"
    )
