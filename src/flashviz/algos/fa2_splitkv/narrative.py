"""fa2-splitkv's step sentences, from each step's real numbers (shared helpers: `flashviz.algos.narrative`; the online
softmax inside a chunk is fa2's, said in fa2's words)."""

from __future__ import annotations

import numpy as np

from flashviz.algos.narrative import num, row_list, row_range, span
from flashviz.algos.narrative import scores as scores  # the score tile's sentence, said alike by fa1 and fa2

from ..fa2.narrative import online_softmax as online_softmax  # the same loop over a shorter run of tiles


def _rows(first: int, end: int, br: int) -> str:
    valid = end - first
    return (
        ""
        if valid == br
        else f" Only {valid} of its {br} rows exist (N ends at {end}); the other {br - valid} are padding, "
        "zero in SRAM and never loaded."
    )


def load_q(i: int, s: int, first: int, end: int, br: int, d: int, splits: int) -> str:
    return (
        f"Split block (i = {i}, s = {s}) claims {row_range(first, end)} of Q: Qi = Q[{first}:{end}] is loaded "
        f"({(end - first) * d} elements), as each of the {splits} split blocks of block {i} loads it, and Oi = 0, "
        f"mi = −∞, li = 0 start empty: this block sees only chunk {s} of K and V.{_rows(first, end, br)}"
    )


def load_kv(j: int, j0: int, j1: int, s: int, first: int, end: int, bc: int, d: int, tr: int) -> str:
    valid = end - first
    pad = "" if valid == bc else f" The tile is ragged: only {valid} of {bc} rows exist, the rest are zero in SRAM."
    which = "The first" if j == j0 else ("The last" if j == j1 - 1 else f"Tile {j - j0 + 1} of {j1 - j0}:")
    return (
        f"{which} tile of chunk {s} (tiles {j0}..{j1 - 1}) arrives: Kj, Vj = K[{first}:{end}], V[{first}:{end}] "
        f"({2 * valid * d} elements across HBM). Only the blocks of chunk {s} read it, one per block of Q: "
        f"{tr} time{'s' if tr != 1 else ''} in all.{pad}"
    )


def write_partial(i: int, s: int, first: int, end: int, d: int, L: np.ndarray, splits: int) -> str:
    bad = np.flatnonzero(~np.isfinite(L))
    nan = f" {row_list(first + bad).capitalize()} had no softmax (NaN li): their partial is NaN." if bad.size else ""
    return (
        f"Chunk {s} is done, so Oi is divided by its own li and leaves as a partial result: Opart[{s}][{first}:{end}] "
        f"= Oi / li and Lpart[{s}][{first}:{end}] = mi + log(li) ({span(L)}), {(end - first) * d} + {end - first} "
        f"elements written to HBM. It is the attention over this chunk's keys only; the combine kernel reads it "
        f"back with the other {splits - 1}.{nan}"
    )


def load_first(i: int, first: int, end: int, d: int, splits: int) -> str:
    return (
        f"The combine kernel's block {i} starts from the first partial: Oc, Lc = Opart[0][{first}:{end}], "
        f"Lpart[0][{first}:{end}] ({(end - first) * (d + 1)} elements read back from HBM). "
        + (
            "There is only one chunk, so it is already the answer."
            if splits == 1
            else f"{splits - 1} more partial{'s' if splits != 2 else ''} follow."
        )
    )


def load_partial(s: int, splits: int, first: int, end: int, d: int) -> str:
    return (
        f"Partial {s} of {splits} comes back from HBM: Os, Ls = Opart[{s}][{first}:{end}], Lpart[{s}][{first}:{end}] "
        f"({(end - first) * (d + 1)} elements), the attention of these rows over chunk {s}'s keys."
    )


def merge(
    s: int, splits: int, L_old: np.ndarray, Ls: np.ndarray, ac: np.ndarray, as_: np.ndarray, L_new: np.ndarray
) -> str:
    if L_new.size == 0 or not np.isfinite(L_new).all():
        return f"The log-sum-exp rule merges partial {s}, but some rows are not numbers: Lc is {span(L_new)}."
    r = int(np.argmax(np.abs(L_old - Ls)))
    return (
        f"The log-sum-exp rule merges partial {s} into the running result: each row's weights are e^(Lc − L') and "
        f"e^(Ls − L') with L' = log(e^Lc + e^Ls), so the side whose keys scored higher weighs more. Row {r}: Lc = "
        f"{num(L_old[r])} and Ls = {num(Ls[r])} give L' = {num(L_new[r])} and weights {num(ac[r])} and "
        f"{num(as_[r])} (they sum to 1). No rescaling of a sum is needed: both partials are already normalised."
    )


def write_out(i: int, first: int, end: int, d: int, L: np.ndarray, splits: int) -> str:
    return (
        f"All {splits} partial{'s' if splits != 1 else ''} merged: O[{first}:{end}] = Oc and L[{first}:{end}] = Lc "
        f"({span(L)}) are written once ({(end - first) * d} + {end - first} elements), the same attention fa2 "
        "computes in one block, up to the order of the sums."
    )
