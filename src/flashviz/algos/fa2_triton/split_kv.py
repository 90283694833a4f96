"""The split-KV forward (Flash-Decoding) as the launcher plans it: how many chunks S the keys are cut into
(`num_splits`, FlashAttention-2's heuristic), the split kernel's tiles (`split_tiles`) and the span of keys each
chunk covers (`split_plan`). Plain arithmetic: no torch or Triton needed."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from .launch_tiles import Tiles
from .tiles import padded

H200_SMS = 132  # the SM count the heuristic assumes without a GPU (the interpreter); on a GPU its own count
MAX_SPLITS = 128


# The split's rows per K/V head up to which the split forward streams K and V (decode: the heuristic aims at half
# the SMs, `num_splits`'s memory_bound); the split kernel's tiles are long there too (`split_tiles`).
STREAMING_ROWS = 64


def num_splits(programs: int, kv_tiles: int, sms: int = H200_SMS, max_splits: int = MAX_SPLITS,
               memory_bound: bool = False) -> int:  # fmt: skip
    """How many chunks S to split the keys into, for a grid of `programs` (blocks of packed rows x K/V heads) over
    `kv_tiles` tiles of keys: FlashAttention-2's num_splits_heuristic (flash_api.cpp). A grid that fills 80% of the
    SMs runs unsplit (S = 1). Otherwise, over S = 1 .. min(max_splits, sms, kv_tiles) -- skipping an S whose chunks
    are as long as those of S - 1, which would only add empty programs -- the wave efficiency of S is
    n / ceil(n) with n = programs * S / sms waves; the smallest S within 85% of the best efficiency is taken (about
    one full wave: more programs add partial carries to merge and nothing to hide).
    memory_bound (a few rows per K/V head, STREAMING_ROWS: decode): the largest S whose programs fill at most half
    the SMs. Measured on an H100 from CUDA graphs (bench/results/attention/features/2026-12-05-decode-tiles): one
    or 16 queries, 8 K/V heads, 8k to 128k keys, S = 8 (64 programs) took 29.3 to 199.4 us where the wave-filling
    S = 14 to 16 took 32.8 to 206.6 (HBM is full with half the SMs streaming; shorter chunks only add partials)."""
    if programs < 1 or kv_tiles < 1:
        raise ValueError(f"programs and kv_tiles must be at least 1; got {programs}, {kv_tiles}")
    if programs >= 0.8 * sms:
        return 1
    limit = min(max_splits, sms, kv_tiles)

    def eligible(s: int) -> bool:
        return s == 1 or math.ceil(kv_tiles / s) != math.ceil(kv_tiles / (s - 1))

    if memory_bound:
        target = max(1, min(limit, sms // 2 // programs))
        return max(s for s in range(1, target + 1) if eligible(s))

    def efficiency(s: int) -> float:
        waves = programs * s / sms
        return waves / math.ceil(waves)

    best = max(efficiency(s) for s in range(1, limit + 1) if eligible(s))
    return next(s for s in range(1, limit + 1) if eligible(s) and efficiency(s) >= 0.85 * best)


def split_tiles(rows: int, d: int) -> Tiles:
    """The split kernel's tiles for `rows` packed rows (Nq * group) per K/V head and padded head dimension d:
    Br the rows rounded up to a power of two, 16 (the smallest tl.dot) to 128; tiles of 64 keys at D = 256,
    otherwise 128 for up to STREAMING_ROWS rows (the decode case is memory bound: long tiles, few rows) and 64 above."""
    br = min(128, max(16, padded(rows)))
    bc = 64 if d >= 256 or br > STREAMING_ROWS else 128
    return Tiles(br, bc, num_warps=4 if br <= 64 else 8, num_stages=2 if d >= 256 else 3)


@dataclass(frozen=True)
class SplitPlan:
    """The keys a split forward covers, [klo, klo + S * chunk) cut to Nk: the span that some query sees (a window
    or causal masking leaves the rest out), klo and chunk multiples of Bc."""

    S: int
    klo: int
    chunk: int
    programs: int  # blocks of packed rows x K/V heads (x batch), before the split


@functools.lru_cache(maxsize=4096)
def split_plan(B: int, Hkv: int, group: int, Nq: int, Nk: int, causal: bool, left: int, right: int, br: int,
               bc: int, sms: int = H200_SMS, splits: int | None = None) -> SplitPlan:  # fmt: skip
    """S from `num_splits` (or `splits`, forced) over the keys the queries see at all; left/right -1: unbounded.
    Memoized: a decode loop asks the same shape every step, and the heuristic's search was a fifth of a call's host
    time (bench/results/attention/features/2026-12-05-decode-probe)."""
    off = Nk - Nq
    if causal:
        right = 0 if right < 0 else min(right, 0)
    klo = max(off - left, 0) // bc * bc if left >= 0 else 0
    khi = min(Nq - 1 + off + right + 1, Nk) if right >= 0 else Nk
    programs = math.ceil(Nq * group / br) * B * Hkv
    if khi <= klo:  # no query sees a key: one chunk, no tile, O = 0 and L = -inf
        return SplitPlan(1, 0, bc, programs)
    tiles = math.ceil((khi - klo) / bc)
    streaming = Nq * group <= STREAMING_ROWS
    s = num_splits(programs, tiles, sms, memory_bound=streaming) if splits is None else max(1, min(splits, tiles))
    chunk = math.ceil(tiles / s) * bc
    return SplitPlan(math.ceil((khi - klo) / chunk), klo, chunk, programs)
