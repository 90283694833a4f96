"""The algorithms flashviz runs. For each: its kernel file, its executor, its traffic model, side by side.

Adding one is a module per layer (kernels/NAME.cu, engine/NAME.py, traffic/NAME.py) and an entry here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from .config import ALGOS


@dataclass(frozen=True)
class Idea:
    """What an algorithm does, in a few sentences: section 1 of the web page ("The idea"), from `trace.idea`.

    Each paragraph of `body` is text with inline TeX between single dollars (`stream the tiles $K_j, V_j$`);
    a paragraph that is one `$$...$$` is a displayed formula. The page renders the text as text and the TeX
    through KaTeX (trust off), so neither is ever HTML.
    """

    summary: str  # one line, shown beside the heading while the section is folded
    body: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary, "body": list(self.body)}


@dataclass(frozen=True)
class Algorithm:
    name: str
    title: str
    kernel_file: str  # under flashviz/kernels/
    kernel_name: str  # the __global__ function(s) it launches, first is the main one
    module: str  # the engine and traffic modules share this name
    inputs: tuple[str, ...]  # tensors the host puts in HBM
    outputs: tuple[str, ...]  # tensors the kernel leaves in HBM for the caller
    tensors: dict[str, str]  # every HBM tensor it touches -> its role
    causal: bool  # whether --causal is supported
    idea: Idea  # what it does, in words and formulas (the page's section 1)

    @property
    def engine(self) -> Any:
        return importlib.import_module(f"flashviz.engine.{self.module}")

    @property
    def traffic(self) -> Callable[..., dict[str, dict[str, int]]]:
        return importlib.import_module(f"flashviz.traffic.{self.module}").count

    @property
    def traffic_model(self) -> Any:
        """The traffic module: count, and where defined sram_bytes and steps (closed forms, no engine run)."""
        return importlib.import_module(f"flashviz.traffic.{self.module}")


STANDARD_IDEA = Idea(
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

FA1_IDEA = Idea(
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

FA2_IDEA = Idea(
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

FA2_BACKWARD_IDEA = Idea(
    summary="P recomputed from the forward's L; K/V on the outer loop; dQ added up in HBM",
    body=(
        "The gradients $dQ, dK, dV$ from $dO$ and what the forward pass left: its output $O$ and its log-sum-exp "
        r"$L$. A small kernel first computes $D = \mathrm{rowsum}(dO \circ O)$ and zeroes $dQ$. Then block $j$ "
        "owns the tile $K_j, V_j$ and loops over the blocks of queries $i$, recomputing the probabilities from "
        "$L$ instead of reading them:",
        r"$$P_{ij} = e^{\tau\, Q_i K_j^{\top} - L_i},\qquad dV_j \mathrel{+}= P_{ij}^{\top} dO_i,"
        r"\qquad dS_{ij} = P_{ij} \circ \big(dO_i V_j^{\top} - D_i\big)$$",
        r"$$dK_j \mathrel{+}= \tau\, dS_{ij}^{\top} Q_i,\qquad dQ_i \mathrel{+}= \tau\, dS_{ij} K_j$$",
        "$dK_j$ and $dV_j$ build up in SRAM and are written once. $dQ_i$ gets a share from every tile $j$, so it "
        "is added up in HBM with atomicAdd. $P$ is never stored: $L$, one number per row, is all the forward keeps.",
    ),
)

REGISTRY: dict[str, Algorithm] = {
    "standard": Algorithm(
        name="standard",
        title="Standard attention (S and P in HBM)",
        kernel_file="standard.cu",
        kernel_name="standard_scores, standard_softmax, standard_pv",  # three launches, in this order
        module="standard",
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
        idea=STANDARD_IDEA,
    ),
    "fa1": Algorithm(
        name="fa1",
        title="FlashAttention-1 forward",
        kernel_file="fa1_forward.cu",
        kernel_name="fa1",
        module="fa1",
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
        idea=FA1_IDEA,
    ),
    "fa2": Algorithm(
        name="fa2",
        title="FlashAttention-2 forward",
        kernel_file="fa2_forward.cu",
        kernel_name="fa2",
        module="fa2",
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
        idea=FA2_IDEA,
    ),
    "fa2-backward": Algorithm(
        name="fa2-backward",
        title="FlashAttention-2 backward",
        kernel_file="fa2_backward.cu",
        kernel_name="fa2_bwd",  # after fa2_bwd_preprocess (D = rowsum(dO ∘ O), dQ = 0)
        module="fa2_backward",
        inputs=("Q", "K", "V", "dO"),
        outputs=("dQ", "dK", "dV", "O", "L"),  # O and L: the forward's, computed by engine.fa2 and used here
        tensors={
            "Q": "input",
            "K": "input",
            "V": "input",
            "O": "input (the forward's output)",
            "L": "input (the forward's log-sum-exp)",
            "dO": "input (gradient of the loss with respect to O)",
            "D": "intermediate (rowsum(dO ∘ O), written by the preprocessing kernel)",
            "dQ": "output (zeroed by the preprocessing kernel, accumulated with atomicAdd)",
            "dK": "output",
            "dV": "output",
        },
        causal=True,
        idea=FA2_BACKWARD_IDEA,
    ),
}
assert set(REGISTRY) == set(ALGOS), "config.ALGOS and the registry must list the same algorithms"


@cache
def get(name: str) -> Algorithm:
    return REGISTRY[name]
