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
    ),
}
assert set(REGISTRY) == set(ALGOS), "config.ALGOS and the registry must list the same algorithms"


@cache
def get(name: str) -> Algorithm:
    return REGISTRY[name]
