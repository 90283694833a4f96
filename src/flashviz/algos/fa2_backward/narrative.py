"""fa2-backward's step sentences, from each step's real numbers."""

from __future__ import annotations

import numpy as np

from flashviz.algos.narrative import num, row_list, span


def load_do_o(i: int, first: int, end: int, d: int) -> str:
    valid = end - first
    return (
        f"Preprocessing, block {i}: dOi = dO[{first}:{end}] and Oi = O[{first}:{end}] arrive "
        f"({2 * valid * d} elements). This pass reads dO and O once each, so that the main kernel never needs O."
    )


def write_delta(i: int, first: int, end: int, d: int, Deltai: np.ndarray) -> str:
    valid = end - first
    return (
        f"Deltai = rowsum(dOi ∘ Oi) per row ({span(Deltai)}) is written to Delta[{first}:{end}] ({valid} "
        f"elements): the one number per row that the softmax's gradient subtracts. dQ[{first}:{end}] is zeroed "
        f"({valid * d} writes) because the main kernel only ever adds into it."
    )


def load_kv(j: int, first: int, end: int, bc: int, d: int, tr: int, first_i: int) -> str:
    valid = end - first
    pad = "" if valid == bc else f" The tile is ragged: only {valid} of {bc} rows exist, the rest are zero in SRAM."
    visits = tr - first_i
    skip = (
        f" Causal: blocks 0–{first_i - 1} of Q end before column {first}, wholly above the diagonal, and are "
        f"skipped, so it streams {visits} of the {tr} blocks."
        if first_i
        else f" It will stream all {tr} blocks of Q past them."
    )
    return (
        f"Block {j} owns tile {j} of K and V: Kj, Vj = K[{first}:{end}], V[{first}:{end}] are loaded once "
        f"({2 * valid * d} elements) and stay, and dKj = dVj = 0 start in SRAM, where they accumulate until "
        f"the end.{skip}{pad}"
    )


def load_q(i: int, first: int, end: int, d: int, readers: int, Li: np.ndarray) -> str:
    valid = end - first
    return (
        f"Block {i} of Q streams in: Qi, dOi = Q[{first}:{end}], dO[{first}:{end}] and Li, Deltai = L[{first}:{end}], "
        f"Delta[{first}:{end}] ({2 * valid * d} + {2 * valid} elements). The forward's Li ({span(Li)}) is all the "
        f"softmax needs: no running max is rebuilt. {readers} block{'s' if readers != 1 else ''} of K/V read "
        f"these rows, once each."
    )


def probs(P: np.ndarray, live: np.ndarray, valid_rows: int, valid_cols: int, causal: bool) -> str:
    p = P[:valid_rows, :valid_cols]
    alive = live[:valid_rows, :valid_cols]
    r, c = np.unravel_index(int(np.argmax(np.where(np.isnan(p), -np.inf, p))), p.shape) if p.size else (0, 0)
    text = (
        f"Pij = exp(Sij − Li) rebuilds the forward's softmax for this tile exactly: {int(alive.sum())} "
        f"probabilities ({span(p[alive]) if alive.any() else '0'}); the largest is "
        f"row {r}, column {c} of the tile. Row sums over this tile: {span(p.sum(axis=1))} (over all tiles each "
        f"row sums to 1)."
    )
    nan = np.flatnonzero(np.isnan(p).any(axis=1)) if p.size else np.array([], dtype=int)
    if nan.size:
        text += (
            f" In {row_list(nan)} of the tile Pij is NaN: the forward left L NaN there (no softmax), and as in "
            "the kernel the NaN flows into every gradient these rows touch: dVj, dKj and dQ."
        )
    dead = int((~alive).sum())
    if causal and dead:
        text += f" This tile crosses the diagonal: {dead} entries with key column > query row are 0."
    if valid_cols < P.shape[1] or valid_rows < P.shape[0]:
        text += " Padding rows and columns past N are 0."
    return text


def accumulate(name: str, acc: np.ndarray, valid_rows: int, i: int, first_i: int, tr: int) -> str:
    formula = {"dVj": "Pijᵀ·dOi", "dKj": "scale·dSijᵀ·Qi"}[name]
    done = i - first_i + 1
    of = tr - first_i
    return (
        f"{name} += {formula}: block {i}'s share is added in SRAM ({done} of {of} blocks of Q so far); "
        f"{name} now spans {span(acc[:valid_rows])}. It stays in SRAM, never crossing HBM until the write-back."
    )


def ds(dS: np.ndarray, dP: np.ndarray, Deltai: np.ndarray, valid_rows: int, valid_cols: int) -> str:
    ds, dp = dS[:valid_rows, :valid_cols], dP[:valid_rows, :valid_cols]
    r, c = np.unravel_index(int(np.argmax(np.abs(ds))), ds.shape) if ds.size else (0, 0)
    return (
        f"dPij = dOi·Vjᵀ ({span(dp)}), then dSij = Pij ∘ (dPij − Deltai): the largest |dSij| is row {r}, column {c} "
        f"({num(ds[r, c])}, from dPij = {num(dp[r, c])} and Deltai = {num(Deltai[r])}). Subtracting Deltai, not a "
        f"sum over the whole row of P, is what lets the gradient of the softmax be done one tile at a time."
    )


def dq(i: int, j: int, first: int, end: int, d: int, contributors: int) -> str:
    valid = end - first
    return (
        f"dQ[{first}:{end}] += scale·dSij·Kj with atomicAdd ({valid * d} elements, each counted as one read and "
        f"one write of dQ): {contributors} block{'s' if contributors != 1 else ''} of K/V add into these rows, "
        f"this is block {j}'s share. dQi cannot stay in SRAM because no one block owns it."
    )


def write_back(j: int, first: int, end: int, d: int, visits: int) -> str:
    valid = end - first
    return (
        f"All {visits} block{'s' if visits != 1 else ''} of Q have passed, so dKj and dVj are complete: "
        f"dK[{first}:{end}] and dV[{first}:{end}] are written once ({2 * valid * d} elements) and never read back."
    )
