"""Standard attention's float64 expectation: O of float64 attention (S and P are intermediates, not checked)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flashviz.model import reference

if TYPE_CHECKING:
    from flashviz.model.config import Config

TOLERANCE = {"O": 1e-5}  # max-norm relative error; float32 arithmetic on O(1) inputs lands far below it
LOG_DOMAIN: frozenset[str] = frozenset()
ENGINE_TOLERANCE: dict[str, float] = {}  # no bound of its own: gpu.check's ENGINE_TOLERANCE


def expected(cfg: Config, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    O, _ = reference.attention(inputs["Q"], inputs["K"], inputs["V"], cfg.softmax_scale, cfg.causal)
    return {"O": O}
