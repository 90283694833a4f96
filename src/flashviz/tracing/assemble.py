"""A run made into a Trace (docs/trace-schema.md): `assemble(run, picture, words)`, pure. It puts the algorithm's
picture (its `picture.py`, `flashviz.algos.picture`) and its words (its `words.py`, `flashviz.algos.words`) together
with one run (`Run`, from `flashviz.tracing.build`): each recorded step becomes a frozen `Step` (its tile held, veil,
words, carries note, the transfers' SRAM ends), and the trace's picture keys, the causal tiling, every write per
phase and the picks' idle phases follow. Nothing it is given is changed. Machinery: it reads an algorithm's
declarations through the objects it is given and never names one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flashviz.algos.picture import Kernel, Op, Picker, Place, Rich, Texts, moved, rows_text
from flashviz.engine.steps import Step
from flashviz.model import kernels as kernel_files
from flashviz.model.pairs import tiling_of
from flashviz.model.units import FLOAT_BYTES
from flashviz.tracing import flops as flop_view
from flashviz.tracing import hardware as hardware_view
from flashviz.tracing.trace import Trace

if TYPE_CHECKING:
    from flashviz.algos.base import Algorithm, Picture, Words
    from flashviz.engine.recorder import Recorder
    from flashviz.engine.steps import Record
    from flashviz.model.config import Config


@dataclass(frozen=True)
class Run:
    """One launch run by the engine and checked (`flashviz.tracing.build`): what `assemble` makes a Trace of."""

    algo: Algorithm
    cfg: Config
    inputs: dict[str, np.ndarray]  # what HBM held: the inputs drawn or given, stored as the kernel's dtype
    given: bool  # whether inputs were given (a file), else drawn from cfg.seed
    drawn: list[str]  # the inputs drawn from cfg.seed (e.g. dO when a file held only Q, K, V)
    recorder: Recorder  # the engine's launch: HBM, the recorded steps' records, the counters per phase
    reference: dict[str, Any]  # the outputs against float64 (model.reference.check)
    model: dict[str, dict[str, int]]  # the closed-form traffic the engine's counters are held to


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


def steps_of(
    cfg: Config, picture: Picture, words: Words, texts: Texts, records: Sequence[Record]
) -> tuple[list[Step], list[Rich], list[list[dict[str, Any]]]]:
    """The trace's frozen steps of the engine's records, with the carries notes and veils they index. Each step's
    words are said here, once, from its record and the SRAM its unit holds at it (buffer -> contents: the unit's
    latest snapshots, this step's included)."""
    units: dict[str, str] = {k.name: k.scope for k in picture.KERNELS}
    ops: Mapping[str, Op] = picture.OPS
    notes: list[Rich] = []
    note_index: dict[str, int] = {}
    veils: list[list[dict[str, Any]]] = []
    veil_index: dict[str, int] = {}
    veiled = cfg.masks_tiles or layout_of(cfg) is not None  # a band, or segments whose other keys are veiled
    # the labels and parts: the words' own, or at this launch where they depend on it (fa2-triton's soft-capping)
    at_launch = getattr(words, "of_launch", None)
    labels, named_parts = at_launch(cfg) if at_launch is not None else (words.LABELS, words.PARTS)
    state: dict[str, np.ndarray] = {}
    unit: tuple[str, int] | None = None
    held: int | None = None
    out: list[Step] = []
    for r in records:
        here = (units[r.kernel], r.block)
        if here != unit:
            unit, held, state = here, None, {}
        state.update(r.sram)
        if r.j is not None:
            held = r.j
        said = words.say(cfg, r, state)
        note = None
        if said.carries_note is not None:
            sig = repr(said.carries_note)
            if sig not in note_index:
                note_index[sig] = len(notes)
                notes.append(said.carries_note)
            note = note_index[sig]
        veil = None
        v = texts.veil(Place(r.kernel, r.block, held)) if veiled else None
        if v:
            sig = repr(v)
            if sig not in veil_index:
                veil_index[sig] = len(veils)
                veils.append(v)
            veil = veil_index[sig]
        math, tex = labels[r.op]
        parts = None
        if r.parts is not None:
            named = named_parts[r.op]
            parts = [
                {"name": name, "math": m, "tex": t, "values": dict(v)}
                for (name, m, t), v in zip(named, r.parts, strict=True)
            ]
        out.append(
            Step(
                index=r.index,
                block=r.block,
                j=r.j,
                phase=r.phase,
                indices=dict(r.indices),
                op=r.op,
                math=math,
                tex=tex,
                code=r.code,
                lines=r.lines,
                transfers=tuple(moved(t, ops, r.op) for t in r.transfers),
                sram=r.sram,
                carries=r.carries,
                substeps=parts,
                text=said.text,
                kernel=r.kernel,
                tile=held,
                veil=veil,
                action=said.action,
                carries_note=note,
                mma=r.mma,
                schedule=r.schedule,
            )
        )
    return out, notes, veils


def picture_keys(cfg: Config, module: Picture, texts: Texts) -> dict[str, Any]:
    """The trace's top-level picture keys: kernels, picker, tensors (as drawn), buffers, ops and the rest."""
    kernels: dict[str, Kernel] = {k.name: k for k in module.KERNELS}
    ops: Mapping[str, Op] = module.OPS
    picker: Picker = module.PICKER
    layout = layout_of(cfg)
    rows_of = {"q": "Nq", "kv": "Nk", "none": "N"} if layout is not None else {}  # Q of G heads, K of Nk keys
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
        "carries": dict(texts.carries),
        "substeps_note": texts.substeps_note,
        "counting": list(texts.counting),
        "tiling": tiling_of(cfg) if texts.tiling is None else dict(texts.tiling),
        "layout": layout,
        "options": None if texts.options is None else dict(texts.options),
        "tensor_cores": None if texts.tensor_cores is None else dict(texts.tensor_cores),
        "schedule": None if texts.schedule is None else dict(texts.schedule),
    }


