"""The terminal view: a Trace as rich tables (steps, then the HBM accounting)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from flashviz.tracing.trace import Trace


def render(trace: Trace) -> list:
    c = trace.config
    steps = Table(
        title=f"{c['algo']}: N={c['n']} D={c['d']} Br={c['br']} Bc={c['bc']} "
        f"(Tr={c['tr']} blocks of Q, Tc={c['tc']} tiles of K/V)",
        show_lines=True,
    )
    many = len({s.kernel for s in trace.steps}) > 1  # standard's three kernels, the backward's two
    for col in ("step", *(("kernel",) if many else ()), "block", "i", "j", "operation", "HBM", "what happened"):
        steps.add_column(col, overflow="fold")
    for s in trace.steps:
        moved = ", ".join(f"{t.tensor} {'→' if t.kind == 'read' else '←'} {t.elements}" for t in s.transfers)
        # block: blockIdx.x of the step's kernel; i, j: the block of Q and the tile it works on (its loop indices)
        i, j = (str(s.indices[k]) if k in s.indices else "" for k in ("i", "j"))
        # Text, not markup: labels such as "Kj, Vj = K[j], V[j]" would otherwise lose their [i] and [j]
        kernel = (s.kernel,) if many else ()
        steps.add_row(str(s.index + 1), *kernel, str(s.block), i, j, Text(s.math), moved or "—", Text(s.text))
    hbm = Table(title="Trips across HBM (elements; engine counters vs closed-form model)")
    for col in ("tensor", "read", "written", "model read", "model written"):
        hbm.add_column(col, justify="right")
    for name, t in trace.hbm.items():
        m = trace.model[name]
        hbm.add_row(name, f"{t['read']:,}", f"{t['written']:,}", f"{m['read']:,}", f"{m['written']:,}")
    ref = trace.reference
    checked = [name for name, e in ref.items() if isinstance(e, dict)]  # the outputs this algorithm checks
    verdict = Text(
        ", ".join(f"{name} max rel err {ref[name]['max_rel']:.2e}" for name in checked)
        + " vs float64 — "
        + ("exact within tolerance" if ref["ok"] else "OUT OF TOLERANCE"),
        style="green" if ref["ok"] else "bold red",
    )
    return [steps, hbm, verdict]
