"""FlashAttention-1 forward: K/V on the outer loop, so O, l and m are carried back and forth through HBM."""

from __future__ import annotations

from ..base import Algorithm, Idea, forward_trace_values
from . import engine, expect, flops, gpu, picture, traffic, warps, words
from .record import KERNEL, NAME

IDEA = Idea(
    summary="K/V on the outer loop; O, ℓ, m carried back and forth through HBM",
    body=(
        "The online softmax, with the loops the other way round: the outer loop streams the key/value tiles "
        "$K_j, V_j$ through SRAM once, and the inner loop visits every block of queries $Q_i$ for each tile. "
        r"The carries of a block, its running max $m_i$, sum $\ell_i$ and output $O_i$, cannot stay in SRAM between "
        r"visits, so they live in HBM: each visit reads $Q_i, O_i, \ell_i, m_i$, updates them and writes them back:",
        r"$$S_{ij} = \tau\, Q_i K_j^{\top},\qquad m_i' = \max\big(m_i,\ \mathrm{rowmax}(S_{ij})\big),"
        r"\qquad \ell_i' = e^{m_i - m_i'}\,\ell_i + \mathrm{rowsum}\big(e^{S_{ij} - m_i'}\big)$$",
        r"$$O_i' = \big(\ell_i\, e^{m_i - m_i'}\, O_i + e^{S_{ij} - m_i'}\, V_j\big) / \ell_i'$$",
        r"First the launch writes $O = 0$, $\ell = 0$, $m = -\infty$ to HBM. $O_i$ is divided by $\ell_i'$ on "
        r"every visit, so after the last tile it is already the answer; $\ell$ and $m$ stay in HBM as outputs. "
        "One CUDA block per head runs the whole loop.",
    ),
)

ALGORITHM = Algorithm(
    name=NAME,
    title="FlashAttention-1 forward",
    short="FA1",
    kernel=KERNEL,
    kernel_name="fa1",
    inputs=("Q", "K", "V"),
    outputs=("O", "l", "m"),
    tensors={
        "Q": "input",
        "K": "input",
        "V": "input",
        "O": "output (carried through HBM: read and written back every inner iteration)",
        "l": "output (running row sum of exp(S - m), carried through HBM)",
        "m": "output (running row max of S, carried through HBM)",
    },
    causal=True,
    direction="forward",
    grid="Tr",
    idea=IDEA,
    engine=engine,
    traffic=traffic,
    expect=expect,
    picture=picture,
    words=words,
    flops=flops,
    gpu=gpu.SPEC,
    warps=warps,
    trace_values=forward_trace_values,
)
