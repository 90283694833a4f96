"""fa2-triton's words (flashviz.algos.words): every sentence of its steps, plain text with named slots, said after
the run from each step's record."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos.picture import Rich
from flashviz.algos.words import (
    CARRIES_WAIT,
    Said,
    no_softmax,
    nonfinite_scores,
    num,
    row_list,
    row_range,
    slices,
    span,
)
from flashviz.model.tiling import span as tile_span

from .engine import LOG2E
from .loops import NO_MASK, plan, stages
from .segments import skipped, where_words

if TYPE_CHECKING:
    from flashviz.engine.steps import Record
    from flashviz.model.band import Segment
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

PARTS_FIRST = (  # SCALE_FIRST (soft-capping, or a scale <= 0): the scores are scaled (and capped) already
    (
        "new max",
        "m_new = max(mi, Sij.max(1))",
        r"m_i^{\text{new}} = \max\!\big(m_i,\ \mathrm{rowmax}(S_{ij})\big)",
    ),
    (
        "rescaled sum",
        "li = li * alpha + exp2(Sij - m_new).sum(1)",
        r"\ell_i = 2^{\,m_i - m_i^{\text{new}}}\,\ell_i + \mathrm{rowsum}\big(2^{\,S_{ij} - m_i^{\text{new}}}\big)",
    ),
    PARTS["online_softmax"][2],
)


def scale_first(cfg: Config) -> bool:
    """The host's SCALE_FIRST: soft-capping, or a scale <= 0 (the scores are scaled before their max)."""
    return cfg.softcap > 0 or cfg.softmax_scale * LOG2E <= 0


def of_launch(cfg: Config) -> tuple[Mapping[str, tuple[str, str]], Mapping[str, tuple[tuple[str, str, str], ...]]]:
    """LABELS and PARTS at this launch (flashviz.tracing.assemble asks for them where a words module has this):
    with soft-capping the scores step says the cap it applies, and under SCALE_FIRST the online softmax's parts
    take the scores scaled already."""
    labels = LABELS
    if cfg.softcap > 0:
        c = f"{cfg.softcap:g}"
        labels = {
            **LABELS,
            "scores": (
                f"Sij = {c}·log2e·tanh(tl.dot(Qi, Kj.T)·scale/{c})",
                rf"S_{{ij}} = {c}\log_2 e\cdot\tanh\!\big(\tau\, Q_i K_j^{{\top}} / {c}\big)"
                r"\ \text{(soft-capped, in units of }\log_2\text{)}",
            ),
        }
    return labels, ({"online_softmax": PARTS_FIRST} if scale_first(cfg) else PARTS)


# ---- the narrative sentences ----

STAGE_WORDS = {
    "MASK_BAND (left edge)": "the stage of the window's left edge (BAND_LEFT, MASK_BAND: keys left of a row's "
    "window are masked)",
    "NO_MASK": "the unmasked stage (NO_MASK: every key of the tile is inside every row's band)",
    "MASK_BAND": "the masked stage (MASK_BAND: keys past the band's right edge, the diagonal under causal, or past "
    "the keys are masked)",
}
LOAD_Q = (
    "Program i = {i}{whose} claims {rows} of Q: one TMA load brings Qi = Q[{first}:{end}] into shared memory as bf16 "
    "({elements} elements, {bytes} bytes) for the whole run, while the fp32 accumulator Oi = 0 and the carries "
    "mi = −∞, li = 0 start in registers.{padding}"
)
PADDING = (
    " Only {valid} of its {br} rows exist (its sequence ends at {end}); the tensor descriptor, which ends there, "
    "reads the other {pad} as zeros, and nothing past it is fetched."
)
LOAD_KV = (
    "{which} tile of K and V arrives by TMA, in {stage} of the loop: Kj, Vj = K[{first}:{end}], V[{first}:{end}] "
    "({elements} bf16 elements, {bytes} bytes). {reread}{ragged}"
)
REREAD = "This block reads every tile of K and V."
SKIPPED = "This block never loads {parts}: tiles of no key any of its rows sees."
SKIPPED_LEFT = "{tiles} left of the band (the window's left edge)"
SKIPPED_RIGHT = "{tiles} right of it (past the diagonal or the window's right edge)"
RAGGED = " The tile is ragged: only {valid} of {bc} rows exist; TMA fills the rest with zeros."
SCORES = (
    "Sij = tl.dot(Qi, Kjᵀ) on the tensor cores: bf16 products, exact, summed in fp32, and not yet scaled (the scale "
    "times log2 e = {qk_scale} is folded into the exponent next).{finite}{nonfinite}{diagonal}{past_n}"
)
SCORES_CAPPED = (
    "Sij = tl.dot(Qi, Kjᵀ) on the tensor cores (bf16 products summed in fp32), then soft-capped: scaled by "
    "qk_scale = scale/{softcap} = {qk_scale} and mapped through softcap2·tanh, softcap2 = {softcap}·log2 e, so that "
    "every score lies within ±{bound} (log2 units).{finite}{nonfinite}{diagonal}{past_n}"
)
SCORES_FIRST = (
    "Sij = tl.dot(Qi, Kjᵀ) on the tensor cores, then scaled at once by qk_scale = {qk_scale} (a scale ≤ 0: "
    "SCALE_FIRST, the max of the scaled scores is not the scaled max).{finite}{nonfinite}{diagonal}{past_n}"
)
FINITE = " {count} finite scores between {low} and {high}."
DIAGONAL = " {masked} scores of keys outside their row's band are set to −∞ ({stage})."
PAST_N = " Columns {first}–{last} lie past the keys and are set to −∞."
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
NO_KEY = " {Rows} saw no key (their band holds none): li = 0, so O = 0 and L = −∞, as FlashAttention-2 leaves them."

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


