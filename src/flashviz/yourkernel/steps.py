"""A program's run cut into steps, the unit the viewer walks through: from the file's `# step: NAME` ... `# end step`
regions when it has them, otherwise from what each statement did, with the names of fa2-triton's steps:

- load_q: a statement that loads Q (and the set-up before it);
- load_kv: one that loads K or V;
- scores: a tile's first tl.dot (Sij), and the statements after it that only rework its result (the scale, a mask);
- online_softmax: the rest of a tile after its scores: the running max, the sums, the rescale, P·V;
- write_back: a store, and the statements after the last tile (the division by l).

A statement that does none of these belongs to the step before it until the first tile (the set-up of the carries
after the load of Q), then to the step that follows it (loop headers, offsets; after the last tile, the
write-back). A step is a run of statements of one name in one tile: the tutorial's order (K, Sij, the softmax, V,
P·V) gives load_kv, scores, online_softmax, load_kv, online_softmax.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .record import Access, Dot, Program
from .source import KernelSource
from .verdict import tile_owner


@dataclass
class Step:
    op: str
    tile: int | None  # the tile's iteration id, None outside tiles
    lines: list[int] = field(default_factory=list)
    events: list[int] = field(default_factory=list)  # indices into the program's events

    def to_dict(self, program: Program, tiles: dict[int, int]) -> dict[str, Any]:
        loads: list[dict[str, Any]] = []
        stores: list[dict[str, Any]] = []
        dots: list[dict[str, Any]] = []
        for k in self.events:
            e = program.events[k]
            if isinstance(e, Access):
                item = {"tensor": e.tensor, "elements": int(e.elements.size), "bytes": e.bytes, "line": e.line}
                (loads if e.kind == "load" else stores).append(item)
            else:
                dots.append({"a": list(e.a), "b": list(e.b), "line": e.line})
        return {
            "op": self.op,
            "tile": None if self.tile is None else tiles.get(self.tile),
            "lines": sorted(set(self.lines)),
            "loads": loads,
            "stores": stores,
            "dots": dots,
        }


def _kind(events: list[Any], first_dot_seen: bool) -> str | None:
    ops = []
    for e in events:
        if isinstance(e, Dot):
            ops.append("online_softmax" if first_dot_seen else "scores")
            first_dot_seen = True
        elif e.kind == "store":
            ops.append("write_back")
        elif e.tensor == "Q":
            ops.append("load_q")
        elif e.tensor in ("K", "V"):
            ops.append("load_kv")
    return ops[0] if ops else None


def steps(program: Program, source: KernelSource, carries: frozenset[str]) -> list[Step]:
    """The program's steps; `carries` are the names of its carries (the online softmax begins where they are used)."""
    owner = tile_owner(program)
    out: list[Step] = []
    pending_lines: list[int] = []  # statements waiting for the step they lead into
    pending_events: list[int] = []
    scored: set[int | None] = set()  # tiles whose scores dot has run
    bounds = [*(start for _, _, start in program.lines), len(program.events)]
    for k, (line, iteration, start) in enumerate(program.lines):
        tile = owner.get(iteration) if iteration is not None else None
        events_here = list(range(start, bounds[k + 1]))
        evs = [program.events[i] for i in events_here]
        before_tiles = tile is None and not any(st.tile is not None for st in out)
        if source.has_markers:
            op = source.steps.get(line)
        else:
            op = _kind(evs, tile in scored)
            if op == "scores":
                scored.add(tile)
            elif op is None and tile is not None and tile in scored:
                touches = (source.read_names(line) | source.assigned(line)) & carries
                op = "online_softmax" if touches or (out and out[-1].op == "online_softmax") else "scores"
        if op is None and before_tiles and out:
            op = out[-1].op  # the set-up after the load of Q (Oi = 0, mi = -inf, li = 0) is part of it
        if op is None:
            pending_lines.append(line)
            pending_events.extend(events_here)
            continue
        if not out or out[-1].op != op or out[-1].tile != tile:
            out.append(Step(op, tile))
        step = out[-1]
        step.lines.extend([*pending_lines, line])
        step.events.extend([*pending_events, *events_here])
        pending_lines, pending_events = [], []
    if pending_lines or pending_events:
        if not out or out[-1].op != "write_back":
            out.append(Step("write_back", None))
        out[-1].lines.extend(pending_lines)
        out[-1].events.extend(pending_events)
    return out


def tile_numbers(program: Program) -> dict[int, int]:
    """tile iteration id -> the program's tile number."""
    ids = sorted(set(tile_owner(program).values()))
    return {tid: k for k, tid in enumerate(ids)}
