"""Arrays on demand, made from the Trace itself (docs/trace-schema.md, "Arrays on demand"): the document without
the steps' arrays (`skeleton`: each a stub with its dtype, shape, min and max), and one step's arrays (`step_arrays`),
each stored on its own. The server answers `/api/trace?arrays=on-demand` and `/api/trace/arrays` from these, without
encoding the steps' arrays it leaves out or parsing back the document it sent (trace_codec.skeleton and
trace_codec.step_arrays do the same from a compact document, for a trace the server holds only as bytes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flashviz.tracing.codec import encode_array

if TYPE_CHECKING:
    from flashviz.tracing.trace import Trace

# `arrays=auto`: the steps' arrays are left out when they hold more than this many bytes of values (the seed's example
# holds 6 kB; N = 1024, D = 64, Br = Bc = 64, the viewer benchmark's launch, 1.7 MB: whole, so that no step waits on a
# request, bench/results/viewer.md; N = 4096, D = 64 6.6 MB: on demand)
AUTO_BYTES = 2 * 2**20


def _float_array(v: Any) -> bool:
    return isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.ndim >= 1


def holders(trace: Trace, k: int) -> list[tuple[str, int | None, dict[str, Any] | None]]:
    """(kind, substep, arrays) of step k: its sram, its carries, then each substep's values, as the document has them
    (None for a holder the step lacks)."""
    s = trace.steps[k]
    out: list[tuple[str, int | None, dict[str, Any] | None]] = [("sram", None, s.sram), ("carries", None, s.carries)]
    for q, sub in enumerate(s.substeps or []):
        out.append(("substeps", q, sub.get("values")))
    return out


def step_bytes(trace: Trace) -> int:
    """Bytes of values the steps' arrays hold (before any reference or base64): what `auto` weighs."""
    return sum(
        v.nbytes
        for k in range(len(trace.steps))
        for _, _, group in holders(trace, k)
        for v in (group or {}).values()
        if _float_array(v)
    )


def stub(a: np.ndarray) -> dict[str, Any]:
    """A left-out array: its dtype as it would be stored (trace_codec.encode_array's rule), shape, and min and max over
    its finite values (null when it has none)."""
    finite = a[np.isfinite(a)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (None, None)
    return {"dtype": _dtype(a), "shape": [int(x) for x in a.shape], "on_demand": True, "min": lo, "max": hi}


def _dtype(a: np.ndarray) -> str:
    if a.dtype == np.float64:
        return "float64"
    bits = np.ascontiguousarray(a, dtype="<f4").view("<u4")
    return "float32" if (bits & 0xFFFF).any() else "bfloat16"


def skeleton(trace: Trace) -> dict[str, Any]:
    """The compact document of `trace` with every array of its steps a stub (above); `inputs` and `outputs` whole."""
    from flashviz.tracing.trace import _compact

    steps, trace.steps = trace.steps, []
    try:
        doc = _compact(trace)  # inputs and outputs encoded as the full document encodes them (they come first)
    finally:
        trace.steps = steps
    from flashviz.tracing.trace import _step

    out = []
    for s in steps:
        d = _step(s, compact=True)
        for name in ("sram", "carries"):
            if d[name] is not None:
                d[name] = {key: stub(v) if _float_array(v) else v for key, v in d[name].items()}
        if d.get("substeps") is not None:
            d["substeps"] = [
                {**sub, "values": {key: stub(v) if _float_array(v) else v for key, v in sub["values"].items()}}
                if isinstance(sub.get("values"), dict)
                else sub
                for sub in d["substeps"]
            ]
        out.append(d)
    doc["steps"] = out
    return doc


def step_arrays(trace: Trace, k: int) -> dict[str, Any]:
    """Step k's holders, each array stored on its own (`/api/trace/arrays`'s answer for one step):
    `{"step", "sram", "carries", "substeps": [values or null, ...]}` (the holders the step has)."""

    def holder(group: dict[str, Any] | None) -> dict[str, Any] | None:
        if group is None:
            return None
        return {key: encode_array(v) if _float_array(v) else v for key, v in group.items()}

    s = trace.steps[k]
    out: dict[str, Any] = {"step": k, "sram": holder(s.sram), "carries": holder(s.carries)}
    if s.substeps is not None:
        out["substeps"] = [holder(sub.get("values")) for sub in s.substeps]
    return out
