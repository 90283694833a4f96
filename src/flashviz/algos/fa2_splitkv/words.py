"""fa2-splitkv's words (flashviz.algos.words): every sentence of its steps, plain text with named slots, said after
the run from each step's record. The score tile's and the online softmax's sentences inside a chunk are the shared
ones fa2 says too (the same loop over a shorter run of tiles)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos.picture import Rich, precision3
from flashviz.algos.words import (
    CARRIES_WAIT,
    FA2_LOOP_LABELS,
    FA2_ONLINE_PARTS,
    Said,
    keys_of,
    num,
    online_softmax,
    plural,
    row_list,
    row_range,
    rows_of,
    scores,
    slices,
    span,
)

from .record import chunk, splits

if TYPE_CHECKING:
    from flashviz.engine.steps import Record
    from flashviz.model.config import Config

# op -> (the seed-style label, TeX)
LABELS = {
    **FA2_LOOP_LABELS,
    "write_partial": (
        "Opart[s][i], Lpart[s][i] = Oi/li, mi + log(li)",
        r"O^{(s)}[i] \leftarrow O_i / \ell_i,\; L^{(s)}[i] \leftarrow m_i + \log \ell_i",
    ),
    "load_first": ("Oc, Lc = Opart[0][i], Lpart[0][i]", r"O_c, L_c \leftarrow O^{(0)}[i], L^{(0)}[i]"),
    "load_partial": ("Os, Ls = Opart[s][i], Lpart[s][i]", r"O_s, L_s \leftarrow O^{(s)}[i], L^{(s)}[i]"),
    "merge": (
        "Lc, Oc = lse(Lc, Ls), weighted Oc + Os",
        r"L' = \log(e^{L_c} + e^{L_s}),\; O_c \leftarrow e^{L_c - L'} O_c + e^{L_s - L'} O_s",
    ),
    "write_out": ("O[i], L[i] = Oc, Lc", r"O[i] \leftarrow O_c,\; L[i] \leftarrow L_c"),
}
# op -> its visible parts: (name, seed-style label, TeX), in the order the engine records their values
PARTS = {
    "online_softmax": FA2_ONLINE_PARTS,
    "merge": (
        (
            "weights",
            "wc, ws = exp(Lc - m), exp(Ls - m)",
            r"m = \max(L_c, L_s),\; w_c = e^{L_c - m},\; w_s = e^{L_s - m}",
        ),
        ("new lse", "Lc = m + log(wc + ws)", r"L_c \leftarrow m + \log(w_c + w_s)"),
    ),
}

# ---- the narrative sentences ----

LOAD_Q = (
    "Split block (i = {i}, s = {s}) claims {rows} of Q: Qi = Q[{first}:{end}] is loaded ({elements} elements), as "
    "each of the {splits} split blocks of block {i} loads it, and Oi = 0, mi = −∞, li = 0 start empty: this block "
    "sees only chunk {s} of K and V.{padding}"
)
PADDING = (
    " Only {valid} of its {br} rows exist (N ends at {end}); the other {pad} are padding, zero in SRAM and never "
    "loaded."
)
LOAD_KV = (
    "{which} tile of chunk {s} (tiles {j0}..{last}) arrives: Kj, Vj = K[{first}:{end}], V[{first}:{end}] "
    "({elements} elements across HBM). Only the blocks of chunk {s} read it, one per block of Q: {times} in "
    "all.{ragged}"
)
RAGGED = " The tile is ragged: only {valid} of {bc} rows exist, the rest are zero in SRAM."
WRITE_PARTIAL = (
    "Chunk {s} is done, so Oi is divided by its own li and leaves as a partial result: Opart[{s}][{first}:{end}] = "
    "Oi / li and Lpart[{s}][{first}:{end}] = mi + log(li) ({L}), {elements} + {valid} elements written to HBM. It is "
    "the attention over this chunk's keys only; the combine kernel reads it back with the other {others}.{nan}"
)
PARTIAL_NAN = " {Rows} had no softmax (NaN li): their partial is NaN."
LOAD_FIRST = (
    "The combine kernel's block {i} starts from the first partial: Oc, Lc = Opart[0][{first}:{end}], "
    "Lpart[0][{first}:{end}] ({elements} elements read back from HBM). {more}"
)
ONE_CHUNK = "There is only one chunk, so it is already the answer."
MORE_FOLLOW = "{more} follow."
LOAD_PARTIAL = (
    "Partial {s} of {splits} comes back from HBM: Os, Ls = Opart[{s}][{first}:{end}], Lpart[{s}][{first}:{end}] "
    "({elements} elements), the attention of these rows over chunk {s}'s keys."
)
MERGE = (
    "The log-sum-exp rule merges partial {s} into the running result: each row's weights are e^(Lc − L') and "
    "e^(Ls − L') with L' = log(e^Lc + e^Ls), so the side whose keys scored higher weighs more. Row {row}: Lc = "
    "{Lc} and Ls = {Ls} give L' = {L_new} and weights {wc} and {ws} (they sum to 1). No rescaling of a sum is needed: "
    "both partials are already normalised."
)
MERGE_NAN = "The log-sum-exp rule merges partial {s}, but some rows are not numbers: Lc is {L_new}."
WRITE_OUT = (
    "All {partials} merged: O[{first}:{end}] = Oc and L[{first}:{end}] = Lc ({L}) are written once ({elements} + "
    "{valid} elements), the same attention fa2 computes in one block, up to the order of the sums."
)

# ---- the Action column ----

ACTION = {
    "load_q": "Qi ← {Q}; Oi ← 0; mi ← −∞; li ← 0 (chunk s = {s})",
    "load_kv": "Kj ← {K}, Vj ← {V}",
    "scores": "Sij ← Qi·Kjᵀ × {scale}  ({br}×{bc} in SRAM)",
    "online_softmax": "new max, rescale li and Oi by α, add tile j = {j} of chunk s = {s}",
    "write_partial": "{Opart} ← Oi/li; {Lpart} ← mi + log(li)",
    "load_first": "Oc ← {Opart}, Lc ← {Lpart}",
    "load_partial": "Os ← {Opart}, Ls ← {Lpart}",
    "merge": "Lc, Oc ← log-sum-exp merge with partial s = {s}",
    "write_out": "{O} ← Oc; {L} ← Lc",
}

# ---- the carries panel's notes ----

CARRIES = {
    "load_q": "The carries start empty for this chunk: mᵢ = −∞, ℓᵢ = 0, Oᵢ = 0.",
    "load_kv": CARRIES_WAIT.format(what="brings in tile j"),
    "scores": CARRIES_WAIT.format(what="computes Sᵢⱼ"),
    "online_softmax": "As in FA2, within this chunk: where the max grew (α < 1) ℓᵢ and Oᵢ are rescaled by α before "
    "this tile is added.",
    "write_partial": "The chunk's carries leave: Oᵢ / ℓᵢ and L = mᵢ + log ℓᵢ go to HBM as this chunk's partial.",
    "load_first": "The combine's carries are partial 0: Lᶜ and Oᶜ.",
    "load_partial": "Lᶜ and Oᶜ wait while the next partial arrives.",
    "merge": "Lᶜ becomes the log-sum-exp of both; Oᶜ the weighted sum of both partials.",
    "write_out": "Lᶜ and Oᶜ are the answer: written once.",
}


def merge(s: int, L_old: np.ndarray, Ls: np.ndarray, ac: np.ndarray, as_: np.ndarray, L_new: np.ndarray) -> str:
    if L_new.size == 0 or not np.isfinite(L_new).all():
        return MERGE_NAN.format(s=s, L_new=span(L_new))
    r = int(np.argmax(np.abs(L_old - Ls)))
    return MERGE.format(s=s, row=r, Lc=num(L_old[r]), Ls=num(Ls[r]), L_new=num(L_new[r]), wc=num(ac[r]), ws=num(as_[r]))


def text(cfg: Config, s: Record, state: Mapping[str, np.ndarray]) -> str:
    d = cfg.d
    i = s.indices["i"]
    first, end, valid = rows_of(cfg, i)
    S = splits(cfg.n, cfg.bc)
    split = s.indices.get("s", 0)
    if s.op == "load_q":
        pad = "" if valid == cfg.br else PADDING.format(valid=valid, br=cfg.br, end=end, pad=cfg.br - valid)
        return LOAD_Q.format(
            i=i, s=split, rows=row_range(first, end), first=first, end=end, elements=valid * d, splits=S, padding=pad
        )
    if s.op in ("load_kv", "scores", "online_softmax"):
        j = s.indices["j"]
        c0, c1, nc = keys_of(cfg, j)
        j0, j1 = chunk(split, cfg.n, cfg.bc)
        if s.op == "scores":
            return scores(s.sram["Sij"], valid, nc, float(np.float32(cfg.softmax_scale)), causal=False)
        if s.op == "online_softmax":
            assert s.carries is not None
            return online_softmax(j - j0, s.carries, valid)
        which = "The first" if j == j0 else ("The last" if j == j1 - 1 else f"Tile {j - j0 + 1} of {j1 - j0}:")
        return LOAD_KV.format(
            which=which,
            s=split,
            j0=j0,
            last=j1 - 1,
            first=c0,
            end=c1,
            elements=2 * nc * d,
            times=plural(cfg.tr, "time"),
            ragged="" if nc == cfg.bc else RAGGED.format(valid=nc, bc=cfg.bc),
        )
    if s.op == "write_partial":
        assert s.carries is not None
        L = s.carries["L"][:valid]
        bad = np.flatnonzero(~np.isfinite(L))
        return WRITE_PARTIAL.format(
            s=split,
            first=first,
            end=end,
            L=span(L),
            elements=valid * d,
            valid=valid,
            others=S - 1,
            nan=PARTIAL_NAN.format(Rows=row_list(first + bad).capitalize()) if bad.size else "",
        )
    if s.op == "load_first":
        more = ONE_CHUNK if S == 1 else MORE_FOLLOW.format(more=plural(S - 1, "more partial"))
        return LOAD_FIRST.format(i=i, first=first, end=end, elements=valid * (d + 1), more=more)
    if s.op == "load_partial":
        return LOAD_PARTIAL.format(s=split, splits=S, first=first, end=end, elements=valid * (d + 1))
    if s.op == "merge":
        assert s.carries is not None and s.parts is not None
        c = s.carries
        return merge(
            split,
            s.parts[1]["Lc_old"][:valid],
            state["Ls"][:valid],
            c["weight_c"][:valid],
            c["weight_s"][:valid],
            c["Lc"][:valid],
        )
    assert s.op == "write_out", s.op
    return WRITE_OUT.format(
        partials=plural(S, "partial"),
        first=first,
        end=end,
        L=span(s.sram["Lc"][:valid]),
        elements=valid * d,
        valid=valid,
    )


def say(cfg: Config, s: Record, state: Mapping[str, np.ndarray]) -> Said:
    action = ACTION[s.op].format(
        **slices(s), s=s.indices.get("s"), scale=precision3(cfg.softmax_scale), br=cfg.br, bc=cfg.bc, j=s.j
    )
    note: Rich = [CARRIES[s.op]]
    return Said(text(cfg, s, state), action, note)
