"""Rows of O and L that no store reached: a kernel that leaves them as they were is not correct, whatever its carries
did. O and L start as NaN (run.py), but NaN is also what a kernel that divides by zero writes: the recorded stores,
not the values, say which elements were written.

A row counts as stored when every one of its elements was (all D of a row of O). Rows inside a block that a program
loaded are judged at that block's write-back (verdict.py names them there); rows that no program's block holds are
this module's divergence: "O and L diverge: rows 16..39 were never stored (24 of N=40 rows): no program wrote them;
the grid (1, 1, 1) has 1 program along X, where N=40 in blocks of 16 rows needs 3".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .carries import Check
from .record import Access, Program
from .verdict import Divergence, spans


def whole_rows(programs: list[Program], tensor: str, kind: str, heads: int, n: int, width: int) -> np.ndarray:
    """(heads, n) bool: rows of `tensor` whose `width` elements (D; 1 for L) were all touched by a `kind` access
    (load or store)."""
    touched = np.zeros(heads * n * width, dtype=bool)
    for p in programs:
        for e in p.events:
            if isinstance(e, Access) and e.kind == kind and e.tensor == tensor and e.elements.size:
                touched[e.elements] = True
    return np.asarray(touched.reshape(heads, n, width).all(axis=2))


def unstored(run: Any) -> dict[str, np.ndarray]:
    """Per output the kernel has (O, and L when bound), (Z·H, N) bool: True where a row was never stored."""
    opts = run.options
    zh = opts.z * opts.h
    shapes = {"O": opts.d, "L": 1}
    return {
        name: ~whole_rows(run.programs, name, "store", zh, opts.n, width)
        for name, width in shapes.items()
        if name in run.binding.roles
    }


def divergence(run: Any, missing: dict[str, np.ndarray], br: int, tolerance: dict[str, float]) -> Divergence | None:
    """The rows of the first head with rows never stored, or None when every row of O and L was stored."""
    opts = run.options
    zh = opts.z * opts.h
    bad = {name: np.asarray(rows.any(axis=1)) for name, rows in missing.items()}
    heads = [h for h in range(zh) if any(b[h] for b in bad.values())]
    if not heads:
        return None
    head = heads[0]
    names = [name for name in ("O", "L") if name in missing and missing[name][head].any()]
    rows = np.flatnonzero(np.any([missing[name][head] for name in names], axis=0))
    whose = " of head " + str(head) if zh > 1 else ""
    also = f"; {len(heads)} of {zh} heads" if zh > 1 else ""
    subject = " and ".join(names) + (" diverge" if len(names) > 1 else " diverges")
    several = rows.size > 1
    text = (
        f"{subject}: {'rows' if several else 'row'} {spans(rows)}{whose} {'were' if several else 'was'} never stored "
        f"({rows.size} of N={opts.n} rows{also}): no program wrote them{_grid_short(run, br)}"
    )
    first = names[0]
    return Divergence(
        f"rows {spans(rows)}{whose}",
        None,
        None,
        None,
        Check(first, first, float("inf"), tolerance[first]),
        (),
        None,
        "",
        "never stored",
        text=text,
    )


def _grid_short(run: Any, br: int) -> str:
    """Why no program holds the rows, when the grid is too small to hold them: its X against cdiv(N, Br), its Y
    against Z·H (the default grid's axes)."""
    opts = run.options
    x, y, _ = run.binding.grid
    zh = opts.z * opts.h
    need = -(-opts.n // br) if br else 0
    if br and x < need:
        return (
            f"; the grid {tuple(run.binding.grid)} has {x} program{'s' if x > 1 else ''} along X, where N={opts.n} in "
            f"blocks of {br} rows needs {need}"
        )
    if y < zh:
        return (
            f"; the grid {tuple(run.binding.grid)} has {y} program{'s' if y > 1 else ''} along Y, where Z·H = {zh} "
            f"heads need {zh}"
        )
    return ""
