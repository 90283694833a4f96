"""Ring attention's picture (docs/trace-schema.md): one loop, flashviz.ring_attention's `_forward`, run by P devices
at once; device r is block r of Q (the block picker picks a device) and the K/V shard it holds is its tile. Its
working set (the "SRAM" panel) is in its own memory; the sequence in HBM is in the layout's order. What the ring
adds to the page, the devices round the ring, the shards in flight and each device's carries, is the trace's
`devices` (the engine's run, with the link's closed form from here)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flashviz.algos.picture import (
    WRITTEN_ONCE,
    Buffer,
    Kernel,
    Move,
    Op,
    Picker,
    Tensor,
    Texts,
    b,
    grouped,
    plural,
    slot,
    sub,
    when,
)
from flashviz.model.ring_layout import FULL, SKIP, blocks, chunk_count, owner

from . import traffic
from .record import KERNEL_NAME, calls_per_step

if TYPE_CHECKING:
    from flashviz.model.config import Config

K = KERNEL_NAME
KERNELS = (
    Kernel(K, ("init", "send", "attend", "merge", "wait", "finish"), grid="Tr", scope=K, tile_loop="step", main=True),
)
PICKER = Picker((K,), index="block", letter="i", label="device i")

BUFFERS = {
    "Kj": Buffer(("Bc", "D"), ("kv", "none"), (K,), "Kⱼ (shard held)", copy_of="K", align_under="Qi"),
    "Vj": Buffer(("Bc", "D"), ("kv", "none"), (K,), "Vⱼ (shard held)", copy_of="V", align_under="Oi"),
    "Qi": Buffer(("Br", "D"), ("q", "none"), (K,), "Qᵢ (own shard)", copy_of="Q"),
    "Ob": Buffer(("Br", "D"), ("q", "none"), (K,), "O_b (a call's partial)"),
    "Lb": Buffer(("Br", "1"), ("q", "none"), (K,), "L_b"),
    "Oi": Buffer(("Br", "D"), ("q", "none"), (K,), "Oᵢ (carried)"),
    "Li": Buffer(("Br", "1"), ("q", "none"), (K,), "Lᵢ (carried)"),
}
SRAM_ROWS = (("Kj", "Vj"), ("Qi", "Ob", "Lb", "Oi", "Li"))

OPS = {
    "init": Op(
        "read",
        "Each device starts with its own shard: its Q rows (kept), its K and V (the first shard it holds), and empty "
        "carries O = 0, L = −∞.",
        moves={"Q": Move(("Qi",)), "K": Move(("Kj",)), "V": Move(("Vj",))},
    ),
    "send": Op(
        "compute",
        "The shard held is posted to the next device round the ring, and a receive from the previous one, before "
        "any compute: the transfer runs under this step's attention calls.",
    ),
    "attend": Op(
        "compute",
        "One attention call on the device: its Q rows against the shard held (or a chunk of each), returning a "
        "partial output normalised over those keys and its log-sum-exp.",
        notes={"Ob": "partial over the held keys", "Lb": "log-sum-exp of its scores"},
    ),
    "merge": Op(
        "softmax",
        "The log-sum-exp rule merges the partial into the device's carries: the seed's rescaling, one level up.",
        notes={"Oi": "= wᵢ Oᵢ + w_b O_b", "Li": "= log(e^Lᵢ + e^L_b)"},
    ),
    "wait": Op(
        "read",
        "The receive completes: the shard the previous device sent is now the one held (at the last step nothing "
        "was in flight).",
        moves={"K": Move(("Kj",)), "V": Move(("Vj",))},
    ),
    "finish": Op(
        "write",
        "Every shard seen: the carries are the answer for the device's rows, O and L written once.",
        moves={"O": Move(("Oi",)), "L": Move(("Li",))},
        after_loop=True,
    ),
}


def tensors(cfg: Config) -> dict[str, Tensor]:
    r = traffic.rules(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal)
    order = f" ({cfg.layout} order)"
    return {
        "Q": Tensor(("q", "none"), "none", r["Q"], label="Q" + order),
        "K": Tensor(("kv", "none"), "none", r["K"], label="K" + order),
        "V": Tensor(("kv", "none"), "none", r["V"], label="V" + order),
        "O": Tensor(("q", "none"), "once", r["O"], label="O" + order, unwritten_note=WRITTEN_ONCE),
        "L": Tensor(("q", "none"), "once", r["L"], cols="1", label="L" + order, unwritten_note=WRITTEN_ONCE),
    }


def tiling(cfg: Config) -> dict[str, Any]:
    """The (device, shard) pairs as the tile map draws them: "f" every block of the pair computed in full, "s" every
    block skipped, "m" some masked or skipped (under zigzag every pair but the diagonal mixes both: its rows are
    two chunks far apart). Every device holds every shard, the last one it holds at the end."""
    P = cfg.devices
    pairs = []
    for i in range(P):
        row = []
        for j in range(P):
            kinds = {x.kind for x in blocks(i, (i - j) % P, P, cfg.layout, cfg.causal)}
            row.append("f" if kinds == {FULL} else "s" if kinds == {SKIP} else "m")
        pairs.append("".join(row))
    return {
        "pairs": pairs,
        "last_tile": [owner(i, P - 1, P) for i in range(P)],
        "kv_width": [cfg.n] * P,
        "first_block": [min(i for i in range(P) if pairs[i][j] != "s") for j in range(P)],
    }


def devices(cfg: Config) -> dict[str, Any]:
    """The closed-form part of the trace's `devices`: how the devices stand, what a device is called, the link's
    bytes per device from flashviz.hardware.ring_model, and the words the section shows."""
    P, layout = cfg.devices, cfg.layout
    parts = chunk_count(P, layout)
    how = (
        f"zigzag: the sequence is cut into 2P = {parts} chunks and device r holds chunks r and {2 * P - 1}−r, one "
        "early and one late, so that under a causal mask every device computes the same number of blocks"
        if layout == "zigzag"
        else f"contiguous: the sequence is cut into P = {parts} chunks and device r holds chunk r; under a causal "
        "mask device r computes on r + 1 shards and skips the rest, so the work is unbalanced"
    )
    return {
        "arrangement": "ring",
        "label": "device",
        "layout_note": how,
        "link": traffic.link(cfg.n, cfg.d, P, layout, cfg.causal),
        "note": (
            f"{P} devices in a ring. Each keeps its Q rows and passes the K/V shard it holds to the next device at "
            f"every step but the last, while it computes on it; after {P - 1} transfers every device has seen every "
            "shard, and its carries (O, L), merged by the log-sum-exp rule after each call, are attention over the "
            "whole sequence."
        ),
    }


def picture(cfg: Config) -> Texts:
    t = tensors(cfg)
    P = cfg.devices
    bytes_ = traffic.sram_bytes(cfg.n, cfg.d, cfg.br, cfg.bc)
    link = traffic.link(cfg.n, cfg.d, P, cfg.layout, cfg.causal)
    per = calls_per_step(cfg.layout, cfg.causal)
    return Texts(
        tagline=f"Ring attention: the sequence split across {P} devices, K/V shards passed round the ring, the "
        "carries merged by log-sum-exp",
        tensors=t,
        sram_titles={
            K: [f"device {{block}}'s working set · rows {{rows}} · {grouped(bytes_)} bytes (in its own memory)"]
        },
        summaries={
            K: [
                "All ",
                *plural(P, "device"),
                " run the same loop at once, each on its own shard (",
                b(cfg.layout),
                f" layout), {P} ring steps of up to {per} attention call{'s' if per > 1 else ''} each. Every one is "
                "at phase ",
                slot("phase"),
                " of ",
                slot("phases"),
                ", ",
                slot("math"),
                when("j", ", holding the shard of device ", slot("j")),
                ".",
            ]
        },
        counting=[
            [b("Q"), " is read once: each device keeps its own shard for the whole run."],
            [
                b("K"),
                " and ",
                b("V"),
                " are held once by each device (",
                sub("T", "r"),
                f" = P = {P} times in all): its own shard from its memory, the others as they arrive round the ring, "
                "computed on or skipped.",
            ],
            [
                b("The link."),
                f" Each device sends the shard it holds at every step but the last: {P - 1} × "
                f"{grouped(link['shard_bytes'])} bytes = {grouped(link['sent_bytes'][0])} bytes of fp32 K and V per "
                "device (flashviz.hardware.ring_model, what ",
                {"code": "flashviz compare --ring"},
                " prints), each transfer under the compute of the step that sends it.",
            ],
        ],
        carries={
            "view": "table",
            "labels": {
                "Li": "Lᵢ (carried log-sum-exp)",
                "Lb": "L_b (the call's)",
                "w_i": "wᵢ (weight of Oᵢ)",
                "w_b": "w_b (weight of O_b)",
            },
        },
        substeps_note=["the ring's steps have no sub-operations"],
        headline=["O", "L"],
        against="plain softmax attention over the whole sequence, in float64",
        launch={"devices": P, "layout": cfg.layout},
        tiling=tiling(cfg),
        devices=devices(cfg),
    )
