"""fa2-splitkv's float64 expectation: O and L of float64 attention, and how close the float32
kernels must come (the split changes only the order of the sums, not the result)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flashviz.model import reference

if TYPE_CHECKING:
    from flashviz.model.config import Config

# float32 arithmetic on O(1) inputs lands far below this; both are max-norm relative errors.
TOLERANCE = {"O": 1e-5, "L": 1e-6}
LOG_DOMAIN = frozenset({"L"})  # a log-sum-exp: judged against max(1, max |ref|) (reference.check)
ENGINE_TOLERANCE: dict[str, float] = {}  # no bound of its own: gpu.check's ENGINE_TOLERANCE


def expected(cfg: Config, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    O, L = reference.attention(inputs["Q"], inputs["K"], inputs["V"], cfg.softmax_scale, cfg.causal)
    return {"O": O, "L": L}
