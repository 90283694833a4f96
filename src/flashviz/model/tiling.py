"""How a launch cuts N rows into blocks and tiles: the geometry every executor, traffic model and GPU spec shares.

Block i of Q holds rows i*Br .. min(N, (i+1)*Br) - 1 (nr_i of them; the last block may be short, "ragged"), and
tile j of K/V holds rows j*Bc .. min(N, (j+1)*Bc) - 1. Under causal attention block i needs the K/V tiles whose
first column is <= its last row: tc_i = (last row) // Bc + 1 of them, covering the key columns 0 .. w_i - 1 with
w_i = min(N, tc_i * Bc); seen from tile j, the first block of Q that reaches its first column j*Bc is
i0(j) = j*Bc // Br. Without causal, tc_i = Tc, w_i = N and i0(j) = 0. The sums over blocks that the closed-form
traffic models need are here too, in O(log N) rather than a loop over Tr (N may be 2^31 with Br = 1).

A leaf: it imports nothing from flashviz, and takes plain integers.
"""

from __future__ import annotations


def count(n: int, size: int) -> int:
    """Blocks (or tiles) of `size` rows that cover N rows: Tr = count(N, Br), Tc = count(N, Bc)."""
    return -(-n // size)


def span(k: int, size: int, n: int) -> tuple[int, int]:
    """[first, end) rows of block (or tile) k of `size` rows, cut at N: the last one may be short."""
    return k * size, min(n, (k + 1) * size)


def tiles_of_block(n: int, br: int, bc: int, i: int, causal: bool) -> int:
    """tc_i: K/V tiles block i of Q streams (all Tc, or under causal those up to its last row's)."""
    return count(n, bc) if not causal else (min(n, (i + 1) * br) - 1) // bc + 1


def first_block(j: int, br: int, bc: int, causal: bool) -> int:
    """i0(j): the first block of Q that tile j meets: under causal the one holding row j*Bc (the blocks before it
    end above the tile's first column, wholly masked), else 0."""
    return j * bc // br if causal else 0


def floor_sum(n: int, m: int, a: int, b: int) -> int:
    """sum_{k=0}^{n-1} (a*k + b) // m for integers n, m >= 1 and a, b >= 0, in O(log m)."""
    total = 0
    while True:
        if a >= m:
            total += (n - 1) * n // 2 * (a // m)
            a %= m
        if b >= m:
            total += n * (b // m)
            b %= m
        y_max = a * n + b
        if y_max < m:
            return total
        n, b = divmod(y_max, m)
        m, a = a, m


def _full_blocks(n: int, br: int, bc: int) -> int:
    """Blocks of Q whose causal tile count is all Tc (those whose last row reaches the last tile)."""
    tr, tc = count(n, br), count(n, bc)
    # the last row of block i < Tr-1 is (i+1)*Br - 1 >= (Tc-1)*Bc  <=>  i >= ceil(((Tc-1)*Bc + 1) / Br) - 1
    first = -(-((tc - 1) * bc + 1) // br) - 1
    return max(0, (tr - 1) - first) + 1  # ... and the last block, whose last row is N-1


def sum_tiles(n: int, br: int, bc: int, causal: bool, weighted: bool = False) -> int:
    """sum over blocks i of tc_i, or with `weighted` of nr_i * tc_i (rows times tiles)."""
    tr, tc = count(n, br), count(n, bc)
    if not causal:
        return tc * (n if weighted else tr)
    last_rows = n - (tr - 1) * br  # nr of the last block
    # blocks 0 .. Tr-2 are full: tc_i = ((i+1)*Br - 1) // Bc + 1 = (Br*i + Br - 1) // Bc + 1
    head = floor_sum(tr - 1, bc, br, br - 1) + (tr - 1) if tr > 1 else 0
    return (br * head + last_rows * tc) if weighted else head + tc


def sum_width(n: int, br: int, bc: int, causal: bool, weighted: bool = False) -> int:
    """sum over blocks i of w_i = min(N, tc_i * Bc) (the key columns block i reads), or with `weighted`
    of nr_i * w_i (the entries of S or P that block i's rows use)."""
    tr, tc = count(n, br), count(n, bc)
    if not causal:
        return n * (n if weighted else tr)
    over = tc * bc - n  # columns of the last tile past N, which tc_i * Bc overcounts when tc_i = Tc
    full = _full_blocks(n, br, bc)
    if not weighted:
        return bc * sum_tiles(n, br, bc, causal) - over * full
    last_rows = n - (tr - 1) * br
    # full blocks other than the last have Br rows each
    return bc * sum_tiles(n, br, bc, causal, weighted=True) - over * (br * (full - 1) + last_rows)


def sum_first_blocks(n: int, br: int, bc: int, causal: bool) -> int:
    """sum over tiles j of i0(j) = j*Bc // Br: the blocks of Q that the tiles skip under causal (0 without)."""
    return floor_sum(count(n, bc), br, bc, 0) if causal else 0