def scores(cfg: Config, S: np.ndarray, valid_rows: int, valid_cols: int, stage: str) -> str:
    live = S[:valid_rows, :valid_cols]
    finite = live[np.isfinite(live)]
    masked = int(np.isneginf(live).sum())
    capped = cfg.softcap > 0
    if capped:  # the host: qk_scale = scale / c
        qk_scale = float(np.float32(cfg.softmax_scale / cfg.softcap))
    else:
        qk_scale = float(np.float32(cfg.softmax_scale * LOG2E))
    slots = {
        "qk_scale": num(qk_scale),
        "finite": FINITE.format(count=finite.size, low=num(finite.min()), high=num(finite.max()))
        if finite.size
        else "",
        "nonfinite": nonfinite_scores(live),
        "diagonal": DIAGONAL.format(masked=masked, stage=STAGE_WORDS[stage]) if stage != NO_MASK and masked else "",
        "past_n": PAST_N.format(first=valid_cols, last=S.shape[1] - 1) if valid_cols < S.shape[1] else "",
    }
    if capped:
        return SCORES_CAPPED.format(softcap=f"{cfg.softcap:g}", bound=num(cfg.softcap * LOG2E), **slots)
    if scale_first(cfg):
        return SCORES_FIRST.format(**slots)
    return SCORES.format(**slots)


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
    with np.errstate(invalid="ignore"):  # a row that saw no key yet: −∞ − (−∞)
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


@lru_cache(maxsize=8)
def _plan(cfg: Config) -> list[tuple[Segment, int]]:
    return plan(cfg)


def place(cfg: Config, s: Record) -> tuple[Segment, int, list[tuple[int, str]]]:
    """The step's pick as the engine ran it: its segment (q head, sequence), its block i there and the tiles it
    visits in the kernel's stages (flashviz.algos.fa2_triton.loops)."""
    seg, i = _plan(cfg)[s.block]
    return seg, i, stages(cfg, seg, i)


def text(cfg: Config, s: Record) -> str:
    d = cfg.d
    seg, i, tiles = place(cfg, s)
    r0, r1 = tile_span(i, cfg.br, seg.nq)
    first, end, valid = seg.q0 + r0, seg.q0 + r1, r1 - r0
    if s.op == "load_q":
        pad = "" if valid == cfg.br else PADDING.format(valid=valid, br=cfg.br, end=end, pad=cfg.br - valid)
        where = where_words(cfg, seg) if cfg.group > 1 or cfg.seqlens is not None else ""
        return LOAD_Q.format(
            i=i,
            whose=f" ({where})" if where else "",
            rows=row_range(first, end),
            first=first,
            end=end,
            elements=valid * d,
            bytes=2 * valid * d,
            padding=pad,
        )
    if s.op == "write_back":
        assert s.carries is not None
        L = s.carries["L"][:valid]
        bad = np.flatnonzero(np.isnan(L) | np.isposinf(L))
        none = np.flatnonzero(np.isneginf(L))
        nan = NAN.format(Rows=row_list(first + bad).capitalize()) if bad.size else ""
        if none.size:
            nan += NO_KEY.format(Rows=row_list(first + none).capitalize())
        return WRITE_BACK.format(
            first=first,
            end=end,
            elements=valid * d,
            o_bytes=2 * valid * d,
            valid=valid,
            l_bytes=4 * valid,
            L=span(L),
            nan=nan,
        )
    j = s.indices["j"]
    starts = [start for start, _ in tiles]
    k = starts.index(j * cfg.bc)  # the tile's place in the block's loop
    stage = tiles[k][1]
    c0, c1 = j * cfg.bc, min(j * cfg.bc + cfg.bc, seg.nk)
    nc = c1 - c0
    if s.op == "load_kv":
        tc = len(tiles)
        which = "The first" if k == 0 else ("The last" if k == tc - 1 else f"Tile {k + 1} of {tc}:")
        left, right = skipped(cfg, seg, tiles)
        if left or right:
            parts = ([SKIPPED_LEFT.format(tiles=left)] if left else []) + (
                [SKIPPED_RIGHT.format(tiles=right)] if right else []
            )
            reread = SKIPPED.format(parts=" and ".join(parts))
        else:
            reread = REREAD
        return LOAD_KV.format(
            which=which,
            stage=STAGE_WORDS[stage],
            first=seg.k0 + c0,
            end=seg.k0 + c1,
            elements=2 * nc * d,
            bytes=4 * nc * d,
            reread=reread,
            ragged="" if nc == cfg.bc else RAGGED.format(valid=nc, bc=cfg.bc),
        )
    if s.op == "scores":
        return scores(cfg, s.sram["Sij"], valid, nc, stage)
    assert s.op == "online_softmax" and s.carries is not None, s.op
    return online_softmax(k, s.carries, valid, s.facts["rounding"])


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
