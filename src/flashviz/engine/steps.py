"""What the engine emits, one record per step: the Step (its op, indices, code, transfers, SRAM, carries, words)
and its Transfers across HBM. The Trace document that holds them is `flashviz.tracing.trace`'s."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np


@dataclass
class Transfer:
    """One trip across HBM: a rectangle of a tensor read into SRAM or written back from it."""

    tensor: str
    kind: Literal["read", "write"]
    rows: tuple[int, int]  # half-open [first, end)
    cols: tuple[int, int]  # half-open [first, end)
    buffers: list[str] = field(default_factory=list)  # the SRAM buffers it fills or empties (the picture's Move)
    source: dict[str, Any] | None = None  # a write's values in the trace: {"buffer"}, {"carry"} or {"fill"}
    note: str | None = None  # words after the HBM slice in the buffer's note

    @property
    def elements(self) -> int:
        return (self.rows[1] - self.rows[0]) * (self.cols[1] - self.cols[0])


@dataclass
class Step:
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
    transfers: list[Transfer]
    sram: dict[str, np.ndarray]  # buffers this step changed, their contents after it
    carries: (
        dict[str, np.ndarray] | None
    )  # the running values a step holds (fa2: mi, li; m_old, alpha ... on its update)
    substeps: list[dict[str, Any]] | None  # the visible parts of a compound step (fa2's online_softmax has three)
    text: str  # narrative sentence built from the step's real numbers
    kernel: str = ""  # the kernel it belongs to (flashviz.algos.picture fills it, and the fields below)
    tile: int | None = None  # the tile of K/V held in SRAM at the step (the last its unit loaded)
    veil: int | None = None  # index into the trace's veils: what its unit never touches under causal masking
    action: str = ""  # the seed's "Action" column
    carries_note: int | None = None  # index into the trace's carries notes
    mma: dict[str, Any] | None = None  # a tensor-core kernel's scores and P·V steps: one element as its k-steps add up
    # who runs the step on a warp-specialized kernel: its partition, the consumer warpgroups' rows, the ring slot
    # of its Kj, Vj (docs/trace-schema.md, a step's `schedule`); None for a kernel whose warps all run every step
    schedule: dict[str, Any] | None = None
