"""What an algorithm is to the machinery: one typed object, `Algorithm`, that each folder `flashviz/algos/<name>/`
exports as `ALGORITHM` (docs/adding-an-algorithm.md). It holds the record (name, title, tensors, limits, idea) and
the parts, each a module of the folder imported directly and checked by mypy against its Protocol below:

- `engine`   `Engine`: `execute(cfg, inputs) -> Recorder` and `trace_blocks(cfg, recorded)`: the kernel's loops
- `traffic`  `Traffic`: closed forms `count`, `sram_bytes`, `steps`, `rules`
- `flops`    `FlopCount`: closed form `count` and its words `FORMULAS`
- `expect`   `Expect`: its float64 expectation `expected(cfg, inputs)`, `TOLERANCE`, `LOG_DOMAIN`, `ENGINE_TOLERANCE`
- `picture`  `Picture`: `KERNELS`, `PICKER`, `BUFFERS`, `SRAM_ROWS`, `OPS` and `picture(cfg) -> Texts` (the picture's
             words at a launch)
- `words`    `Words`: every sentence of its steps as plain text with named slots, said once after the run: `LABELS`,
             `PARTS` and `say(cfg, step, state) -> Said` (flashviz.algos.words)
- `gpu`      its launches on a GPU (`flashviz.algos.launch.KernelSpec` for NVRTC, `TritonSpec` for Triton), or None
- `warps`    `Warps`: how its threads share a step's work (`WORK`), or None
- `launch_check`: more rules on a launch (the tiles a kernel can run), or None

A folder whose part lacks a name or has one of another type fails `mypy src` where its `ALGORITHM` is built. The
kernel file's steps (`// step: NAME` ... `// end step`) are cut by `flashviz.model.kernels` from `kernel` (a
KernelFile).
The launch rules that depend on the algorithm (its blocks, its N limit, its kernel's tiles, the API's bounds) are
methods here: `Config` is plain data that names the algorithm and imports none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from flashviz.model.config import (
    API_LIMITS,
    API_MAX_TILES,
    API_MAX_VALUES,
    API_MAX_WORK,
    LIMITS,
    MAX_TILES,
    Config,
    ConfigError,
    shown,
)
from flashviz.model.fields import ALGORITHM_FIELDS, BY_NAME
from flashviz.model.kernels import KernelFile, path
from flashviz.model.units import FLOAT_BYTES

if TYPE_CHECKING:
    from importlib.abc import Traversable

    import numpy as np

    from flashviz.algos.launch import KernelSpec, TritonSpec
    from flashviz.algos.picture import Buffer, Kernel, Op, Picker, Rule, Texts
    from flashviz.algos.words import Said

    from ..engine.recorder import Recorder
    from ..engine.steps import Record
    from ..hardware.warps import Work


class Engine(Protocol):
    """An algorithm's `engine.py`: the kernel's loops on the memory model."""

    def execute(self, cfg: Config, inputs: dict[str, np.ndarray]) -> Recorder: ...
    def trace_blocks(self, cfg: Config, recorded: set[int]) -> list[dict[str, Any]]: ...


class Traffic(Protocol):
    """An algorithm's `traffic.py`: the closed forms its engine's counters are held to."""

    def count(self, n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, dict[str, int]]: ...
    def sram_bytes(self, n: int, d: int, br: int, bc: int) -> int: ...
    def steps(self, n: int, d: int, br: int, bc: int, causal: bool = False) -> int: ...
    def rules(self, n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, Rule]: ...


class FlopCount(Protocol):
    """An algorithm's `flops.py`: its FLOPs by kind in closed form, and the formula of each kind in words."""

    @property
    def FORMULAS(self) -> Mapping[str, str]: ...
    def count(self, n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, int]: ...


class LaunchModels(Protocol):
    """The closed forms of an algorithm that runs the options of real models (`Algorithm.options`; Config's group,
    nk, window, softcap, seqlens): the same counts as `Traffic` and `FlopCount`, taking the whole launch. The
    machinery uses these, when an algorithm has them, at every launch of it (`Algorithm.traffic_of` ...)."""

    def count(self, cfg: Config) -> dict[str, dict[str, int]]: ...
    def steps(self, cfg: Config) -> int: ...
    def rules(self, cfg: Config) -> dict[str, Rule]: ...
    def flops(self, cfg: Config) -> dict[str, int]: ...


class Expect(Protocol):
    """An algorithm's `expect.py`: its outputs in float64, and how close the engine (and a GPU) must come."""

    @property
    def TOLERANCE(self) -> dict[str, float]: ...
    @property
    def LOG_DOMAIN(self) -> frozenset[str]: ...
    @property
    def ENGINE_TOLERANCE(self) -> dict[str, float]: ...  # a GPU's own bound against the engine, where it states one
    def expected(self, cfg: Config, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]: ...


