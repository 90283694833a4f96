"""The log-sum-exp merge: two partial attentions over disjoint sets of keys, each as its carries (O, L) -- O the
normalised output, L = m + log l the log-sum-exp of its scores -- become the attention over both sets.

    L = log(exp(La) + exp(Lb))          O = exp(La - L) * Oa + exp(Lb - L) * Ob

It is the seed's rescaling one level up: the FA2 loop merges a tile into the carries the same way, with the
division by l done once at the end instead of at every merge. The rule is associative and commutative, so keys
may be split into any shards and merged in any order (ring attention, the combine of split-KV decoding).
An empty shard is (O = 0, L = -inf): it changes nothing. Works on NumPy arrays and torch tensors alike (the
shapes: O (..., rows, D), L (..., rows)); computed in the dtype given (flashviz.ops.ring passes float32).
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any


def _namespace(x: Any) -> ModuleType:
    """numpy or torch, whichever `x` belongs to (torch imported only when a tensor is given)."""
    if type(x).__module__.startswith("torch"):
        import torch

        return torch
    import numpy

    return numpy


def merge(o_a: Any, lse_a: Any, o_b: Any, lse_b: Any) -> tuple[Any, Any]:
    """(O, L) of the union of two disjoint key sets from the (O, L) of each. L = -inf on both sides (a row that
    has seen no key yet) gives O = 0, L = -inf."""
    xp = _namespace(lse_a)
    m = xp.maximum(lse_a, lse_b)  # (..., rows)
    m = xp.where(xp.isneginf(m), xp.zeros_like(m), m)  # no key on either side: any finite shift will do
    w_a, w_b = xp.exp(lse_a - m), xp.exp(lse_b - m)  # (..., rows), each <= 1, one of them = 1 unless both empty
    total = w_a + w_b
    seen = total > 0
    safe = xp.where(seen, total, xp.ones_like(total))
    lse = xp.where(seen, m + xp.log(safe), xp.full_like(m, -math.inf))
    inv = xp.where(seen, 1 / safe, xp.zeros_like(total))
    o = o_a * (w_a * inv)[..., None] + o_b * (w_b * inv)[..., None]  # (..., rows, D)
    return o, lse


def merge_all(parts: list[tuple[Any, Any]]) -> tuple[Any, Any]:
    """Fold `merge` over [(O, L), ...] left to right."""
    if not parts:
        raise ValueError("merge_all needs at least one (O, L) pair; got none")
    o, lse = parts[0]
    for o_b, lse_b in parts[1:]:
        o, lse = merge(o, lse, o_b, lse_b)
    return o, lse
