"""The algorithms flashviz runs, one folder each (`flashviz/algos/<folder>/`, see `base` and
docs/adding-an-algorithm.md). Adding one is a new folder and its line in FOLDERS; nothing else names it.
"""

from __future__ import annotations

import importlib

from .base import Algorithm, Idea

# In the order the page, the API and `flashviz compare` list them.
FOLDERS = (
    "standard",
    "fa1",
    "fa2",
    "fa2_backward",
    "fa2_triton",
)
DEFAULT = "fa2"  # what a launch runs when no algorithm is named: the seed's example
BASELINE = "fa2"  # the algorithm the others' traffic is measured against (`traffic_vs_fa2`)


def _load(folder: str) -> Algorithm:
    record = importlib.import_module(f"{__name__}.{folder}").ALGORITHM
    if not isinstance(record, Algorithm) or record.package != f"{__name__}.{folder}":
        raise TypeError(f"flashviz.algos.{folder}.ALGORITHM must be the Algorithm of that folder")
    return record


REGISTRY: dict[str, Algorithm] = {a.name: a for a in map(_load, FOLDERS)}
ALGOS: tuple[str, ...] = tuple(REGISTRY)


def get(name: str) -> Algorithm:
    return REGISTRY[name]


__all__ = ["ALGOS", "BASELINE", "DEFAULT", "FOLDERS", "REGISTRY", "Algorithm", "Idea", "get"]
