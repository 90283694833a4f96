"""A trace describes its own picture (docs/trace-schema.md, schema /2): what each algorithm's `picture.py` declares,
as data (the types below), and the helpers those declarations share. `flashviz.tracing.assemble` puts a declaration
together with one run and the algorithm's words (its words.py, `flashviz.algos.words`).

An algorithm's folder declares `KERNELS` (its kernels, their ops and grids), `PICKER` (what the page's block picker
picks), `BUFFERS` (every SRAM buffer of every kernel), `SRAM_ROWS`, `OPS` (per op: its kind, notes, and where each
transfer lands in SRAM) and `picture(cfg) -> Texts` (the picture's words at a launch, which hold its numbers, and the
causal veil of a step's place).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from flashviz.engine.recorder import Where
from flashviz.model import tiling

if TYPE_CHECKING:
    from flashviz.engine.steps import Transfer
    from flashviz.model.config import Config

Axis = Literal["q", "kv", "none"]
Run = str | dict[str, Any]
Rich = list[Run]  # runs: text, {"b"}, {"sub": [base, subscript]}, {"code"}, {"slot"}, {"when", "runs"}


def b(text: object) -> dict[str, str]:
    """A bold run."""
    return {"b": str(text)}


def sub(base: str, subscript: str) -> dict[str, list[str]]:
    """A run with a subscript: sub("Q", "i") is Qᵢ."""
    return {"sub": [base, subscript]}


def code(text: str) -> dict[str, str]:
    return {"code": text}


def slot(name: str) -> dict[str, str]:
    return {"slot": name}


def when(name: str, *runs: Run) -> dict[str, Any]:
    """Runs shown only when slot `name` has a value."""
    return {"when": name, "runs": list(runs)}


@dataclass(frozen=True)
class Kernel:
    """One kernel of the launch, as the picture sees it."""

    name: str  # its __global__ name
    ops: tuple[str, ...]  # its `// step:` regions, in program order
    grid: Literal["Tr", "Tc", "1"]  # its blocks: one per block of Q, per tile of K/V, or one per head
    scope: str  # steps of kernels sharing a scope, with the same block, form one unit
    tile_loop: str | None = "j"  # the loop index of its loop over tiles of K/V, or None
    main: bool = False
    lockstep: bool = True  # its blocks run at once, op for op (false: one block visits the blocks of Q in turn)
    # the index of a step that names its block where its grid is cut into segments (fa2-triton with several q heads
    # or packed sequences: "block", the pick, while `i` stays the kernel's block within its sequence); absent from a
    # step's indices, the block is its letter's index
    block_index: str | None = None

    @property
    def letter(self) -> str | None:
        return {"Tr": "i", "Tc": "j", "1": None}[self.grid]


@dataclass(frozen=True)
class Picker:
    """What the page's block picker, its chips and --block pick."""

    kernels: tuple[str, ...]
    index: Literal["block", "i"]  # where a step's pick is: its block, or (one block per head) its indices.i
    letter: Literal["i", "j"]
    label: str

    @property
    def axis(self) -> Axis:
        return "q" if self.letter == "i" else "kv"


def locator(kernels: Sequence[Kernel], picker: Picker) -> Where:
    """(op, indices) -> (kernel, blockIdx.x, pick or None) for an algorithm's KERNELS and PICKER: which kernel runs
    an op, the block of that kernel the indices name, and the block picker's pick when the kernel is one it picks."""
    kernel_of = {op: k for k in kernels for op in k.ops}

    def where(op: str, indices: Mapping[str, int | None]) -> tuple[str, int, int | None]:
        k = kernel_of[op]
        key = k.block_index if k.block_index is not None and k.block_index in indices else k.letter
        block = 0 if key is None else indices.get(key)
        if block is None:
            raise ValueError(f"step {op} of kernel {k.name} has no index {k.letter}")
        pick = None
        if k.name in picker.kernels:
            pick = block if picker.index == "block" else indices.get("i")
        return k.name, block, pick

    return where


@dataclass(frozen=True)
class Buffer:
    """An SRAM buffer: its shape in symbols (Br, Bc, D, N, 1), axes, kernels, and how the page writes it."""

    dims: tuple[str, ...]
    axes: tuple[Axis, Axis]
    kernels: tuple[str, ...]
    label: str
    copy_of: str | None = None
    align_under: str | None = None
    row_index: str | None = None  # the loop index its one row follows (standard's Sr: "r")
    row_of: str | None = None  # what that row is a row of, in words ("S, then of P")


