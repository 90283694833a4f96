"""fa2-backward's float64 expectation: the gradients of float64 attention, and the forward's O and L it runs on."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flashviz.model import reference

from ..fa2 import expect as forward

if TYPE_CHECKING:
    from flashviz.model.config import Config

# Gradients carry more rounding than O: Pij = exp(Sij - Li) inherits Li's float32 rounding, a relative error of
# about |Li| * 2^-24, and dSij = Pij (dPij - Deltai) subtracts two O(1) numbers. Standard-normal inputs land at
# 1e-7 .. 1.1e-6 (N up to 2048, D up to 128), inputs x10 (|L| ~ 400) at <= 1.1e-5: 1e-4 leaves a 10x margin.
TOLERANCE = {**forward.TOLERANCE, "dQ": 1e-4, "dK": 1e-4, "dV": 1e-4}
LOG_DOMAIN = forward.LOG_DOMAIN
ENGINE_TOLERANCE: dict[str, float] = {}  # no bound of its own: gpu.check's ENGINE_TOLERANCE


def expected(cfg: Config, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return reference.attention_backward(
        inputs["Q"], inputs["K"], inputs["V"], inputs["dO"], cfg.softmax_scale, cfg.causal
    )


def magnitudes(cfg: Config, inputs: dict[str, np.ndarray]) -> dict[str, float]:
    """The gradients are judged against the scale of their terms (reference.backward_magnitudes), not max |ref|:
    dQ's terms cancel to ~0 where the softmax is one-hot (--scale 1e6) or dP equals Delta, and its float32 rounding
    is that of the terms, which max |dQ| would divide by ~0 (issue 17 item 11)."""
    return reference.backward_magnitudes(
        inputs["Q"], inputs["K"], inputs["V"], inputs["dO"], cfg.softmax_scale, cfg.causal
    )
