"""fa1's float64 expectation: O of float64 attention and the softmax's row statistics l and m it leaves."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flashviz.model import reference

if TYPE_CHECKING:
    from flashviz.model.config import Config

# Max-norm relative errors. O: float32 arithmetic on O(1) inputs lands far below 1e-5. m is a max of float32
# scores; l a float32 sum of up to N terms, each rescaled as the max rises.
TOLERANCE = {"O": 1e-5, "l": 1e-5, "m": 1e-6}
LOG_DOMAIN = frozenset({"m"})  # a logit: judged against max(1, max |ref|) (reference.check)
ENGINE_TOLERANCE: dict[str, float] = {}  # no bound of its own: gpu.check's ENGINE_TOLERANCE


def expected(cfg: Config, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    O, _ = reference.attention(inputs["Q"], inputs["K"], inputs["V"], cfg.softmax_scale, cfg.causal)
    m, l = reference.row_stats(inputs["Q"], inputs["K"], cfg.softmax_scale, cfg.causal)
    return {"O": O, "l": l, "m": m}
