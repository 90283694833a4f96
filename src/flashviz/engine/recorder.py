"""What every executor shares: HBM, the recorded steps, and launch-wide counters per phase."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flashviz.engine import cancel
from flashviz.engine.steps import Record, Transfer
from flashviz.model import kernels
from flashviz.model.tiling import span

from .blas import one_thread
from .flops import KINDS, Flops
from .memory import HBM

if TYPE_CHECKING:
    from flashviz.model.config import Config
    from flashviz.model.kernels import KernelFile

# (op, indices) -> (kernel, blockIdx.x, the block picker's pick or None): which kernel and block run an op
# (an algorithm's picture makes one: flashviz.algos.picture.locator)
Where = Callable[[str, Mapping[str, int | None]], tuple[str, int, int | None]]

# False: every block runs step by step through its Grid's `run`, even where a vectorised `fast` is given (tests hold
# the two equal, value for value and counter for counter)
VECTORISED = True


class Recorder:
    """Collects one launch. Steps with values are kept for the recorded blocks only; the counters
    of every block are summed per phase (a phase is a position in a block's program: all blocks of a
    launch run at once, so phase p is when every block has done its p-th step)."""

    def __init__(self, kernel: KernelFile, where: Where, recorded: set[int]):
        self.kernel = kernel  # the kernel file whose step regions the steps show
        self.recorded = recorded
        self.hbm = HBM()
        self.steps: list[Record] = []  # the kept steps, as they ran (flashviz.tracing.assemble makes the trace's)
        self.phase_counts: dict[int, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
        self.phase_ops: dict[int, tuple[str, int | None]] = {}
        self.block_phases: dict[int, int] = {}  # pick -> phases in its program (causal makes them differ)
        self.pick_phases: dict[int, list[int]] = defaultdict(list)  # pick -> the phases it runs a step at
        # every write of the launch: (phase, tensor, rows, cols, op, kernel, block, index of the recorded step or None)
        self.writes: list[tuple[int, str, tuple[int, int], tuple[int, int], str, str, int, int | None]] = []
        self.where = where  # (op, indices) -> kernel, blockIdx.x, pick (flashviz.algos.picture.locator of its picture)
        self.sram_footprint: dict[str, Any] | None = None
        self.flops = Flops()  # the executor computes through it; each emit files what it counted under the phase
        self.vectorised = 0  # blocks (fa1: visits) run vectorised (tests check that the vectorised path ran)
        self.phase_flops: dict[int, Counter[str]] = defaultdict(Counter)
        self.devices: dict[str, Any] | None = None  # a run over several devices: what each held, sent, carried

    def emit(
        self,
        i: int | None,
        j: int | None,
        op: str,
        phase: int,
        transfers: list[Transfer],
        sram: dict[str, np.ndarray] | None = None,
        carries: dict[str, np.ndarray] | None = None,
        parts: Sequence[Mapping[str, np.ndarray]] | None = None,
        indices: Mapping[str, int | None] | None = None,
        code: tuple[dict[str, int], str] | None = None,
        mma: dict[str, Any] | None = None,
        schedule: dict[str, Any] | None = None,
        facts: Mapping[str, Any] | None = None,
    ) -> None:
        """Count a step's transfers and note its writes; keep a Record of the step when its block is recorded.

        `i` is the recorded unit the step belongs to (a pick: the block of Q, or the backward's block j); `indices`
        orders the loop indices in the code header (default i then j); `code` adds the kernel's own loop variables
        to substitute and a note for the header (the Triton loop's `start`, its stage). A step of no block of Q
        (i None: FA1's outer-loop load of Kj, Vj) is kept whenever any block is recorded. `parts`: the values of
        each visible part of a compound step, in the order its words name them; `mma`: what the step's matrix
        multiply-accumulate does on the tensor cores, for a kernel that runs one (docs/trace-schema.md);
        `schedule`: which partition and warpgroups run it and which ring slot holds its tiles (a warp-specialized
        kernel's, docs/trace-schema.md); `facts`: values its words need that its SRAM and carries do not hold.
        Its words are said after the run (the algorithm's words.py), never here."""
        cancel.check()  # a server request whose client has gone stops here, between two steps
        self.phase_flops[phase].update(self.flops.take())  # the arithmetic done since the last step is this step's
        keep = i in self.recorded if i is not None else bool(self.recorded)
        given = indices or {"i": i, "j": j}
        kernel, block, at = self.tally(j, op, phase, transfers, given, len(self.steps) if keep else None)
        if not keep:
            return
        region = kernels.regions(self.kernel)[op]
        subst, note = code or ({}, "")
        self.steps.append(
            Record(
                index=len(self.steps),
                kernel=kernel,
                block=block,
                j=j,
                phase=phase,
                indices=at,
                op=op,
                code=kernels.step_code(self.kernel, op, subst, note, **given),
                lines=(region.first, region.last),
                transfers=transfers,
                sram={k: v.copy() for k, v in (sram or {}).items()},
                carries=carries,
                parts=parts,
                mma=mma,
                schedule=schedule,
                facts=facts or {},
            )
        )

    def tally(
        self,
        j: int | None,
        op: str,
        phase: int,
        transfers: list[Transfer],
        indices: Mapping[str, int | None],
        step: int | None = None,
    ) -> tuple[str, int, dict[str, int]]:
        """The counting half of `emit`, for every step of the launch: its transfers' elements under its phase, the
        phase's op, its pick's phases, and its writes (`step`: the index of the recorded step, None for a step not
        kept). A block the engine runs vectorised (`Grid.fast`) tallies its steps here, one by one, with the
        transfers its step-by-step run would make. Returns (kernel, blockIdx.x, the indices given)."""
        counts = self.phase_counts[phase]
        for t in transfers:
            counts[(t.tensor, t.kind)] += t.elements
        self.phase_ops.setdefault(phase, (op, j))
        at = {k: v for k, v in indices.items() if v is not None}
        kernel, block, pick = self.where(op, at)
        if pick is not None:
            if self.block_phases.get(pick, 0) <= phase:
                self.block_phases[pick] = phase + 1
            self.pick_phases[pick].append(phase)
        for t in transfers:
            if t.kind == "write":
                self.writes.append((phase, t.tensor, t.rows, t.cols, op, kernel, block, step))
        return kernel, block, at

    def tally_flops(self, phases: Sequence[int]) -> None:
        """File the arithmetic counted since the last step (`flops.take()`) evenly under `phases`: a vectorised block
        that computed the same op on each of its tiles at once (the same shapes on every tile, so the same count);
        the count must divide evenly, or that was not so."""
        done = self.flops.take()
        if not phases:
            assert not +done, f"arithmetic counted for no step: {dict(done)}"
            return
        for kind, n in done.items():
            each, rest = divmod(n, len(phases))
            assert rest == 0, f"{kind}: {n} FLOPs do not divide over {len(phases)} steps of one shape"
            if each:
                for p in phases:
                    self.phase_flops[p][kind] += each

    def flops_counted(self) -> dict[str, int]:
        """FLOPs of the whole launch by kind (engine.flops.KINDS), as the executor computed them."""
        done: Counter[str] = Counter()
        for c in self.phase_flops.values():
            done.update(c)
        done.update(self.flops.pending)  # arithmetic after the last step (none in a well-formed executor)
        return {k: int(done.get(k, 0)) for k in KINDS}

    def phases(self, tensors: tuple[str, ...], writes: bool = True) -> list[dict[str, Any]]:
        """Launch-wide cumulative counters after each phase (HBM elements per tensor, FLOPs per kind), and (with
        `writes`) every write made at it."""
        running = {name: {"read": 0, "written": 0} for name in tensors}
        flops = dict.fromkeys(KINDS, 0)
        out: list[dict[str, Any]] = []
        for p in range(max(self.phase_ops) + 1 if self.phase_ops else 0):
            for (name, kind), n in self.phase_counts.get(p, {}).items():
                running[name]["read" if kind == "read" else "written"] += n
            for kind, n in self.phase_flops.get(p, {}).items():
                flops[kind] += n
            op, j = self.phase_ops.get(p, (None, None))
            out.append(
                {"phase": p, "op": op, "j": j, "hbm": {k: dict(v) for k, v in running.items()}, "flops": dict(flops)}
            )
            if writes:
                out[-1]["writes"] = []
        if not writes:
            return out
        # in the engine's order, except that within a phase the writes of blocks not recorded come first (the adds of
        # one phase into dQ have no order: the page then shows the recorded block's value there)
        for phase, tensor, rows, cols, op, kernel, block, step in sorted(self.writes, key=lambda w: w[-1] is not None):
            out[phase]["writes"].append(
                {"tensor": tensor, "rows": rows, "cols": cols, "op": op, "kernel": kernel, "block": block, "step": step}
            )
        return out


@dataclass(frozen=True)
class Grid:
    """One kernel of a launch as the engine runs it: its blocks, one after another (blocks are independent, or their
    only shared writes commute, so that order gives the numbers a GPU gives), each by `run(rec, cfg, b)`. `recorded`:
    the blocks whose steps are kept while it runs (None: the Recorder's), for a launch whose kernels have different
    grids (fa2-backward: the preprocessing kernel's blocks of Q, then the main kernel's tiles of K/V)."""

    blocks: int
    run: Callable[[Recorder, Config, int], None]
    recorded: set[int] | None = None
    # an unrecorded block run vectorised: the same numbers bit for bit and the same counters, step for step, as
    # `run` gives (bench/trace_equality.py holds them equal); None: every block runs through `run`
    fast: Callable[[Recorder, Config, int], None] | None = None


def run_launch(
    rec: Recorder,
    cfg: Config,
    tensors: Mapping[str, np.ndarray],
    outputs: Mapping[str, tuple[int, ...]],
    grids: Sequence[Grid],
) -> Recorder:
    """Every engine's launch: put `tensors` in HBM (the inputs, as the host puts them), then each of `outputs` of its
    shape poisoned with NaN (an element the kernels never write shows up), then run each kernel's blocks in launch
    order under IEEE float32 as on the GPU (overflow to inf, inf - inf = NaN, silently). Returns `rec`."""
    for name, value in tensors.items():
        rec.hbm.put(name, value)
    for name, shape in outputs.items():
        rec.hbm.put(name, np.full(shape, np.nan, dtype=np.float32))
    with np.errstate(all="ignore"), one_thread():  # small products: one BLAS thread each (engine.blas)
        for grid in grids:
            if grid.recorded is not None:
                rec.recorded = grid.recorded
            for b in range(grid.blocks):
                if grid.fast is not None and VECTORISED and b not in rec.recorded:
                    cancel.check()  # between two blocks (a vectorised block has no steps to stop between)
                    grid.fast(rec, cfg, b)
                    rec.vectorised += 1
                else:
                    grid.run(rec, cfg, b)
    return rec


def blocks_of_q(cfg: Config, recorded: set[int]) -> list[dict[str, Any]]:
    """The CUDA blocks of a launch with one block per block of Q (the trace's `blocks`): rows, and whether recorded."""
    return [{"i": i, "rows": list(span(i, cfg.br, cfg.n)), "recorded": i in recorded} for i in range(cfg.tr)]