class Picture(Protocol):
    """An algorithm's `picture.py` (flashviz.algos.picture): what the page draws, as data, and its words for a
    launch."""

    @property
    def KERNELS(self) -> Sequence[Kernel]: ...
    @property
    def PICKER(self) -> Picker: ...
    @property
    def BUFFERS(self) -> Mapping[str, Buffer]: ...
    @property
    def SRAM_ROWS(self) -> Sequence[Sequence[str]]: ...
    @property
    def OPS(self) -> Mapping[str, Op]: ...
    def picture(self, cfg: Config) -> Texts: ...


class Words(Protocol):
    """An algorithm's `words.py` (flashviz.algos.words): every sentence of its steps as plain text with named slots,
    said once after the run from each step's record."""

    @property
    def LABELS(self) -> Mapping[str, tuple[str, str]]: ...  # op -> its seed-style label and the same in TeX
    @property
    def PARTS(self) -> Mapping[str, Sequence[tuple[str, str, str]]]: ...  # op -> its visible parts (name, label, TeX)
    # a step's narrative sentence, Action column and carries note, from its record and the SRAM its unit holds there
    def say(self, cfg: Config, step: Record, state: Mapping[str, np.ndarray]) -> Said: ...


class Warps(Protocol):
    """An algorithm's `warps.py`: how the threads of a block share each step's work (flashviz.hardware.warps)."""

    @property
    def WORK(self) -> dict[str, Work]: ...


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
    """One algorithm: its record and its parts (the module docstring). Resolved once from its name at a front door
    (`flashviz.algos.resolve`) and passed down."""

    name: str  # on the command line, in the API and in the trace, e.g. "fa2-backward"
    title: str
    short: str  # the comparison's column and chart label, e.g. "FA2 backward"
    kernel: KernelFile  # its kernel file, in its folder (the package), and its own functions in a shared one
    kernel_name: str  # the __global__ function(s) it launches, first is the main one
    inputs: tuple[str, ...]  # tensors the host puts in HBM
    outputs: tuple[str, ...]  # tensors the kernel leaves in HBM for the caller
    tensors: dict[str, str]  # every HBM tensor it touches -> its role
    causal: bool  # whether --causal is supported
    direction: Literal["forward", "backward"]  # a backward pass is a different computation, not a forward's rival
    grid: Literal["Tr", "Tc"]  # CUDA blocks of its main kernel: one per block of Q (Tr) or per tile of K/V (Tc)
    idea: Idea  # what it does, in words and formulas (the page's section 1)
    # about how many numbers a trace of this launch holds, with these blocks recorded (the API bounds it)
    trace_values: Callable[[Config, tuple[int, ...]], int]
    # the parts
    engine: Engine
    traffic: Traffic
    expect: Expect
    picture: Picture
    words: Words
    flops: FlopCount | None  # None: no closed form yet (its trace's flops.model is then null)
    gpu: KernelSpec | TritonSpec | None  # None: no GPU launch yet
    warps: Warps | None = None  # None: no warp split drawn
    launch_check: Callable[[Config], None] | None = None  # more rules on a launch (tiles a kernel can run), or None
    # outputs judged against the scale of their terms rather than max |ref| (reference.check's `magnitudes`: the
    # gradients of a backward pass), from its expect.py; None: every output against max |ref|
    magnitudes: Callable[[Config, dict[str, np.ndarray]], dict[str, float]] | None = None
    # more of the record
    api_cost: int = 1  # engine time per (block, tile) pair, relative to fa2's: the API's bounds on work divide by it
    max_n: int | None = None  # the largest N its engine may run, when that is below config.LIMITS ...
    max_n_reason: str = ""  # ... and why, as the error says it: "keeps S and P (N×N) in HBM"
    sram_note: str = ""  # how its shared memory per block is counted, when it is not one kernel's
    reread: str = ""  # what the loads a GPU's caches serve mostly are, in its words (a profile's `model.reread`)
    dtype: str = "float32"  # Q, K, V (and O) in HBM: "float32", or "bfloat16" for a tensor-core kernel
    tensor_bytes: Mapping[str, int] | None = None  # bytes per element of each HBM tensor (None: 4 for every one)
    launch_rule: str = ""  # the rules of launch_check in words, for /api/limits and the page
    # its own defaults (n, d, br, bc), where the seed's example (N=8, D=4, Br=Bc=4) does not show it well: what
    # `flashviz trace --algo NAME` runs with no size flags and what the page switches to when it is picked (issue 17
    # item 13; the redesign's one field table can take these over), and in `example_why` why they were chosen
    example: Mapping[str, int] | None = None
    example_why: str = ""
    allowed: Mapping[str, tuple[int, ...]] | None = None  # the only values a field may take ("d": head dims), if any
    # a table of its own for `flashviz compare` at (d, br, bc), from its closed forms: {"title", "columns", "rows",
    # "caption", ...}, rows of cells as the columns name them (fa2-splitkv: decoding, few queries against many keys)
    compare_table: Callable[[int, int, int], dict[str, Any]] | None = None
    # False: not a rival of the single-GPU kernels in `flashviz compare` (its sweep, its chart), though traced and
    # shown like them (ring attention: one forward spread over P devices, its own model in `compare --ring`)
    rival: bool = True
    # the launch fields beyond (n, d, br, bc, causal) its closed forms take, as keyword arguments (ring: its layout,
    # which decides the calls each step makes); None: none. The FLOP view passes them to `flops.count`.
    closed_form_fields: Callable[[Config], Mapping[str, Any]] | None = None
    # the options of real models it runs (Config.OPTIONS' names: group, nk, window, softcap, seqlens; issue 22) and
    # its closed forms that take them (None: it runs none, and `traffic`, `flops` are its closed forms)
    options: frozenset[str] = frozenset()
    own_fields: frozenset[str] = frozenset()  # the fields of fields.ALGORITHM_FIELDS it takes (ring's devices)
    launch_models: LaunchModels | None = None

    @property
    def package(self) -> str:
        """Its folder as a Python package, e.g. "flashviz.algos.fa2_backward"."""
        return self.kernel.package

    @property
    def kernel_file(self) -> str:
        """The kernel file's name in its folder, e.g. "fa2_forward.cu"."""
        return self.kernel.name

    @property
    def kernel_functions(self) -> tuple[str, ...]:
        """A kernel file shared with others: the functions whose steps are its own (empty: the whole file)."""
        return self.kernel.functions

    @property
    def kernel_path(self) -> Traversable:
        return path(self.kernel)

    def bytes_of(self, tensor: str) -> int:
        """Bytes per element of one of its HBM tensors (bf16 Q is 2, its fp32 L 4)."""
        return FLOAT_BYTES if self.tensor_bytes is None else self.tensor_bytes[tensor]

    @property
    def element_bytes(self) -> int:
        """Bytes per element of its inputs (the trace's `config.element_bytes`)."""
        return self.bytes_of(self.inputs[0])

    def closed_form_args(self, cfg: Config) -> dict[str, Any]:
        """What its closed forms take from `cfg` beyond (n, d, br, bc, causal) (`closed_form_fields`), or {}."""
        return {} if self.closed_form_fields is None else dict(self.closed_form_fields(cfg))

    def blocks(self, cfg: Config) -> int:
        """What --block and the API's `block` choose among, and a trace's `blocks` lists (its picks): the blocks of the
        main kernel, one per block of Q (Tr) or per tile of K/V (Tc); for fa1, whose one block per head visits the
        blocks of Q in turn, the Tr blocks of Q (docs/trace-schema.md, `picker`). With the options of real models,
        the blocks of Q of every q head of the K/V head and every packed sequence (Config.q_blocks)."""
        return cfg.tc if self.grid == "Tc" else cfg.q_blocks

    # ---- its closed forms at a launch (the launch's options where it runs them) ----

    def traffic_of(self, cfg: Config) -> dict[str, dict[str, int]]:
        if self.launch_models is not None:
            return self.launch_models.count(cfg)
        return self.traffic.count(n=cfg.n, d=cfg.d, br=cfg.br, bc=cfg.bc, causal=cfg.causal)

    def steps_of(self, cfg: Config) -> int:
        if self.launch_models is not None:
            return self.launch_models.steps(cfg)
        return self.traffic.steps(cfg.n, cfg.d, cfg.br, cfg.bc, causal=cfg.causal)

    def flops_of(self, cfg: Config) -> dict[str, int] | None:
        if self.launch_models is not None:
            return self.launch_models.flops(cfg)
        if self.flops is None:
            return None
        more = self.closed_form_args(cfg)  # a launch field its count needs (the ring's layout)
        return self.flops.count(n=cfg.n, d=cfg.d, br=cfg.br, bc=cfg.bc, causal=cfg.causal, **more)

    def block_size(self, cfg: Config) -> str:
        """What sets the number of blocks, as an error message names it: `Br=4` (blocks of Q) or `Bc=4` (tiles)."""
        return f"Bc={cfg.bc}" if self.grid == "Tc" else f"Br={cfg.br}"

    def recorded_blocks(self, cfg: Config) -> tuple[int, ...]:
        """The blocks whose values a trace of `cfg` records (Config.recorded_blocks of its blocks)."""
        return cfg.recorded_blocks(self.blocks(cfg))

    def check_launch(self, cfg: Config) -> None:
        """Its own rules on a launch (`launch_check`), raising ConfigError; nothing when it has none."""
        if self.launch_check is not None:
            self.launch_check(cfg)

    def validated(
        self, cfg: Config, limits: dict[str, tuple[int, int]] = LIMITS, max_tiles: int | None = MAX_TILES
    ) -> Config:
        """`cfg` when it is a launch this algorithm runs within `limits`, else ConfigError naming the first bad one."""
        if cfg.algo != self.name:
            raise ValueError(f"a Config of {cfg.algo!r} validated as {self.name!r}")
        cfg.check_fields(limits)
        cfg.check_options(self.options, self.name)
        for name in ALGORITHM_FIELDS:
            default = BY_NAME[name].default
            if name not in self.own_fields and getattr(cfg, name) != default:
                raise ConfigError(
                    name,
                    f"{self.name} does not take it ({BY_NAME[name].help.split(': ', 1)[0]} only); leave it at "
                    f"{default} (got {shown(getattr(cfg, name))})",
                )
        if self.max_n is not None and cfg.n > self.max_n:
            raise ConfigError(
                "n",
                f"must be at most {self.max_n} for {self.name}, which {self.max_n_reason} "
                f"(got {cfg.n}); `flashviz compare` counts larger N without running the engine",
            )
        self.check_launch(cfg)  # its own rules (the tiles a kernel can run, say): more precise than the bounds on work
        cfg.check_tiles(max_tiles)
        cfg.check_scale()
        if cfg.record is not None:
            blocks = self.blocks(cfg)
            where = f"0..{blocks - 1} for N={cfg.n}, {self.block_size(cfg)}"
            if not isinstance(cfg.record, tuple):
                raise ConfigError("block", f"must be an integer in {where} (got {shown(cfg.record)})")
            for b in cfg.record:  # True is no block (bool is an int to Python)
                if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b < blocks:
                    raise ConfigError("block", f"must be an integer in {where} (got {shown(b)})")
        return cfg

    def api_validated(self, cfg: Config) -> Config:
        """`validated` under API_LIMITS, plus the API's bounds on work and on the size of the trace."""
        cfg = self.validated(cfg, API_LIMITS, max_tiles=None)  # the API's own, tighter bounds on work follow
        cost = self.api_cost  # e.g. 3 for a backward that runs the forward first
        if cfg.q_rows * cfg.kv_n * cfg.d > API_MAX_WORK // cost:
            raise ConfigError(
                "n",
                f"N*N*D must be at most {API_MAX_WORK // cost:,} for {self.name} (got {cfg.q_rows}*{cfg.kv_n}*{cfg.d}"
                "); lower n or d",
            )
        if cfg.q_blocks * cfg.tc > API_MAX_TILES // cost:
            raise ConfigError(
                "br" if cfg.br <= cfg.bc else "bc",
                f"Tr*Tc must be at most {API_MAX_TILES // cost:,} for {self.name} (got {cfg.q_blocks}*{cfg.tc} for "
                f"N={cfg.n}); raise br or bc",
            )
        recorded = self.recorded_blocks(cfg)
        values = self.trace_values(cfg, recorded)  # inputs, outputs and the recorded blocks' snapshots
        if values > API_MAX_VALUES:
            many = len(recorded) > 1
            raise ConfigError(
                "block" if many else "n",
                f"the trace would hold ~{values:,} numbers, at most {API_MAX_VALUES:,}: "
                + ("record one block (block=0) or use " if many else "use ")
                + "smaller n, d, br or bc",
            )
        return cfg


def forward_trace_values(cfg: Config, recorded: tuple[int, ...]) -> int:
    """The numbers in a trace of a forward pass (fa2, fa1, standard): the N x D inputs and outputs, and per recorded
    block and tile: Kj Vj, Sij twice, Oi and PV, and the carries (docs/trace-schema.md)."""
    per_tile = 2 * cfg.bc * cfg.d + 2 * cfg.br * cfg.bc + 2 * cfg.br * cfg.d + 24 * cfg.br
    return (2 * cfg.q_rows + 2 * cfg.kv_n) * cfg.d + len(recorded) * cfg.tc * per_tile
