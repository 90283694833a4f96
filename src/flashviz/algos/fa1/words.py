"""fa1's words (flashviz.algos.words): every sentence of its steps, plain text with named slots, said after the run
from each step's record. The score tile's sentence is the shared one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos.picture import Rich
from flashviz.algos.words import (
    CARRIES_FIRST,
    CARRIES_STALE,
    CARRIES_WAIT,
    Said,
    keys_of,
    moves_action,
    no_score_note,
    no_softmax,
    num,
    plural,
    rows_of,
    scores,
    span,
)

from . import picture

if TYPE_CHECKING:
    from flashviz.engine.steps import Record
    from flashviz.model.config import Config

# op -> (label, TeX)
LABELS = {
    "init": (
        "O[i], l[i], m[i] = 0, 0, -inf",
        r"O[i] \leftarrow 0;\; \ell[i] \leftarrow 0;\; m[i] \leftarrow -\infty",
    ),
    "load_kv": ("Kj, Vj = K[j], V[j]", r"K_j, V_j \leftarrow K[j], V[j]"),
    "load_qi": (
        "Qi, Oi, li, mi = Q[i], O[i], l[i], m[i]",
        r"Q_i, O_i, \ell_i, m_i \leftarrow Q[i], O[i], \ell[i], m[i]",
    ),
    "scores": ("Sij = Qi @ Kj.T", r"S_{ij} = \tau\, Q_i K_j^{\top}"),
    "update": (
        "mi, li, Oi = ...",
        r"m_i, \ell_i, O_i \leftarrow \mathrm{update}(m_i, \ell_i, O_i, S_{ij}, V_j)",
    ),
    "write_back": ("O[i], l[i], m[i] = Oi, li, mi", r"O[i], \ell[i], m[i] \leftarrow O_i, \ell_i, m_i"),
}
# op -> its visible parts: (name, seed-style label, TeX), in the order the engine records their values
PARTS = {
    "update": (
        (
            "tile max and sum",
            "m_ij = Sij.max(-1); Pij = exp(Sij - m_ij); l_ij = Pij.sum(-1)",
            r"\tilde m_{ij} = \mathrm{rowmax}(S_{ij}),\ \tilde P_{ij} = e^{S_{ij} - \tilde m_{ij}},\ "
            r"\tilde \ell_{ij} = \mathrm{rowsum}(\tilde P_{ij})",
        ),
        (
            "new max and sum",
            "mi_new = max(mi, m_ij); li_new = exp(mi - mi_new)*li + exp(m_ij - mi_new)*l_ij",
            r"m_i^{\text{new}} = \max(m_i, \tilde m_{ij}),\ \ell_i^{\text{new}} = e^{m_i - m_i^{\text{new}}}\ell_i"
            r" + e^{\tilde m_{ij} - m_i^{\text{new}}}\tilde\ell_{ij}",
        ),
        (
            "normalised output",
            "Oi = (li*exp(mi - mi_new)*Oi + exp(m_ij - mi_new)*Pij @ Vj) / li_new",
            r"O_i = \big(\ell_i e^{m_i - m_i^{\text{new}}} O_i + e^{\tilde m_{ij} - m_i^{\text{new}}}"
            r" \tilde P_{ij} V_j\big) / \ell_i^{\text{new}}",
        ),
    )
}

# ---- the narrative sentences ----

INIT = (
    "Before any tile, block {i}'s carries are set up in HBM, not in SRAM: O[{first}:{end}] = 0, l = 0, m = −∞ "
    "({elements} + {valid} + {valid} elements written). The blocks of Q take turns inside the loop over K/V, so "
    "nothing of theirs can stay in SRAM between turns."
)
LOAD_KV = (
    "Outer loop, tile {tile} of {tc}: Kj, Vj = K[{first}:{end}], V[{first}:{end}] ({elements} elements) are loaded "
    "once and stay while {visits} of Q pass by. K and V cross HBM once in all.{ragged}"
)
RAGGED = " The tile is ragged: only {valid} of {bc} rows exist, the rest are zero in SRAM."
LOAD_QI = "Block {i}'s turn with tile {j}: Qi, Oi, li, mi = Q, O, l, m[{first}:{end}] are read ({moved}). {came}."
MOVED = "{elements} + {rows} elements"
FRESH = "Oi, li, mi are the zeros and −∞ just initialised"
CARRIED = "Oi, li ({li}) and mi ({mi}) are what the previous tile wrote back: the carries travel through HBM"
UPDATE_FIRST = (
    "The first tile: mi becomes the row maxima ({m_new}) and li the row sums of exp(Sij − mi); nothing held was "
    "stale (exp(−∞) = 0).{divided}"
)
UPDATE_NAN = "Mi becomes ({m_new}) and li {l_new}.{divided}"
UPDATE_NO_RISE = (
    "No row's max rose on this tile: the old li and Oi keep factor 1 and this tile's terms are added.{divided}"
)
UPDATE_RISE = (
    "Row {row}'s max rose from {m_old} to {m_new}, so its li and Oi were scaled by exp({m_old} − {m_new}) = {alpha} "
    "before this tile was added.{divided}"
)
DIVIDED = (
    " Oi is divided by the new li ({l_new}) right away: FA1 keeps Oi normalised, one division per visit, where FA2 "
    "divides once at the end."
)
WRITE_BACK = (
    "Oi, li, mi go back to O, l, m[{first}:{end}] in HBM ({moved}), only to be read again when tile {next} visits "
    "block {i}. This round trip, every tile, is what FA2 removes."
)
WRITE_BACK_LAST = (
    "The last tile: O[{first}:{end}] is final ({moved} written). Over the run these rows' O, l and m were read {tc} "
    "times and written {writes} times; FA2 writes O once and never reads it."
)
MOVED_BACK = "{elements} + {valid} + {valid} elements"

# ---- the carries panel's notes ----

CARRIES = {
    "init": "FA1 starts by writing O = 0, ℓ = 0, m = −∞ to HBM: the carries live there between visits.",
    "load_kv": CARRIES_WAIT.format(what="brings in tile j"),
    "load_qi": "The carries come back from HBM: Oᵢ, ℓᵢ, mᵢ as the last visit (tile j − 1) left them. This is the "
    "trip FA2 removes.",
    "scores": CARRIES_WAIT.format(what="computes Sᵢⱼ"),
    "write_back": "The carries go back to HBM: Oᵢ, ℓᵢ, mᵢ written, to be read again by the next tile's visit.",
}
STALE = CARRIES_STALE + ", and Oᵢ is divided by the new ℓᵢ (FA1 normalises on every visit)."


def update(j: int, carries: Mapping[str, np.ndarray], valid_rows: int) -> str:
    m_old, m_new, alpha = carries["m_old"][:valid_rows], carries["mi"][:valid_rows], carries["alpha"][:valid_rows]
    l_new = carries["li"][:valid_rows]
    bad = np.flatnonzero(~np.isfinite(l_new))
    divided = DIVIDED.format(l_new=span(l_new)) + (no_softmax(bad) if bad.size else "")
    if j == 0:
        return UPDATE_FIRST.format(m_new=span(m_new), divided=divided)
    if bad.size:
        return UPDATE_NAN.format(m_new=span(m_new), l_new=span(l_new), divided=divided)
    rise = m_new - m_old
    rose = np.flatnonzero(rise > 0)
    if rose.size == 0:
        return UPDATE_NO_RISE.format(divided=divided)
    r = int(rose[np.argmax(rise[rose])])
    return UPDATE_RISE.format(row=r, m_old=num(m_old[r]), m_new=num(m_new[r]), alpha=num(alpha[r]), divided=divided)


def text(cfg: Config, s: Record) -> str:
    d = cfg.d
    if s.op == "load_kv":
        j = s.indices["j"]
        c0, c1, nc = keys_of(cfg, j)
        ragged = "" if nc == cfg.bc else RAGGED.format(valid=nc, bc=cfg.bc)
        visits = cfg.tr - cfg.first_block(j)
        return LOAD_KV.format(
            tile=j + 1,
            tc=cfg.tc,
            first=c0,
            end=c1,
            elements=2 * nc * d,
            visits=plural(visits, "block"),
            ragged=ragged,
        )
    i = s.indices["i"]
    first, end, valid = rows_of(cfg, i)
    if s.op == "init":
        return INIT.format(i=i, first=first, end=end, elements=valid * d, valid=valid)
    j = s.indices["j"]
    if s.op == "load_qi":
        assert s.carries is not None
        moved = MOVED.format(elements=2 * valid * d, rows=2 * valid)
        came = FRESH if j == 0 else CARRIED.format(li=span(s.carries["li"][:valid]), mi=span(s.carries["mi"][:valid]))
        return LOAD_QI.format(i=i, j=j, first=first, end=end, moved=moved, came=came)
    if s.op == "scores":
        _, _, nc = keys_of(cfg, j)
        return scores(s.sram["Sij"], valid, nc, float(np.float32(cfg.softmax_scale)), causal=cfg.causal)
    if s.op == "update":
        assert s.carries is not None
        return update(j, s.carries, valid)
    assert s.op == "write_back", s.op
    tc = cfg.tiles_of_block(i)
    moved = MOVED_BACK.format(elements=valid * d, valid=valid)
    if j < tc - 1:
        return WRITE_BACK.format(first=first, end=end, moved=moved, next=j + 1, i=i)
    return WRITE_BACK_LAST.format(first=first, end=end, moved=moved, tc=tc, writes=tc + 1)


def carries_note(cfg: Config, s: Record, state: Mapping[str, np.ndarray]) -> Rich:
    """What the step does to mi, li, Oi (they live in HBM between visits)."""
    if s.op == "update":
        first = s.j == 0 or (s.carries is not None and bool(np.isneginf(s.carries["m_old"]).all()))
        note = CARRIES_FIRST if first else STALE
    else:
        note = CARRIES[s.op]
    return [note + no_score_note(cfg, s, state)]


def say(cfg: Config, s: Record, state: Mapping[str, np.ndarray]) -> Said:
    return Said(text(cfg, s), moves_action(s, picture.OPS, LABELS[s.op][0]), carries_note(cfg, s, state))
