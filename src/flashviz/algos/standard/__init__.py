"""Standard attention: three kernels, the N×N scores S and probabilities P written to HBM and read back."""

from __future__ import annotations

from ..base import Algorithm, Idea, forward_trace_values
from . import engine, expect, flops, gpu, picture, traffic, words
from .record import KERNEL, NAME

IDEA = Idea(
    summary="three kernels; the N×N scores S and probabilities P go through HBM",
    body=(
        "Plain softmax attention, one matrix at a time. Kernel 1 computes all the scores and writes them to HBM; "
        "kernel 2 reads them back a row at a time, takes each row's softmax and writes the probabilities; kernel 3 "
        "reads those back and multiplies them by $V$:",
        r"$$S = \tau\, Q K^{\top},\qquad P_r = \frac{e^{S_r - \max S_r}}{\sum e^{S_r - \max S_r}},\qquad O = P V$$",
        r"$S$ and $P$ are $N \times N$: each is written once and read back once, $4N^2$ elements across HBM that "
        "FlashAttention never moves. A row's max and sum are computed from the whole row at once, so nothing is "
        r"carried from tile to tile. Block $i$ of each kernel owns rows $i B_r \dots$ of $S$, $P$ and $O$.",
    ),
)

ALGORITHM = Algorithm(
    name=NAME,
    title="Standard attention (S and P in HBM)",
    short="standard",
    kernel=KERNEL,
    kernel_name="standard_scores, standard_softmax, standard_pv",  # three launches, in this order
    inputs=("Q", "K", "V"),
    outputs=("O",),
    tensors={
        "Q": "input",
        "K": "input",
        "V": "input",
        "S": "intermediate (N×N scores, written by kernel 1, read by kernel 2)",
        "P": "intermediate (N×N softmax, written by kernel 2, read by kernel 3)",
        "O": "output",
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
    trace_values=forward_trace_values,
    # The engine holds S and P in HBM: N x N float32 each, with an int32 read and write counter per element
    # (4 x 4 x N^2 bytes: 256 MB at N=4096).
    max_n=4096,
    max_n_reason="keeps S and P (N×N) in HBM",
    sram_note="the largest of its three kernels",
)
