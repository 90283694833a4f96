"""Standard attention's step sentences, from each step's real numbers."""

from __future__ import annotations

import numpy as np

from flashviz.algos.narrative import nonfinite_scores, num, span


def load_q(i: int, first: int, end: int, br: int, d: int) -> str:
    valid = end - first
    pad = "" if valid == br else f" Only {valid} of its {br} rows exist; the other {br - valid} are zero padding."
    return (
        f"Kernel 1 of 3 (S = QKᵀ), block {i}: Qi = Q[{first}:{end}] is loaded once ({valid * d} elements) and "
        f"stays while the tiles of K stream past.{pad}"
    )


def load_k(j: int, tc: int, first: int, end: int, bc: int, d: int, tr: int, skipped: int = 0) -> str:
    valid = end - first
    pad = "" if valid == bc else f" The tile is ragged: only {valid} of {bc} rows exist, the rest are zero in SRAM."
    skip = (
        ""
        if not skipped
        else f" Causal: the {skipped} tile{'s' if skipped != 1 else ''} after the diagonal are never loaded by this "
        "block."
    )
    return (
        f"Tile {j + 1} of {tc}: Kj = K[{first}:{end}] arrives ({valid * d} elements). All {tr} blocks read this "
        f"same tile, so K crosses HBM {tr} time{'s' if tr != 1 else ''}, just as in FA2.{pad}{skip}"
    )


def scores(S: np.ndarray, valid_rows: int, valid_cols: int, scale: float, r0: int, c0: int,
                    causal: bool = False) -> str:  # fmt: skip
    live = S[:valid_rows, :valid_cols]
    finite = live[np.isfinite(live)]
    masked = int(np.isneginf(live).sum())
    scores_ = (
        f"{finite.size} finite scores between {num(finite.min())} and {num(finite.max())}"
        if finite.size
        else "not one score is a finite number"
    )
    text = (
        f"Sij = Qi·Kjᵀ × {num(scale)}: {scores_}.{nonfinite_scores(live)} "
        f"Unlike FA2, they do not stay in SRAM: the tile is written to S[{r0}:{r0 + valid_rows}, "
        f"{c0}:{c0 + valid_cols}] in HBM ({live.size} elements), for the next kernel to read back."
    )
    if causal and masked:
        text += f" {masked} of them lie above the diagonal and are stored as −∞."
    return text


def softmax_row(r: int, width: int, n: int, P: np.ndarray, m: float, l: float) -> str:
    cols = f"all {width} columns"
    if width < n:
        cols = f"its first {width} columns (causal: the rest lie above the diagonal)"
    nan = (
        " The row has no finite score to take a softmax over (or one overflowed float32): exp(−∞ − (−∞)) is NaN, "
        "so its P and O are NaN, as the kernel computes them."
        if not np.isfinite(l)
        else ""
    )
    return (
        f"Kernel 2 of 3 (P = softmax(S)): row {r} of S comes back from HBM, {cols}, whole in SRAM, because its "
        f"max and sum need all of it: max {num(m)}, sum of exp(S − max) {num(l)}. "
        f"P[{r}] = exp(S[{r}] − max)/sum goes back out to HBM ({width} elements); its largest probability is "
        f"{span(P).split(' … ')[-1]}.{nan}"
    )


def load_pv(j: int, tc: int, r0: int, r1: int, c0: int, c1: int, d: int) -> str:
    rows, cols = r1 - r0, c1 - c0
    return (
        f"Kernel 3 of 3 (O = PV), tile {j + 1} of {tc}: Pij = P[{r0}:{r1}, {c0}:{c1}] comes back from HBM a second "
        f"time ({rows * cols} elements) with Vj = V[{c0}:{c1}] ({cols * d} elements)."
    )


def accumulate(j: int, tc: int, Oi: np.ndarray) -> str:
    return (
        f"Oi += Pij·Vj ({'first' if j == 0 else f'{j + 1} of {tc}'} tile{'s' if j else ''} added; Oi now "
        f"{span(Oi)}). P is already normalised, so nothing held is ever rescaled."
    )


def write_o(i: int, first: int, end: int, d: int, width: int) -> str:
    valid = end - first
    return (
        f"O[{first}:{end}] = Oi is written ({valid * d} elements). To get here these {valid} rows sent "
        f"{valid * width} scores through HBM four times: S written and read, P written and read."
    )
