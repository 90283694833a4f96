"""The geometry of the options of real models (issue 22): which keys a query row sees, and how a launch cuts its
rows when there are several heads per K/V head or several packed sequences.

- The band. Query row r (of Nq) sees key column c (of Nk) when c − (r + off) lies in [−left, right], off = Nk − Nq
  (aligned to the bottom-right, as FlashAttention-2 does); causal makes right at most 0; an unbounded side is
  UNBOUNDED, as the kernels pass it. `q_stages` is kernel.py's `_q_stages_rows`: the tiles of keys a block of queries
  visits, in three stages ([lo, a) the band's left edge, masked; [a, c) wholly inside; [c, hi) its right edge and
  the ragged end, masked); tiles wholly outside are never visited.
- Segments. The rows of one K/V head's launch: its `group` q heads, one above the other, each holding the packed
  sequences (`seqs`, each (Nq, Nk)); a segment is one (q head, sequence), whose rows are cut into blocks of Br that
  start at its first row, against its sequence's keys.
- Sums in closed form (`band_sums`): the (block, tile) pairs and the key rows the blocks of one segment read, in
  O(log N) (clamped floor sums), for the traffic and FLOP models that the engine's counters are held to.

A leaf: it imports nothing from flashviz.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from flashviz.model.tiling import count, floor_sum

UNBOUNDED = 1 << 30  # an unbounded side of the window, as the kernels take it (fa2_triton's launcher: UNBOUNDED)


def sides(window: tuple[int, int], causal: bool) -> tuple[int, int]:
    """(left, right) as the kernel uses them: -1 is UNBOUNDED, and causal makes right at most 0."""
    left = UNBOUNDED if window[0] < 0 else window[0]
    right = UNBOUNDED if window[1] < 0 else window[1]
    return left, min(right, 0) if causal else right


def visible(rows: np.ndarray, cols: np.ndarray, nk: int, off: int, left: int, right: int) -> np.ndarray:
    """kernel.py's `_visible`: whether query row r sees key column c (broadcast shapes)."""
    d = cols - (rows + off)
    return (cols < nk) & (d <= right) & (d >= -left)


def q_stages(r0: int, nrows: int, nq: int, nk: int, off: int, left: int, right: int, bc: int) -> tuple[int, ...]:
    """kernel.py's `_q_stages_rows` for the query rows [r0, r0 + nrows): (lo, a, c, hi)."""
    r1 = min(r0 + nrows, nq) - 1  # the last real row
    lo = max(r0 + off - left, 0) // bc * bc
    hi = max(min(r1 + off + right + 1, nk), lo)
    a = -(-max(r1 + off - left, 0) // bc) * bc  # the first tile every row sees whole (left edge)
    c = max(min(r0 + off + right + 1, nk), 0) // bc * bc  # tiles ending before the right edge
    a = min(max(a, lo), hi)
    c = min(max(c, a), hi)
    return lo, a, c, hi


@dataclass(frozen=True)
class Segment:
    """One (q head, sequence) of a K/V head's launch: its rows of Q [q0, q0 + nq) and of K, V [k0, k0 + nk)."""

    q0: int
    nq: int
    k0: int
    nk: int
    head: int  # the q head within the group (0 .. group-1)
    seq: int  # the packed sequence (0 when not packed)

    @property
    def off(self) -> int:
        return self.nk - self.nq


def segments(group: int, seqs: list[tuple[int, int]]) -> list[Segment]:
    """The segments of one K/V head: q head g's rows of Q after those of q heads 0 .. g-1, each holding the
    sequences one after another; every q head reads the same keys."""
    cq = [0, *accumulate(nq for nq, _ in seqs)]
    ck = [0, *accumulate(nk for _, nk in seqs)]
    return [Segment(g * cq[-1] + cq[s], nq, ck[s], nk, g, s) for g in range(group) for s, (nq, nk) in enumerate(seqs)]


# ---- sums over the blocks of one segment, in closed form ----


def clamped_floor_sum(n: int, a: int, b: int, lo: int, hi: int, m: int) -> int:
    """sum_{i=0}^{n-1} floor(clamp(a*i + b, lo, hi) / m) for a >= 0, 0 <= lo <= hi, m >= 1, in O(log)."""
    if n <= 0:
        return 0
    if a == 0:
        return n * (min(max(b, lo), hi) // m)
    below = min(max(-(-(lo - b) // a), 0), n)  # i with a*i + b < lo
    above = min(max((hi - b) // a + 1, below), n)  # the first i with a*i + b > hi
    middle = floor_sum(above - below, m, a, a * below + b) if above > below else 0
    return below * (lo // m) + middle + (n - above) * (hi // m)


def count_above(n: int, a: int, b: int, t: int) -> int:
    """How many i in [0, n) have a*i + b > t (a >= 0)."""
    if a == 0:
        return n if b > t else 0
    first = min(max((t - b) // a + 1, 0), n)
    return n - first


def band_sums(nq: int, nk: int, br: int, bc: int, left: int, right: int) -> tuple[int, int, int]:
    """Over the blocks of Br queries of one segment (Nq rows against Nk keys): (blocks, pairs, key rows): the
    blocks, the (block, tile) pairs they run and the rows of K (and of V) they read, each tile min(Bc, Nk - start)
    rows. Block i visits the tiles from lo_i = Bc*floor(max(r0 + off - left, 0) / Bc) up to hi_i = clamp(r1 + off +
    right + 1, 0, Nk): ceil(hi_i / Bc) - lo_i / Bc tiles, and min(Bc*ceil(hi_i / Bc), Nk) - lo_i rows."""
    tr = count(nq, br)
    off = nk - nq
    big = nk + bc + abs(off) + br * tr  # past every value clamped, the "unbounded" end of a clamp
    # the full blocks i = 0 .. tr-2 (rows r0 = Br*i, r1 = Br*i + Br - 1), then the last (r1 = Nq - 1)
    full = tr - 1
    last_r0 = br * full
    lo_sum = bc * clamped_floor_sum(full, br, off - left, 0, big, bc) + max(last_r0 + off - left, 0) // bc * bc
    # ceil(hi_i / Bc) = floor((clamp(x_i, 0, Nk) + Bc - 1) / Bc), x_i = r1 + off + right + 1
    beta = br - 1 + off + right + 1  # x_i = Br*i + beta for the full blocks
    ceil_sum = clamped_floor_sum(full, br, beta + bc - 1, bc - 1, nk + bc - 1, bc)
    x_last = nq - 1 + off + right + 1
    ceil_sum += (min(max(x_last, 0), nk) + bc - 1) // bc
    pairs = ceil_sum - lo_sum // bc
    rows = bc * ceil_sum - lo_sum
    whole, rem = divmod(nk, bc)
    if rem:  # a block whose hi_i passes the last whole tile reads the ragged tile: Bc - rem rows fewer
        over = count_above(full, br, beta, whole * bc) + (1 if x_last > whole * bc else 0)
        rows -= (bc - rem) * over
    return tr, pairs, rows
