"""A traced user kernel as one document (`KernelTrace`): the verdict and its one line, the first divergence, the
carries of every tile against float64, the steps, the traffic beside the FA2 model, the binding and the file itself;
and its rendering for the terminal.

The document is shaped for the viewer's Trace (phase 2 maps it): per program, its steps (op, tile, the file's lines,
the loads, stores and dots with their bytes) and its tiles (the carries, their float64 counterparts and errors).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from flashviz.model.echo import cut

from . import carries, coverage, steps, traffic, verdict
from .run import Run

SCHEMA = "flashviz.kernel-trace/1"
RECORD_ALL_MAX_PROGRAMS = 8  # above this many programs, only the first and the divergent one keep their values


@dataclass(frozen=True)
class KernelTrace:
    """What `flashviz.trace(kernel=...)` returns: `verdict` is correct, diverges or fault; `message` its line."""

    doc: dict[str, Any]
    # float64 (Z·H, N, D) arrays Q, K, V as the kernel read them, and O (Z·H, N, D), L (Z·H, N) as it left them
    arrays: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    @property
    def verdict(self) -> str:
        return str(self.doc["verdict"])

    @property
    def ok(self) -> bool:
        return self.verdict == "correct"

    @property
    def message(self) -> str:
        return str(self.doc["message"])

    @property
    def divergence(self) -> dict[str, Any] | None:
        return self.doc["divergence"]

    @property
    def fault(self) -> dict[str, Any] | None:
        return self.doc["fault"]

    @property
    def traffic(self) -> dict[str, Any]:
        return self.doc["traffic"]

    def to_dict(self) -> dict[str, Any]:
        return self.doc

    def viewer_trace(self) -> Any:
        """The viewer's Trace of this run (flashviz.yourkernel.viewer): what `flashviz.show(kernel=...)` draws."""
        from .viewer import to_trace

        return to_trace(self.doc)

    def to_json(self, indent: bool = False) -> bytes:
        import orjson

        option = orjson.OPT_SERIALIZE_NUMPY | (orjson.OPT_INDENT_2 if indent else 0)
        return orjson.dumps(self.doc, option=option)

    def __repr__(self) -> str:
        return f"KernelTrace({self.message!r})"


def _value(v: Any) -> Any:
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return f"tensor {tuple(v.shape)} {str(v.dtype).removeprefix('torch.')}"
    return v if isinstance(v, (bool, int, float, str)) or v is None else cut(repr(v), 60)


def _array(a: np.ndarray) -> list:
    return np.where(np.isfinite(a), a, np.nan).astype(np.float32).tolist()  # NaN and inf: null in the JSON


def build(run: Run) -> KernelTrace:
    opts = run.options
    grid = run.binding.grid
    source = run.kernel.source
    carried = source.carried(run.kernel.name)
    judge = carries.Judge(run.heads, opts.n, opts.d, opts.causal, opts.dtype, run.carry_names, carried)
    blocks, forms = judge.blocks(run.programs, run.out, run.lse, whole=run.fault is None)
    div = None
    fault = None
    message: str
    if run.fault is not None:
        fault = {
            "kind": run.fault.kind,
            "program": None if run.fault.pid is None else list(run.fault.pid),
            "iteration": run.fault.iteration,
            "line": run.fault.line,
            "statement": source.statement(run.fault.line) if run.fault.line else "",
            "message": verdict.fault_message(run.fault, run.programs, judge, source),
        }
        kind, message = "fault", str(fault["message"])
    else:
        missing = coverage.unstored(run)
        div = verdict.Finder(judge, forms, source, grid, opts.causal, run.out, run.lse, missing).first(blocks)
        if div is None:  # every block is right: are there rows that no block holds and no program stored?
            br = max((b.rows.size for b in blocks), default=0)
            div = coverage.divergence(run, missing, br, judge.tol)
        if div is not None:
            kind, message = "diverges", div.message
        else:
            kind, message = "correct", verdict.correct_message(verdict.worst(blocks, len(run.heads)), opts.dtype)
    if not forms.names and kind != "fault":
        message += " (no carries found: name them with --carry m_i,l_i,acc)"
    keep = (
        {b.program.pid for b in blocks}
        if len(blocks) <= RECORD_ALL_MAX_PROGRAMS
        else ({blocks[0].program.pid} | ({div.pid} if div else set()))
    )
    names = frozenset(forms.names.values())
    doc = {
        "schema": SCHEMA,
        "kernel": {"file": source.path, "function": run.kernel.name, "markers": source.has_markers},
        "code": source.text,
        "launch": {
            "z": opts.z,
            "h": opts.h,
            "n": opts.n,
            "d": opts.d,
            "dtype": opts.dtype,
            "causal": opts.causal,
            "scale": opts.softmax_scale,
            "seed": opts.seed,
            "grid": list(grid),
            "budget": opts.budget,
        },
        "binding": {p: {"value": _value(v), "filled": run.binding.filled[p]} for p, v in run.binding.args.items()},
        "roles": run.binding.roles,
        "carries": {"names": forms.names, "m": forms.m, "acc": forms.acc, "L": forms.L},
        "tolerance": carries.TOLERANCE[opts.dtype],
        "verdict": kind,
        "message": message,
        "fault": fault,
        "divergence": None if div is None else div.to_dict(),
        "worst": {
            r: {**w, "error": w["error"] if np.isfinite(w["error"]) else None}
            for r, w in verdict.worst(blocks, len(run.heads)).items()
        },
        "traffic": traffic.count(run, blocks),
        "programs": [_program(b, source, len(run.heads), names, b.program.pid in keep) for b in blocks],
    }
    heads = run.heads
    arrays = {
        "Q": np.stack([h.q for h in heads]),
        "K": np.stack([h.k for h in heads]),
        "V": np.stack([h.v for h in heads]),
        "O": run.out,
    }
    if run.lse is not None:
        arrays["L"] = run.lse
    doc["arrays"] = _head_arrays(arrays)
    return KernelTrace(doc, arrays)


