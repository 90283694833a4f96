"""The Trace: what the engine emits and every view renders. Versioned JSON (see docs/trace-schema.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flashviz.engine.steps import Step, Transfer
from flashviz.model.echo import cut
from flashviz.tracing.codec import honest as _honest

SCHEMA = "flashviz.trace/4"


class SchemaError(ValueError):
    """A trace of another schema version than this code reads."""


def check_schema(doc: dict[str, Any]) -> None:
    """Refuse a trace of another version, naming both: there is no compatibility path for older traces."""
    found = doc.get("schema") if isinstance(doc, dict) else None
    if found != SCHEMA:
        shown = cut(repr(found)) if found is not None else "no schema key"
        raise SchemaError(
            f"schema: this flashviz reads {SCHEMA} traces; this trace is {shown} "
            "(make it again with this version's `flashviz trace`)"
        )


@dataclass
class Trace:
    config: dict[str, Any]
    kernel: dict[str, Any]  # file, name, source
    inputs: dict[str, np.ndarray]
    outputs: dict[str, np.ndarray]
    reference: dict[str, Any]  # errors against float64
    hbm: dict[str, dict[str, int]]  # per tensor {read, written} in elements, whole launch
    model: dict[str, dict[str, int]]  # the closed-form traffic model, same shape as hbm
    sram: dict[str, Any]  # footprint per block against the shared-memory budget
    flops: dict[
        str, Any
    ]  # matmul and non-matmul FLOPs, counted by the engine and in closed form (flashviz.tracing.flops)
    tensors: dict[str, dict[str, Any]]  # shape, dtype, where it lives, role
    blocks: list[dict[str, Any]]  # per block: rows, recorded
    phases: list[dict[str, Any]]  # per phase: op, j, cumulative launch-wide hbm counters
    steps: list[Step] = field(default_factory=list)
    hardware: dict[str, Any] | None = None  # the launch on the H200: grid, occupancy, waves, warps (flashviz.hardware)
    idea: dict[str, Any] = field(default_factory=dict)  # the algorithm's idea: {summary, body} (algos.Idea)
    # the picture (docs/trace-schema.md, /2): decided by the algorithm's picture.py, put together with the run and its
    # words.py by flashviz.tracing.assemble
    title: str = ""
    tagline: str = ""
    kernels: dict[str, Any] = field(default_factory=dict)
    picker: dict[str, Any] = field(default_factory=dict)
    buffers: dict[str, Any] = field(default_factory=dict)
    picture: dict[str, Any] = field(default_factory=dict)
    ops: dict[str, Any] = field(default_factory=dict)
    carries: dict[str, Any] = field(default_factory=dict)
    substeps_note: list[Any] = field(default_factory=list)
    counting: list[Any] = field(default_factory=list)
    tiling: dict[str, Any] = field(default_factory=dict)
    veils: list[Any] = field(default_factory=list)
    tensor_cores: dict[str, Any] | None = None  # how the matrix products run on the tensor cores (None: scalar code)
    schedule: dict[str, Any] | None = None  # a warp-specialized kernel's modelled schedule, else None
    devices: dict[str, Any] | None = None  # a run over several devices (ring attention), else None
    layout: dict[str, Any] | None = (
        None  # the segments of a launch of several q heads or sequences (Nq ≠ Nk), else None
    )
    options: dict[str, Any] | None = None  # the options of real models it runs, in words and numbers, else None

    def to_json(self, indent: bool = False, compact: bool = False, file: bool = False) -> bytes:
        """The Trace as JSON: arrays as nested lists, or with `compact` as base64 typed arrays and references
        (flashviz.tracing.codec; what /api/trace sends); with `file` too, as a trace file holds it
        (flashviz.tracing.store:
        the inputs drawn from its seed left out, the arrays deflated; what `flashviz trace` writes unless --plain)."""
        # here, not at the top: every algorithm's engine imports this module (through the registry), and the GPU
        # machine's image, which runs the benches, has no orjson
        import orjson

        option = orjson.OPT_SERIALIZE_NUMPY | (orjson.OPT_INDENT_2 if indent else 0)
        doc = _compact(self) if compact else _plain(self)
        if compact and file:
            from flashviz.tracing.store import pack

            pack(doc, self.config, self.inputs)
        return orjson.dumps(doc, option=option, default=_default)


def _plain(trace: Trace) -> dict[str, Any]:
    # shallow, field by field (dataclasses.asdict would deep-copy every array): large traces stay fast
    out: dict[str, Any] = {"schema": SCHEMA}
    for name in trace.__dataclass_fields__:
        out[name] = getattr(trace, name)
    out["outputs"] = _values(trace.outputs)
    out["steps"] = [_step(s) for s in trace.steps]
    return out


def _compact(trace: Trace) -> dict[str, Any]:
    from flashviz.tracing.codec import encode_doc

    out: dict[str, Any] = {"schema": SCHEMA}
    for name in trace.__dataclass_fields__:
        out[name] = getattr(trace, name)
    out["inputs"] = dict(trace.inputs)
    out["outputs"] = dict(trace.outputs)
    out["steps"] = [_step(s, compact=True) for s in trace.steps]
    return encode_doc(out, trace.steps)


def _step(step: Step, compact: bool = False) -> dict[str, Any]:
    values = (lambda x: None if x is None else dict(x)) if compact else _values
    d = {name: getattr(step, name) for name in step.__dataclass_fields__}
    d["transfers"] = [_transfer(t) for t in step.transfers]
    d["sram"] = values(step.sram)
    d["carries"] = values(step.carries)
    if step.substeps is not None:
        d["substeps"] = [{**s, "values": values(s["values"])} for s in step.substeps]
    return d


def _transfer(t: Transfer) -> dict[str, Any]:
    d = {
        "tensor": t.tensor,
        "kind": t.kind,
        "rows": t.rows,
        "cols": t.cols,
        "elements": t.elements,
        "buffers": t.buffers,
    }
    if t.kind == "write":
        d["source"] = t.source
    if t.note is not None:
        d["note"] = t.note
    return d


def _values(arrays: dict[str, Any] | None) -> dict[str, Any] | None:
    """Arrays as JSON numbers. orjson writes every non-finite float as null, and null means −∞ in a Trace; an array
    that also holds NaN or +∞ (a row with no finite score: the kernel's exp(−∞ − (−∞))) is written as a list
    in which those are the strings "NaN" and "Infinity", so that no null ever stands for them."""
    if arrays is None:
        return None
    return {k: _honest(v) for k, v in arrays.items()}


def _default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):  # non-contiguous or non-native arrays orjson declines
        return np.ascontiguousarray(obj).tolist()
    raise TypeError(f"cannot serialise {type(obj).__name__}")
