"""Ring attention's step sentences, from each step's real numbers (shared helpers: `flashviz.algos.narrative`)."""

from __future__ import annotations

import numpy as np

from flashviz.algos.narrative import num, span
from flashviz.model.units import human_bytes


def chunk_names(cs: tuple[int, ...] | list[int]) -> str:
    return " and ".join(f"c{k}" for k in cs)


def init(r: int, world: int, layout: str, own: tuple[int, ...], c: int) -> str:
    where = (
        f"chunks {chunk_names(own)} of the {2 * world} the zigzag cuts the sequence into (one early, one late, so "
        "that under a causal mask every device does the same work)"
        if layout == "zigzag"
        else f"chunk {chunk_names(own)} of {world}"
    )
    return (
        f"Device {r} of {world} starts with its shard of the sequence: {where}, {c} rows each. Its Q rows stay "
        f"for the whole run; its own K, V shard is the first it holds; its carries start empty: O = 0 and "
        f"L = −∞ on every row (a partial over no keys, which the merge rule leaves unchanged)."
    )


def send(r: int, s: int, world: int, held: int, chunks: tuple[int, ...], last: bool, nbytes: int) -> str:
    whose = "its own shard" if held == r else f"device {held}'s shard"
    if last:
        return (
            f"Ring step {s}, the last of 0–{world - 1}: device {r} holds {whose} (chunks {chunk_names(chunks)}), "
            "which every other device has now seen, so nothing is posted: no send, no receive."
        )
    return (
        f"Ring step {s} (of 0–{world - 1}): device {r} holds {whose} (chunks {chunk_names(chunks)}) and posts it "
        f"to device {(r + 1) % world} ({human_bytes(nbytes, digits=1)} of K and V), with a receive from device "
        f"{(r - 1) % world}, in one batch. The transfer runs while the device computes on the very shard it is "
        "sending: that overlap is the ring's point."
    )


def attend(
    r: int, s: int, k: int, calls: int, q_chunks: tuple[int, ...], k_chunks: tuple[int, ...], causal: bool,
    rows: slice, L: np.ndarray,
) -> str:  # fmt: skip
    which = "" if calls == 1 else f" (call {k + 1} of {calls})"
    mask = " under the causal mask (the same chunks: key ≤ query inside them)" if causal else ""
    return (
        f"One attention call{which}: Q chunk{'s' if len(q_chunks) > 1 else ''} {chunk_names(q_chunks)} against "
        f"K/V chunk{'s' if len(k_chunks) > 1 else ''} {chunk_names(k_chunks)}{mask}. It returns a partial result over "
        f"those keys only, normalised over them: Ob and Lb = log-sum-exp of the scores, {span(L)} on rows "
        f"{rows.start}–{rows.stop - 1}."
    )


def merge(
    r: int, s: int, rows: slice, L_old: np.ndarray, Lb: np.ndarray, L_new: np.ndarray, q_chunks: tuple[int, ...]
) -> str:
    a, b = rows.start, rows.stop
    first = bool(np.all(np.isneginf(L_old[a:b])))
    if first:
        return (
            f"The first partial of rows {a}–{b - 1} (chunks {chunk_names(q_chunks)}): the carries held no key yet "
            f"(L = −∞), so the merge takes the partial as it is: L = {span(L_new[a:b])}."
        )
    with np.errstate(all="ignore"):
        w = np.exp(Lb[a:b] - L_new[a:b])  # (rows,) the new partial's weight
    return (
        f"The log-sum-exp rule merges the partial into rows {a}–{b - 1}: L grows from {span(L_old[a:b])} to "
        f"{span(L_new[a:b])}; each row's O becomes the weighted mean of the two, the new keys weighing "
        f"e^(Lb − L') = {span(w)}. The seed's rescaling, one level up: no division by ℓ left to do."
    )


def wait(r: int, s: int, world: int, held: int, chunks: tuple[int, ...], last: bool) -> str:
    if last:
        return (
            f"Ring step {s} done: nothing was in flight, so the wait returns at once. Device {r} has seen every shard."
        )
    return (
        f"Device {r} waits for its receive: device {held}'s shard (chunks {chunk_names(chunks)}) arrives from "
        f"device {(r - 1) % world} and becomes the shard held at ring step {s + 1}; the one it held went on to device "
        f"{(r + 1) % world}."
    )


def finish(r: int, world: int, r0: int, r1: int, L: np.ndarray) -> str:
    return (
        f"Every shard merged: device {r}'s carries are its rows' attention over the whole sequence. O[{r0}:{r1}] "
        f"and L[{r0}:{r1}] leave as they are (L = {span(L)}), in the layout's order; ring_unshard puts the "
        f"{world} devices' rows back in sequence order. Largest |L|: {num(float(np.max(np.abs(L))))}."
    )
