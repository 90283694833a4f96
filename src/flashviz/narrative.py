"""Step sentences, built from each step's real numbers (never from templates with made-up values)."""

from __future__ import annotations

import numpy as np


def num(x: float) -> str:
    """A number as a reader wants it: 3 significant digits, −∞ spelled out."""
    if np.isneginf(x):
        return "−∞"
    if np.isposinf(x):
        return "+∞"
    return f"{float(x):.3g}".replace("-", "−")


def _rows(first: int, end: int) -> str:
    return f"row {first}" if end - first == 1 else f"rows {first}–{end - 1}"


def load_q(i: int, first: int, end: int, br: int, d: int) -> str:
    valid = end - first
    pad = (
        ""
        if valid == br
        else f" Only {valid} of its {br} rows exist (N ends at {end}); the other {br - valid} are padding, "
        "zero in SRAM and never loaded."
    )
    return (
        f"Block {i} claims {_rows(first, end)} of Q: Qi = Q[{first}:{end}] is loaded once "
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


def scores(j: int, S: np.ndarray, valid_rows: int, valid_cols: int, scale: float, causal: bool = False) -> str:
    live = S[:valid_rows, :valid_cols]
    r, c = np.unravel_index(int(np.argmax(live)), live.shape)
    masked = int(np.isneginf(live).sum())
    text = (
        f"Sij = Qi·Kjᵀ × {num(scale)}: {live.size - masked} scores between {num(live[live > -np.inf].min())} and "
        f"{num(live.max())}; the largest is row {r}, column {c} of the tile ({num(live[r, c])})."
    )
    if causal and masked:
        text += f" This tile crosses the diagonal: {masked} scores with key column > query row are masked to −∞."
    if valid_cols < S.shape[1]:
        text += f" Columns {valid_cols}–{S.shape[1] - 1} lie past N and score −∞, so they weigh nothing."
    return text


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
    if j == 0:
        return (
            f"The first tile moves the carries for the first time: mi goes from −∞ to the row maxima "
            f"({num(m_new.min())} … {num(m_new.max())}), li becomes the row sums of exp(Sij − mi) "
            f"({num(l_new.min())} … {num(l_new.max())}) and Oi = exp(Sij − mi)·Vj. Nothing held was stale: "
            f"the rescale factor is exp(−∞) = 0."
        )
    rise = m_new - m_old
    rose = np.flatnonzero(rise > 0)
    if rose.size == 0:
        return (
            f"No row's max rose on this tile, so every rescale factor is exp(0) = 1: li and Oi keep what "
            f"they held and this tile's terms are simply added (li now {num(l_new.min())} … "
            f"{num(l_new.max())})."
        )
    r = int(rose[np.argmax(rise[rose])])
    others = (
        "every row's max rose"
        if rose.size == valid_rows
        else f"{rose.size} of {valid_rows} rows' maxima rose; the others keep factor 1"
    )
    return (
        f"What was held is stale: row {r}'s max rose from {num(m_old[r])} to {num(m_new[r])} "
        f"(+{num(rise[r])}), so its li ({num(l_old[r])}) and Oi were scaled by exp({num(m_old[r])} − "
        f"{num(m_new[r])}) = {num(alpha[r])} before this tile was added, giving li = {num(l_new[r])}. "
        f"On this tile {others}."
    )


def write_back(i: int, first: int, end: int, d: int, L: np.ndarray) -> str:
    valid = end - first
    return (
        f"The tiles are done, so only now is Oi divided by li — the one division — and mi and li leave "
        f"together as L = mi + log(li) ({num(L.min())} … {num(L.max())}). O[{first}:{end}] and "
        f"L[{first}:{end}] are written ({valid * d} + {valid} elements) and never read back."
    )


# --- standard attention (engine/standard.py) ---


def standard_load_q(i: int, first: int, end: int, br: int, d: int) -> str:
    valid = end - first
    pad = "" if valid == br else f" Only {valid} of its {br} rows exist; the other {br - valid} are zero padding."
    return (
        f"Kernel 1 of 3 (S = QKᵀ), block {i}: Qi = Q[{first}:{end}] is loaded once ({valid * d} elements) and "
        f"stays while the tiles of K stream past.{pad}"
    )


def standard_load_k(j: int, tc: int, first: int, end: int, bc: int, d: int, tr: int, skipped: int = 0) -> str:
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


def standard_scores(S: np.ndarray, valid_rows: int, valid_cols: int, scale: float, r0: int, c0: int,
                    causal: bool = False) -> str:  # fmt: skip
    live = S[:valid_rows, :valid_cols]
    finite = live[live > -np.inf]
    masked = live.size - finite.size
    text = (
        f"Sij = Qi·Kjᵀ × {num(scale)}: {finite.size} scores between {num(finite.min())} and {num(finite.max())}. "
        f"Unlike FA2, they do not stay in SRAM: the tile is written to S[{r0}:{r0 + valid_rows}, "
        f"{c0}:{c0 + valid_cols}] in HBM ({live.size} elements), for the next kernel to read back."
    )
    if causal and masked:
        text += f" {masked} of them lie above the diagonal and are stored as −∞."
    return text


def standard_softmax_row(r: int, width: int, n: int, P: np.ndarray, m: float, l: float) -> str:
    cols = f"all {width} columns"
    if width < n:
        cols = f"its first {width} columns (causal: the rest lie above the diagonal)"
    return (
        f"Kernel 2 of 3 (P = softmax(S)): row {r} of S comes back from HBM, {cols}, whole in SRAM, because its "
        f"max and sum need all of it: max {num(m)}, sum of exp(S − max) {num(l)}. "
        f"P[{r}] = exp(S[{r}] − max)/sum goes back out to HBM ({width} elements); its largest probability is "
        f"{num(P.max())}."
    )


def standard_load_pv(j: int, tc: int, r0: int, r1: int, c0: int, c1: int, d: int) -> str:
    rows, cols = r1 - r0, c1 - c0
    return (
        f"Kernel 3 of 3 (O = PV), tile {j + 1} of {tc}: Pij = P[{r0}:{r1}, {c0}:{c1}] comes back from HBM a second "
        f"time ({rows * cols} elements) with Vj = V[{c0}:{c1}] ({cols * d} elements)."
    )


def standard_accumulate(j: int, tc: int, Oi: np.ndarray) -> str:
    return (
        f"Oi += Pij·Vj ({'first' if j == 0 else f'{j + 1} of {tc}'} tile{'s' if j else ''} added; Oi now "
        f"{num(Oi.min())} … {num(Oi.max())}). P is already normalised, so nothing held is ever rescaled."
    )


def standard_write_o(i: int, first: int, end: int, d: int, width: int) -> str:
    valid = end - first
    return (
        f"O[{first}:{end}] = Oi is written ({valid * d} elements). To get here these {valid} rows sent "
        f"{valid * width} scores through HBM four times: S written and read, P written and read."
    )


# --- FlashAttention-1 forward (engine/fa1.py) ---


def fa1_init(i: int, first: int, end: int, d: int) -> str:
    valid = end - first
    return (
        f"Before any tile, block {i}'s carries are set up in HBM, not in SRAM: O[{first}:{end}] = 0, "
        f"l = 0, m = −∞ ({valid * d} + {valid} + {valid} elements written). The blocks of Q take turns inside the "
        f"loop over K/V, so nothing of theirs can stay in SRAM between turns."
    )


def fa1_load_kv(j: int, tc: int, first: int, end: int, bc: int, d: int, visits: int) -> str:
    valid = end - first
    pad = "" if valid == bc else f" The tile is ragged: only {valid} of {bc} rows exist, the rest are zero in SRAM."
    return (
        f"Outer loop, tile {j + 1} of {tc}: Kj, Vj = K[{first}:{end}], V[{first}:{end}] ({2 * valid * d} elements) "
        f"are loaded once and stay while {visits} block{'s' if visits != 1 else ''} of Q pass by. K and V cross HBM "
        f"once in all.{pad}"
    )


def fa1_load_qi(i: int, j: int, first: int, end: int, d: int, li: np.ndarray, mi: np.ndarray) -> str:
    valid = end - first
    moved = f"{2 * valid * d} + {2 * valid} elements"
    if j == 0:
        came = "Oi, li, mi are the zeros and −∞ just initialised"
    else:
        came = (
            f"Oi, li ({num(li.min())} … {num(li.max())}) and mi ({num(mi.min())} … {num(mi.max())}) are what the "
            "previous tile wrote back: the carries travel through HBM"
        )
    return f"Block {i}'s turn with tile {j}: Qi, Oi, li, mi = Q, O, l, m[{first}:{end}] are read ({moved}). {came}."


def fa1_update(j: int, m_old: np.ndarray, m_new: np.ndarray, alpha: np.ndarray, l_old: np.ndarray,
               l_new: np.ndarray, valid_rows: int) -> str:  # fmt: skip
    m_old, m_new, alpha = m_old[:valid_rows], m_new[:valid_rows], alpha[:valid_rows]
    l_new = l_new[:valid_rows]
    div = (
        f" Oi is divided by the new li ({num(l_new.min())} … {num(l_new.max())}) right away: FA1 keeps Oi "
        "normalised, one division per visit, where FA2 divides once at the end."
    )
    if j == 0:
        return (
            f"The first tile: mi becomes the row maxima ({num(m_new.min())} … {num(m_new.max())}) and li the row "
            f"sums of exp(Sij − mi); nothing held was stale (exp(−∞) = 0).{div}"
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


def fa1_write_back(i: int, j: int, tc: int, first: int, end: int, d: int) -> str:
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


# --- FlashAttention-2 backward (engine/fa2_backward.py) ---


def _span(x: np.ndarray) -> str:
    return f"{num(x.min())} … {num(x.max())}" if x.size else "—"


def bwd_load_do_o(i: int, first: int, end: int, d: int) -> str:
    valid = end - first
    return (
        f"Preprocessing, block {i}: dOi = dO[{first}:{end}] and Oi = O[{first}:{end}] arrive "
        f"({2 * valid * d} elements). This pass reads dO and O once each, so that the main kernel never needs O."
    )


def bwd_write_d(i: int, first: int, end: int, d: int, Di: np.ndarray) -> str:
    valid = end - first
    return (
        f"Di = rowsum(dOi ∘ Oi) per row ({_span(Di)}) is written to D[{first}:{end}] ({valid} elements): the "
        f"one number per row that the softmax's gradient subtracts. dQ[{first}:{end}] is zeroed ({valid * d} "
        f"writes) because the main kernel only ever adds into it."
    )


def bwd_load_kv(j: int, first: int, end: int, bc: int, d: int, tr: int, first_i: int) -> str:
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


def bwd_load_q(i: int, first: int, end: int, d: int, readers: int, Li: np.ndarray) -> str:
    valid = end - first
    return (
        f"Block {i} of Q streams in: Qi, dOi = Q[{first}:{end}], dO[{first}:{end}] and Li, Di = L[{first}:{end}], "
        f"D[{first}:{end}] ({2 * valid * d} + {2 * valid} elements). The forward's Li ({_span(Li)}) is all the "
        f"softmax needs: no running max is rebuilt. {readers} block{'s' if readers != 1 else ''} of K/V read "
        f"these rows, once each."
    )


def bwd_probs(P: np.ndarray, live: np.ndarray, valid_rows: int, valid_cols: int, causal: bool) -> str:
    p = P[:valid_rows, :valid_cols]
    alive = live[:valid_rows, :valid_cols]
    r, c = np.unravel_index(int(np.argmax(p)), p.shape)
    text = (
        f"Pij = exp(Sij − Li) rebuilds the forward's softmax for this tile exactly: {int(alive.sum())} "
        f"probabilities between {num(p[alive].min()) if alive.any() else '0'} and {num(p.max())}; the largest is "
        f"row {r}, column {c} of the tile. Row sums over this tile: {_span(p.sum(axis=1))} (over all tiles each "
        f"row sums to 1)."
    )
    dead = int((~alive).sum())
    if causal and dead:
        text += f" This tile crosses the diagonal: {dead} entries with key column > query row are 0."
    if valid_cols < P.shape[1] or valid_rows < P.shape[0]:
        text += " Padding rows and columns past N are 0."
    return text


def bwd_accumulate(name: str, acc: np.ndarray, valid_rows: int, i: int, first_i: int, tr: int) -> str:
    formula = {"dVj": "Pijᵀ·dOi", "dKj": "scale·dSijᵀ·Qi"}[name]
    done = i - first_i + 1
    of = tr - first_i
    return (
        f"{name} += {formula}: block {i}'s share is added in SRAM ({done} of {of} blocks of Q so far); "
        f"{name} now spans {_span(acc[:valid_rows])}. It stays in SRAM, never crossing HBM until the write-back."
    )


def bwd_ds(dS: np.ndarray, dP: np.ndarray, Di: np.ndarray, valid_rows: int, valid_cols: int) -> str:
    ds, dp = dS[:valid_rows, :valid_cols], dP[:valid_rows, :valid_cols]
    r, c = np.unravel_index(int(np.argmax(np.abs(ds))), ds.shape) if ds.size else (0, 0)
    return (
        f"dPij = dOi·Vjᵀ ({_span(dp)}), then dSij = Pij ∘ (dPij − Di): the largest |dSij| is row {r}, column {c} "
        f"({num(ds[r, c])}, from dPij = {num(dp[r, c])} and Di = {num(Di[r])}). Subtracting Di, not a sum over "
        f"the whole row of P, is what lets the gradient of the softmax be done one tile at a time."
    )


def bwd_dq(i: int, j: int, first: int, end: int, d: int, contributors: int) -> str:
    valid = end - first
    return (
        f"dQ[{first}:{end}] += scale·dSij·Kj with atomicAdd ({valid * d} elements, each counted as one read and "
        f"one write of dQ): {contributors} block{'s' if contributors != 1 else ''} of K/V add into these rows, "
        f"this is block {j}'s share. dQi cannot stay in SRAM because no one block owns it."
    )


def bwd_write_back(j: int, first: int, end: int, d: int, visits: int) -> str:
    valid = end - first
    return (
        f"All {visits} block{'s' if visits != 1 else ''} of Q have passed, so dKj and dVj are complete: "
        f"dK[{first}:{end}] and dV[{first}:{end}] are written once ({2 * valid * d} elements) and never read back."
    )
