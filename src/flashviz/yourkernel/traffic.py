"""HBM traffic of a user's kernel, counted from what it loaded and stored (elements after masking, with every
repeat), beside flashviz's closed form for FlashAttention-2 at the same tiles (`algos/fa2/traffic.py`: Q read once,
K and V once per block of Q, under causal masking up to each block's last row, O and L written once), with the
difference explained per tensor from the recorded accesses: K loaded twice per tile, Q reloaded in every tile,
tiles above the diagonal loaded under causal masking, tiles skipped, O read back or stored twice, no L at all.

The tiles are the kernel's own: Br the rows of its blocks of Q, Bc the most keys one of its tiles loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..algos import BASELINE, get
from . import coverage
from .carries import Block
from .record import Access, Program
from .verdict import spans, tile_owner

TENSORS = ("Q", "K", "V", "O", "L")


@dataclass(frozen=True)
class Row:
    tensor: str
    read: int  # elements
    written: int
    model_read: int
    model_written: int
    itemsize: int
    why: str

    def to_dict(self) -> dict[str, Any]:
        b = self.itemsize
        return {
            "tensor": self.tensor,
            "read": self.read,
            "written": self.written,
            "read_bytes": self.read * b,
            "written_bytes": self.written * b,
            "model_read": self.model_read,
            "model_written": self.model_written,
            "model_read_bytes": self.model_read * b,
            "model_written_bytes": self.model_written * b,
            "why": self.why,
        }


def _ratio(a: int, b: int) -> str:
    return "∞" if b == 0 else f"{a / b:.3g}×"


def _lines(lines: set[int]) -> str:
    ordered = sorted(lines)
    return ("line " if len(ordered) == 1 else "lines ") + ", ".join(map(str, ordered))


def _accesses(programs: list[Program], tensor: str, kind: str) -> list[tuple[Program, Access]]:
    return [
        (p, e) for p in programs for e in p.events if isinstance(e, Access) and e.tensor == tensor and e.kind == kind
    ]


def count(run: Any, blocks: list[Block]) -> dict[str, Any]:
    opts = run.options
    n, d, zh = opts.n, opts.d, opts.z * opts.h
    br = max((b.rows.size for b in blocks), default=0) or n
    bc = max((t.keys.size for b in blocks for t in b.tiles), default=0) or n
    model = get(BASELINE).traffic.count(n, d, br, bc, opts.causal)  # one head, in elements
    rows = []
    for tensor in TENSORS:
        itemsize = run.memory.by_name[tensor].itemsize if tensor in run.memory.by_name else (4 if tensor == "L" else 2)
        read = sum(e.elements.size for _, e in _accesses(run.programs, tensor, "load"))
        written = sum(e.elements.size for _, e in _accesses(run.programs, tensor, "store"))
        m_read, m_written = model[tensor]["read"] * zh, model[tensor]["written"] * zh
        why = _why(run, blocks, br, tensor, read, written, m_read, m_written)
        rows.append(Row(tensor, read, written, m_read, m_written, itemsize, why))
    return {
        "model": f"FA2 closed form (algos/{BASELINE}/traffic.py) at Br={br}, Bc={bc}, N={n}, D={d}, "
        f"{zh} head{'s' if zh > 1 else ''}{', causal' if opts.causal else ''}",
        "br": br,
        "bc": bc,
        "tensors": [r.to_dict() for r in rows],
        "total_bytes": sum(r.read * r.itemsize + r.written * r.itemsize for r in rows),
        "model_total_bytes": sum(r.model_read * r.itemsize + r.model_written * r.itemsize for r in rows),
    }


def _never(run: Any, tensor: str, kind: str, named: bool = False) -> str:
    """The rows of `tensor` that no `kind` access (load, store) touched whole, as a clause ("rows 16..39 are never
    stored", "row 3 of Q of head 1 is never loaded"), or "" when every row was."""
    opts = run.options
    zh = opts.z * opts.h
    width = 1 if tensor == "L" else opts.d
    never = ~coverage.whole_rows(run.programs, tensor, kind, zh, opts.n, width)
    heads = np.flatnonzero(never.any(axis=1))
    if heads.size == 0:
        return ""
    rows = np.flatnonzero(never[heads[0]])
    text = f"{'rows' if rows.size > 1 else 'row'} {spans(rows)}" + (f" of {tensor}" if named else "")
    if zh > 1:
        more = heads.size - 1
        text += f" of head {heads[0]}" + (f" (and of {more} more head{'s' if more > 1 else ''})" if more else "")
    verb = {"load": "loaded", "store": "stored"}[kind]
    return f"{text} {'are' if rows.size > 1 else 'is'} never {verb}"


def _why(
    run: Any, blocks: list[Block], br: int, tensor: str, read: int, written: int, m_read: int, m_written: int
) -> str:
    if run.fault is not None and run.fault.kind != "wrote_nothing":
        return "counted until the fault stopped the run"
    if tensor not in run.binding.roles:
        return f"the kernel has no {tensor} argument" + (" (no log-sum-exp output)" if tensor == "L" else "")
    loads = _accesses(run.programs, tensor, "load")
    stores = _accesses(run.programs, tensor, "store")
    parts = []
    if read != m_read:
        parts.append(_why_read(run, blocks, br, tensor, read, m_read, loads))
    if written != m_written:
        lines = {e.line for _, e in stores}
        if written > m_written:
            parts.append(
                f"{tensor} written {_ratio(written, m_written)} the FA2 model: your kernel stores it more than "
                f"once ({_lines(lines)})"
            )
        elif written == 0:
            parts.append(f"{tensor} is never stored")
        else:
            rows = _never(run, tensor, "store") or "some of its rows are never stored"
            parts.append(f"{tensor} written {_ratio(written, m_written)} the FA2 model: {rows}")
    if parts:
        return "; ".join(parts)
    return {
        "Q": "read once, as the FA2 model",
        "K": "read once per block of Q" + (" up to its diagonal" if run.options.causal else "") + ", as the FA2 model",
        "V": "read once per block of Q" + (" up to its diagonal" if run.options.causal else "") + ", as the FA2 model",
        "O": "written once, never read back, as the FA2 model",
        "L": "written once, as the FA2 model",
    }[tensor]


def _why_read(run: Any, blocks: list[Block], br: int, tensor: str, read: int, m_read: int, loads: list) -> str:
    head = f"{tensor} read {_ratio(read, m_read)} the FA2 model"
    lines = {e.line for _, e in loads}
    opts = run.options
    ran, model_blocks = len(blocks), opts.z * opts.h * -(-opts.n // br)
    if tensor in ("O", "L"):
        return f"your kernel reads {tensor} back ({read:,} elements, {_lines(lines)})"
    if tensor == "Q" and read < m_read:
        never = _never(run, "Q", "load", named=True)
        if never:
            return f"{head}: {never} ({ran} of its {model_blocks} blocks ran)"
        return head
    if tensor == "Q":
        in_tiles = set()
        for p, e in loads:
            owner = tile_owner(p)
            if e.iteration is not None and e.iteration in owner:
                in_tiles.add(e.line)
        if in_tiles:
            return f"{head}: your kernel loads Q again in every tile ({_lines(in_tiles)}), the model once per block"
        return f"{head}: your kernel loads each block of Q more than once ({_lines(lines)})"
    # K or V: repeats within a tile, tiles above the diagonal, tiles skipped
    loaded = repeat = 0
    for block in blocks:
        for tile in block.tiles:
            it = tile.iteration
            found = [
                e.elements
                for e in block.program.events[it.first_event : it.last_event]
                if isinstance(e, Access) and e.tensor == tensor and e.kind == "load"
            ]
            if found:
                every = np.concatenate(found)
                loaded += every.size
                repeat += np.unique(every).size
    per_tile = loaded / repeat if repeat else 1.0
    if per_tile > 1.01:
        return f"{head}: your kernel loads {tensor} {per_tile:.3g}× per tile ({_lines(lines)})"
    if read > m_read and run.options.causal:
        above = 0
        for block in blocks:
            last = int(block.rows.max()) if block.rows.size else -1
            for tile in block.tiles:
                above += int((tile.keys > last).sum()) * run.options.d
        if above:
            return (
                f"{head}: your kernel loads tiles above the diagonal, {above:,} elements that causal masking never "
                "uses (the model stops at each block's last row)"
            )
    if read < m_read:
        n = run.options.n
        short = [(b, b.tiles[-1].seen.size if b.tiles else 0) for b in blocks]
        if not run.options.causal:
            skipped = [(b, s) for b, s in short if s < n]
            if skipped:
                b, s = skipped[0]
                return (
                    f"{head}: your kernel skips tiles: {len(skipped)} of its blocks never load every key "
                    f"(block {b.program.pid[0]} loads {s} of N={n} rows)"
                )
        if ran < model_blocks:
            return f"{head}: {ran} of the {model_blocks} blocks of Q ran, each reading {tensor} once"
        if run.options.causal:
            return f"{head}: your kernel loads fewer rows of {tensor} than a causal FA2 needs"
    return head
