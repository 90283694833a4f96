"""What every algorithm's words share (each folder's `words.py`: docs/adding-an-algorithm.md).

An algorithm's words are every sentence of its steps, written as plain text with named slots (`{first}`), said once
after the run from each step's record (`flashviz.engine.steps.Record`: its real numbers), never while the engine
runs: the seed-style label and its TeX (`LABELS`), the names of a compound step's visible parts (`PARTS`), and per
step a `Said`: the narrative sentence, the seed's Action column, the carries panel's note. `flashviz.tracing.assemble`
asks for them (`say(cfg, step, state)`) while it makes the trace's frozen steps.

Here: the type of what is said, the helpers that fill slots (numbers, spans, row lists as a reader wants them), the
Rich-text markup of a note, the Action column from a step's moves, and the sentences several algorithms say alike:
the score tile's (fa2, fa1, fa2-splitkv), the online softmax's (fa2, fa2-splitkv), the carries panel's (fa2, fa1),
rows with no softmax and scores float32 cannot hold.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos.picture import Op, Rich, Run, moved
from flashviz.model.tiling import span as tile_span

if TYPE_CHECKING:
    from flashviz.engine.steps import Record
    from flashviz.model.config import Config


@dataclass(frozen=True)
class Said:
    """The words of one step that hold its numbers."""

    text: str  # the narrative sentence
    action: str  # the seed's "Action" column
    carries_note: Rich | None  # the carries panel's note (None: none)


# ---- filling slots ----


def num(x: float) -> str:
    """A number as a reader wants it: 3 significant digits, −∞ and NaN spelled out."""
    if np.isnan(x):
        return "NaN"
    if np.isneginf(x):
        return "−∞"
    if np.isposinf(x):
        return "+∞"
    return f"{float(x):.3g}".replace("-", "−")


def row_range(first: int, end: int) -> str:
    return f"row {first}" if end - first == 1 else f"rows {first}–{end - 1}"


def span(x: np.ndarray) -> str:
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


def row_list(rows: np.ndarray) -> str:
    listed = [int(r) for r in rows]
    shown = ", ".join(map(str, listed[:6])) + (", …" if len(listed) > 6 else "")
    return f"row {shown}" if len(listed) == 1 else f"rows {shown}"


def plural(k: int, word: str) -> str:
    """'1 time', '3 times'."""
    return f"{k} {word}{'' if k == 1 else 's'}"


def rows_of(cfg: Config, i: int) -> tuple[int, int, int]:
    """Block i of Q: its first row, end and number of real rows."""
    first, end = tile_span(i, cfg.br, cfg.n)
    return first, end, end - first


def keys_of(cfg: Config, j: int) -> tuple[int, int, int]:
    """Tile j of K/V: its first key, end and number of real keys."""
    first, end = tile_span(j, cfg.bc, cfg.n)
    return first, end, end - first


def slices(step: Record) -> dict[str, str]:
    """Each tensor the step moves -> its rows as the Action column writes them: Q[0:4]."""
    return {t.tensor: f"{t.tensor}[{t.rows[0]}:{t.rows[1]}]" for t in step.transfers}


# ---- Rich text ----

MARKUP = re.compile(r"\*\*(?P<b>.+?)\*\*|`(?P<code>[^`]+)`|(?P<base>\S)_\{(?P<sub>[^}]+)\}")


def rich(text: str) -> Rich:
    """Plain text with markup as the page's runs: **bold**, `code`, X_{i} (X with subscript i); the rest as text."""
    out: Rich = []
    at = 0
    for m in MARKUP.finditer(text):
        if m.start() > at:
            out.append(text[at : m.start()])
        run: Run
        if m["b"] is not None:
            run = {"b": m["b"]}
        elif m["code"] is not None:
            run = {"code": m["code"]}
        else:
            run = {"sub": [m["base"], m["sub"]]}
        out.append(run)
        at = m.end()
    if at < len(text):
        out.append(text[at:])
    return out


# ---- the Action column from a step's moves ----