def assemble(run: Run, picture: Picture, words: Words) -> Trace:
    """The Trace of a run: its record, checks and counters, its steps made frozen and said, and its picture.
    `picture` and `words` are the algorithm's (`run.algo.picture`, `run.algo.words`); nothing of `run` is changed."""
    algo, cfg, rec = run.algo, run.cfg, run.recorder
    hbm = rec.hbm
    order = tuple(hbm.tensors)
    texts = picture.picture(cfg)
    missing = [name for name in order if name not in texts.tensors]
    if missing:
        raise ValueError(f"picture: no entry for the HBM tensors {missing}")
    steps, notes, veils = steps_of(cfg, picture, words, texts, rec.steps)
    pic = picture_keys(cfg, picture, texts)
    recorded = set(algo.recorded_blocks(cfg))
    main = next(k for k in picture.KERNELS if k.name == picture.PICKER.kernels[0])  # the picker's kernel
    along = "keys" if picture.PICKER.letter == "j" else "rows"
    blocks = []
    for k, b in enumerate(algo.engine.trace_blocks(cfg, recorded)):
        its_phases = rec.block_phases.get(k, 0)
        blocks.append(
            {
                "block": 0 if main.letter is None else k,  # blockIdx.x: 0 where one block per head visits them all
                **b,
                "phases": its_phases,
                "idle": idle_ranges(rec.pick_phases.get(k, []), its_phases - 1),
                "label": b.get("label") or f"{k} \u00b7 {along} {rows_text(*b['rows'])}",
            }
        )
    phases = rec.phases(order)
    fill_writes(picture, phases)
    drawn_as = pic.pop("tensors")
    tensors = {
        name: {
            "shape": [int(s) for s in hbm.shapes[name]],
            "dtype": "float32" if algo.bytes_of(name) == FLOAT_BYTES else algo.dtype,
            "element_bytes": algo.bytes_of(name),
            "role": algo.tensors[name],
            **drawn_as[name],
        }
        for name in order
    }
    assert rec.sram_footprint is not None, "every engine declares its SRAM"
    counters = hbm.counters()
    pic["carries"] = {**pic["carries"], "notes": notes}
    held_to: dict[str, Any] = {**run.model, "matches": counters == run.model}
    return Trace(
        config={
            "algo": cfg.algo,
            "n": cfg.n,
            "d": cfg.d,
            "br": cfg.br,
            "bc": cfg.bc,
            "scale": cfg.softmax_scale,
            "seed": cfg.seed if run.drawn else None,
            "causal": cfg.causal,
            "inputs": "file" if run.given else "random",
            "random_inputs": run.drawn,
            "tr": cfg.tr,
            "tc": cfg.tc,
            "dtype": algo.dtype,
            "element_bytes": algo.element_bytes,
            "recorded_blocks": sorted(recorded),
            # the options of real models (docs/trace-schema.md: plain attention has group 1, nk = n, no window)
            "group": cfg.group,
            "nk": cfg.kv_n,
            "window": list(cfg.window),
            "softcap": cfg.softcap,
            "seqlens": None if cfg.seqlens is None else list(cfg.seqlens),
            "seqlens_k": None if cfg.seqlens_k is None else list(cfg.seqlens_k),
            **({} if texts.launch is None else {"launch": dict(texts.launch)}),
        },
        kernel={"file": algo.kernel_file, "name": algo.kernel_name, "source": kernel_files.source(algo.kernel)},
        idea=algo.idea.to_dict(),
        inputs={k: run.inputs[k] for k in algo.inputs},
        outputs={name: hbm.value(name) for name in algo.outputs},
        reference={**run.reference, "headline": list(texts.headline), "against": texts.against},
        hbm=counters,
        model=held_to,
        flops=flop_view.of_launch(algo, cfg, rec.flops_counted()),
        hardware=hardware_view.of_launch(algo, cfg, None if texts.tensor_cores is None else dict(texts.tensor_cores)),
        sram=rec.sram_footprint,
        tensors=tensors,
        blocks=blocks,  # the picks (docs/trace-schema.md): blockIdx.x of the picker's kernel, or fa1's blocks of Q
        phases=phases,
        steps=steps,
        title=algo.title,
        tagline=texts.tagline,
        veils=veils,
        # a run over several devices: the closed form's part (texts) and the run's (the engine's counters, carries)
        devices=None if rec.devices is None else {**(texts.devices or {}), **rec.devices},
        **pic,
    )
