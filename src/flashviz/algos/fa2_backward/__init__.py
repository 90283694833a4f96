"""FlashAttention-2 backward: a preprocessing kernel (Delta = rowsum(dO ∘ O), dQ = 0), then one block per tile j of
K/V that streams the blocks of Q past it, rebuilding P from the forward's L and adding into dQ with atomicAdd."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base import Algorithm, Idea
from . import engine, expect, flops, gpu, picture, traffic, words
from .record import KERNEL, NAME

if TYPE_CHECKING:
    from flashviz.model.config import Config

IDEA = Idea(
    summary="P recomputed from the forward's L; K/V on the outer loop; dQ added up in HBM",
    body=(
        "The gradients $dQ, dK, dV$ from $dO$ and what the forward pass left: its output $O$ and its log-sum-exp "
        r"$L$. A small kernel first computes $\Delta = \mathrm{rowsum}(dO \circ O)$ and zeroes $dQ$. Then block $j$ "
        "owns the tile $K_j, V_j$ and loops over the blocks of queries $i$, recomputing the probabilities from "
        "$L$ instead of reading them:",
        r"$$P_{ij} = e^{\tau\, Q_i K_j^{\top} - L_i},\qquad dV_j \mathrel{+}= P_{ij}^{\top} dO_i,"
        r"\qquad dS_{ij} = P_{ij} \circ \big(dO_i V_j^{\top} - \Delta_i\big)$$",
        r"$$dK_j \mathrel{+}= \tau\, dS_{ij}^{\top} Q_i,\qquad dQ_i \mathrel{+}= \tau\, dS_{ij} K_j$$",
        "$dK_j$ and $dV_j$ build up in SRAM and are written once. $dQ_i$ gets a share from every tile $j$, so it "
        "is added up in HBM with atomicAdd. $P$ is never stored: $L$, one number per row, is all the forward keeps.",
    ),
)


def trace_values(cfg: Config, recorded: tuple[int, ...]) -> int:
    """The numbers in a trace: the inputs and outputs (nine N x D), per recorded block j and visit of a block i
    Qi dOi, dQ's add and sum, Pij Sij dSij dPij, dVj dKj, Li Deltai, and every preprocessing block's dOi, Oi, Deltai."""
    per_visit = 4 * cfg.br * cfg.d + 4 * cfg.br * cfg.bc + 2 * cfg.bc * cfg.d + 4 * cfg.br
    pre = 2 * cfg.n * cfg.d + 2 * cfg.n
    return 9 * cfg.n * cfg.d + len(recorded) * cfg.tr * per_visit + pre


ALGORITHM = Algorithm(
    name=NAME,
    title="FlashAttention-2 backward",
    short="FA2 backward",
    kernel=KERNEL,
    kernel_name="fa2_bwd",  # after fa2_bwd_preprocess (Delta = rowsum(dO ∘ O), dQ = 0)
    inputs=("Q", "K", "V", "dO"),
    outputs=("dQ", "dK", "dV", "O", "L"),  # O and L: the forward's, computed by fa2's engine and used here
    tensors={
        "Q": "input",
        "K": "input",
        "V": "input",
        "O": "input (the forward's output)",
        "L": "input (the forward's log-sum-exp)",
        "dO": "input (gradient of the loss with respect to O)",
        "Delta": "intermediate (rowsum(dO ∘ O), written by the preprocessing kernel)",
        "dQ": "output (zeroed by the preprocessing kernel, accumulated with atomicAdd)",
        "dK": "output",
        "dV": "output",
    },
    causal=True,
    direction="backward",
    grid="Tc",
    idea=IDEA,
    engine=engine,
    traffic=traffic,
    expect=expect,
    magnitudes=expect.magnitudes,
    picture=picture,
    words=words,
    flops=flops,
    gpu=gpu.SPEC,
    trace_values=trace_values,
    api_cost=3,  # it runs the forward, then six steps and five tile products per (block, tile) pair
)