def hbm_slice(tensor: str, rows: tuple[int, int], cols: tuple[int, int], width: int | None) -> str:
    """A transfer's rectangle as the page writes it: Q[0:4], or S[0:4, 4:8] when it is narrower than the tensor."""
    if width is not None and cols[1] - cols[0] < width:
        return f"{tensor}[{rows[0]}:{rows[1]}, {cols[0]}:{cols[1]}]"
    return f"{tensor}[{rows[0]}:{rows[1]}]"


def moves_action(step: Record, ops: Mapping[str, Op], math: str) -> str:
    """The Action column from a step's transfers, in the direction they go (their SRAM ends from the op's Moves),
    else what changed in SRAM, else its label (`math`)."""
    said = []
    for raw in step.transfers:
        t = moved(raw, ops, step.op)
        buf = ", ".join(t.buffers)
        hbm = hbm_slice(t.tensor, t.rows, t.cols, raw.width)
        if t.kind == "read":
            said.append(f"{buf or 'SRAM'} ← {hbm}")
        else:
            src = t.source or {}
            filled = ("−∞" if src["fill"] is None else f"{src['fill']:g}") if "fill" in src else ""
            said.append(f"{hbm} ← {buf or filled or 'SRAM'}")
    if said:
        return "; ".join(said)
    return f"{', '.join(step.sram)} in SRAM" if step.sram else math


# ---- rows with no softmax, scores float32 cannot hold ----

NO_SOFTMAX = (
    " {Rows} of this block {have} no finite score to take a softmax over (every score so far is −∞, or one "
    "overflowed float32): the kernel computes exp(−∞ − (−∞)) = NaN there, so {carries} are NaN from here on, and so "
    "are their O and L. The GPU does exactly this."
)
NONFINITE = " Of these scores {which}: float32 cannot hold them, and their rows' softmax is NaN."
OVERFLOWED = "{count} overflowed to +∞"
NAN_SCORES = "{count} are NaN (∞ − ∞ inside the dot product)"
DEAD_ROWS = " In {rows} of the tile every score is −∞."


def no_softmax(rows: np.ndarray, carries: str = "li and Oi") -> str:
    """Why rows of a block went NaN: no finite score yet (or an overflowed one), so the kernel's own arithmetic
    gives exp(−∞ − (−∞)) = exp(NaN) (or exp(+∞ − +∞)): NaN, which then never leaves them."""
    return NO_SOFTMAX.format(
        Rows=row_list(rows).capitalize(), have="has" if len(rows) == 1 else "have", carries=carries
    )


def nonfinite_scores(live: np.ndarray) -> str:
    """A sentence on scores that overflowed float32 (+∞, or NaN from ∞ − ∞ inside the dot product), if any."""
    over, nan = int(np.isposinf(live).sum()), int(np.isnan(live).sum())
    if not over and not nan:
        return ""
    which = [OVERFLOWED.format(count=over)] if over else []
    which += [NAN_SCORES.format(count=nan)] if nan else []
    return NONFINITE.format(which=" and ".join(which))


def dead_rows(live: np.ndarray) -> str:
    """A sentence on rows whose every score in this tile is −∞, if any (a real case: huge |Q·K|, a negative scale)."""
    dead = np.flatnonzero(np.isneginf(live).all(axis=1)) if live.shape[1] else np.array([], dtype=int)
    return DEAD_ROWS.format(rows=row_list(dead)) if dead.size else ""


# ---- the score tile (fa2, fa1, fa2-splitkv) ----

SCORES = (
    "Sij = Qi·Kjᵀ × {scale}: {count} finite scores between {low} and {high}; the largest is row {row}, column {col} "
    "of the tile ({largest})."
)
SCORES_NONE = "Sij = Qi·Kjᵀ × {scale}: not one score of this tile is a finite number."
CROSSES = " This tile crosses the diagonal: {masked} scores with key column > query row are masked to −∞."
PAST_N = " Columns {first}–{last} lie past N and score −∞, so they weigh nothing."


