"""The words of a launch's segments (a q head of a group, a packed sequence) that the engine's code headers and the
picks' labels carry, and what a block's loop leaves out of its sequence's keys: shared by engine.py (code headers,
labels) and words.py (the sentences)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flashviz.model.band import Segment
    from flashviz.model.config import Config


def short(cfg: Config, seg: Segment) -> str:
    """A segment in a few characters, for labels: 'h1 ·', 's2 ·', 'h1 s2 ·' (q head, packed sequence)."""
    parts = ([f"h{seg.head}"] if cfg.group > 1 else []) + ([f"s{seg.seq}"] if cfg.seqlens is not None else [])
    return " ".join(parts) + " \u00b7" if parts else ""


def where_words(cfg: Config, seg: Segment) -> str:
    """Which q head and sequence a block belongs to, as the code header says it."""
    parts = []
    if cfg.group > 1:
        parts.append(f"q head {seg.head} of {cfg.group} (K/V head 0)")
    if cfg.seqlens is not None:
        parts.append(f"sequence {seg.seq} (Nq = {seg.nq}, Nk = {seg.nk})")
    return ", ".join(parts)


def skipped(cfg: Config, seg: Segment, tiles: list[tuple[int, str]]) -> tuple[int, int]:
    """The tiles of its sequence's keys the block never visits: (left of its first, right of its last)."""
    total = -(-seg.nk // cfg.bc)
    if not tiles:
        return (0, total)
    first, last = tiles[0][0] // cfg.bc, tiles[-1][0] // cfg.bc
    return (first, total - 1 - last)
