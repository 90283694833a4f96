"""fa3's words (flashviz.algos.words): every sentence of its steps, plain text with named slots, said after the run
from each step's record (its schedule: the program, the ring slot, the mask)."""

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
    row_list,
    row_range,
    rows_of,
    slices,
    span,
)

from .engine import LOG2E

if TYPE_CHECKING:
    from flashviz.engine.steps import Record
    from flashviz.model.config import Config

LABELS = {
    "load_q": (
        "Qi = Q[i] (two halves of 64 rows, by TMA)",
        r"Q_i \leftarrow Q[i]\ \text{(two halves, TMA)}",
    ),
    "load_kv": ("Kj, Vj = K[j], V[j] (TMA into ring slot s)", r"K_j, V_j \leftarrow K[j], V[j]\ \text{(ring slot } s)"),
    "first_tile": (
        "Sij = Qi @ Kj.T; mi, li, Pij = softmax2(Sij) (tile 0, peeled)",
        r"S_{i0} = Q_i K_0^{\top};\; m_i, \ell_i, P \leftarrow \mathrm{softmax}_2(S_{i0})",
    ),
    "scores": ("Sij = wgmma(Qi, Kj.T) (issued, async)", r"S_{ij} = Q_i K_j^{\top}\ \text{(wgmma, async)}"),
    "online_softmax": (
        "Oi = alpha·Oi + bf16(P)@V(j-1); mi, li, Pij = softmax2(Sij)",
        r"O_i \leftarrow \alpha O_i + \mathrm{bf16}(P) V_{j-1};\; m_i, \ell_i, P \leftarrow \mathrm{online}_2(S_{ij})",
    ),
    "last_pv": ("Oi = alpha·Oi + bf16(P)@Vj (the last tile)", r"O_i \leftarrow \alpha O_i + \mathrm{bf16}(P) V_j"),
    "write_back": (
        "O[i], L[i] = bf16(Oi/li), (mi + log2(li))·ln 2",
        r"O[i] \leftarrow \mathrm{bf16}(O_i / \ell_i),\; L[i] \leftarrow (m_i + \log_2 \ell_i) \ln 2",
    ),
}
# op -> its visible parts: (name, seed-style label, TeX), in the order the engine records their values
PARTS = {
    "online_softmax": (
        (
            "previous tile's P·V",
            "Oi = wgmma(bf16(Pij), V(j-1), Oi * alpha)",
            r"O_i = 2^{\,m^{\text{prev}} - m_i}\,O_i + \mathrm{bf16}(P_{j-1})\,V_{j-1}",
        ),
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
    )
}

# ---- the narrative sentences ----

