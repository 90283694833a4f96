"""The ladder from the seed's kernel to tensor cores, as one recorded GPU run shows it (`flashviz ladder`).

Reads, never measures: the numbers come from `bench/ladder_bench.py` run on a GPU, whose JSON (`flashviz.ladder/1`,
docs/ladder-schema.md) is copied into the package (`flashviz/data/ladder/<date>-<gpu>.json`, by the bench's
--install) so that a machine without a GPU can show it. `load()` returns the newest shipped run, or a given file,
validated; with none shipped it raises NoRecordedRun rather than show anything made up. The table:
`flashviz.reports.ladder_table`.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flashviz.hardware.ladder_schema import LadderError, check
from flashviz.model.config import ConfigError
from flashviz.model.regular_file import read_regular

if TYPE_CHECKING:
    from importlib.abc import Traversable

DATA = "data/ladder"  # inside the package (as flashviz/DATA)
HINT = "give a ladder JSON (bench/ladder_bench.py writes one)"
MAX_FILE_BYTES = 16 * 2**20  # the recorded runs are ~12 kB; a file far larger is not one


class NoRecordedRun(LadderError):
    pass


def shipped() -> list[Traversable]:
    """The recorded runs that ship with the package, oldest first (their names start with the date)."""
    folder = files("flashviz").joinpath("data").joinpath("ladder")
    if not folder.is_dir():
        return []
    return sorted((f for f in folder.iterdir() if f.name.endswith(".json")), key=lambda f: f.name)


def load(path: str | Path | None = None) -> dict[str, Any]:
    """The newest shipped run (or the file at `path`) as parsed JSON, validated against flashviz.ladder/1.

    Raises NoRecordedRun when no run ships, LadderError (one line naming the file) when the file is unreadable,
    not JSON or not a ladder run."""
    if path is None:
        runs = shipped()
        if not runs:
            raise NoRecordedRun(
                "no recorded ladder run ships with this flashviz: nothing to show (a GPU run of "
                "bench/ladder_bench.py --install records one)"
            )
        source: Traversable | Path = runs[-1]
    else:
        source = Path(path)
    name = _name(source)
    try:
        if isinstance(source, Path):  # a given file: a regular one of bounded size (not /dev/zero, not a FIFO)
            text = read_regular(source, "--from", name, MAX_FILE_BYTES, "a ladder file", HINT).decode("utf-8")
        else:
            text = source.read_text(encoding="utf-8")
    except ConfigError as exc:
        raise LadderError(exc.message) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LadderError(f"{name}: cannot read it ({getattr(exc, 'strerror', None) or type(exc).__name__})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LadderError(f"{name}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise LadderError(f"{name}: not JSON (nested too deeply)") from None
    try:
        check(doc)
    except LadderError as exc:
        raise LadderError(f"{name}: {exc}") from None
    return doc


def _name(source: Traversable | Path) -> str:
    text = str(source) if isinstance(source, Path) else f"flashviz/{DATA}/{source.name}"
    return text if len(text) <= 80 else "…" + text[-79:]
