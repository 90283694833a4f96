"""The ring of flashviz.ops.ring over P simulated devices, in NumPy, one head: what each device holds, computes, skips
and sends at each step, and its carries (O, L) after each merge -- the engine a trace of the ring is built from.

It follows flashviz.ops.ring's forward step for step, with the same layout plan (flashviz.model.ring_layout) and the
same
merge rule (flashviz.model.merge): device r keeps its Q chunks; at step s it holds the K/V shard of device (r - s) mod P
while that shard is in flight to device r+1 (for the next step); each computed block's partial attention (O, L),
by a plain fp32 softmax over the block, is merged into the device's carries. The result is not checked here
(the engine never imports its reference): the tests hold it to float64 attention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from flashviz.model.echo import cut
from flashviz.model.merge import merge
from flashviz.model.ring_layout import CAUSAL, SKIP, blocks, check_layout, chunk_count, chunks, owner


@dataclass(frozen=True)
class Transfer:
    """A K/V shard in flight during a step: from device `src` to `dst`, arriving for the next step."""

    src: int
    dst: int
    owner: int  # the device whose K/V rows these are
    chunks: tuple[int, ...]  # their global chunk indices
    bytes: int  # K and V rows together


@dataclass(frozen=True)
class Work:
    """One (Q chunk, K chunk) block of a step: computed fully, under the causal mask, or skipped."""

    q_chunk: int
    k_chunk: int
    kind: str  # "full", "causal" or "skip"
    rows: int  # visible (query, key) pairs: chunk^2, chunk(chunk+1)/2 or 0


@dataclass(frozen=True)
class DeviceStep:
    device: int
    holds: int  # whose K/V shard it computes on at this step
    k_chunks: tuple[int, ...]
    work: tuple[Work, ...]
    O: np.ndarray  # (n, D) float32: the carries after this step's merges (rows of never-seen keys: 0)
    L: np.ndarray  # (n,) float32: log-sum-exp so far (-inf where no key has been seen yet)


@dataclass(frozen=True)
class Step:
    index: int
    devices: tuple[DeviceStep, ...]
    transfers: tuple[Transfer, ...]  # in flight while the step computes


@dataclass(frozen=True)
class RingRun:
    world: int
    layout: str
    causal: bool
    scale: float
    chunk: int  # rows per chunk
    q_chunks: tuple[tuple[int, ...], ...]  # per device: the global chunks of Q (and of its own K/V) it holds
    steps: tuple[Step, ...]
    O: np.ndarray  # (N, D) float32: the devices' final carries put back in sequence order
    L: np.ndarray  # (N,) float32

    def sent_bytes(self, device: int) -> int:
        return sum(t.bytes for s in self.steps for t in s.transfers if t.src == device)


def partial_attention(Qa: np.ndarray, Kb: np.ndarray, Vb: np.ndarray, scale: float, causal: bool):
    """(O, L) of one block by a plain fp32 softmax: what one attention call of the ring returns (algos/ring's
    engine calls it too)."""
    S = (Qa @ Kb.T) * np.float32(scale)  # (c, c)
    if causal:
        S[np.triu_indices_from(S, k=1)] = -np.inf
    m = S.max(axis=1, keepdims=True)  # (c, 1)
    P = np.exp(S - m)  # (c, c)
    l = P.sum(axis=1, keepdims=True)  # (c, 1)
    return (P @ Vb) / l, (m + np.log(l))[:, 0]  # (c, D), (c,)


def simulate(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, world: int, causal: bool = False, layout: str = "zigzag",
    scale: float | None = None,
) -> RingRun:  # fmt: skip
    """Run the ring forward over `world` simulated devices on one head's Q, K, V (N, D)."""
    Q, K, V = (np.asarray(x, dtype=np.float32) for x in (Q, K, V))
    if Q.ndim != 2 or not (Q.shape == K.shape == V.shape):
        raise ValueError(f"Q, K and V must share one shape (N, D); got {Q.shape}, {K.shape}, {V.shape}")
    if isinstance(world, bool) or not isinstance(world, int) or world < 1:
        raise ValueError(f"world must be an integer >= 1; got {cut(str(world))!r}")
    layout = check_layout(layout)
    N, D = Q.shape
    parts = chunk_count(world, layout)
    if N % parts or N == 0:
        raise ValueError(f"N must be a positive multiple of {parts} ({layout} on {world} devices); got {N}")
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    if not math.isfinite(scale):
        raise ValueError(f"scale must be a finite number; got {scale}")
    c = N // parts

    def rows(chunk: int) -> slice:
        return slice(chunk * c, (chunk + 1) * c)

    held = [chunks(r, world, layout) for r in range(world)]
    carries = [
        (np.zeros((c * len(h), D), np.float32), np.full(c * len(h), -np.inf, np.float32)) for h in held
    ]  # per device: O (n, D), L (n,)
    steps = []
    for s in range(world):
        devices, transfers = [], []
        for r in range(world):
            src = owner(r, s, world)
            k_chunks = held[src]
            if s < world - 1:
                transfers.append(Transfer(r, (r + 1) % world, src, k_chunks, 2 * c * len(k_chunks) * D * 4))
            O, L = carries[r]
            work = []
            for b in blocks(r, s, world, layout, causal):
                pairs = {SKIP: 0, CAUSAL: c * (c + 1) // 2}.get(b.kind, c * c)
                work.append(Work(b.q_chunk, b.k_chunk, b.kind, pairs))
                if b.kind == SKIP:
                    continue
                O_b, L_b = partial_attention(
                    Q[rows(b.q_chunk)], K[rows(b.k_chunk)], V[rows(b.k_chunk)], scale, b.kind == CAUSAL
                )
                mine = slice(b.q * c, (b.q + 1) * c)  # the chunk's rows in the device's carries
                O[mine], L[mine] = merge(O[mine], L[mine], O_b, L_b)
            devices.append(DeviceStep(r, src, k_chunks, tuple(work), O.copy(), L.copy()))
        steps.append(Step(s, tuple(devices), tuple(transfers)))
    O_all, L_all = np.empty((N, D), np.float32), np.empty(N, np.float32)
    for r, h in enumerate(held):
        for j, chunk in enumerate(h):
            O_all[rows(chunk)] = carries[r][0][j * c : (j + 1) * c]
            L_all[rows(chunk)] = carries[r][1][j * c : (j + 1) * c]
    return RingRun(world, layout, causal, scale, c, tuple(held), tuple(steps), O_all, L_all)
