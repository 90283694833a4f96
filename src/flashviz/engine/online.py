"""FA2's online softmax over a run of tiles, vectorised: what a float32 FA2 loop (fa2, fa2-splitkv's chunks) leaves in
mi, li and Oi after tiles 0..T-1, computed for all tiles at once where the kernel's order allows (each tile's scores,
max, P, rowsum and P @ Vj: per tile the same operations and products of the same shapes as the loop's) and tile after
tile where it does not (the running max by fmaxf; li and Oi, which each tile rescales). For a block the engine does not
record (recorder.Grid.fast): the same numbers bit for bit as the loop (tests/test_engine_vectorised.py)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .flops import Flops
from .scores import score_tiles


def online_tiles(
    fl: Flops,
    Qi: np.ndarray,
    Kt: np.ndarray,
    Vt: np.ndarray,
    scale: np.float32,
    r0: int,
    n: int,
    causal: bool,
    scored: Callable[[], None],
    c0: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mi, li, Oi) after the consecutive tiles Kt, Vt (T, Bc, D) as SRAM holds them (rows past N zero; the first
    from key column c0), from mi = -inf, li = 0, Oi = 0: the loop `Sij = scale * Qi @ Kj.T` (masked), `mi, li, Oi =
    online_softmax(...)`. `scored()` is called once the scores are computed (before the softmax's arithmetic), so that
    the caller files the FLOPs counted so far under the scores steps and the rest under the softmax steps."""
    T, br, d = Kt.shape[0], Qi.shape[0], Qi.shape[1]
    S = score_tiles(Qi, Kt, scale, r0, n, causal, fl, c0)  # (T, Br, Bc)
    scored()
    start = np.full(br, -np.inf, np.float32)
    m_ij = fl.rowmax(S)  # (T, Br) fmaxf: a NaN score is passed over
    m_new = fl.running_max(m_ij, start)  # (T, Br) mi after tile j
    m_old = np.concatenate([start[None], m_new[:-1]])  # (T, Br) mi before tile j
    alpha = fl.exp(fl.sub(m_old, m_new))  # (T, Br)
    P = fl.exp(fl.sub(S, m_new[:, :, None]))  # (T, Br, Bc)
    lsum = fl.rowsum(P)  # (T, Br)
    pv = fl.matmul(P, Vt)  # (T, Br, D)
    li = np.zeros(br, np.float32)  # (Br,)
    Oi = np.zeros((br, d), np.float32)  # (Br, D)
    for j in range(T):  # the carries, tile after tile: li = alpha * li + rowsum, Oi = alpha * Oi + P @ Vj
        np.add(np.multiply(alpha[j], li, out=li), lsum[j], out=li)
        np.add(np.multiply(alpha[j][:, None], Oi, out=Oi), pv[j], out=Oi)
    fl.count("mul", T * (br + br * d))  # counted as the loop counts them: per tile Br for li, Br x D for Oi
    fl.count("add", T * (br + br * d))
    return (m_new[-1] if T else start), li, Oi
