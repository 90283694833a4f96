"""The facts of the recorded H200 runs, shipped in the package (data/hardware/<date>-<gpu>.json, written by
bench/hardware_data.py from bench/results/parallelism/): never measured on this machine."""

from __future__ import annotations

import json
import math
from functools import cache
from importlib.resources import files
from typing import Any

DATA = "data/hardware/2026-12-01-nvidia-h200.json"


@cache
def load() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(files("flashviz").joinpath(DATA).read_text(encoding="utf-8"))
    if doc.get("schema") != "flashviz.hardware/1":
        raise ValueError(f"{DATA}: not a flashviz.hardware/1 document")
    return doc


def registers(template: str, args: tuple[int, ...]) -> dict[str, Any]:
    """Registers per thread of `template<args>` as NVRTC built it for the H200: `value`, `source` ("measured": this
    very instance was compiled; "assumed": the nearest instance compiled, named in `note`; "unknown": the kernel
    was not in the run, `value` None) and `note`."""
    table = load()["registers"]
    by_args: dict[str, int] | None = table["kernels"].get(template, {}).get("by_args")
    where = f"NVRTC {table['nvrtc']} for the H200, {table['date']}"
    if not by_args:
        return {"value": None, "source": "unknown", "note": f"{template} was not compiled in the recorded run"}
    key = ",".join(map(str, args))
    if key in by_args:
        return {"value": by_args[key], "source": "measured", "note": f"{template}<{key}> as built by {where}"}

    def distance(k: str) -> float:
        return sum(abs(math.log2(a) - math.log2(b)) for a, b in zip(map(int, k.split(",")), args, strict=True))

    near = min(by_args, key=distance)
    return {
        "value": by_args[near],
        "source": "assumed",
        "note": f"{template}<{key}> was not compiled; assumed as {template}<{near}>, the nearest instance built by "
        f"{where}",
    }


def parallelism() -> dict[str, Any]:
    return load()["parallelism"]
