"""What the engine emits and a trace holds, one per step: the engine's `Record` of a step as it ran (its op, indices,
code, transfers, SRAM, carries, values of its parts), and the `Step` that `flashviz.tracing.assemble` makes of a
record, the picture and the words once the run is over (frozen: nothing fills it later). Both hold Transfers across
HBM. The Trace document that holds the steps is `flashviz.tracing.trace`'s."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import numpy as np


class Transfer(NamedTuple):
    """One trip across HBM: a rectangle of a tensor read into SRAM or written back from it. Immutable (a named tuple:
    the engine makes one per trip of every block, recorded or not, so it is cheap to make). The engine's has no SRAM
    ends; the assembled step's has them from the op's Move (flashviz.algos.picture.moved)."""

    tensor: str
    kind: Literal["read", "write"]
    rows: tuple[int, int]  # half-open [first, end)
    cols: tuple[int, int]  # half-open [first, end)
    buffers: tuple[str, ...] = ()  # the SRAM buffers it fills or empties (the picture's Move)
    source: dict[str, Any] | None = None  # a write's values in the trace: {"buffer"}, {"carry"} or {"fill"}
    note: str | None = None  # words after the HBM slice in the buffer's note
    width: int | None = None  # the tensor's columns (not in the trace; None: unknown)

    @property
    def elements(self) -> int:
        return (self.rows[1] - self.rows[0]) * (self.cols[1] - self.cols[0])


@dataclass
class Record:
    """The engine's record of one kept step, as it ran (`Recorder.emit`): where it ran, what it moved and the values
    it left. Its words are said after the run, from it (an algorithm's words.py); `facts` holds what the words need
    that the step's values do not show (fa3's raw scores before the mask), never part of the trace."""

    index: int  # position in the recorded steps
    kernel: str  # the kernel it belongs to
    block: int  # blockIdx.x of the step's kernel (fa1: 0, its one block; the block of Q it visits is indices["i"])
    j: int | None  # tile index, None outside the loop over K/V tiles
    phase: int  # position within the block's program: all blocks are at the same phase together
    indices: dict[str, int]  # the loop indices of the code header, outer first (e.g. {"j": 1, "i": 0} for fa1)
    op: str  # the step's name: its `// step: NAME` region in the kernel file (fa2: load_q, load_kv, scores, ...)
    code: str  # the marked region of the kernel with i and j substituted
    lines: tuple[int, int]  # 1-based inclusive line range of the region in the kernel file
    transfers: list[Transfer]
    sram: dict[str, np.ndarray]  # buffers this step changed, their contents after it
    carries: dict[str, np.ndarray] | None  # the running values a step holds (fa2: mi, li; m_old, alpha ... on update)
    # the values of each visible part of a compound step, in the order its words name them (fa2's online_softmax: 3)
    parts: Sequence[Mapping[str, np.ndarray]] | None
    mma: dict[str, Any] | None = None
    schedule: dict[str, Any] | None = None
    facts: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    """One step of a trace (docs/trace-schema.md, `steps`): the engine's record, placed in the picture and said."""

    index: int  # position in `steps`
    block: int  # blockIdx.x of the step's kernel (fa1: 0, its one block; the block of Q it visits is indices["i"])
    j: int | None  # tile index, None outside the loop over K/V tiles
    phase: int  # position within the block's program: all blocks are at the same phase together
    indices: dict[str, int]  # the loop indices of the code header, outer first (e.g. {"j": 1, "i": 0} for fa1)
    op: str  # the step's name: its `// step: NAME` region in the kernel file (fa2: load_q, load_kv, scores, ...)
    math: str  # the seed's label, e.g. "Sij = Qi @ Kj.T"
    tex: str  # the same in TeX, for typesetting
    code: str  # the marked region of the kernel with i and j substituted
    lines: tuple[int, int]  # 1-based inclusive line range of the region in the kernel file
    transfers: tuple[Transfer, ...]
    sram: dict[str, np.ndarray]  # buffers this step changed, their contents after it
    carries: (
        dict[str, np.ndarray] | None
    )  # the running values a step holds (fa2: mi, li; m_old, alpha ... on its update)
    substeps: list[dict[str, Any]] | None  # the visible parts of a compound step (fa2's online_softmax has three)
    text: str  # narrative sentence built from the step's real numbers
    kernel: str  # the kernel it belongs to
    tile: int | None  # the tile of K/V held in SRAM at the step (the last its unit loaded)
    veil: int | None  # index into the trace's veils: what its unit never touches under causal masking
    action: str  # the seed's "Action" column
    carries_note: int | None  # index into the trace's carries notes
    mma: dict[str, Any] | None = None  # a tensor-core kernel's scores and P·V steps: one element as its k-steps add up
    # who runs the step on a warp-specialized kernel: its partition, the consumer warpgroups' rows, the ring slot
    # of its Kj, Vj (docs/trace-schema.md, a step's `schedule`); None for a kernel whose warps all run every step
    schedule: dict[str, Any] | None = None
