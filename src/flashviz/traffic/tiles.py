"""Sums over the blocks of Q that the causal traffic models need, in O(log N) rather than a loop over Tr.

Block i of Q holds rows i*Br .. min(N, (i+1)*Br) - 1 (nr_i of them). Under causal attention it needs the
K/V tiles whose first column is <= its last row: tc_i = (last row) // Bc + 1 of them, covering the key
columns 0 .. w_i - 1 with w_i = min(N, tc_i * Bc). Without causal, tc_i = Tc and w_i = N for every block.
"""

from __future__ import annotations


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


def _tr_tc(n: int, br: int, bc: int) -> tuple[int, int]:
    return -(-n // br), -(-n // bc)


def tiles_of_block(n: int, br: int, bc: int, i: int, causal: bool) -> int:
    """tc_i: K/V tiles block i streams (all Tc, or under causal those up to its last row's)."""
    tc = -(-n // bc)
    return tc if not causal else (min(n, (i + 1) * br) - 1) // bc + 1


def _full_blocks(n: int, br: int, bc: int) -> int:
    """Blocks of Q whose causal tile count is all Tc (those whose last row reaches the last tile)."""
    tr, tc = _tr_tc(n, br, bc)
    # the last row of block i < Tr-1 is (i+1)*Br - 1 >= (Tc-1)*Bc  <=>  i >= ceil(((Tc-1)*Bc + 1) / Br) - 1
    first = -(-((tc - 1) * bc + 1) // br) - 1
    return max(0, (tr - 1) - first) + 1  # ... and the last block, whose last row is N-1


def sum_tiles(n: int, br: int, bc: int, causal: bool, weighted: bool = False) -> int:
    """sum over blocks i of tc_i, or with `weighted` of nr_i * tc_i (rows times tiles)."""
    tr, tc = _tr_tc(n, br, bc)
    if not causal:
        return tc * (n if weighted else tr)
    last_rows = n - (tr - 1) * br  # nr of the last block
    # blocks 0 .. Tr-2 are full: tc_i = ((i+1)*Br - 1) // Bc + 1 = (Br*i + Br - 1) // Bc + 1
    head = floor_sum(tr - 1, bc, br, br - 1) + (tr - 1) if tr > 1 else 0
    return (br * head + last_rows * tc) if weighted else head + tc


def sum_width(n: int, br: int, bc: int, causal: bool, weighted: bool = False) -> int:
    """sum over blocks i of w_i = min(N, tc_i * Bc) (the key columns block i reads), or with `weighted`
    of nr_i * w_i (the entries of S or P that block i's rows use)."""
    tr, tc = _tr_tc(n, br, bc)
    if not causal:
        return n * (n if weighted else tr)
    over = tc * bc - n  # columns of the last tile past N, which tc_i * Bc overcounts when tc_i = Tc
    full = _full_blocks(n, br, bc)
    if not weighted:
        return bc * sum_tiles(n, br, bc, causal) - over * full
    last_rows = n - (tr - 1) * br
    # full blocks other than the last have Br rows each
    return bc * sum_tiles(n, br, bc, causal, weighted=True) - over * (br * (full - 1) + last_rows)
