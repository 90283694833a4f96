"""Closed-form HBM traffic per algorithm, in elements: what the engine's counters must equal."""

from __future__ import annotations

from ..algorithms import get


def count(algo: str, n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, dict[str, int]]:
    return get(algo).traffic(n=n, d=d, br=br, bc=bc, causal=causal)
