"""Closed-form HBM traffic per algorithm, in elements: what the engine's counters must equal."""

from __future__ import annotations

from . import fa2

MODELS = {"fa2": fa2.count}


def count(algo: str, n: int, d: int, br: int, bc: int) -> dict[str, dict[str, int]]:
    return MODELS[algo](n=n, d=d, br=br, bc=bc)
