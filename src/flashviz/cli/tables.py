"""The CLI's tables at the terminal's width (issue 17 item 17): a table wider than the terminal is printed as
several, each with the row labels and as many of the other columns as fit, so that no number is cut short or
wrapped mid-digit; `COLUMNS` is honoured even when stdout is a pipe or a file.

Needs rich only (the ladder's benchmark prints the same tables on the GPU machine)."""

from __future__ import annotations

import io
import os
from dataclasses import replace
from typing import Any


def console(out: Any, wide: int) -> Any:
    """A rich Console writing to `out`: as wide as `COLUMNS` when that is set (rich reads it), else the terminal's
    width, else (a pipe or a file with no `COLUMNS`) `wide`, so that the tables keep their natural layout."""
    from rich.console import Console

    columns = os.environ.get("COLUMNS", "")
    c = Console(file=out)
    if (columns.isdigit() and int(columns) > 0) or c.is_terminal:
        return c
    return Console(file=out, width=wide)


def natural_width(renderable: Any) -> int:
    """The width `renderable` takes when nothing constrains it."""
    from rich.console import Console

    return Console(file=io.StringIO(), width=10_000).measure(renderable).maximum


def fit(table: Any, width: int, keep: int = 1) -> list[Any]:
    """`table`, or when it is wider than `width`, the same rows cut into several tables by columns: each holds the
    first `keep` columns (the row labels) and as many of the others, in order, as fit in `width`. The first keeps the
    title; the caption follows them all, as wide as the console. A column too wide even alone with the labels folds
    its cells (no "…")."""
    if natural_width(table) <= width or len(table.columns) <= keep + 1:
        return [_folded(table)] if natural_width(table) > width else [table]
    labels, rest = table.columns[:keep], table.columns[keep:]
    groups: list[list[Any]] = [[]]
    for col in rest:
        if groups[-1] and natural_width(_part(table, [*labels, *groups[-1], col], True, True)) > width:
            groups.append([])
        groups[-1].append(col)
    parts = [_part(table, labels + g, k == 0, False) for k, g in enumerate(groups)]
    below = [] if not table.caption else [_caption(table.caption)]  # at the console's width, not the last part's
    return [*(_folded(p) if natural_width(p) > width else p for p in parts), *below]


def _caption(caption: Any) -> Any:
    from rich.text import Text

    return Text(caption) if isinstance(caption, str) else caption


def _part(table: Any, columns: list[Any], title: bool, caption: bool) -> Any:
    from copy import copy

    part = copy(table)
    part.columns = [replace(c, _index=k, _cells=list(c._cells)) for k, c in enumerate(columns)]
    part.rows = list(table.rows)
    part.title = table.title if title else None
    part.caption = table.caption if caption else None
    return part


def _folded(table: Any) -> Any:
    """The table with every cell folding instead of ending in an ellipsis: a number too long for its column goes on
    over two lines, never cut."""
    from copy import copy

    part = copy(table)
    part.columns = [replace(c, overflow="fold", no_wrap=False, _cells=list(c._cells)) for c in table.columns]
    return part


def print_fitted(con: Any, *renderables: Any, keep: int = 1) -> None:
    """Print each renderable on `con`, each rich Table among them `fit` to the console's width."""
    from rich.table import Table

    for r in renderables:
        con.print(*(fit(r, con.width, keep) if isinstance(r, Table) else [r]))
