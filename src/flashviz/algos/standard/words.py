"""Standard attention's words (flashviz.algos.words): every sentence of its steps, plain text with named slots, said
after the run from each step's record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos.picture import Rich
from flashviz.algos.words import Said, keys_of, moves_action, nonfinite_scores, num, plural, rich, rows_of, span

from . import picture

if TYPE_CHECKING:
    from flashviz.engine.steps import Record
    from flashviz.model.config import Config

# op -> (label, TeX)
LABELS = {
    "load_q": ("Qi = Q[i]", r"Q_i \leftarrow Q[i]"),
    "load_k": ("Kj = K[j]", r"K_j \leftarrow K[j]"),
    "scores": ("S[i][j] = Sij = Qi @ Kj.T", r"S[i][j] \leftarrow S_{ij} = \tau\, Q_i K_j^{\top}"),
    "softmax_row": ("P[r] = softmax(S[r])", r"P[r] \leftarrow \mathrm{softmax}(S[r])"),
    "load_pv": ("Pij, Vj = P[i][j], V[j]", r"P_{ij}, V_j \leftarrow P[i][j], V[j]"),
    "accumulate": ("Oi += Pij @ Vj", r"O_i \leftarrow O_i + P_{ij} V_j"),
    "write_o": ("O[i] = Oi", r"O[i] \leftarrow O_i"),
}
PARTS: dict[str, tuple[tuple[str, str, str], ...]] = {}  # no step shown in parts

# ---- the narrative sentences ----

LOAD_Q = (
    "Kernel 1 of 3 (S = QKᵀ), block {i}: Qi = Q[{first}:{end}] is loaded once ({elements} elements) and stays while "
    "the tiles of K stream past.{padding}"
)
PADDING = " Only {valid} of its {br} rows exist; the other {pad} are zero padding."
LOAD_K = (
    "Tile {tile} of {tc}: Kj = K[{first}:{end}] arrives ({elements} elements). All {tr} blocks read this same tile, "
    "so K crosses HBM {times}, just as in FA2.{ragged}{skipped}"
)
RAGGED = " The tile is ragged: only {valid} of {bc} rows exist, the rest are zero in SRAM."
SKIPPED = " Causal: the {tiles} after the diagonal are never loaded by this block."
SCORES = (
    "Sij = Qi·Kjᵀ × {scale}: {scores}.{nonfinite} Unlike FA2, they do not stay in SRAM: the tile is written to "
    "S[{first}:{end}, {c0}:{c1}] in HBM ({elements} elements), for the next kernel to read back.{masked}"
)
FINITE = "{count} finite scores between {low} and {high}"
NONE_FINITE = "not one score is a finite number"
MASKED = " {masked} of them lie above the diagonal and are stored as −∞."
SOFTMAX_ROW = (
    "Kernel 2 of 3 (P = softmax(S)): row {r} of S comes back from HBM, {cols}, whole in SRAM, because its max and "
    "sum need all of it: max {m}, sum of exp(S − max) {l}. P[{r}] = exp(S[{r}] − max)/sum goes back out to HBM "
    "({width} elements); its largest probability is {largest}.{nan}"
)
ALL_COLUMNS = "all {width} columns"
FIRST_COLUMNS = "its first {width} columns (causal: the rest lie above the diagonal)"
ROW_NAN = (
    " The row has no finite score to take a softmax over (or one overflowed float32): exp(−∞ − (−∞)) is NaN, so its "
    "P and O are NaN, as the kernel computes them."
)
LOAD_PV = (
    "Kernel 3 of 3 (O = PV), tile {tile} of {tc}: Pij = P[{r0}:{r1}, {c0}:{c1}] comes back from HBM a second time "
    "({p_elements} elements) with Vj = V[{c0}:{c1}] ({v_elements} elements)."
)
ACCUMULATE = "Oi += Pij·Vj ({added} added; Oi now {Oi}). P is already normalised, so nothing held is ever rescaled."
WRITE_O = (
    "O[{first}:{end}] = Oi is written ({elements} elements). To get here these {valid} rows sent {scores} scores "
    "through HBM four times: S written and read, P written and read."
)

# ---- the carries panel's notes ----

NO_CARRIES = rich(
    "Standard attention keeps no running carries: each row's max and sum are computed in one go by the softmax "
    "kernel (`softmax_row` steps)."
)
ROW_CARRIES = (
    "Row {r} of S: its max mᵣ and sum ℓᵣ of exp(S − mᵣ), computed from the whole row at once (the row was written to "
    "HBM first, and is read back whole)."
)


def text(cfg: Config, s: Record) -> str:
    n, d = cfg.n, cfg.d
    i = s.indices["i"]
    first, end, valid = rows_of(cfg, i)
    tc = cfg.tiles_of_block(i)
    width = min(n, tc * cfg.bc)  # columns of S and P this block's rows use (N unless causal)
    if s.op == "load_q":
        pad = "" if valid == cfg.br else PADDING.format(valid=valid, br=cfg.br, pad=cfg.br - valid)
        return LOAD_Q.format(i=i, first=first, end=end, elements=valid * d, padding=pad)
    if s.op == "softmax_row":
        assert s.carries is not None
        r = s.indices["r"]
        m, l = float(s.carries["mr"][0]), float(s.carries["lr"][0])
        P = s.sram["Sr"][:width]
        cols = ALL_COLUMNS if width >= n else FIRST_COLUMNS
        return SOFTMAX_ROW.format(
            r=r,
            cols=cols.format(width=width),
            m=num(m),
            l=num(l),
            width=width,
            largest=span(P).split(" … ")[-1],
            nan="" if np.isfinite(l) else ROW_NAN,
        )
    if s.op == "write_o":
        return WRITE_O.format(first=first, end=end, elements=valid * d, valid=valid, scores=valid * width)
    j = s.indices["j"]
    c0, c1, nc = keys_of(cfg, j)
    if s.op == "load_k":
        ragged = "" if nc == cfg.bc else RAGGED.format(valid=nc, bc=cfg.bc)
        skipped = cfg.tc - tc
        return LOAD_K.format(
            tile=j + 1,
            tc=tc,
            first=c0,
            end=c1,
            elements=nc * d,
            tr=cfg.tr,
            times=plural(cfg.tr, "time"),
            ragged=ragged,
            skipped=SKIPPED.format(tiles=plural(skipped, "tile")) if skipped else "",
        )
    if s.op == "scores":
        live = s.sram["Sij"][:valid, :nc]
        finite = live[np.isfinite(live)]
        masked = int(np.isneginf(live).sum())
        return SCORES.format(
            scale=num(float(np.float32(cfg.softmax_scale))),
            scores=FINITE.format(count=finite.size, low=num(finite.min()), high=num(finite.max()))
            if finite.size
            else NONE_FINITE,
            nonfinite=nonfinite_scores(live),
            first=first,
            end=first + valid,
            c0=c0,
            c1=c0 + nc,
            elements=live.size,
            masked=MASKED.format(masked=masked) if cfg.causal and masked else "",
        )
    if s.op == "load_pv":
        return LOAD_PV.format(
            tile=j + 1, tc=tc, r0=first, r1=end, c0=c0, c1=c1, p_elements=valid * nc, v_elements=nc * d
        )
    assert s.op == "accumulate", s.op
    added = "first tile" if j == 0 else f"{j + 1} of {tc} tiles"
    return ACCUMULATE.format(added=added, Oi=span(s.sram["Oi"][:valid]))


def carries_note(s: Record) -> Rich:
    return [ROW_CARRIES.format(r=s.indices["r"])] if s.carries else NO_CARRIES


def say(cfg: Config, s: Record, state: Mapping[str, np.ndarray]) -> Said:
    return Said(text(cfg, s), moves_action(s, picture.OPS, LABELS[s.op][0]), carries_note(s))
