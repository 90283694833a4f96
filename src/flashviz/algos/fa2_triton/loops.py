"""kernel.py's `fa2_fwd` loops as plain geometry: the picks of a launch (a block of Q of one q head and sequence) and
the tiles each visits in the kernel's three stages. The engine runs them; the picture names what they leave out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashviz.model import band
from flashviz.model.tiling import count

if TYPE_CHECKING:
    from flashviz.model.config import Config

__all__ = ["LEFT_EDGE", "MASK_BAND", "NO_MASK", "plan", "stage_of", "stages"]

# kernel.py's loop stages: `_fwd_tiles` called three times by fa2_fwd, each with its mask
LEFT_EDGE = "MASK_BAND (left edge)"  # under `if BAND_LEFT:`: the tiles crossing the window's left edge, masked
NO_MASK = "NO_MASK"  # the tiles wholly inside every row's band (and inside Nk)
MASK_BAND = "MASK_BAND"  # the tiles crossing its right edge (the diagonal, the window's right side) or Nk, masked


def plan(cfg: Config) -> list[tuple[band.Segment, int]]:
    """The picks of a launch, in order: each (segment, block i within it): the blocks of q head 0's sequences one
    after another, then q head 1's ... (one head, one sequence: block i is pick i)."""
    return [(seg, i) for seg in cfg.segments() for i in range(count(seg.nq, cfg.br))]


def stages(cfg: Config, seg: band.Segment, i: int) -> list[tuple[int, str]]:
    """The tiles block i of a segment visits, as fa2_fwd runs them: (start, stage) in the order of its three calls
    of `_fwd_tiles`: [lo, a) under BAND_LEFT (a bounded left side), [a, c) NO_MASK, [c, hi) MASK_BAND."""
    left, right = cfg.sides
    lo, a, c, hi = band.q_stages(i * cfg.br, cfg.br, seg.nq, seg.nk, seg.off, left, right, cfg.bc)
    band_left = cfg.window[0] >= 0  # the host's BAND_LEFT
    out = [(s, LEFT_EDGE) for s in range(lo, a, cfg.bc)] if band_left else []
    out += [(s, NO_MASK) for s in range(a, c, cfg.bc)]
    out += [(s, MASK_BAND) for s in range(c, hi, cfg.bc)]
    return out


def stage_of(cfg: Config, i: int, j: int) -> str | None:
    """The loop stage of kernel.py that runs tile j of block i (one head, one sequence), or None: skipped."""
    seg = cfg.segments()[0]
    return dict((s // cfg.bc, st) for s, st in stages(cfg, seg, i)).get(j)
