"""Step sentences, built from each step's real numbers (never from templates with made-up values)."""

from __future__ import annotations

import numpy as np


def num(x: float) -> str:
    """A number as a reader wants it: 3 significant digits, −∞ and NaN spelled out."""
    if np.isnan(x):
        return "NaN"
    if np.isneginf(x):
        return "−∞"
    if np.isposinf(x):
        return "+∞"
    return f"{float(x):.3g}".replace("-", "−")


def _rows(first: int, end: int) -> str:
    return f"row {first}" if end - first == 1 else f"rows {first}–{end - 1}"


def _span(x: np.ndarray) -> str:
    """'lo … hi' over the values that are not NaN, saying so when some are ('—' for none at all)."""
    x = np.asarray(x)
    if x.size == 0:
        return "—"
    known = x[~np.isnan(x)]
    if known.size == 0:
        return "NaN"
    lo, hi = known.min(), known.max()
    span = num(lo) if lo == hi else f"{num(lo)} … {num(hi)}"
    return span if known.size == x.size else f"{span}, and NaN"


def _row_list(rows: np.ndarray) -> str:
    rows = [int(r) for r in rows]
    shown = ", ".join(map(str, rows[:6])) + (", …" if len(rows) > 6 else "")
    return f"row {shown}" if len(rows) == 1 else f"rows {shown}"


def _no_softmax(rows: np.ndarray, carries: str = "li and Oi") -> str:
    """Why rows of a block went NaN: no finite score yet (or an overflowed one), so the kernel's own arithmetic
    gives exp(−∞ − (−∞)) = exp(NaN) (or exp(+∞ − +∞)): NaN, which then never leaves them."""
    return (
        f" {_row_list(rows).capitalize()} of this block {'has' if len(rows) == 1 else 'have'} no finite score to take"
        f" a softmax over (every score so far is −∞, or one overflowed float32): the kernel computes exp(−∞ − (−∞))"
        f" = NaN there, so {carries} are NaN from here on, and so are their O and L. The GPU does exactly this."
    )


def _nonfinite_scores(live: np.ndarray) -> str:
    """A sentence on scores that overflowed float32 (+∞, or NaN from ∞ − ∞ inside the dot product), if any."""
    over, nan = int(np.isposinf(live).sum()), int(np.isnan(live).sum())
    if not over and not nan:
        return ""
    parts = [f"{over} overflowed to +∞"] if over else []
    parts += [f"{nan} are NaN (∞ − ∞ inside the dot product)"] if nan else []
    return f" Of these scores {' and '.join(parts)}: float32 cannot hold them, and their rows' softmax is NaN."


