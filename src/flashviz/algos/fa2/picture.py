"""fa2's picture (docs/trace-schema.md): one kernel, one block per block of Q, its SRAM and its words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashviz.algos.picture import (
    CAUSAL_CHIPS,
    FA2_SRAM_ROWS,
    WRITTEN_ONCE,
    Kernel,
    Move,
    Op,
    Picker,
    Tensor,
    Texts,
    b,
    code,
    fa2_buffers,
    grouped,
    plural,
    slot,
    sub,
    when,
    width_veil,
)

from . import flops, traffic

if TYPE_CHECKING:
    from flashviz.model.config import Config

K = "fa2"
KERNELS = (Kernel(K, ("load_q", "load_kv", "scores", "online_softmax", "write_back"), grid="Tr", scope=K, main=True),)
PICKER = Picker((K,), index="block", letter="i", label="block i")

BUFFERS = fa2_buffers(K)
SRAM_ROWS = FA2_SRAM_ROWS

# the substeps' values, as the narrative card heads them
ONLINE_TEX = {
    "m_old": r"m_i^{\text{old}}",
    "m_ij": r"\mathrm{rowmax}(S_{ij})",
    "m_new": r"m_i^{\text{new}}",
    "alpha": r"\alpha = e^{m^{\text{old}} - m^{\text{new}}}",
    "l_old": r"\ell_i^{\text{old}}",
    "rowsum": r"\mathrm{rowsum}(P)",
    "l_new": r"\ell_i^{\text{new}}",
    "PV": r"P\,V_j",
}
SCORES = Op(
    "compute",
    "One matrix product in SRAM: the scores of this block's Br queries against the tile's Bc keys.",
    notes={"Sij": "= τ QᵢKⱼᵀ"},
    notes_masked={"Sij": "masked: key > query → −∞"},
)
OPS = {
    "load_q": Op(
        "read",
        "Before the loop: Qi comes in once and the three carries start empty. online_softmax, later, has three "
        "visible parts.",
        moves={"Q": Move(("Qi",))},
        online={"reloads": True},
    ),
    "load_kv": Op(
        "read",
        "A tile of K and V arrives in SRAM. Nothing is computed yet.",
        moves={"K": Move(("Kj",)), "V": Move(("Vj",))},
    ),
    "scores": SCORES,
    "online_softmax": Op(
        "softmax",
        "The online softmax: a new running max, the sum and the output rescaled to it, this tile added.",
        notes={"Sij": "holds P = exp(S − mᵢ)", "Oi": "rescaled + PV"},
        value_tex=ONLINE_TEX,
        online={"rescales": True},
    ),
    "write_back": Op(
        "write",
        "After the loop: one division, and mi and li leave as the single array L.",
        moves={
            "L": Move(("mi", "li"), {"carry": "L"}),
            "O": Move(("Oi",), note=" (÷ ℓᵢ)"),
        },
        after_loop=True,
        online={
            "out": "L",
            "out_heading": "L = mᵢ + log ℓᵢ",
            "o_heading": "O row = Oᵢ / ℓᵢ",
        },
    ),
}


def tensors(cfg: Config) -> dict[str, Tensor]:
    r = traffic.rules(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal)
    return {
        "Q": Tensor(("q", "none"), "none", r["Q"]),
        "K": Tensor(("kv", "none"), "none", r["K"]),
        "V": Tensor(("kv", "none"), "none", r["V"]),
        "O": Tensor(("q", "none"), "once", r["O"], unwritten_note=WRITTEN_ONCE),
        "L": Tensor(("q", "none"), "once", r["L"], cols="1", unwritten_note=WRITTEN_ONCE),
    }


def picture(cfg: Config) -> Texts:
    t = tensors(cfg)
    causal = CAUSAL_CHIPS if cfg.causal else ""
    divisions = flops.count(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal)["div"]  # Br·D per block, once
    return Texts(
        tagline="FlashAttention-2 forward, tile by tile",
        tensors=t,
        sram_titles={
            K: [f"SRAM of block i = {{block}} · rows {{rows}} · {grouped(sram_bytes(cfg))} bytes"],
        },
        summaries={
            K: [
                "All ",
                *plural(cfg.tr, "block"),
                f" of Q run at once, each on its own Br = {cfg.br} rows: every one is at phase ",
                slot("phase"),
                " of ",
                slot("phases"),
                ", ",
                slot("math"),
                when("j", " on tile j = ", slot("j")),
                f". No block needs anything from another.{causal}",
            ]
        },
        counting=[
            [b("Q"), " is read once, and ", b("O"), " and ", b("L"), " are written once and never read back."],
            [b("K"), " and ", b("V"), " are read once per block of Q: ", sub("T", "r"), " times."],
            [
                b("Why is nothing carried back and forth?"),
                " ",
                sub("Q", "i"),
                " sits on the outer loop, so one block of O is built from start to finish in SRAM. It is already the "
                "real answer when it is written, and ",
                sub("O", "i"),
                ", ",
                sub("m", "i"),
                ", ",
                sub("ℓ", "i"),
                " never make the trip. (FlashAttention-1 loops over K/V outside and re-reads and re-writes ",
                sub("O", "i"),
                ", ",
                sub("ℓ", "i"),
                ", ",
                sub("m", "i"),
                " on every inner iteration.)",
            ],
            [
                b("Fewer non-matmul FLOPs."),
                " The division by ",
                sub("ℓ", "i"),
                f" happens once per row, at write-back: {divisions:,} divisions in this launch, where "
                "FlashAttention-1 divides ",
                sub("O", "i"),
                " on every visit; and ",
                sub("m", "i"),
                " and ",
                sub("ℓ", "i"),
                ' leave as the single array L = m + log ℓ, which is what the backward pass needs. "Counting '
                'FLOPs" counts every kind.',
            ],
            [
                b("Not the whole story."),
                " These trips do not by themselves make FA2 faster than FlashAttention-1: FA2 re-reads K and V ",
                sub("T", "r"),
                " times where FA1 re-reads Q and its carries ",
                sub("T", "c"),
                " times, so with ",
                sub("B", "c"),
                " > ",
                sub("B", "r"),
                ' FA1 moves fewer bytes ("Compare the algorithms"). What the recorded H200 run measures instead is '
                "parallelism: FA2's ",
                sub("T", "r"),
                ' × B·H blocks fill the SMs where FA1 runs one block per head ("On the GPU"). The '
                "FlashAttention-2 paper adds its split of the work between warps and its fewer non-matmul FLOPs.",
            ],
        ],
        carries={
            "view": "online",
            "buffers": {"m": "mi", "l": "li", "o": "Oi"},
            "o_heading": "Oᵢ row (unnormalised)",
        },
        substeps_note=["the sub-operations appear on each ", code("mi, li, Oi = …"), " step"],
        headline=["O", "L"],
        against="plain softmax attention",
        veil=lambda place: width_veil(cfg, t, place.block),
    )


def sram_bytes(cfg: Config) -> int:
    return traffic.sram_bytes(cfg.n, cfg.d, cfg.br, cfg.bc)
