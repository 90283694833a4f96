"""The score tile every forward kernel computes the same way: Sij = scale * Qi @ Kj.T, masked to -inf."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .flops import Flops


def score_tile(
    Sij: np.ndarray,
    Qi: np.ndarray,
    Kj: np.ndarray,
    scale: np.float32,
    r0: int,
    c0: int,
    c1: int,
    causal: bool,
    fl: Flops,
) -> None:
    """Fill Sij (Br, Bc) in place, in float32 as the kernel does. Key columns past N (c1: the end of the tile's
    real columns) score -inf, and under causal so do key columns after the query row (row r0 + r). Counted in `fl`:
    the tile product and one multiplication by the scale per entry of the tile."""
    fl.matmul(Qi, Kj.T, out=Sij)  # (Br, Bc)
    Sij[:] = fl.mul(Sij, scale)
    Sij[:, c1 - c0 :] = -np.inf
    if causal and c1 - 1 > r0:  # the tile crosses the diagonal
        cols = np.arange(c0, c0 + Sij.shape[1])[None, :]  # (1, Bc) key column of each SRAM column
        rows = np.arange(r0, r0 + Sij.shape[0])[:, None]  # (Br, 1) query row of each SRAM row
        Sij[cols > rows] = -np.inf


def score_tiles(
    Qi: np.ndarray, Kt: np.ndarray, scale: np.float32, r0: int, n: int, causal: bool, fl: Flops, c0: int = 0
) -> np.ndarray:
    """`score_tile` for T consecutive tiles of keys at once, the first from key column c0: Kt (T, Bc, D) the tiles as
    SRAM holds them (rows past N zero); returns S (T, Br, Bc), each tile the same numbers `score_tile` gives it (the
    same product of shape (Br, D) @ (D, Bc) per tile, the same scaling and masks), counted the same (T tile products,
    T·Br·Bc multiplications)."""
    S = fl.matmul(Qi, Kt.swapaxes(-1, -2))  # (T, Br, Bc)
    S = fl.mul(S, scale)
    cols = c0 + np.arange(Kt.shape[0] * Kt.shape[1]).reshape(Kt.shape[0], 1, Kt.shape[1])  # (T, 1, Bc) key column
    masked = cols >= n  # key columns past N
    if causal:
        rows = np.arange(r0, r0 + Qi.shape[0])[None, :, None]  # (1, Br, 1) query row of each SRAM row
        masked = masked | (cols > rows)
    S[np.broadcast_to(masked, S.shape)] = -np.inf
    return S