def fa2_buffers(kernel: str) -> dict[str, Buffer]:
    """The SRAM of FlashAttention-2's loop (fa2, fa2-splitkv, fa2-triton, fa3): Kj, Vj, then Qi and the carries,
    held by `kernel`; FA2_SRAM_ROWS, their rows in the page."""
    k = (kernel,)
    return {
        "Kj": Buffer(("Bc", "D"), ("kv", "none"), k, "Kⱼ", copy_of="K", align_under="Qi"),
        "Vj": Buffer(("Bc", "D"), ("kv", "none"), k, "Vⱼ", copy_of="V", align_under="Oi"),
        "Qi": Buffer(("Br", "D"), ("q", "none"), k, "Qᵢ", copy_of="Q"),
        "Sij": Buffer(("Br", "Bc"), ("q", "kv"), k, "Sᵢⱼ"),
        "mi": Buffer(("Br", "1"), ("q", "none"), k, "mᵢ"),
        "li": Buffer(("Br", "1"), ("q", "none"), k, "ℓᵢ"),
        "Oi": Buffer(("Br", "D"), ("q", "none"), k, "Oᵢ"),
    }


FA2_SRAM_ROWS = (("Kj", "Vj"), ("Qi", "Sij", "mi", "li", "Oi"))


@dataclass(frozen=True)
class Move:
    """Where a transfer of one tensor on one op lands in SRAM (read) or comes from (write), and for a write where its
    values are in the trace: {"buffer": name} (default: the first buffer), {"carry": key} or {"fill": value}."""

    buffers: tuple[str, ...] = ()
    source: dict[str, Any] | None = None
    note: str | None = None


def moved(t: Transfer, ops: Mapping[str, Op], op: str) -> Transfer:
    """A transfer of a step of `op` with its SRAM ends from the op's Move of its tensor (and a write's source and
    note): the trace's transfer."""
    move = ops[op].moves.get(t.tensor)
    if move is None:
        raise ValueError(f"picture: op {op} moves {t.tensor} but declares no Move for it")
    if t.kind == "read":
        return t._replace(buffers=tuple(move.buffers))
    source = move.source or ({"buffer": move.buffers[0]} if move.buffers else None)
    return t._replace(buffers=tuple(move.buffers), source=source, note=move.note)


@dataclass(frozen=True)
class Op:
    kind: Literal["read", "write", "softmax", "compute"]
    note: str  # the narrative card's sentence
    moves: Mapping[str, Move] = field(default_factory=dict)  # tensor -> Move, for every tensor the op moves
    notes: Mapping[str, str] = field(default_factory=dict)  # buffer -> note beside its name
    notes_masked: Mapping[str, str] = field(default_factory=dict)  # ... on a masked (i, tile) pair
    after_loop: bool = False
    value_tex: Mapping[str, str] = field(default_factory=dict)  # substeps' value keys -> TeX headings
    online: Mapping[str, Any] | None = None  # the online carries view: {rescales}, {reloads}, {out, o_heading}


@dataclass(frozen=True)
class Rule:
    """A tensor's counting rule: in words, its closed form as the page shows it (with the launch's numbers), and
    without causal masking the closed form as expressions in N, D, Tr, Tc that tests hold against `count`."""

    text: str
    formula: str
    read: str = "0"
    written: str = "0"


@dataclass(frozen=True)
class Tensor:
    """An HBM tensor in the picture (its shape, dtype and role come from the run)."""

    axes: tuple[Axis, Axis]
    writes: Literal["none", "once", "carried", "accumulated"]
    rule: Rule
    cols: Literal["D", "N", "1"] = "D"  # its columns: the head dimension, keys (S, P) or one (a vector)
    label: str | None = None  # default: its name
    scale_like: str | None = None
    unwritten_note: str | None = None


@dataclass(frozen=True)
class Place:
    """Where a step runs, as the assembly finds it: its kernel, blockIdx.x, and the tile of K/V its unit holds."""

    kernel: str
    block: int
    tile: int | None


