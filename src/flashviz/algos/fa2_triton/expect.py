"""fa2-triton's float64 expectation: O and L of float64 attention of the bf16 inputs the kernel reads, and how close
a bf16 kernel can come.

The kernel cannot see Q, K, V more precisely than bf16, so the reference is attention of those very bf16 values
(what the ladder's check does too). What is left is the kernel's own rounding: P to bf16 before P·V (8 bits of
mantissa: up to 2^-9 relative per weight) and O to bf16 when it is stored (2^-9 relative), against fp32 for
everything else. `tests/test_fa2_triton.py` measures plain bf16 attention on the same inputs (scores, softmax and
P·V rounded to bf16 as torch computes them in bf16) and holds the engine to at most 2× that error; the bound here
is what a trace's badge checks, at any N.

With the options of real models each (q head, sequence) of the launch (`Config.segments`) is float64 attention of its
rows of Q against its sequence's keys, with the window, Nq ≠ Nk aligned to the bottom-right and soft-capping as
`reference.scores` states them (not with the kernels' geometry); a row that sees no key has O = 0 and L = −∞.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flashviz.model import reference
from flashviz.model.precision import bf16

if TYPE_CHECKING:
    from flashviz.model.config import Config

# O: the bf16 check of the ladder's run (bench/results/ladder: 0.02 for every bf16 rung); plain bf16 attention of
# unit-normal inputs errs by 0.4-1.2e-2 (max-norm relative, N = 16 .. 4096), this kernel by about a third of that.
# L: fp32 arithmetic throughout (the scores of bf16 inputs are exact products summed in fp32), judged as fa2's L.
TOLERANCE = {"O": 2e-2, "L": 1e-5}
LOG_DOMAIN = frozenset({"L"})
# The GPU against this engine: O is stored in bf16, and the GPU's exp2 (ex2.approx) and the tensor cores' fp32 sums
# differ from NumPy's in the last bits of fp32, which can send a value of O to the neighbouring bf16 number: one bf16
# step is 2^-8 of the value (2^-7 just above a power of two), so max |gpu - engine| / max |engine| <= 2^-7.
ENGINE_TOLERANCE = {"O": 2.0**-7, "L": 1e-5}


def expected(cfg: Config, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    Q, K, V = (bf16(np.asarray(inputs[k], dtype=np.float32)) for k in ("Q", "K", "V"))
    if not cfg.has_options:
        O, L = reference.attention(Q, K, V, cfg.softmax_scale, cfg.causal)
        return {"O": O, "L": L}
    O, L = np.empty(Q.shape), np.empty(Q.shape[0])  # (G·N, D), (G·N,)
    for seg in cfg.segments():
        q, k = slice(seg.q0, seg.q0 + seg.nq), slice(seg.k0, seg.k0 + seg.nk)
        O[q], L[q] = reference.attention(
            Q[q], K[k], V[k], cfg.softmax_scale, cfg.causal, (cfg.window[0], cfg.window[1]), cfg.softcap
        )
    return {"O": O, "L": L}
