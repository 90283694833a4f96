"""FlashAttention-2 forward, the seed's kernel: block i keeps Qi and streams the K/V tiles past it, carrying mi, li
and Oi; O and L are written once."""

from __future__ import annotations

from ..base import Algorithm, Idea, forward_trace_values
from . import engine, expect, flops, gpu, picture, traffic, warps, words
from .record import KERNEL, NAME

IDEA = Idea(
    summary="one query row at a time, tiles streamed, three carries",
    body=(
        "For a single query row $q$, stream the key/value tiles $K_j, V_j$ of width $B_c$. Carry a running max "
        r"$m$, a denominator $\ell$ and an output $o$:",
        r"$$s_j = \tau\, q K_j^{\top},\qquad m' = \max\big(m,\ \mathrm{rowmax}(s_j)\big)$$",
        r"$$\ell' = e^{m - m'}\,\ell + \textstyle\sum e^{s_j - m'},\qquad o' = e^{m - m'}\,o + e^{s_j - m'}\,V_j$$",
        r"Initial values: $m = -\infty,\ \ell = 0,\ o = 0$. At the end, $\mathrm{out} = o / \ell$ and "
        r"$L = m + \log \ell$. Only one tile of $K$ and $V$ and the three carries live in fast memory (SRAM) at any "
        "time. One CUDA block does this for $B_r$ rows at once: block $i$ owns $Q_i$ and loops over tiles "
        r"$j = 0 \dots T_c - 1$.",
    ),
)

ALGORITHM = Algorithm(
    name=NAME,
    title="FlashAttention-2 forward",
    short="FA2",
    kernel=KERNEL,
    kernel_name="fa2",
    inputs=("Q", "K", "V"),
    outputs=("O", "L"),
    tensors={
        "Q": "input",
        "K": "input",
        "V": "input",
        "O": "output",
        "L": "output (log-sum-exp, for the backward pass)",
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
    reread="mostly K and V, which every block of Q re-reads",
)