def scores(S: np.ndarray, valid_rows: int, valid_cols: int, scale: float, causal: bool = False) -> str:
    """The score tile's sentence: its finite scores, the largest, and the scores masked or past N."""
    live = S[:valid_rows, :valid_cols]
    masked = int(np.isneginf(live).sum())
    finite = live[np.isfinite(live)]
    if finite.size:
        r, c = np.unravel_index(int(np.argmax(np.where(np.isfinite(live), live, -np.inf))), live.shape)
        text = SCORES.format(
            scale=num(scale),
            count=finite.size,
            low=num(finite.min()),
            high=num(finite.max()),
            row=r,
            col=c,
            largest=num(live[r, c]),
        )
    else:
        text = SCORES_NONE.format(scale=num(scale))
    text += nonfinite_scores(live) + ("" if causal else dead_rows(live))  # causal: the diagonal's own −∞ rows
    if causal and masked:
        text += CROSSES.format(masked=masked)
    if valid_cols < S.shape[1]:
        text += PAST_N.format(first=valid_cols, last=S.shape[1] - 1)
    return text


# ---- the online softmax of one tile (fa2, fa2-splitkv) ----

ONLINE_NOT_NUMBERS = "The carries move, but not to numbers: mi is {m_new}.{note}"
ONLINE_FIRST = (
    "The first tile moves the carries for the first time: mi goes from −∞ to the row maxima ({m_new}), li becomes the "
    "row sums of exp(Sij − mi) ({l_new}) and Oi = exp(Sij − mi)·Vj. Nothing held was stale: the rescale factor is "
    "exp(−∞) = 0.{note}"
)
ONLINE_AFTER_NAN = "mi is now {m_new} and li {l_new}.{note}"
ONLINE_NO_RISE = (
    "No row's max rose on this tile, so every rescale factor is exp(0) = 1: li and Oi keep what they held and this "
    "tile's terms are simply added (li now {l_new}).{note}"
)
ONLINE_RISE = (
    "What was held is stale: row {row}'s max rose from {m_old} to {m_new} (+{rise}), so its li ({l_old}) and Oi were "
    "scaled by exp({m_old} − {m_new}) = {alpha} before this tile was added, giving li = {l_new}. On this tile "
    "{others}.{note}"
)
EVERY_MAX_ROSE = "every row's max rose"
SOME_MAXIMA_ROSE = "{rose} of {rows} rows' maxima rose; the others keep factor 1"


def online_softmax(j: int, carries: Mapping[str, np.ndarray], valid_rows: int) -> str:
    """Tile j's online softmax from the step's carries (m_old, mi, alpha, l_old, li), said on its real rows."""
    m_old, m_new, alpha = carries["m_old"][:valid_rows], carries["mi"][:valid_rows], carries["alpha"][:valid_rows]
    l_old, l_new = carries["l_old"][:valid_rows], carries["li"][:valid_rows]
    bad = np.flatnonzero(~np.isfinite(l_new))  # rows with no softmax: NaN, as the kernel computes it
    good = np.flatnonzero(np.isfinite(l_new))
    note = no_softmax(bad) if bad.size else ""
    if good.size == 0:
        return ONLINE_NOT_NUMBERS.format(m_new=span(m_new), note=note)
    if bad.size:  # the sentences below are about the rows that still have a softmax
        m_old, m_new, alpha, l_old, l_new = m_old[good], m_new[good], alpha[good], l_old[good], l_new[good]
        valid_rows = good.size
    if j == 0:
        return ONLINE_FIRST.format(m_new=span(m_new), l_new=span(l_new), note=note)
    if np.isneginf(m_old).any():  # a row whose earlier tiles were all −∞ is NaN already; kept for safety
        return ONLINE_AFTER_NAN.format(m_new=span(m_new), l_new=span(l_new), note=note)
    rise = m_new - m_old
    rose = np.flatnonzero(rise > 0)
    if rose.size == 0:
        return ONLINE_NO_RISE.format(l_new=span(l_new), note=note)
    r = int(rose[np.argmax(rise[rose])])
    others = EVERY_MAX_ROSE if rose.size == valid_rows else SOME_MAXIMA_ROSE.format(rose=rose.size, rows=valid_rows)
    return ONLINE_RISE.format(
        row=int(good[r]) if bad.size else r,
        m_old=num(m_old[r]),
        m_new=num(m_new[r]),
        rise=num(rise[r]),
        l_old=num(l_old[r]),
        alpha=num(alpha[r]),
        l_new=num(l_new[r]),
        others=others,
        note=note,
    )


