"""The tile map of a launch: per block of Q (a pick), the kind of each (block, tile) pair of its sequence's keys,
judged from the band over its real rows and keys (flashviz.model.band's statement of what a row sees), and the
tiles it visits. The trace's `tiling` (docs/trace-schema.md); the picture's counts of what the band skips."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flashviz.model import tiling

if TYPE_CHECKING:
    from flashviz.model.band import Segment
    from flashviz.model.config import Config


def pair_kind(cfg: Config, seg: Segment, i: int, j: int) -> str:
    """The (block, tile) pair's kind, from the band over its real rows and keys: "s" skipped (no row of the block
    sees a key of the tile), "f" every row sees every key, else masked: "m" keys past some row's right edge (the
    diagonal, the window's right side), "l" keys before some row's left edge (the window), "b" both."""
    left, right = cfg.sides
    r0, r1 = tiling.span(i, cfg.br, seg.nq)
    c0, c1 = tiling.span(j, cfg.bc, seg.nk)
    first, last = r0 + seg.off - left, r1 - 1 + seg.off + right  # the keys the block's rows see, together
    if c1 - 1 < max(first, 0) or c0 > min(last, seg.nk - 1) or last < 0:
        return "s"
    past_left = c0 < r1 - 1 + seg.off - left
    past_right = c1 - 1 > r0 + seg.off + right
    return "b" if past_left and past_right else "m" if past_right else "l" if past_left else "f"


def tiling_of(cfg: Config) -> dict[str, Any]:
    """Per pick (a block of Q of one segment), the kind of each (block, tile) pair over its sequence's tiles, the
    first and last tile it visits and the keys [first, width) they cover; per tile the first block that meets it."""
    picks = [(seg, i) for seg in cfg.segments() for i in range(tiling.count(seg.nq, cfg.br))]
    pairs = ["".join(pair_kind(cfg, seg, i, j) for j in range(tiling.count(seg.nk, cfg.bc))) for seg, i in picks]
    first = [next((j for j, k in enumerate(row) if k != "s"), -1) for row in pairs]
    last = [max((j for j, k in enumerate(row) if k != "s"), default=-1) for row in pairs]
    return {
        "pairs": pairs,
        "first_tile": first,
        "last_tile": last,
        "kv_first": [max(0, t) * cfg.bc for t in first],
        "kv_width": [min(seg.nk, (t + 1) * cfg.bc) for (seg, _), t in zip(picks, last, strict=True)],
        "first_block": [
            min((p for p, row in enumerate(pairs) if j < len(row) and row[j] != "s"), default=len(pairs))
            for j in range(cfg.tc if len(picks) == cfg.tr else max(map(len, pairs), default=0))
        ],
    }
