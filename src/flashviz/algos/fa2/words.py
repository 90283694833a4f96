"""fa2's words (flashviz.algos.words): every sentence of its steps, plain text with named slots, said after the run
from each step's record. The score tile's and the online softmax's sentences are the shared ones."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos.picture import Rich, precision3
from flashviz.algos.words import (
    CARRIES_FIRST,
    CARRIES_STALE,
    CARRIES_WAIT,
    FA2_LOOP_LABELS,
    FA2_ONLINE_PARTS,
    Said,
    keys_of,
    no_score_note,
    online_softmax,
    plural,
    row_list,
    row_range,
    rows_of,
    scores,
    slices,
    span,
)

if TYPE_CHECKING:
    from flashviz.engine.steps import Record
    from flashviz.model.config import Config

# op -> (the seed's label, TeX)
LABELS = {
    **FA2_LOOP_LABELS,
    "write_back": (
        "O[i], L[i] = Oi/li, mi + log(li)",
        r"O[i] \leftarrow O_i / \ell_i,\; L[i] \leftarrow m_i + \log \ell_i",
    ),
}
# op -> its visible parts: (name, seed-style label, TeX), in the order the engine records their values
PARTS = {"online_softmax": FA2_ONLINE_PARTS}

# ---- the narrative sentences ----

LOAD_Q = (
    "Block {i} claims {rows} of Q: Qi = Q[{first}:{end}] is loaded once ({elements} elements) and stays for the whole "
    "run, while Oi = 0, mi = −∞ and li = 0 start empty.{padding}"
)
PADDING = (
    " Only {valid} of its {br} rows exist (N ends at {end}); the other {pad} are padding, zero in SRAM and never "
    "loaded."
)
LOAD_KV = (
    "{which} tile of K and V arrives: Kj, Vj = K[{first}:{end}], V[{first}:{end}] ({elements} elements across HBM). "
    "Every one of the {tr} blocks of Q reads this same tile, so K and V are read {times} in all.{ragged}"
)
LOAD_KV_CAUSAL = (
    "{which} tile of K and V this block needs arrives: Kj, Vj = K[{first}:{end}], V[{first}:{end}] ({elements} "
    "elements across HBM). Causal: the {skipped} after the diagonal lie wholly above it and are never loaded by this "
    "block.{ragged}"
)
RAGGED = " The tile is ragged: only {valid} of {bc} rows exist, the rest are zero in SRAM."
WRITE_BACK = (
    "The tiles are done, so only now is Oi divided by li — the one division — and mi and li leave together as "
    "L = mi + log(li) ({L}). O[{first}:{end}] and L[{first}:{end}] are written ({elements} + {valid} elements) and "
    "never read back.{nan}"
)
WRITE_BACK_NAN = (
    " {Rows} had no softmax (NaN li): their O and L are written as NaN, the kernel's own result; the float64 check "
    "fails on them."
)

# ---- the Action column ----

ACTION = {
    "load_q": "Qi ← {Q}; Oi ← 0; mi ← −∞; li ← 0",
    "load_kv": "Kj ← {K}, Vj ← {V}",
    "scores": "Sij ← Qi·Kjᵀ × {scale}  ({br}×{bc} in SRAM)",
    "online_softmax": "new max, rescale li and Oi by α, add tile j = {j}",
    "write_back": "{O} ← Oi/li; {L} ← mi + log(li)",
}

# ---- the carries panel's notes ----

CARRIES = {
    "load_q": "The carries start empty: mᵢ = −∞, ℓᵢ = 0, Oᵢ = 0. They stay in SRAM for the whole loop.",
    "load_kv": CARRIES_WAIT.format(what="brings in tile j"),
    "scores": CARRIES_WAIT.format(what="computes Sᵢⱼ"),
    "write_back": "The only division: O = Oᵢ / ℓᵢ, once. mᵢ and ℓᵢ leave together as L = mᵢ + log ℓᵢ ({br} values "
    "per block).",
}


def which_tile(j: int, tc: int) -> str:
    return "The first" if j == 0 else ("The last" if j == tc - 1 else f"Tile {j + 1} of {tc}:")


def text(cfg: Config, s: Record) -> str:
    i = s.indices["i"]
    first, end, valid = rows_of(cfg, i)
    if s.op == "load_q":
        pad = "" if valid == cfg.br else PADDING.format(valid=valid, br=cfg.br, end=end, pad=cfg.br - valid)
        return LOAD_Q.format(i=i, rows=row_range(first, end), first=first, end=end, elements=valid * cfg.d, padding=pad)
    if s.op == "write_back":
        assert s.carries is not None
        L = s.carries["L"][:valid]
        bad = np.flatnonzero(~np.isfinite(L))
        nan = WRITE_BACK_NAN.format(Rows=row_list(first + bad).capitalize()) if bad.size else ""
        return WRITE_BACK.format(L=span(L), first=first, end=end, elements=valid * cfg.d, valid=valid, nan=nan)
    j = s.j
    assert j is not None, s.op
    c0, c1, nc = keys_of(cfg, j)
    if s.op == "load_kv":
        tc = cfg.tiles_of_block(i)
        skipped = cfg.tc - tc
        ragged = "" if nc == cfg.bc else RAGGED.format(valid=nc, bc=cfg.bc)
        said = {"which": which_tile(j, tc), "first": c0, "end": c1, "elements": 2 * nc * cfg.d, "ragged": ragged}
        if skipped:
            return LOAD_KV_CAUSAL.format(skipped=plural(skipped, "tile"), **said)
        return LOAD_KV.format(tr=cfg.tr, times=plural(cfg.tr, "time"), **said)
    if s.op == "scores":
        return scores(s.sram["Sij"], valid, nc, float(np.float32(cfg.softmax_scale)), causal=cfg.causal)
    assert s.op == "online_softmax" and s.carries is not None, s.op
    return online_softmax(j, s.carries, valid)


def carries_note(cfg: Config, s: Record, state: Mapping[str, np.ndarray]) -> Rich:
    """What the step does to mi, li, Oi, and the rows that have no softmax."""
    if s.op == "online_softmax":
        note = CARRIES_FIRST if s.j == 0 else CARRIES_STALE + "."
    else:
        note = CARRIES[s.op].format(br=cfg.br)
    return [note + no_score_note(cfg, s, state)]


def say(cfg: Config, s: Record, state: Mapping[str, np.ndarray]) -> Said:
    action = ACTION[s.op].format(**slices(s), scale=precision3(cfg.softmax_scale), br=cfg.br, bc=cfg.bc, j=s.j)
    return Said(text(cfg, s), action, carries_note(cfg, s, state))