# ---- the carries panel's notes (fa2, fa1, fa2-splitkv) ----

# the labels of the seed's loop, op -> (label, TeX), as FlashAttention-2's kernels with its loop say them (fa2,
# fa2-splitkv): Qi claimed, each tile of K, V loaded, scored and folded into the carries
FA2_LOOP_LABELS = {
    "load_q": (
        "Qi = Q[i]; Oi = 0; mi = -inf; li = 0",
        r"Q_i \leftarrow Q[i];\; O_i \leftarrow 0;\; m_i \leftarrow -\infty;\; \ell_i \leftarrow 0",
    ),
    "load_kv": ("Kj, Vj = K[j], V[j]", r"K_j, V_j \leftarrow K[j], V[j]"),
    "scores": ("Sij = Qi @ Kj.T", r"S_{ij} = \tau\, Q_i K_j^{\top}"),
    "online_softmax": (
        "mi, li, Oi = ...",
        r"m_i, \ell_i, O_i \leftarrow \mathrm{online\_softmax}(m_i, \ell_i, O_i, S_{ij}, V_j)",
    ),
}

# the online softmax's visible parts as FlashAttention-2's loop says them (fa2, fa2-splitkv): (name, seed-style label,
# TeX), in the order the engines record their values
FA2_ONLINE_PARTS = (
    (
        "new max",
        "mi = max(mi, Sij.max(-1))",
        r"m_i^{\text{new}} = \max\!\big(m_i,\ \mathrm{rowmax}(S_{ij})\big)",
    ),
    (
        "rescaled sum",
        "li = rescale(li) + exp(Sij - mi).sum(-1)",
        r"\ell_i = e^{m_i - m_i^{\text{new}}}\,\ell_i + \mathrm{rowsum}\big(e^{S_{ij} - m_i^{\text{new}}}\big)",
    ),
    (
        "rescaled output",
        "Oi = rescale(Oi) + exp(Sij - mi) @ Vj",
        r"O_i = e^{m_i - m_i^{\text{new}}}\,O_i + e^{S_{ij} - m_i^{\text{new}}}\,V_j",
    ),
)

CARRIES_WAIT = "The carries wait: this step {what} and leaves mᵢ, ℓᵢ, Oᵢ as they were."
CARRIES_FIRST = "First tile: m_old = −∞, so α = e^(−∞) = 0 wipes the empty carries and the tile's values move in."
CARRIES_STALE = (
    "Everything held is stale: where the max grew (α < 1, highlighted), ℓᵢ and Oᵢ are rescaled by α before this tile "
    "is added"
)
NO_SCORE_ROWS = (
    " {Rows} {rows}: no finite score (every score −∞), so mᵢ stays −∞ and α = e^(−∞ − (−∞)) is NaN: ℓᵢ and Oᵢ are "
    "NaN from then on, as the kernel computes them."
)


def no_score_note(cfg: Config, step: Record, state: Mapping[str, np.ndarray], buffer: str = "li") -> str:
    """The online carries' note on rows with no finite score: the real rows whose running sum is NaN at the step."""
    held = state.get(buffer)
    if held is None:
        return ""
    i = step.indices.get("i")
    first = 0 if i is None else i * cfg.br
    lost = [first + r for r in np.flatnonzero(np.isnan(held)) if i is None or first + r < cfg.n]
    if not lost:
        return ""
    return NO_SCORE_ROWS.format(Rows="Row" if len(lost) == 1 else "Rows", rows=", ".join(map(str, lost)))
