"""FlashAttention-3 forward on Hopper in Gluon (`kernel.py`, launched by `launcher.py`, the kernels behind
flashviz.attention(backend="fa3")), walked through as the seed's kernel is: the same tiles and carries as
fa2-triton, run by a producer warp (every TMA load, into a ring of shared-memory slots) and two consumer warpgroups
(64 rows of Qi each), with tile j−1's P·V issued under tile j's scores. Only the forward's functions of kernel.py
(`_load_kv`, `_fwd_producer`, `_fwd_tiles_overlapped`, `_fwd_consumer`) are this algorithm's steps; each step's
`schedule` says which partition runs it, which rows each warpgroup owns and which ring slot holds its tiles.
"""

from __future__ import annotations

from ..base import Algorithm, Idea, forward_trace_values
from . import engine, expect, flops, gpu, picture, tiles, traffic, words
from .record import KERNEL, NAME

IDEA = Idea(
    summary="FA2's arithmetic, overlapped: a producer warp loads, two warpgroups take turns on the tensor cores",
    body=(
        "The same algorithm and arithmetic as fa2-triton: block $i$ keeps $Q_i$ and the carries $m_i$, $\\ell_i$, "
        "$O_i$ while the tiles $K_j, V_j$ stream past; bf16 inputs, fp32 accumulation, base-2 exponentials with the "
        "scale folded in, $P$ rounded to bf16 before $P V_j$, one division at the end. What changes is who does "
        "what, and when.",
        "A producer warp issues every load by TMA into a ring of shared-memory slots, each with a ready and an "
        "empty mbarrier. Two consumer warpgroups own 64 rows of $Q_i$ each and take turns issuing their matrix "
        "products (ping-pong), so that one's softmax runs while the other's products occupy the tensor cores.",
        "Within a warpgroup the loop is software-pipelined: the step of tile $j$ issues $S_{ij} = Q_i K_j^{\\top}$, "
        "then applies tile $j-1$'s factor and issues its product, and computes tile $j$'s softmax while that "
        "product still runs:",
        r"$$O_i \leftarrow 2^{\,m_{j-2} - m_{j-1}}\,O_i + \mathrm{bf16}(P_{j-1})\,V_{j-1},\qquad "
        r"m_j = \max\big(m_{j-1},\ \tau \log_2 e \cdot \mathrm{rowmax}(S_{ij})\big)$$",
        "Tile 0's softmax is peeled before the loop, and the last tile's product runs after it.",
    ),
)

ALGORITHM = Algorithm(
    name=NAME,
    title="FlashAttention-3 forward in Gluon (Hopper: warp-specialized, ping-pong, overlapped)",
    short="FA3",
    kernel=KERNEL,
    kernel_name="fa3_fwd",
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
    sram_note="shared memory for Qi, Kj, Vj in bf16 at one ring slot (the kernel holds 2 slots at D=128, 3 at D=64, "
    "and O's staging buffer); Sij, Oi, mi, li live in the consumers' registers",
    dtype="bfloat16",
    tensor_bytes={"Q": 2, "K": 2, "V": 2, "O": 2, "L": 4},
    launch_check=tiles.check,
    launch_rule=tiles.RULE,
    example={"n": 256, "d": 64, "br": 128, "bc": 128},
    example_why="its kernel runs only Br = Bc = 128 (two warpgroups of 64 rows; tiles of 128 keys) and D of 64 or "
    "128; at N = 256, D = 64 the picture has 2 blocks of Q and 2 tiles of K and V (so one overlapped step), none of "
    "them padding, small enough for the page",
    allowed={"d": tiles.SUPPORTED_D, "br": (tiles.BR,), "bc": (128,)},
)
