"""The assembly of an algorithm's picture (its `picture.py`, `flashviz.algos.picture`) with one run into the trace's
picture keys (docs/trace-schema.md): each step's kernel, blockIdx.x, tile held, veil, action and carries note, the
transfers' SRAM ends, the causal tiling, every write per phase, the picks' idle phases. Machinery: it reads an
algorithm's declarations through the registry and never names one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from flashviz.algos.picture import Kernel, Op, Picker, Rich, Texts, locator
from flashviz.model.pairs import tiling_of

if TYPE_CHECKING:
    from flashviz.algos.base import Picture
    from flashviz.engine.steps import Step
    from flashviz.model.config import Config


def dims_value(cfg: Config, dims: Sequence[str]) -> list[int]:
    size = {"Br": cfg.br, "Bc": cfg.bc, "D": cfg.d, "N": cfg.n, "1": 1}
    return [size[x] for x in dims]


def grid_count(cfg: Config, k: Kernel) -> int:
    return {"Tr": cfg.tr, "Tc": cfg.tc, "1": 1}[k.grid]


def layout_of(cfg: Config) -> dict[str, Any] | None:
    """How the launch's rows are cut when it is more than one head of one sequence of N queries and keys (the
    options of real models: a group of q heads sharing one K/V head, packed sequences, Nq ≠ Nk): its segments (one
    per q head and sequence: rows of Q, O, L and the sequence's rows of K, V), or None."""
    segmented = cfg.group > 1 or cfg.seqlens is not None
    if not segmented and cfg.kv_n == cfg.n:
        return None
    words = []
    for seg in cfg.segments():
        parts = ([f"q head {seg.head}"] if cfg.group > 1 else []) + (
            [f"sequence {seg.seq}"] if cfg.seqlens is not None else []
        )
        short = " ".join(
            ([f"h{seg.head}"] if cfg.group > 1 else []) + ([f"s{seg.seq}"] if cfg.seqlens is not None else [])
        )
        words.append((" \u00b7 ".join(parts) or "queries", short or "q"))
    return {
        "q_rows": cfg.q_rows,
        "kv_rows": cfg.kv_n,
        "group": cfg.group,
        "seqs": [list(x) for x in cfg.seqs],
        "segments": [
            {
                "q": [seg.q0, seg.q0 + seg.nq],
                "kv": [seg.k0, seg.k0 + seg.nk],
                "head": seg.head,
                "seq": seg.seq,
                "label": label,
                "short": short,
            }
            for seg, (label, short) in zip(cfg.segments(), words, strict=True)
        ],
    }


def fill_writes(module: Picture, phases: list[dict[str, Any]]) -> None:
    """Mark the writes whose values are a constant (`fill`: 0, or None for −∞), from the op's Move."""
    ops: Mapping[str, Op] = module.OPS
    for p in phases:
        for w in p["writes"]:
            source = ops[w["op"]].moves[w["tensor"]].source
            if source is not None and "fill" in source:
                w["fill"] = source["fill"]


def idle_ranges(phases: Sequence[int], last: int) -> list[list[int]]:
    """The phases before `last` that are not in `phases` (sorted), as [from, to) ranges."""
    out: list[list[int]] = []
    expect = 0
    for p in phases:
        if p > expect:
            out.append([expect, p])
        expect = max(expect, p + 1)
    if last > expect:
        out.append([expect, last])
    return out


def assemble(cfg: Config, module: Picture, texts: Texts, steps: list[Step], order: Sequence[str]) -> dict[str, Any]:
    """Fill each step's picture fields (kernel, block, tile, veil, action, carries_note, the transfers' buffers) and
    return the trace's top-level picture keys. `order`: the tensors in HBM, each of which the picture must describe."""
    where = locator(module.KERNELS, module.PICKER)
    layout = layout_of(cfg)
    rows_of = {"q": "Nq", "kv": "Nk", "none": "N"} if layout is not None else {}  # Q of G heads, K of Nk keys
    kernels: dict[str, Kernel] = {k.name: k for k in module.KERNELS}
    ops: Mapping[str, Op] = module.OPS
    missing = [name for name in order if name not in texts.tensors]
    if missing:
        raise ValueError(f"picture: no entry for the HBM tensors {missing}")
    notes: list[Rich] = []
    note_index: dict[str, int] = {}
    state: dict[str, np.ndarray] = {}
    veils: list[list[dict[str, Any]]] = []
    veil_index: dict[str, int] = {}
    unit: tuple[str, int] | None = None
    held: int | None = None
    for s in steps:
        kernel, block, _ = where(s.op, s.indices)
        s.kernel, s.block = kernel, block
        here = (kernels[kernel].scope, block)
        if here != unit:
            unit, held = here, None
            state = {}
        state.update(s.sram)
        if s.j is not None:
            held = s.j
        s.tile = held
        op = ops[s.op]
        for t in s.transfers:
            move = op.moves.get(t.tensor)
            if move is None:
                raise ValueError(f"picture: op {s.op} moves {t.tensor} but declares no Move for it")
            t.buffers = list(move.buffers)
            if t.kind == "write":
                t.source = move.source or ({"buffer": move.buffers[0]} if move.buffers else None)
                t.note = move.note
        s.action = texts.action(s)
        note = texts.carries_note(s, state)
        if note is None:
            s.carries_note = None
        else:
            sig = repr(note)
            if sig not in note_index:
                note_index[sig] = len(notes)
                notes.append(note)
            s.carries_note = note_index[sig]
        v = texts.veil(s) if cfg.masks_tiles or layout is not None else None
        if v:
            sig = repr(v)
            if sig not in veil_index:
                veil_index[sig] = len(veils)
                veils.append(v)
            s.veil = veil_index[sig]
        else:
            s.veil = None
    picker: Picker = module.PICKER
    return {
        "kernels": {
            k.name: {
                "main": k.main,
                "grid": {
                    "count": grid_count(cfg, k),
                    "letter": k.letter,
                    "axis": {"i": "q", "j": "kv", None: None}[k.letter],
                    "rows_per_block": {"i": cfg.br, "j": cfg.bc, None: None}[k.letter],
                },
                "lockstep": k.lockstep,
                "scope": k.scope,
                "tile_loop": k.tile_loop,
                "ops": list(k.ops),
                "sram_title": list(texts.sram_titles[k.name]),
                "summary": texts.summaries[k.name],
            }
            for k in module.KERNELS
        },
        "picker": {
            "kernels": list(picker.kernels),
            "index": picker.index,
            "letter": picker.letter,
            "axis": picker.axis,
            "rows_per_block": cfg.br if picker.letter == "i" else cfg.bc,
            "label": picker.label,
            "lockstep": all(kernels[k].lockstep for k in picker.kernels),
        },
        "tensors": {
            name: {
                "label": t.label or name,
                "dims": [rows_of.get(t.axes[0], "N")] if t.cols == "1" else [rows_of.get(t.axes[0], "N"), t.cols],
                "axes": list(t.axes),
                "writes": t.writes,
                "scale_like": t.scale_like,
                "unwritten_note": t.unwritten_note,
                "rule": {"text": t.rule.text, "formula": t.rule.formula},
            }
            for name, t in texts.tensors.items()
        },
        "buffers": {
            name: {
                "shape": dims_value(cfg, buf.dims),
                "dims": list(buf.dims),
                "axes": list(buf.axes),
                "kernels": list(buf.kernels),
                "label": buf.label,
                "copy_of": buf.copy_of,
                "align_under": buf.align_under,
                "row_index": buf.row_index,
                "row_of": buf.row_of,
            }
            for name, buf in module.BUFFERS.items()
        },
        "picture": {"sram_rows": [list(row) for row in module.SRAM_ROWS]},
        "ops": {
            name: {
                "kernel": next(k.name for k in module.KERNELS if name in k.ops),
                "kind": op.kind,
                "note": op.note,
                "notes": dict(op.notes),
                "notes_masked": dict(op.notes_masked),
                "after_loop": op.after_loop,
                "value_tex": dict(op.value_tex),
                "online": None if op.online is None else dict(op.online),
            }
            for name, op in ops.items()
        },
        "carries": {**texts.carries, "notes": notes},
        "substeps_note": texts.substeps_note,
        "counting": list(texts.counting),
        "tiling": tiling_of(cfg) if texts.tiling is None else dict(texts.tiling),
        "veils": veils,
        "layout": layout,
        "options": None if texts.options is None else dict(texts.options),
        "tensor_cores": None if texts.tensor_cores is None else dict(texts.tensor_cores),
        "schedule": None if texts.schedule is None else dict(texts.schedule),
    }
