"""The ladder from the seed's kernel to tensor cores, as one recorded GPU run shows it (`flashviz ladder`).

Reads, never measures: the numbers come from `bench/ladder_bench.py` run on a GPU, whose JSON
(`flashviz.ladder/1`, docs/ladder-schema.md) is copied into the package (`flashviz/data/ladder/<date>-<gpu>.json`,
by the bench's --install) so that a machine without a GPU can show it. `load()` returns the newest shipped run,
or a given file, validated; with none shipped it raises NoRecordedRun rather than show anything made up.
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .ladder_schema import LadderError, check
from .units import human_bytes, kib

if TYPE_CHECKING:
    from importlib.abc import Traversable

DATA = "data/ladder"  # inside the package (as flashviz/DATA)


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
        text = source.read_text(encoding="utf-8")
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


# ----------------------------------------------------------------------------------------------------------
# The table
# ----------------------------------------------------------------------------------------------------------
SHORT_PEAK = {"bf16_matmul": "bf16 mm", "tf32_matmul": "tf32 mm", "fp32_sgemm": "SGEMM", "fp32_ffma": "FFMA"}


def tiles_text(t: dict | None) -> str:
    if t is None:
        return "not known"
    return f"{t['br']}×{t['bc']}, {t['warps']}w, {t['stages']}st"


def render(doc: dict[str, Any]) -> list[Any]:
    """Rich renderables: the rungs' numbers, then one sentence per rung on what changed from the rung below."""
    from rich.table import Table
    from rich.text import Text

    s = doc["shape"]
    mode = "" if doc["mode"] == "full" else f" ({doc['mode']} run)"
    title = (
        f"From the seed's kernel to tensor cores: D={s['d']}, N={s['n']}, B={s['batch']}, H={s['heads']} "
        f"({s['tokens']:,} tokens{', causal' if s['causal'] else ''})"
    )
    peaks = doc["peaks"]
    caption = (
        f"Recorded {doc['date']} on {doc['gpu']}{mode}{'' if doc['complete'] else ', incomplete'}. Peaks measured in "
        "the same run: " + "; ".join(f"{k} {v['tflops']:.1f} TFLOP/s" for k, v in peaks.items()) + ". "
        "HBM: the traffic model's bytes at the rung's tiles (the L2 serves many re-reads of K and V); "
        "SRAM: shared memory per block."
    )
    table = Table(title=title, caption=caption, caption_justify="left")
    for col, justify in (
        ("#", "right"),
        ("rung", "left"),
        ("dtype", "left"),
        ("tensor cores", "left"),
        ("tiles Br×Bc", "left"),
        ("ms", "right"),
        ("TFLOP/s", "right"),
        ("of peak", "right"),
        ("HBM", "right"),
        ("SRAM/block", "right"),
        ("max rel err", "right"),
    ):
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for i, r in enumerate(doc["rungs"], 1):
        tc = ("yes" if r["tensor_cores"] else "no") + (f" ({r['mma']})" if r.get("mma") not in (None, "none") else "")
        table.add_row(
            str(i),
            Text(r["label"]),
            r["dtype"],
            tc,
            tiles_text(r["tiles"]),
            f"{r['ms']:.4g}",
            f"{r['tflops']:.4g}",
            Text(f"{100 * r['share_of_peak']:.1f}% {SHORT_PEAK.get(r['peak'], r['peak'])}"),
            "–" if r["hbm_bytes"] is None else human_bytes(r["hbm_bytes"]),
            "–" if r["sram_bytes_per_block"] is None else kib(r["sram_bytes_per_block"]),
            f"{r['max_rel_err']:.1e}",
        )
    notes = Text()
    for i, r in enumerate(doc["rungs"], 1):
        notes.append(f"{i}. ", style="bold")
        notes.append(f"{r['label']}: ", style="bold")
        notes.append(r["what_changed"] + "\n")
    for sk in doc["skipped"]:
        notes.append(f"not measured: {sk['name']}: {sk['why']}\n")
    return [table, notes]
