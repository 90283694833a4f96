"""Ring attention's words (flashviz.algos.words): every sentence of its steps, plain text with named slots, said after
the run from each step's record (device r is indices["i"], the ring step indices["step"], the shard held `j`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos.picture import Rich
from flashviz.algos.words import Said, moves_action, num, span
from flashviz.model.ring_layout import blocks, calls, chunks
from flashviz.model.units import FLOAT_BYTES, human_bytes

from . import picture

if TYPE_CHECKING:
    from flashviz.engine.steps import Record
    from flashviz.model.config import Config

# op -> (the seed-style label, TeX)
LABELS = {
    "init": (
        "Oi = 0; Li = -inf; Kj, Vj = own K, V shard",
        r"O_i \leftarrow 0;\; L_i \leftarrow -\infty;\; K_j, V_j \leftarrow K[i], V[i]",
    ),
    "send": ("post: send Kj, Vj to i+1, receive from i-1", r"K_j, V_j \rightarrow \text{device } i{+}1"),
    "attend": ("Ob, Lb = attention(Qi, Kj, Vj)", r"O_b, L_b \leftarrow \mathrm{attention}(Q_i, K_j, V_j)"),
    "merge": (
        "Li, Oi = lse(Li, Lb), weighted Oi + Ob",
        r"L' = \log(e^{L_i} + e^{L_b}),\; O_i \leftarrow e^{L_i - L'} O_i + e^{L_b - L'} O_b",
    ),
    "wait": ("wait: Kj, Vj = the shard from i-1", r"K_j, V_j \leftarrow \text{device } i{-}1\text{'s}"),
    "finish": ("O[i], L[i] = Oi, Li", r"O[i] \leftarrow O_i,\; L[i] \leftarrow L_i"),
}
PARTS: dict[str, tuple[tuple[str, str, str], ...]] = {}  # no step shown in parts

# ---- the narrative sentences ----

INIT = (
    "Device {r} of {P} starts with its shard of the sequence: {where}, {c} rows each. Its Q rows stay for the whole "
    "run; its own K, V shard is the first it holds; its carries start empty: O = 0 and L = −∞ on every row (a "
    "partial over no keys, which the merge rule leaves unchanged)."
)
ZIGZAG_SHARD = (
    "chunks {own} of the {parts} the zigzag cuts the sequence into (one early, one late, so that under a causal mask "
    "every device does the same work)"
)
CONTIGUOUS_SHARD = "chunk {own} of {P}"
SEND = (
    "Ring step {s} (of 0–{last}): device {r} holds {whose} (chunks {chunks}) and posts it to device {to} ({bytes} of K "
    "and V), with a receive from device {source}, in one batch. The transfer runs while the device computes on the "
    "very shard it is sending: that overlap is the ring's point."
)
SEND_LAST = (
    "Ring step {s}, the last of 0–{last}: device {r} holds {whose} (chunks {chunks}), which every other device has "
    "now seen, so nothing is posted: no send, no receive."
)
OWN_SHARD = "its own shard"
SHARD_OF = "device {held}'s shard"
ATTEND = (
    "One attention call{which}: {q_chunks} against {k_chunks}{mask}. It returns a partial result over those keys only, "
    "normalised over them: Ob and Lb = log-sum-exp of the scores, {Lb} on rows {first}–{last}."
)
CALL_OF = " (call {call} of {calls})"
CAUSAL_CALL = " under the causal mask (the same chunks: key ≤ query inside them)"
MERGE_FIRST = (
    "The first partial of rows {first}–{last} (chunks {chunks}): the carries held no key yet (L = −∞), so the merge "
    "takes the partial as it is: L = {L_new}."
)
MERGE = (
    "The log-sum-exp rule merges the partial into rows {first}–{last}: L grows from {L_old} to {L_new}; each row's O "
    "becomes the weighted mean of the two, the new keys weighing e^(Lb − L') = {weights}. The seed's rescaling, one "
    "level up: no division by ℓ left to do."
)
WAIT = (
    "Device {r} waits for its receive: device {held}'s shard (chunks {chunks}) arrives from device {source} and "
    "becomes the shard held at ring step {next}; the one it held went on to device {to}."
)
WAIT_LAST = "Ring step {s} done: nothing was in flight, so the wait returns at once. Device {r} has seen every shard."
FINISH = (
    "Every shard merged: device {r}'s carries are its rows' attention over the whole sequence. O[{r0}:{r1}] and "
    "L[{r0}:{r1}] leave as they are (L = {L}), in the layout's order; ring_unshard puts the {P} devices' rows back in "
    "sequence order. Largest |L|: {largest}."
)

# ---- the Action column (the moves of init, wait and finish say themselves: moves_action) ----

ACTION = {
    "send": "shard of device {held} → device {to}; receive from device {source}",
    "send_last": "last step: nothing posted",
    "attend": "O_b, L_b ← attention(Qᵢ, shard of device {held})",
    "merge": "Lᵢ, Oᵢ ← log-sum-exp merge with O_b, L_b",
    "wait_last": "nothing in flight: done",
}

# ---- the carries panel's notes ----

NOTES = {
    "init": "The carries start empty: Oᵢ = 0, Lᵢ = −∞ on every row (no key seen yet).",
    "send": "The carries wait while the shard held is posted to the next device.",
    "attend": "The call's partial L_b, over the held keys only; the carries Lᵢ are not touched yet.",
    "merge": "Lᵢ becomes the log-sum-exp of both; each row's Oᵢ the mean of both partials, weighted by "
    "wᵢ = e^(Lᵢ − L') and w_b = e^(L_b − L'), which sum to 1.",
    "wait": "The carries wait while the next shard arrives.",
    "finish": "Lᵢ and Oᵢ are the answer over the whole sequence: written once.",
}


def chunk_names(cs: Sequence[int]) -> str:
    return " and ".join(f"c{k}" for k in cs)


def of_chunks(cs: Sequence[int], what: str) -> str:
    """'Q chunk c1', 'K/V chunks c0 and c7'."""
    return f"{what} chunk{'s' if len(cs) > 1 else ''} {chunk_names(cs)}"


def call_of(
    cfg: Config, r: int, s: int, held: int, k: int
) -> tuple[int, slice, tuple[int, ...], tuple[int, ...], bool]:
    """Call k of device r at ring step s, holding device `held`'s shard (ring_layout.calls, as the engine makes them):
    how many calls the step makes, the call's rows of the device's shard, its Q and K/V chunks, whether it is masked."""
    P, layout = cfg.devices, cfg.layout
    own = chunks(r, P, layout)
    c = cfg.br // len(own)  # rows per chunk
    todo = calls(blocks(r, s, P, layout, cfg.causal), len(own))
    call = todo[k]
    keys = chunks(held, P, layout)
    return len(todo), slice(call.q0 * c, call.q1 * c), own[call.q0 : call.q1], keys[call.k0 : call.k1], call.causal


def merge(rows: slice, L_old: np.ndarray, Lb: np.ndarray, L_new: np.ndarray, q_chunks: Sequence[int]) -> str:
    a, b = rows.start, rows.stop
    if bool(np.all(np.isneginf(L_old[a:b]))):
        return MERGE_FIRST.format(first=a, last=b - 1, chunks=chunk_names(q_chunks), L_new=span(L_new[a:b]))
    with np.errstate(all="ignore"):
        w = np.exp(Lb[a:b] - L_new[a:b])  # (rows,) the new partial's weight
    return MERGE.format(first=a, last=b - 1, L_old=span(L_old[a:b]), L_new=span(L_new[a:b]), weights=span(w))


def text(cfg: Config, s: Record) -> str:
    P, layout = cfg.devices, cfg.layout
    r, held = s.indices["i"], s.indices["j"]
    if s.op == "init":
        own = chunks(r, P, layout)
        where = (
            ZIGZAG_SHARD.format(own=chunk_names(own), parts=2 * P)
            if layout == "zigzag"
            else CONTIGUOUS_SHARD.format(own=chunk_names(own), P=P)
        )
        return INIT.format(r=r, P=P, where=where, c=cfg.br // len(own))
    if s.op == "finish":
        assert s.carries is not None
        L = s.carries["Li"]
        r0, r1 = r * cfg.br, (r + 1) * cfg.br
        return FINISH.format(r=r, r0=r0, r1=r1, L=span(L), P=P, largest=num(float(np.max(np.abs(L)))))
    step = s.indices["step"]
    last = step == P - 1
    if s.op == "send":
        said = {"s": step, "last": P - 1, "r": r, "chunks": chunk_names(chunks(held, P, layout))}
        said["whose"] = OWN_SHARD if held == r else SHARD_OF.format(held=held)
        if last:
            return SEND_LAST.format(**said)
        nbytes = human_bytes(2 * cfg.br * cfg.d * FLOAT_BYTES, digits=1)
        return SEND.format(**said, to=(r + 1) % P, bytes=nbytes, source=(r - 1) % P)
    if s.op == "wait":
        if last:
            return WAIT_LAST.format(s=step, r=r)
        chunked = chunk_names(chunks(held, P, layout))
        return WAIT.format(r=r, held=held, chunks=chunked, source=(r - 1) % P, next=step + 1, to=(r + 1) % P)
    assert s.carries is not None
    k = s.facts["call"]
    count, rows, q_chunks, k_chunks, masked = call_of(cfg, r, step, held, k)
    if s.op == "attend":
        return ATTEND.format(
            which="" if count == 1 else CALL_OF.format(call=k + 1, calls=count),
            q_chunks=of_chunks(q_chunks, "Q"),
            k_chunks=of_chunks(k_chunks, "K/V"),
            mask=CAUSAL_CALL if masked else "",
            Lb=span(s.carries["Lb"][rows]),
            first=rows.start,
            last=rows.stop - 1,
        )
    assert s.op == "merge", s.op
    return merge(rows, s.facts["L_old"], s.carries["Lb"], s.carries["Li"], q_chunks)


def action(cfg: Config, s: Record) -> str:
    P, r, held = cfg.devices, s.block, s.j
    if s.op == "send" and s.indices.get("step") == P - 1:
        return ACTION["send_last"]
    if s.op in ("send", "attend", "merge"):
        return ACTION[s.op].format(held=held, to=(r + 1) % P, source=(r - 1) % P)
    if s.op == "wait" and not s.transfers:
        return ACTION["wait_last"]
    return moves_action(s, picture.OPS, LABELS[s.op][0])


def say(cfg: Config, s: Record, state: Mapping[str, np.ndarray]) -> Said:
    note: Rich = [NOTES[s.op]]
    return Said(text(cfg, s), action(cfg, s), note)
