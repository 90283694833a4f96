"""FlashAttention-2 forward in Triton, on tensor cores: the kernel behind `flashviz.attention` (`kernel.py`; its
launches in `launcher.py`, their tiles in `launch_tiles.py` and `split_kv.py`; the autograd in flashviz.ops.library),
walked through as the seed's kernel is.

The same schedule as fa2 (block i keeps Qi and streams the tiles Kj, Vj), in bf16 with fp32 accumulation: the two
matrix products run on the tensor cores, exp2 takes the scale folded into one multiply, P is rounded to bf16 before
P·V, and under causal masking the loop over tiles runs in two stages (below the diagonal unmasked, then the diagonal
tiles masked). Only the forward's functions of kernel.py (`fa2_fwd`, `_fwd_tiles`) are this algorithm's steps.
"""

from __future__ import annotations

from ..base import Algorithm, Idea, forward_trace_values
from . import engine, expect, flops, gpu, models, picture, tiles, traffic, words
from .record import KERNEL, NAME

IDEA = Idea(
    summary="the same schedule on tensor cores: bf16 tiles, fp32 carries, exp2",
    body=(
        "The seed's algorithm, as a fast kernel runs it: block $i$ keeps $Q_i$ and streams the tiles $K_j, V_j$, "
        r"carrying $m_i$, $\ell_i$ and $O_i$ as before. What changes is how each step runs. $Q$, $K$, $V$ and $O$ are "
        r"bf16 in HBM (2 bytes per element, half of fp32's), and the two matrix products of a tile, "
        r"$S_{ij} = Q_i K_j^{\top}$ and $P V_j$, run on the tensor cores: one instruction multiplies a $64 \times 16$ "
        r"slice by a $16 \times N$ slice and adds the result into fp32 accumulators.",
        r"The scale $\tau$ and $\log_2 e$ are folded into one multiply, so the exponentials are base 2 and the "
        r"running max lives in units of $\log_2$:",
        r"$$m' = \max\big(m,\ \tau \log_2 e \cdot \mathrm{rowmax}(S_{ij})\big),\qquad "
        r"P = 2^{\,\tau \log_2 e \cdot S_{ij} - m'}$$",
        r"$$\ell' = 2^{\,m - m'}\,\ell + \textstyle\sum P,\qquad O' = 2^{\,m - m'}\,O + \mathrm{bf16}(P)\,V_j$$",
        r"$P$ is rounded to bf16 before $P V_j$ (the tensor cores take bf16 operands), $\ell$ sums the fp32 $P$. At "
        r"the end, $O = O_i / \ell_i$ is written in bf16 and $L = (m_i + \log_2 \ell_i) \ln 2$ in fp32. Under causal "
        r"masking the loop runs in two stages: the tiles wholly below the diagonal with no mask, then the diagonal "
        r"tiles with one.",
    ),
)

ALGORITHM = Algorithm(
    name=NAME,
    title="FlashAttention-2 forward in Triton (bf16, tensor cores)",
    short="FA2 Triton",
    kernel=KERNEL,
    kernel_name="fa2_fwd",
    inputs=("Q", "K", "V"),
    outputs=("O", "L"),
    tensors={
        "Q": "input (bf16)",
        "K": "input (bf16)",
        "V": "input (bf16)",
        "O": "output (bf16)",
        "L": "output (fp32 log-sum-exp, for the backward pass)",
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
    reread="mostly K and V, which every block of Q re-reads",
    sram_note="shared memory for Qi, Kj, Vj in bf16 at one pipeline stage (each stage more holds another Kj, Vj); "
    "Sij, Oi, mi, li live in registers",
    dtype="bfloat16",
    tensor_bytes={"Q": 2, "K": 2, "V": 2, "O": 2, "L": 4},
    launch_check=tiles.check,
    launch_rule="Br and Bc powers of two in 16..256, Br a multiple of Bc when causal, D one of 32, 64, 96, 128, 256",
    example={"n": 128, "d": 32, "br": 64, "bc": 32},
    example_why="its kernel runs D of 32 to 256 and tiles that are powers of two from 16; at N = 128 the picture has "
    "2 blocks of Q and 4 tiles of K and V, none of them padding",
    # tiles.SUPPORTED_D and the powers of two 16..256 (tests/test_fa2_triton.py holds them to tiles.check)
    allowed={"d": (32, 64, 96, 128, 256), "br": (16, 32, 64, 128, 256), "bc": (16, 32, 64, 128, 256)},
    options=frozenset({"group", "nk", "window", "softcap", "seqlens"}),  # kernel.py's fa2_fwd runs them all
    launch_models=models,
)