@dataclass(frozen=True)
class Texts:
    """An algorithm's picture words at one launch (they hold its numbers): `picture(cfg)` of its folder. The words of
    each step are its words.py's (`flashviz.algos.words`)."""

    tagline: str
    tensors: Mapping[str, Tensor]  # every HBM tensor, in the picture's order
    sram_titles: Mapping[str, Sequence[str]]  # kernel -> templates ({block} {i} {j} {rows})
    summaries: Mapping[str, Rich]  # kernel -> the paragraph over the chips
    counting: Sequence[Rich]
    carries: Mapping[str, Any]  # view, buffers, o_heading, labels (the panel's settings)
    substeps_note: Rich
    headline: Sequence[str]  # the outputs the badge names
    against: str  # what the float64 reference is
    # what the unit of a step at this place never touches under causal masking (rectangles of tensors), or None
    veil: Callable[[Place], list[dict[str, Any]] | None] = lambda place: None
    launch: Mapping[str, Any] | None = None  # how the kernel is launched beyond N, D, Br, Bc (warps, stages, why)
    tensor_cores: Mapping[str, Any] | None = None  # how its matrix products run on the tensor cores
    schedule: Mapping[str, Any] | None = None  # a modelled schedule of its partitions, or None
    # the (block, tile) pairs' tiling where its rows are not in sequence order (the ring's zigzag layout), else None:
    # flashviz.tracing.assemble then derives it from the causal mask over N rows (`tiling_of`)
    tiling: Mapping[str, Any] | None = None
    # a run spread over devices: their closed-form part (the ring's link bytes per device, words); the engine's
    # run adds what happened (Recorder.devices). None: one device (docs/trace-schema.md, `devices`)
    devices: Mapping[str, Any] | None = None
    # the options of real models the launch runs (a group of q heads, Nq ≠ Nk, a window, packed sequences,
    # soft-capping): the page's section on them, its words and numbers (docs/trace-schema.md `options`), or None
    options: Mapping[str, Any] | None = None


# ---- helpers the algorithms' picture modules share ----

CAUSAL_CHIPS = (
    " Under causal masking blocks run programs of different lengths: a block whose rows end early finishes early "
    "(its chip fills sooner)."
)
NOT_WRITTEN = "not written yet"
CAUSAL_SUM = "Σ over the tiles each block visits"  # a rule's formula under causal masking
WRITTEN_ONCE = "not written yet:\nwritten once,\nat write-back"


def plural(k: int, word: str) -> Rich:
    """[b(3), " blocks"]: a count in bold and its noun."""
    return [b(k), f" {word}{'' if k == 1 else 's'}"]


def times(k: int, what: str) -> str:
    return f"{what} ({k} time{'' if k == 1 else 's'})"


def widths(cfg: Config, tensors: Mapping[str, Tensor]) -> dict[str, int]:
    size = {"D": cfg.d, "N": cfg.n, "1": 1}
    return {name: size[t.cols] for name, t in tensors.items()}


def width_veil(cfg: Config, tensors: Mapping[str, Tensor], i: int) -> list[dict[str, Any]] | None:
    """What block i of Q never touches under causal masking when it streams the tiles up to its diagonal: the K/V
    rows past its width ("skipped") and, on its own rows, the columns of S and P past it."""
    w = min(cfg.n, tiling.tiles_of_block(cfg.n, cfg.br, cfg.bc, i, cfg.causal) * cfg.bc)
    if w >= cfg.n:
        return None
    cols = widths(cfg, tensors)
    first, end = tiling.span(i, cfg.br, cfg.n)
    out = []
    for name, t in tensors.items():
        if t.axes[0] == "kv":
            out.append({"tensor": name, "rows": [w, cfg.n], "cols": [0, cols[name]], "label": "skipped"})
        if t.axes[1] == "kv":
            out.append({"tensor": name, "rows": [first, end], "cols": [w, cfg.n], "label": ""})
    return out


def rows_before_veil(
    cfg: Config, tensors: Mapping[str, Tensor], first_block: int, skip: Sequence[str] = ()
) -> list[dict[str, Any]] | None:
    """What a tile that meets the blocks of Q from `first_block` on never touches: the rows of Q's blocks before."""
    if first_block <= 0:
        return None
    cols = widths(cfg, tensors)
    end = min(cfg.n, first_block * cfg.br)
    return [
        {"tensor": name, "rows": [0, end], "cols": [0, cols[name]], "label": "skipped"}
        for name, t in tensors.items()
        if t.axes[0] == "q" and name not in skip
    ]


def rows_text(first: int, end: int) -> str:
    return f"{first}–{end - 1}"


def grouped(n: int) -> str:
    """An integer with thousands grouped, as the page writes it: 1,234."""
    return f"{n:,}"


def precision3(x: float) -> str:
    """x to 3 significant digits as JavaScript's toPrecision(3) writes it, trailing zeros after the point dropped:
    0.354, 0.5, 2, 1.00e+6."""
    if x == 0:
        return "0"
    mant, exp = f"{x:.2e}".split("e")  # the exponent after rounding to 3 significant digits
    e = int(exp)
    if e < -6 or e >= 3:
        return f"{mant}e{'+' if e >= 0 else '-'}{abs(e)}"
    text = f"{x:.{max(0, 2 - e)}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text
