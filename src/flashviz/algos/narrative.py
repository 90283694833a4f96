"""What every algorithm's step sentences share: numbers, spans and row lists as a reader wants them, the sentences
on rows with no softmax and on scores float32 cannot hold, and the score tile's sentence (fa2 and fa1 say it
alike). Each algorithm's own sentences are in its folder (`algos/<name>/narrative.py`); all of them are built
from the step's real numbers, never from templates with made-up values."""

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


def no_softmax(rows: np.ndarray, carries: str = "li and Oi") -> str:
    """Why rows of a block went NaN: no finite score yet (or an overflowed one), so the kernel's own arithmetic
    gives exp(−∞ − (−∞)) = exp(NaN) (or exp(+∞ − +∞)): NaN, which then never leaves them."""
    return (
        f" {row_list(rows).capitalize()} of this block {'has' if len(rows) == 1 else 'have'} no finite score to take"
        f" a softmax over (every score so far is −∞, or one overflowed float32): the kernel computes exp(−∞ − (−∞))"
        f" = NaN there, so {carries} are NaN from here on, and so are their O and L. The GPU does exactly this."
    )


def nonfinite_scores(live: np.ndarray) -> str:
    """A sentence on scores that overflowed float32 (+∞, or NaN from ∞ − ∞ inside the dot product), if any."""
    over, nan = int(np.isposinf(live).sum()), int(np.isnan(live).sum())
    if not over and not nan:
        return ""
    parts = [f"{over} overflowed to +∞"] if over else []
    parts += [f"{nan} are NaN (∞ − ∞ inside the dot product)"] if nan else []
    return f" Of these scores {' and '.join(parts)}: float32 cannot hold them, and their rows' softmax is NaN."


def dead_rows(live: np.ndarray) -> str:
    """A sentence on rows whose every score in this tile is −∞, if any (a real case: huge |Q·K|, a negative scale)."""
    dead = np.flatnonzero(np.isneginf(live).all(axis=1)) if live.shape[1] else np.array([], dtype=int)
    if dead.size == 0:
        return ""
    return f" In {row_list(dead)} of the tile every score is −∞."


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
    text += nonfinite_scores(live) + ("" if causal else dead_rows(live))  # causal: the diagonal's own −∞ rows
    if causal and masked:
        text += f" This tile crosses the diagonal: {masked} scores with key column > query row are masked to −∞."
    if valid_cols < S.shape[1]:
        text += f" Columns {valid_cols}–{S.shape[1] - 1} lie past N and score −∞, so they weigh nothing."
    return text