def _dead_rows(live: np.ndarray) -> str:
    """A sentence on rows whose every score in this tile is −∞, if any (a real case: huge |Q·K|, a negative scale)."""
    dead = np.flatnonzero(np.isneginf(live).all(axis=1)) if live.shape[1] else np.array([], dtype=int)
    if dead.size == 0:
        return ""
    return f" In {_row_list(dead)} of the tile every score is −∞."


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
    masked = int(np.isneginf(live).sum())
    finite = live[np.isfinite(live)]
    if finite.size:
        r, c = np.unravel_index(int(np.argmax(np.where(np.isfinite(live), live, -np.inf))), live.shape)
        text = (
            f"Sij = Qi·Kjᵀ × {num(scale)}: {finite.size} finite scores between {num(finite.min())} and "
            f"{num(finite.max())}; the largest is row {r}, column {c} of the tile ({num(live[r, c])})."
        )
    else:
        text = f"Sij = Qi·Kjᵀ × {num(scale)}: not one score of this tile is a finite number."
    text += _nonfinite_scores(live) + ("" if causal else _dead_rows(live))  # causal: the diagonal's own −∞ rows
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
    bad = np.flatnonzero(~np.isfinite(l_new))  # rows with no softmax: NaN, as the kernel computes it
    good = np.flatnonzero(np.isfinite(l_new))
    note = _no_softmax(bad) if bad.size else ""
    if good.size == 0:
        return f"The carries move, but not to numbers: mi is {_span(m_new)}.{note}"
    if bad.size:  # the sentences below are about the rows that still have a softmax
        m_old, m_new, alpha, l_old, l_new = m_old[good], m_new[good], alpha[good], l_old[good], l_new[good]
        valid_rows = good.size
    if j == 0:
        return (
            f"The first tile moves the carries for the first time: mi goes from −∞ to the row maxima "
            f"({_span(m_new)}), li becomes the row sums of exp(Sij − mi) "
            f"({_span(l_new)}) and Oi = exp(Sij − mi)·Vj. Nothing held was stale: "
            f"the rescale factor is exp(−∞) = 0.{note}"
        )
    if np.isneginf(m_old).any():  # a row whose earlier tiles were all −∞ is NaN already; kept for safety
        return f"mi is now {_span(m_new)} and li {_span(l_new)}.{note}"
    rise = m_new - m_old
    rose = np.flatnonzero(rise > 0)
    if rose.size == 0:
        return (
            f"No row's max rose on this tile, so every rescale factor is exp(0) = 1: li and Oi keep what "
            f"they held and this tile's terms are simply added (li now {_span(l_new)}).{note}"
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
        f" {_row_list(first + bad).capitalize()} had no softmax (NaN li): their O and L are written as NaN, the "
        "kernel's own result; the float64 check fails on them."
        if bad.size
        else ""
    )
    return (
        f"The tiles are done, so only now is Oi divided by li — the one division — and mi and li leave "
        f"together as L = mi + log(li) ({_span(L)}). O[{first}:{end}] and "
        f"L[{first}:{end}] are written ({valid * d} + {valid} elements) and never read back.{nan}"
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
    finite = live[np.isfinite(live)]
    masked = int(np.isneginf(live).sum())
    scores_ = (
        f"{finite.size} finite scores between {num(finite.min())} and {num(finite.max())}"
        if finite.size
        else "not one score is a finite number"
    )
    text = (
        f"Sij = Qi·Kjᵀ × {num(scale)}: {scores_}.{_nonfinite_scores(live)} "
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
        f"{_span(P).split(' … ')[-1]}.{nan}"
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
        f"{_span(Oi)}). P is already normalised, so nothing held is ever rescaled."
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
            f"Oi, li ({_span(li)}) and mi ({_span(mi)}) are what the "
            "previous tile wrote back: the carries travel through HBM"
        )
    return f"Block {i}'s turn with tile {j}: Qi, Oi, li, mi = Q, O, l, m[{first}:{end}] are read ({moved}). {came}."


def fa1_update(j: int, m_old: np.ndarray, m_new: np.ndarray, alpha: np.ndarray, l_old: np.ndarray,
               l_new: np.ndarray, valid_rows: int) -> str:  # fmt: skip
    m_old, m_new, alpha = m_old[:valid_rows], m_new[:valid_rows], alpha[:valid_rows]
    l_new = l_new[:valid_rows]
    bad = np.flatnonzero(~np.isfinite(l_new))
    div = (
        f" Oi is divided by the new li ({_span(l_new)}) right away: FA1 keeps Oi "
        "normalised, one division per visit, where FA2 divides once at the end."
    ) + (_no_softmax(bad) if bad.size else "")
    if j == 0 or bad.size:
        return (
            f"{'The first tile: m' if j == 0 else 'M'}i becomes {'the row maxima ' if j == 0 else ''}({_span(m_new)}) "
            f"and li {'the row sums of exp(Sij − mi)' if j == 0 else _span(l_new)}"
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
    r, c = np.unravel_index(int(np.argmax(np.where(np.isnan(p), -np.inf, p))), p.shape) if p.size else (0, 0)
    text = (
        f"Pij = exp(Sij − Li) rebuilds the forward's softmax for this tile exactly: {int(alive.sum())} "
        f"probabilities ({_span(p[alive]) if alive.any() else '0'}); the largest is "
        f"row {r}, column {c} of the tile. Row sums over this tile: {_span(p.sum(axis=1))} (over all tiles each "
        f"row sums to 1)."
    )
    nan = np.flatnonzero(np.isnan(p).any(axis=1)) if p.size else np.array([], dtype=int)
    if nan.size:
        text += (
            f" In {_row_list(nan)} of the tile Pij is NaN: the forward left L NaN there (no softmax), and as in "
            "the kernel the NaN flows into every gradient these rows touch: dVj, dKj and dQ."
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
