"""What every executor shares: HBM, the recorded steps, and launch-wide counters per phase."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import cancel, kernels
from ..tiling import span
from ..trace import Step, Transfer
from .memory import HBM

if TYPE_CHECKING:
    from ..config import Config


class Recorder:
    """Collects one launch. Steps with values are kept for the recorded blocks only; the counters
    of every block are summed per phase (a phase is a position in a block's program: all blocks of a
    launch run at once, so phase p is when every block has done its p-th step)."""

    def __init__(self, algo: str, labels: dict[str, tuple[str, str]], recorded: set[int]):
        self.algo = algo
        self.labels = labels
        self.recorded = recorded
        self.hbm = HBM()
        self.steps: list[Step] = []
        self.phase_counts: dict[int, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
        self.phase_ops: dict[int, tuple[str, int | None]] = {}
        self.block_phases: dict[int, int] = {}  # CUDA block -> phases in its program (causal makes them differ)
        self.sram_footprint: dict[str, Any] | None = None

    def emit(
        self,
        i: int | None,
        j: int | None,
        op: str,
        phase: int,
        transfers: list[Transfer],
        sram: dict[str, np.ndarray] | None = None,
        text: str = "",
        carries: dict[str, np.ndarray] | None = None,
        substeps: list[dict[str, Any]] | None = None,
        indices: Mapping[str, int | None] | None = None,
    ) -> None:
        """Count a step's transfers; keep the step itself when its block is recorded.

        `indices` orders the loop indices in the code header (default i then j). A step of no block of Q
        (i None: FA1's outer-loop load of Kj, Vj) is kept whenever any block is recorded."""
        cancel.check()  # a server request whose client has gone stops here, between two steps
        counts = self.phase_counts[phase]
        for t in transfers:
            counts[(t.tensor, t.kind)] += t.elements
        self.phase_ops.setdefault(phase, (op, j))
        if i is not None:
            self.block_phases[i] = max(self.block_phases.get(i, 0), phase + 1)
        keep = i in self.recorded if i is not None else bool(self.recorded)
        if not keep:
            return
        region = kernels.regions(self.algo)[op]
        math, tex = self.labels[op]
        indices = indices or {"i": i, "j": j}
        self.steps.append(
            Step(
                index=len(self.steps),
                block=i,
                j=j,
                phase=phase,
                op=op,
                math=math,
                tex=tex,
                indices={k: v for k, v in indices.items() if v is not None},
                code=kernels.step_code(self.algo, op, **indices),
                lines=(region.first, region.last),
                transfers=transfers,
                sram={k: v.copy() for k, v in (sram or {}).items()},
                carries=carries,
                substeps=substeps,
                text=text,
            )
        )

    def phases(self, tensors: tuple[str, ...]) -> list[dict[str, Any]]:
        """Launch-wide cumulative counters after each phase."""
        running = {name: {"read": 0, "written": 0} for name in tensors}
        out = []
        for p in range(max(self.phase_ops) + 1 if self.phase_ops else 0):
            for (name, kind), n in self.phase_counts.get(p, {}).items():
                running[name]["read" if kind == "read" else "written"] += n
            op, j = self.phase_ops.get(p, (None, None))
            out.append({"phase": p, "op": op, "j": j, "hbm": {k: dict(v) for k, v in running.items()}})
        return out


def visible_parts(spec: tuple[tuple[str, str, str], ...], values: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """The visible parts of one step: each (name, seed-style label, TeX) of `spec` with its values."""
    return [
        {"name": name, "math": math, "tex": tex, "values": v} for (name, math, tex), v in zip(spec, values, strict=True)
    ]


def blocks_of_q(cfg: Config, recorded: set[int]) -> list[dict[str, Any]]:
    """The CUDA blocks of a launch with one block per block of Q (the trace's `blocks`): rows, and whether recorded."""
    return [{"i": i, "rows": list(span(i, cfg.br, cfg.n)), "recorded": i in recorded} for i in range(cfg.tr)]