def _head_arrays(arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """Head 0's Q, K, V as the kernel read them and O, L as it left them (L in the kernel's own units), compact
    (flashviz.tracing.codec): what the viewer's Trace is made of (flashviz.yourkernel.viewer)."""
    from flashviz.tracing.codec import encode_array

    return {name: encode_array(a[0].astype(np.float32)) for name, a in arrays.items()}


def _program(block: carries.Block, source: Any, heads: int, names: frozenset[str], values: bool):
    prog = block.program
    numbers = steps.tile_numbers(prog)
    live = block.rows[block.rows >= 0]
    return {
        "program": list(prog.pid),
        "name": block.name(heads),
        "block": block.index,
        "head": block.head,
        "rows": [int(live.min()), int(live.max()), int(live.size)] if live.size else None,
        "note": block.note,
        "tiles": [
            {
                "tile": t.number,
                "j": t.j,
                "loop": t.iteration.loop,
                "keys": [int(t.keys.min()), int(t.keys.max()), int(t.keys.size)] if t.keys.size else None,
                "checks": {r: c.to_dict() for r, c in t.checks.items()},
                **(
                    {"values": {r: {"kernel": _array(g), "float64": _array(w)} for r, (g, w) in t.values.items()}}
                    if values
                    else {}
                ),
            }
            for t in block.tiles
        ],
        "out": {r: c.to_dict() for r, c in block.out.items()},
        "steps": [s.to_dict(prog, numbers) for s in steps.steps(prog, source, names)],
    }


# -- the terminal --------------------------------------------------------------------------------------------
def render(trace: KernelTrace) -> list[Any]:
    """The verdict, the carries of the block that matters, and the traffic table, for rich."""
    from rich.table import Table
    from rich.text import Text

    from flashviz.model.units import human_bytes

    doc = trace.doc
    style = {"correct": "bold green", "diverges": "bold red", "fault": "bold red"}[trace.verdict]
    out: list[Any] = [Text(trace.message, style=style)]
    focus = None
    if doc["divergence"] is not None:
        focus = next((p for p in doc["programs"] if p["program"] == doc["divergence"]["program"]), None)
    if focus is None and doc["programs"]:
        focus = max(doc["programs"], key=lambda p: len(p["tiles"]))
    if focus is not None and focus["tiles"] and doc["carries"]["names"]:
        roles = [r for r in carries.ROLES if r in doc["carries"]["names"]]
        tolerances = ", ".join(f"{doc['carries']['names'][r]} {verdict.sci(doc['tolerance'][r])}" for r in roles)
        table = Table(title=f"{focus['name']}: carries against float64", caption=f"tolerances: {tolerances}")
        table.add_column("tile j", justify="right")
        table.add_column("keys", justify="right")
        for r in roles:
            table.add_column(doc["carries"]["names"][r], justify="right")
        for t in focus["tiles"]:
            cells = []
            for r in roles:
                c = t["checks"].get(r)
                cells.append("" if c is None else Text(_err(c), style="" if c["ok"] else "red"))
            keys = "" if t["keys"] is None else f"{t['keys'][0]}..{t['keys'][1]}"
            table.add_row(str(t["j"]), keys, *cells)
        out.append(table)
    t = doc["traffic"]
    table = Table(title=f"HBM traffic: what the kernel loaded and stored, beside the {t['model']}")
    for col in ("tensor", "read", "FA2 model", "written", "FA2 model ", "why"):
        table.add_column(col, justify="left" if col in ("tensor", "why") else "right", overflow="fold")
    for row in t["tensors"]:
        table.add_row(
            row["tensor"],
            human_bytes(row["read_bytes"]),
            human_bytes(row["model_read_bytes"]),
            human_bytes(row["written_bytes"]),
            human_bytes(row["model_written_bytes"]),
            row["why"],
        )
    out.append(table)
    return out


def _err(check: dict[str, Any]) -> str:
    return verdict.sci(check["error"]) if check["finite"] else "inf"
