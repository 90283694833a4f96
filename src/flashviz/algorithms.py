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


REGISTRY: dict[str, Algorithm] = {
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
}
assert set(REGISTRY) == set(ALGOS), "config.ALGOS and the registry must list the same algorithms"


@cache
def get(name: str) -> Algorithm:
    return REGISTRY[name]