MASK_WORDS = {
    "NO_MASK": "no mask",
    "MASK_CAUSAL": "the diagonal mask (MASK_CAUSAL: key column > query row is −∞)",
    "MASK_COLUMNS": "the ragged mask (MASK_COLUMNS: key columns ≥ N are −∞)",
}
LOAD_Q = (
    "Program {program} takes block {i}, {rows} of Q. Its producer warp issues two TMA loads, one half of Qi per "
    "consumer warpgroup (64 rows each: warpgroup 0 rows {first}–{wg0_last}, warpgroup 1 rows {wg1_first}–{wg1_last}), "
    "bf16 into shared memory ({bytes} bytes), and goes on to the tiles of K and V without waiting; each consumer "
    "starts Oi = 0, mi = −∞, li = 0 in its registers.{padding}"
)
PADDING = " Only {valid} of its {br} rows exist (N ends at {end}); TMA reads the rest as zeros."
LOAD_KV = (
    "The producer puts Kj, Vj = K[{first}:{end}], V[{first}:{end}] ({bytes} bytes, bf16) into ring slot {slot} of "
    "{stages} ({wait}); the copy engine completes the slot's ready mbarrier when the bytes land. Each of the {tr} "
    "blocks of Q whose rows reach this tile reads it too.{later}{ragged}"
)
FRESH_SLOT = "a fresh slot: nothing to wait for"
WAITS = "it waits until both consumers have released the slot's tile {tile}"
NEVER_LOADED = " The {skipped} tiles past the diagonal are never loaded."
RAGGED = " Only {valid} of {bc} rows exist; TMA fills the rest with zeros."
SCORES_RANGE = " {count} finite scores between {low} and {high}."
FIRST_TILE = (
    "Tile 0 is peeled off the loop: each warpgroup issues S = Qi K0ᵀ for its 64 rows on the tensor cores and waits "
    "for it (nothing to overlap yet), applies {mask} and takes the first softmax in base 2 (qk_scale = {qk_scale}): "
    "mi becomes {mi}, li {li}.{range}{masked} Its P·V waits for tile 1's scores, to run under them."
)
MASKED = " {masked} of the live rows' scores are masked."
SCORES = (
    "Each warpgroup issues S = Qi Kjᵀ for tile {j} (its turn on the tensor cores: ping-pong) and does not wait: the "
    "wgmma runs while the next step rescales Oi and issues tile {previous}'s P·V. Raw fp32 scores, not yet scaled or "
    "masked.{range}"
)
ONLINE_SOFTMAX = (
    "Tile {previous}'s P·V goes first: Oi is rescaled by tile {previous}'s alpha and bf16(P) times V{previous} is "
    "issued into it (V{previous} still in its ring slot). Then the wait for S{j} returns, Kj's slot is released, "
    "{mask} is applied and tile {j}'s softmax runs while P·V is still on the tensor cores: {rose} of {rows} rows' "
    "maxima rose, li is now {li}. Only then does the warpgroup wait for P·V and release V{previous}'s slot.{note}"
)
LAST_PV = (
    "After the loop, the last tile's P·V: Oi is rescaled by tile {j}'s alpha and bf16(P)·V{j} is added (its first "
    "row's values {values}); Qi's buffer was released just before, so the producer may already load the next block's "
    "Qi."
)
WRITE_BACK = (
    "Each warpgroup divides its 64 rows of Oi by li (the only division), stages them in shared memory as bf16 and "
    "stores them by TMA: O[{first}:{end}] ({bytes} bytes); L = (mi + log2 li)·ln 2 leaves in fp32 by ordinary "
    "stores, L[{first}:{end}] ({L}).{nan}"
)
NAN = " {Rows} had no softmax: their O and L are NaN."

# ---- the Action column ----

ACTION = {
    "load_q": "producer: Qi ← {Q} (two TMA halves, bf16); consumers: Oi ← 0, mi ← −∞",
    "load_kv": "producer: Kj ← {K}, Vj ← {V} (TMA, {note})",
    "first_tile": "consumers: Sij ← Qi·K0ᵀ, mask, exp2 softmax (tile 0; {note})",
    "scores": "consumers: issue Sij ← Qi·Kjᵀ ({br}×{bc} as 2 × 64 rows, async)",
    "online_softmax": "consumers: Oi += bf16(P)·V{previous}; mask and exp2 softmax of tile {j}",
    "last_pv": "consumers: Oi += bf16(P)·V{j} (the last tile)",
    "write_back": "consumers: {O} ← bf16(Oi/li) by TMA; {L} ← (mi + log2 li)·ln 2",
}

# ---- the carries panel's notes ----

CARRIES = {
    "first_tile": "First tile: m_old = −∞, so α = 0; α waits to be applied to Oᵢ (still 0) with P·V.",
    "online_softmax": "Oᵢ took tile j−1's α and P·V first; then where tile j's max grew (α < 1) ℓᵢ is rescaled now, "
    "Oᵢ at the next step; mᵢ is in units of log₂.",
    "load_q": "The carries start empty in each warpgroup's registers: mᵢ = −∞, ℓᵢ = 0, Oᵢ = 0.",
    "load_kv": CARRIES_WAIT.format(what="brings in tile j (the producer's work)"),
    "scores": CARRIES_WAIT.format(what="issues Sᵢⱼ"),
    "last_pv": "The last α and P·V reach Oᵢ; mᵢ and ℓᵢ are final.",
    "write_back": "The only division: O = Oᵢ / ℓᵢ, rounded to bf16. L = (mᵢ + log₂ ℓᵢ)·ln 2 in fp32.",
}


