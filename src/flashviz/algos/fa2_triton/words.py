"""fa2-triton's words (flashviz.algos.words): every sentence of its steps, plain text with named slots, said after
the run from each step's record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos.picture import Rich
from flashviz.algos.words import (
    CARRIES_WAIT,
    Said,
    keys_of,
    no_softmax,
    nonfinite_scores,
    num,
    plural,
    row_list,
    row_range,
    rows_of,
    slices,
    span,
)

from .engine import LOG2E, MASK_CAUSAL, stage_of

if TYPE_CHECKING:
    from flashviz.engine.steps import Record
    from flashviz.model.config import Config

# op -> (the seed's label, TeX)
LABELS = {
    "load_q": (
        "Qi = Q[i]; Oi = 0; mi = -inf; li = 0",
        r"Q_i \leftarrow Q[i];\; O_i \leftarrow 0;\; m_i \leftarrow -\infty;\; \ell_i \leftarrow 0",
    ),
    "load_kv": ("Kj, Vj = K[j], V[j]", r"K_j, V_j \leftarrow K[j], V[j]"),
    "scores": ("Sij = tl.dot(Qi, Kj.T)", r"S_{ij} = Q_i K_j^{\top}\ \text{(tensor cores, fp32)}"),
    "online_softmax": (
        "mi, li, Oi = ... (exp2; Oi += bf16(P) @ Vj)",
        r"m_i, \ell_i, O_i \leftarrow \mathrm{online\_softmax}_2(m_i, \ell_i, O_i, S_{ij}, V_j)",
    ),
    "write_back": (
        "O[i], L[i] = bf16(Oi/li), (mi + log2(li))·ln 2",
        r"O[i] \leftarrow \mathrm{bf16}(O_i / \ell_i),\; L[i] \leftarrow (m_i + \log_2 \ell_i) \ln 2",
    ),
}
# op -> its visible parts: (name, seed-style label, TeX), in the order the engine records their values
PARTS = {
    "online_softmax": (
        (
            "new max",
            "m_new = max(mi, Sij.max(1) * qk_scale)",
            r"m_i^{\text{new}} = \max\!\big(m_i,\ \tau \log_2 e \cdot \mathrm{rowmax}(S_{ij})\big)",
        ),
        (
            "rescaled sum",
            "li = li * alpha + exp2(Sij * qk_scale - m_new).sum(1)",
            r"\ell_i = 2^{\,m_i - m_i^{\text{new}}}\,\ell_i"
            r" + \mathrm{rowsum}\big(2^{\,\tau \log_2 e\, S_{ij} - m_i^{\text{new}}}\big)",
        ),
        (
            "rescaled output",
            "Oi = tl.dot(bf16(Pij), Vj, Oi * alpha)",
            r"O_i = 2^{\,m_i - m_i^{\text{new}}}\,O_i + \mathrm{bf16}(P)\,V_j",
        ),
    )
}

# ---- the narrative sentences ----

STAGE_WORDS = {
    "NO_MASK": "the unmasked stage",
    "MASK_CAUSAL": "the diagonal stage (MASK_CAUSAL: key column > query row is masked)",
    "MASK_COLUMNS": "the ragged stage (MASK_COLUMNS: key columns ≥ N are masked)",
}
LOAD_Q = (
    "Program {i} claims {rows} of Q: one TMA load brings Qi = Q[{first}:{end}] into shared memory as bf16 ({elements} "
    "elements, {bytes} bytes) for the whole run, while the fp32 accumulator Oi = 0 and the carries mi = −∞, li = 0 "
    "start in registers.{padding}"
)
PADDING = (
    " Only {valid} of its {br} rows exist (N ends at {end}); the tensor descriptor reads the other {pad} as zeros, "
    "and nothing past N is fetched."
)
LOAD_KV = (
    "{which} tile of K and V arrives by TMA, in {stage} of the loop: Kj, Vj = K[{first}:{end}], V[{first}:{end}] "
    "({elements} bf16 elements, {bytes} bytes). {reread}{ragged}"
)
REREAD = "Every one of the {tr} programs of Q reads this tile, so K and V are read {times} in all."
SKIPPED = "Causal: the {tiles} past the diagonal are never loaded here."
RAGGED = " The tile is ragged: only {valid} of {bc} rows exist; TMA fills the rest with zeros."
SCORES = (
    "Sij = tl.dot(Qi, Kjᵀ) on the tensor cores: bf16 products, exact, summed in fp32, and not yet scaled (the scale "
    "times log2 e = {qk_scale} is folded into the exponent next).{finite}{nonfinite}{diagonal}{past_n}"
)
FINITE = " {count} finite scores between {low} and {high}."
DIAGONAL = " A diagonal tile: {masked} scores with key column > query row are set to −∞."
PAST_N = " Columns {first}–{last} lie past N and are set to −∞ ({stage})."
ONLINE_NOT_NUMBERS = "The carries move, but not to numbers: mi is {m_new}.{note}"
ONLINE_FIRST = (
    "The first tile moves the carries: mi (in units of log2) goes from −∞ to {m_new}, li becomes the row sums of "
    "P = exp2(Sij·qk_scale − mi) ({l_new}) and Oi = bf16(P)·Vj; the rescale factor is exp2(−∞) = 0.{rounded}{note}"
)
ONLINE_NO_RISE = (
    "No row's max rose, so every factor is exp2(0) = 1 and this tile's terms are added (li now {l_new}).{rounded}{note}"
)
ONLINE_RISE = (
    "Row {row}'s max rose from {m_old} to {m_new} (log2 units), so its li ({l_old}) and Oi were scaled by "
    "exp2({m_old} − {m_new}) = {alpha} before this tile was added, giving li = {l_new}; {rose} of {rows} rows' maxima "
    "rose.{rounded}{note}"
)
ROUNDED = " P is rounded to bf16 for the tensor cores' P·Vj (the largest change: {rounding}); li sums the fp32 P."
WRITE_BACK = (
    "The tiles are done: Oi is divided by li once and stored by TMA as bf16, O[{first}:{end}] ({elements} elements, "
    "{o_bytes} bytes); L = (mi + log2 li)·ln 2 leaves in fp32, L[{first}:{end}] ({valid} elements, {l_bytes} bytes: "
    "{L}). Neither is read back.{nan}"
)
NAN = " {Rows} had no softmax: their O and L are NaN."

# ---- the Action column ----

ACTION = {
    "load_q": "Qi ← {Q} (TMA, bf16); Oi ← 0; mi ← −∞; li ← 0",
    "load_kv": "Kj ← {K}, Vj ← {V} (TMA, bf16; {stage})",
    "scores": "Sij ← tl.dot(Qi, Kjᵀ)  ({br}×{bc}, tensor cores; {stage})",
    "online_softmax": "exp2 softmax, rescale li and Oi, Oi += bf16(P)·Vj, tile j = {j}",
    "write_back": "{O} ← bf16(Oi/li); {L} ← (mi + log2 li)·ln 2",
}

# ---- the carries panel's notes ----

CARRIES = {
    "load_q": "The carries start empty in registers: mᵢ = −∞, ℓᵢ = 0, Oᵢ = 0.",
    "load_kv": CARRIES_WAIT.format(what="brings in tile j"),
    "scores": CARRIES_WAIT.format(what="computes Sᵢⱼ"),
    "write_back": "The only division: O = Oᵢ / ℓᵢ, rounded to bf16. L = (mᵢ + log₂ ℓᵢ)·ln 2 in fp32, the natural "
    "log-sum-exp.",
}
FIRST = "First tile: m_old = −∞, so α = 2^(−∞) = 0 wipes the empty carries."
STALE = (
    "Where the max grew (α < 1), ℓᵢ and Oᵢ are rescaled by α = 2^(m_old − m_new) before this tile is added; mᵢ is in "
    "units of log₂."
)


def scores(S: np.ndarray, valid_rows: int, valid_cols: int, stage: str, qk_scale: float) -> str:
    live = S[:valid_rows, :valid_cols]
    finite = live[np.isfinite(live)]
    masked = int(np.isneginf(live).sum())
    return SCORES.format(
        qk_scale=num(qk_scale),
        finite=FINITE.format(count=finite.size, low=num(finite.min()), high=num(finite.max())) if finite.size else "",
        nonfinite=nonfinite_scores(live),
        diagonal=DIAGONAL.format(masked=masked) if stage == MASK_CAUSAL and masked else "",
        past_n=PAST_N.format(first=valid_cols, last=S.shape[1] - 1, stage=STAGE_WORDS[stage])
        if valid_cols < S.shape[1]
        else "",
    )


def online_softmax(j: int, carries: Mapping[str, np.ndarray], valid_rows: int, rounding: float) -> str:
    m_old, m_new, alpha = carries["m_old"][:valid_rows], carries["mi"][:valid_rows], carries["alpha"][:valid_rows]
    l_old, l_new = carries["l_old"][:valid_rows], carries["li"][:valid_rows]
    bad = np.flatnonzero(~np.isfinite(l_new))
    note = no_softmax(bad) if bad.size else ""
    rounded = ROUNDED.format(rounding=num(rounding))
    good = np.flatnonzero(np.isfinite(l_new))
    if good.size == 0:
        return ONLINE_NOT_NUMBERS.format(m_new=span(m_new), note=note)
    if bad.size:
        m_old, m_new, alpha, l_old, l_new = m_old[good], m_new[good], alpha[good], l_old[good], l_new[good]
    if j == 0:
        return ONLINE_FIRST.format(m_new=span(m_new), l_new=span(l_new), rounded=rounded, note=note)
    rise = m_new - m_old
    rose = np.flatnonzero(rise > 0)
    if rose.size == 0:
        return ONLINE_NO_RISE.format(l_new=span(l_new), rounded=rounded, note=note)
    r = int(rose[np.argmax(rise[rose])])
    return ONLINE_RISE.format(
        row=int(good[r]) if bad.size else r,
        m_old=num(m_old[r]),
        m_new=num(m_new[r]),
        l_old=num(l_old[r]),
        alpha=num(alpha[r]),
        l_new=num(l_new[r]),
        rose=rose.size,
        rows=m_new.size,
        rounded=rounded,
        note=note,
    )


def text(cfg: Config, s: Record) -> str:
    d = cfg.d
    i = s.indices["i"]
    first, end, valid = rows_of(cfg, i)
    if s.op == "load_q":
        pad = "" if valid == cfg.br else PADDING.format(valid=valid, br=cfg.br, end=end, pad=cfg.br - valid)
        return LOAD_Q.format(
            i=i, rows=row_range(first, end), first=first, end=end, elements=valid * d, bytes=2 * valid * d, padding=pad
        )
    if s.op == "write_back":
        assert s.carries is not None
        L = s.carries["L"][:valid]
        bad = np.flatnonzero(~np.isfinite(L))
        return WRITE_BACK.format(
            first=first,
            end=end,
            elements=valid * d,
            o_bytes=2 * valid * d,
            valid=valid,
            l_bytes=4 * valid,
            L=span(L),
            nan=NAN.format(Rows=row_list(first + bad).capitalize()) if bad.size else "",
        )
    j = s.indices["j"]
    c0, c1, nc = keys_of(cfg, j)
    stage = stage_of(cfg, i, j)
    if s.op == "load_kv":
        tc = cfg.tiles_of_block(i)
        skipped = cfg.tc - tc
        which = "The first" if j == 0 else ("The last" if j == tc - 1 else f"Tile {j + 1} of {tc}:")
        reread = (
            SKIPPED.format(tiles=plural(skipped, "tile"))
            if skipped
            else REREAD.format(tr=cfg.tr, times=plural(cfg.tr, "time"))
        )
        return LOAD_KV.format(
            which=which,
            stage=STAGE_WORDS[stage],
            first=c0,
            end=c1,
            elements=2 * nc * d,
            bytes=4 * nc * d,
            reread=reread,
            ragged="" if nc == cfg.bc else RAGGED.format(valid=nc, bc=cfg.bc),
        )
    if s.op == "scores":
        return scores(s.sram["Sij"], valid, nc, stage, float(np.float32(cfg.softmax_scale * LOG2E)))
    assert s.op == "online_softmax" and s.carries is not None, s.op
    return online_softmax(j, s.carries, valid, s.facts["rounding"])


def stage_note(s: Record) -> str:
    """The note of the step's code header (its loop stage): the words after its last ' · '."""
    first = s.code.split("\n", 1)[0]
    return first.rpartition("· ")[2] if "· " in first else ""


def carries_note(s: Record) -> Rich:
    if s.op == "online_softmax":
        return [FIRST if s.j == 0 else STALE]
    return [CARRIES[s.op]]


def say(cfg: Config, s: Record, state: Mapping[str, np.ndarray]) -> Said:
    action = ACTION[s.op].format(**slices(s), stage=stage_note(s), br=cfg.br, bc=cfg.bc, j=s.j)
    return Said(text(cfg, s), action, carries_note(s))
