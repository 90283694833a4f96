"""standard's picture (docs/trace-schema.md): three kernels, each with a block per block of Q; the page follows
block i through all three (one scope), showing the other kernels' buffers dimmed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashviz.algos.picture import (
    CAUSAL_CHIPS,
    NOT_WRITTEN,
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
    width_veil,
)

from . import traffic

if TYPE_CHECKING:
    from flashviz.model.config import Config

S1, S2, S3 = "standard_scores", "standard_softmax", "standard_pv"
SCOPE = "block i"
KERNELS = (
    Kernel(S1, ("load_q", "load_k", "scores"), grid="Tr", scope=SCOPE, main=True),
    Kernel(S2, ("softmax_row",), grid="Tr", scope=SCOPE, tile_loop=None),
    Kernel(S3, ("load_pv", "accumulate", "write_o"), grid="Tr", scope=SCOPE),
)
PICKER = Picker((S1, S2, S3), index="block", letter="i", label="block i")

BUFFERS = {
    "Kj": Buffer(("Bc", "D"), ("kv", "none"), (S1,), "Kⱼ", copy_of="K", align_under="Qi"),
    "Vj": Buffer(("Bc", "D"), ("kv", "none"), (S3,), "Vⱼ", copy_of="V", align_under="Oi"),
    "Qi": Buffer(("Br", "D"), ("q", "none"), (S1,), "Qᵢ", copy_of="Q"),
    "Sij": Buffer(("Br", "Bc"), ("q", "kv"), (S1,), "Sᵢⱼ"),
    "Pij": Buffer(("Br", "Bc"), ("q", "kv"), (S3,), "Pᵢⱼ"),
    "Oi": Buffer(("Br", "D"), ("q", "none"), (S3,), "Oᵢ"),
    "Sr": Buffer(("1", "N"), ("none", "none"), (S2,), "Sᵣ", row_index="r", row_of="S, then of P"),
    "mr": Buffer(("1", "1"), ("none", "none"), (S2,), "mᵣ"),
    "lr": Buffer(("1", "1"), ("none", "none"), (S2,), "ℓᵣ"),
}
SRAM_ROWS = (("Kj", "Vj"), ("Qi", "Sij", "Pij", "Oi"), ("Sr", "mr", "lr"))

OPS = {
    "load_q": Op(
        "read",
        "Qi comes in once: block i keeps it while the tiles of K stream past (kernel 1 of 3).",
        moves={"Q": Move(("Qi",))},
    ),
    "load_k": Op("read", "A tile of K arrives in SRAM (kernel 1 of 3).", moves={"K": Move(("Kj",))}),
    "scores": Op(
        "write",
        "One matrix product in SRAM, the scores of this block's Br queries against the tile's Bc keys, stored to "
        "HBM as a tile of S (kernel 1 of 3).",
        moves={"S": Move(("Sij",))},
        notes={"Sij": "= τ QᵢKⱼᵀ"},
        notes_masked={"Sij": "masked: key > query → −∞"},
    ),
    "softmax_row": Op(
        "write",
        "One row of S comes back from HBM whole; its softmax goes out as a row of P (kernel 2 of 3).",
        moves={"S": Move(("Sr",)), "P": Move(("Sr",))},
    ),
    "load_pv": Op(
        "read",
        "A tile of P comes back from HBM with its tile of V (kernel 3 of 3).",
        moves={"P": Move(("Pij",)), "V": Move(("Vj",))},
    ),
    "accumulate": Op("compute", "Oi += Pij Vj in SRAM."),
    "write_o": Op("write", "O leaves once. S and P, N×N each, have made two trips each.", moves={"O": Move(("Oi",))}),
}


def tensors(cfg: Config) -> dict[str, Tensor]:
    r = traffic.rules(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal)
    return {
        "Q": Tensor(("q", "none"), "none", r["Q"]),
        "K": Tensor(("kv", "none"), "none", r["K"]),
        "V": Tensor(("kv", "none"), "none", r["V"]),
        "S": Tensor(("q", "kv"), "once", r["S"], cols="N", scale_like="Sij", unwritten_note=NOT_WRITTEN),
        "P": Tensor(("q", "kv"), "once", r["P"], cols="N", scale_like="Sr", unwritten_note=NOT_WRITTEN),
        "O": Tensor(("q", "none"), "once", r["O"], unwritten_note=WRITTEN_ONCE),
    }


def picture(cfg: Config) -> Texts:
    t = tensors(cfg)
    most = grouped(traffic.sram_bytes(cfg.n, cfg.d, cfg.br, cfg.bc))
    title = [f"SRAM of block i = {{block}} · rows {{rows}} · three kernels, {most} bytes at most"]
    summary = [
        "Three kernels, one after another; in each, all ",
        *plural(cfg.tr, "block"),
        f" of Q run at once on their own Br = {cfg.br} rows. Every block is at phase ",
        slot("phase"),
        " of ",
        slot("phases"),
        ", ",
        slot("math"),
        ". Block i of a kernel reads only what block i of the one before wrote." + (CAUSAL_CHIPS if cfg.causal else ""),
    ]
    return Texts(
        tagline="Standard attention: S and P written to HBM",
        tensors=t,
        sram_titles={k.name: title for k in KERNELS},
        summaries={k.name: summary for k in KERNELS},
        counting=[
            [
                b("S"),
                " and ",
                b("P"),
                " are N×N: written to HBM and read back, once each, by three separate kernels. That is 4N² "
                "elements against FA2's O(",
                sub("T", "r"),
                "·N·D), and N² floats of memory each.",
            ],
            [
                b("K"),
                " and ",
                b("V"),
                " are streamed once per block of Q, exactly as in FA2: the difference is all in S and P.",
            ],
            [
                b("What FlashAttention changes:"),
                " one fused kernel keeps each tile of S and P in SRAM and never writes them; the online softmax (m, "
                "ℓ carried per row) is what makes the row-at-a-time softmax unnecessary.",
            ],
        ],
        carries={"view": "table", "labels": {"mr": "mᵣ (row max)", "lr": "ℓᵣ (row sum)"}},
        substeps_note=["this algorithm's steps have no sub-operations"],
        headline=["O"],
        against="plain softmax attention",
        veil=lambda place: width_veil(cfg, t, place.block),
    )