def scores_range(S: np.ndarray, valid_rows: int, valid_cols: int) -> str:
    live = S[:valid_rows, :valid_cols]
    finite = live[np.isfinite(live)]
    said = SCORES_RANGE.format(count=finite.size, low=num(finite.min()), high=num(finite.max())) if finite.size else ""
    return said + nonfinite_scores(live)


def text(cfg: Config, s: Record) -> str:
    d = cfg.d
    i = s.indices["i"]
    first, end, valid = rows_of(cfg, i)
    qk_scale = float(np.float32(cfg.softmax_scale * LOG2E))
    if s.op == "load_q":
        assert s.schedule is not None
        return LOAD_Q.format(
            program=s.schedule["program"],
            i=i,
            rows=row_range(first, end),
            first=first,
            wg0_last=first + 63,
            wg1_first=first + 64,
            wg1_last=first + 127,
            bytes=2 * valid * d,
            padding="" if valid == cfg.br else PADDING.format(valid=valid, br=cfg.br, end=end),
        )
    if s.op == "write_back":
        assert s.carries is not None
        L = s.carries["L"][:valid]
        bad = np.flatnonzero(~np.isfinite(L))
        return WRITE_BACK.format(
            first=first,
            end=end,
            bytes=2 * valid * d,
            L=span(L),
            nan=NAN.format(Rows=row_list(first + bad).capitalize()) if bad.size else "",
        )
    j = s.j
    assert j is not None and s.schedule is not None, s.op
    if s.op == "last_pv":
        return LAST_PV.format(j=j, values=span(s.facts["pv"][0]) if valid else "—")
    c0, c1, nc = keys_of(cfg, j)
    if s.op == "load_kv":
        tc = cfg.tiles_of_block(i)
        skipped = cfg.tc - tc
        ring = s.schedule["ring"]
        return LOAD_KV.format(
            first=c0,
            end=c1,
            bytes=4 * nc * d,
            slot=ring["slot"],
            stages=ring["stages"],
            wait=FRESH_SLOT if ring["use"] == 0 else WAITS.format(tile=j - ring["stages"]),
            tr=cfg.tr,
            later=NEVER_LOADED.format(skipped=skipped) if skipped and j == tc - 1 else "",
            ragged="" if nc == cfg.bc else RAGGED.format(valid=nc, bc=cfg.bc),
        )
    if s.op == "first_tile":
        assert s.carries is not None
        raw = s.facts["raw"]
        masked = int(np.isneginf(raw[:valid]).sum())
        return FIRST_TILE.format(
            mask=MASK_WORDS[s.schedule["mask"]],
            qk_scale=num(qk_scale),
            mi=span(s.carries["mi"][:valid]),
            li=span(s.carries["li"][:valid]),
            range=scores_range(raw, valid, nc),
            masked=MASKED.format(masked=masked) if masked else "",
        )
    if s.op == "scores":
        return SCORES.format(j=j, previous=j - 1, range=scores_range(s.sram["Sij"], valid, nc))
    assert s.op == "online_softmax" and s.carries is not None, s.op
    c = s.carries
    m_old, m_new, l_new = c["m_old"][:valid], c["m_new"][:valid], c["li"][:valid]
    bad = np.flatnonzero(~np.isfinite(l_new))
    rise = m_new - m_old
    return ONLINE_SOFTMAX.format(
        previous=j - 1,
        j=j,
        mask=MASK_WORDS[s.schedule["mask"]],
        rose=int((rise[np.isfinite(rise)] > 0).sum()),
        rows=m_new.size,
        li=span(l_new),
        note=no_softmax(bad) if bad.size else "",
    )


def code_note(s: Record) -> str:
    """The note of the step's code header (its ring slot, mask): the words after its last ' · '."""
    first = s.code.split("\n", 1)[0]
    return first.rpartition("· ")[2] if "· " in first else ""


def say(cfg: Config, s: Record, state: Mapping[str, np.ndarray]) -> Said:
    action = ACTION[s.op].format(**slices(s), note=code_note(s), br=cfg.br, bc=cfg.bc, j=s.j, previous=(s.j or 1) - 1)
    note: Rich = [CARRIES[s.op]]
    return Said(text(cfg, s), action, note)
