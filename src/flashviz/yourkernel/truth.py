"""The float64 truth a user's kernel is held to: the exact online-softmax state of some query rows after the keys they
have seen so far, in natural units (m = the running max of the scaled scores, l = Σ exp(s − m), acc = Σ exp(s − m)·v),
and the states a few common mistakes would leave instead, which name a divergence's cause.

A mask says which keys a row may see: under causal attention key ≤ row (`Mask(0)`), with no mask every key
(`Mask(None)`); `Mask(1)` and `Mask(-1)` are the causal mask off by one either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LOG2E = 1.4426950408889634


@dataclass(frozen=True)
class Mask:
    offset: int | None  # key <= row + offset; None: every key

    def visible(self, rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
        if self.offset is None:
            return np.ones((rows.size, keys.size), dtype=bool)
        return keys[None, :] <= rows[:, None] + self.offset  # (R, C)

    @property
    def words(self) -> str:
        if self.offset is None:
            return "no mask"
        return "key <= row" if self.offset == 0 else f"key <= row {'+' if self.offset > 0 else '-'} {abs(self.offset)}"


@dataclass(frozen=True)
class State:
    m: np.ndarray  # (R,), -inf where a row has seen no key
    l: np.ndarray  # (R,)
    acc: np.ndarray  # (R, D), unnormalised

    @property
    def seen(self) -> np.ndarray:
        return np.isfinite(self.m)

    @property
    def normalised(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.acc / self.l[:, None]


@dataclass(frozen=True)
class Head:
    """One head's inputs in float64: Q, K, V as the kernel read them (rounded to the launch's dtype)."""

    q: np.ndarray  # (N, D)
    k: np.ndarray  # (N, D)
    v: np.ndarray  # (N, D)
    scale: float


def _scores(head: Head, rows: np.ndarray, keys: np.ndarray, mask: Mask) -> np.ndarray:
    s = head.scale * (head.q[rows] @ head.k[keys].T)  # (R, C)
    return np.where(mask.visible(rows, keys), s, -np.inf)


def state(head: Head, rows: np.ndarray, keys: np.ndarray, mask: Mask) -> State:
    """The exact state of query `rows` after `keys` (any order, each once)."""
    s = _scores(head, rows, keys, mask)  # (R, C)
    m = s.max(axis=1) if keys.size else np.full(rows.size, -np.inf)
    with np.errstate(invalid="ignore"):
        p = np.where(np.isfinite(m)[:, None], np.exp(s - m[:, None]), 0.0)  # (R, C)
    return State(m, p.sum(axis=1), p @ head.v[keys])


def unrescaled(head: Head, rows: np.ndarray, tiles: list[np.ndarray], mask: Mask) -> list[State]:
    """The states after each tile of a kernel that updates the running max but adds each tile's exp(s − m) to l and
    acc without first multiplying them by alpha = exp(m_old − m_new)."""
    out = []
    m = np.full(rows.size, -np.inf)
    l = np.zeros(rows.size)
    acc = np.zeros((rows.size, head.v.shape[1]))
    for keys in tiles:
        s = _scores(head, rows, keys, mask)  # (R, C)
        m = np.maximum(m, s.max(axis=1) if keys.size else m)
        with np.errstate(invalid="ignore"):
            p = np.where(np.isfinite(m)[:, None], np.exp(s - m[:, None]), 0.0)
        l = l + p.sum(axis=1)
        acc = acc + p @ head.v[keys]
        out.append(State(m.copy(), l.copy(), acc.copy()))
    return out


def tile_max(head: Head, rows: np.ndarray, keys: np.ndarray, mask: Mask) -> np.ndarray:
    """max of the scaled scores over one tile's keys alone (a running max that forgets the tiles before)."""
    s = _scores(head, rows, keys, mask)
    return s.max(axis=1) if keys.size else np.full(rows.size, -np.inf)
