"""What an algorithm is to the machinery: its record (`Algorithm`), its idea in words (`Idea`), and where its
parts are. Each algorithm is a folder `flashviz/algos/<name>/` (docs/adding-an-algorithm.md):

- `__init__.py`  `ALGORITHM`, this module's record: title, kernel file, tensors, limits, idea
- the kernel file (`*.cu`), its steps marked `// step: NAME` ... `// end step`
- `engine.py`    `execute(cfg, inputs) -> Recorder` and `trace_blocks(cfg, recorded)`: the kernel's loops
- `narrative.py` the sentences of its steps
- `traffic.py`   closed forms: `count`, `sram_bytes`, `steps`
- `expect.py`    its float64 expectation: `expected(cfg, inputs)`, `TOLERANCE`, `LOG_DOMAIN`
- `gpu.py`       `SPEC`, its launches on a GPU (`flashviz.gpu.specs.KernelSpec` for NVRTC, `TritonSpec` for Triton)

The record names the parts by module, and they are imported when first used: the record itself imports
nothing of the engine, so that `config` can read every algorithm's limits without importing an executor.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.resources import files
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

from ..units import FLOAT_BYTES

if TYPE_CHECKING:
    from importlib.abc import Traversable

    from ..config import Config
    from ..gpu.specs import KernelSpec, TritonSpec


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
    name: str  # on the command line, in the API and in the trace, e.g. "fa2-backward"
    title: str
    short: str  # the comparison's column and chart label, e.g. "FA2 backward"
    package: str  # its folder as a Python package, e.g. "flashviz.algos.fa2_backward"
    kernel_file: str  # in its folder
    kernel_name: str  # the __global__ function(s) it launches, first is the main one
    inputs: tuple[str, ...]  # tensors the host puts in HBM
    outputs: tuple[str, ...]  # tensors the kernel leaves in HBM for the caller
    tensors: dict[str, str]  # every HBM tensor it touches -> its role
    causal: bool  # whether --causal is supported
    direction: Literal["forward", "backward"]  # a backward pass is a different computation, not a forward's rival
    grid: Literal["Tr", "Tc"]  # CUDA blocks of its main kernel: one per block of Q (Tr) or per tile of K/V (Tc)
    idea: Idea  # what it does, in words and formulas (the page's section 1)
    trace_values: Callable[[Config], int]  # about how many numbers a trace of this launch holds (the API bounds it)
    api_cost: int = 1  # engine time per (block, tile) pair, relative to fa2's: the API's bounds on work divide by it
    max_n: int | None = None  # the largest N its engine may run, when that is below config.LIMITS ...
    max_n_reason: str = ""  # ... and why, as the error says it: "keeps S and P (N×N) in HBM"
    sram_note: str = ""  # how its shared memory per block is counted, when it is not one kernel's
    reread: str = ""  # what the loads a GPU's caches serve mostly are, in its words (a profile's `model.reread`)
    dtype: str = "float32"  # Q, K, V (and O) in HBM: "float32", or "bfloat16" for a tensor-core kernel
    tensor_bytes: Mapping[str, int] | None = None  # bytes per element of each HBM tensor (None: 4 for every one)
    kernel_functions: tuple[str, ...] = ()  # a kernel file shared with others: the functions whose steps are its own
    launch_check: str = ""  # "module.function" of its folder: more rules on a launch (tiles a kernel can run)
    launch_rule: str = ""  # those rules in words, for /api/limits and the page
    # its own defaults (n, d, br, bc), where the seed's example (N=8, D=4, Br=Bc=4) does not show it well: what
    # `flashviz trace --algo NAME` runs with no size flags and what the page switches to when it is picked (issue 17
    # item 13; the redesign's one field table can take these over), and in `example_why` why they were chosen
    example: Mapping[str, int] | None = None
    example_why: str = ""
    allowed: Mapping[str, tuple[int, ...]] | None = None  # the only values a field may take ("d": head dims), if any

    def bytes_of(self, tensor: str) -> int:
        """Bytes per element of one of its HBM tensors (bf16 Q is 2, its fp32 L 4)."""
        return FLOAT_BYTES if self.tensor_bytes is None else self.tensor_bytes[tensor]

    @property
    def element_bytes(self) -> int:
        """Bytes per element of its inputs (the trace's `config.element_bytes`)."""
        return self.bytes_of(self.inputs[0])

    def check_launch(self, cfg: Config) -> None:
        """Its own rules on a launch (`launch_check`), raising ConfigError; nothing when it has none."""
        if self.launch_check:
            module, _, function = self.launch_check.rpartition(".")
            getattr(self.part(module), function)(cfg)

    def part(self, name: str) -> ModuleType:
        """One of its modules (engine, narrative, traffic, expect, gpu), imported on first use."""
        return importlib.import_module(f"{self.package}.{name}")

    @property
    def engine(self) -> ModuleType:
        return self.part("engine")

    @property
    def traffic(self) -> ModuleType:
        """Its closed forms: count(n, d, br, bc, causal), sram_bytes(n, d, br, bc), steps(n, d, br, bc, causal)."""
        return self.part("traffic")

    @property
    def expect(self) -> ModuleType:
        return self.part("expect")

    @property
    def gpu(self) -> KernelSpec | TritonSpec | None:
        """Its launches on a GPU, or None when it has none yet."""
        if importlib.util.find_spec(f"{self.package}.gpu") is None:
            return None
        spec: KernelSpec | TritonSpec = self.part("gpu").SPEC
        return spec

    @property
    def kernel_path(self) -> Traversable:
        return files(self.package).joinpath(self.kernel_file)


def forward_trace_values(cfg: Config) -> int:
    """The numbers in a trace of a forward pass (fa2, fa1, standard): the N x D inputs and outputs, and per recorded
    block and tile: Kj Vj, Sij twice, Oi and PV, and the carries (docs/trace-schema.md)."""
    per_tile = 2 * cfg.bc * cfg.d + 2 * cfg.br * cfg.bc + 2 * cfg.br * cfg.d + 24 * cfg.br
    return 4 * cfg.n * cfg.d + len(cfg.recorded_blocks()) * cfg.tc * per_tile
