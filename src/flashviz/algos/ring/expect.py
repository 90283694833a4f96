"""The ring's float64 expectation: attention over the whole sequence, in float64, with the rows in the layout's
order (HBM holds the sequence as the devices hold it): the devices' merged carries must be it, to fp32 rounding."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flashviz.model import reference
from flashviz.model.ring_layout import chunk_count, chunks

if TYPE_CHECKING:
    from flashviz.model.config import Config

# float32 arithmetic on O(1) inputs lands far below this; both are max-norm relative errors.
TOLERANCE = {"O": 1e-5, "L": 1e-6}
LOG_DOMAIN = frozenset({"L"})  # a log-sum-exp: judged against max(1, max |ref|) (reference.check)
ENGINE_TOLERANCE: dict[str, float] = {}  # no GPU launch of its own (gpu.py)


def order(n: int, world: int, layout: str) -> np.ndarray:
    """The sequence position of each row of the laid-out tensors: device r's shard, chunk after chunk."""
    c = n // chunk_count(world, layout)
    return np.concatenate(
        [np.arange(k * c, (k + 1) * c) for r in range(world) for k in chunks(r, world, layout)]
    ).astype(np.int64)


def expected(cfg: Config, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    pos = order(cfg.n, cfg.devices, cfg.layout)  # (N,) row of the layout -> token of the sequence
    back = np.empty_like(pos)
    back[pos] = np.arange(pos.size)
    Q, K, V = (np.asarray(inputs[k])[back] for k in "QKV")  # (N, D) each, in sequence order
    O, L = reference.attention(Q, K, V, cfg.softmax_scale, cfg.causal)
    return {"O": O[pos], "L": L[pos]}
