"""fa3's picture (docs/trace-schema.md): one program per block of Br = 128 rows of Q at a time, its producer warp
loading Qi and the ring of Kj, Vj by TMA, its two consumer warpgroups (64 rows of Qi each) running the products on
the tensor cores and the softmax in registers; the steps in the order the overlapped schedule runs them (tile j's
`online_softmax` carries tile j−1's P·V). Who runs each step, and which ring slot its tiles sit in, is each step's
`schedule`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

from ..fa2_triton.tiles import dot
from . import measured, schedule, tiles, traffic

if TYPE_CHECKING:
    from flashviz.model.config import Config

K = "fa3_fwd"
OPS_IN_ORDER = ("load_q", "load_kv", "first_tile", "scores", "online_softmax", "last_pv", "write_back")
KERNELS = (Kernel(K, OPS_IN_ORDER, grid="Tr", scope=K, main=True),)
PICKER = Picker((K,), index="block", letter="i", label="block i")

BUFFERS = fa2_buffers(K)
SRAM_ROWS = FA2_SRAM_ROWS

ONLINE_TEX = {
    "m_old": r"m_i^{\text{old}}\ (\log_2)",
    "m_ij": r"\tau \log_2 e \cdot \mathrm{rowmax}(S_{ij})",
    "m_new": r"m_i^{\text{new}}",
    "alpha": r"\alpha = 2^{\,m^{\text{old}} - m^{\text{new}}}",
    "l_old": r"\ell_i^{\text{old}}",
    "rowsum": r"\mathrm{rowsum}(P)",
    "l_new": r"\ell_i^{\text{new}}",
    "PV": r"\mathrm{bf16}(P_{j-1})\,V_{j-1}",
}
OPS = {
    "load_q": Op(
        "read",
        "The producer warp: two TMA loads bring Qi's halves (64 rows each, one per consumer warpgroup) into shared "
        "memory; the consumers start Oi = 0, mi = −∞, li = 0 in their registers.",
        moves={"Q": Move(("Qi",))},
        online={"reloads": True},
    ),
    "load_kv": Op(
        "read",
        "The producer warp: Kj and Vj by TMA into the next ring slot, as soon as both consumers have released it; "
        "the consumers wait only on the slot's ready mbarrier.",
        moves={"K": Move(("Kj",)), "V": Move(("Vj",))},
    ),
    "first_tile": Op(
        "softmax",
        "Tile 0, peeled: S = QiK₀ᵀ on the tensor cores (waited: nothing to overlap yet), masked, and the "
        "first softmax in base 2; its P·V waits for tile 1.",
        notes={"Sij": "holds P = exp2(S·qk_scale − mᵢ)"},
        notes_masked={"Sij": "masked → −∞, then P"},
        value_tex=ONLINE_TEX,
        online={"rescales": True},
    ),
    "scores": Op(
        "compute",
        "Each consumer warpgroup, in its ping-pong turn, issues S = QᵢKⱼᵀ for its 64 rows "
        "(wgmma, asynchronous): fp32, unscaled, unmasked.",
        notes={"Sij": "= QᵢKⱼᵀ (in flight)"},
    ),
    "online_softmax": Op(
        "softmax",
        "Tile j−1's rescale and P·V are issued under tile j's product; then tile j's mask and softmax run "
        "while P·V is still on the tensor cores.",
        notes={"Sij": "holds P = exp2(S·qk_scale − mᵢ)", "Oi": "rescaled + bf16(Pⱼ₋₁)V"},
        notes_masked={"Sij": "masked → −∞, then P"},
        value_tex=ONLINE_TEX,
        online={"rescales": True},
    ),
    "last_pv": Op(
        "compute",
        "After the loop: the last tile's rescale and P·V into Oi.",
        notes={"Oi": "rescaled + bf16(P)V (last tile)"},
    ),
    "write_back": Op(
        "write",
        "Each warpgroup: one division, its 64 rows of O staged in shared memory and stored by TMA in bf16; L in fp32.",
        moves={
            "L": Move(("mi", "li"), {"carry": "L"}),
            "O": Move(("Oi",), note=" (÷ ℓᵢ, bf16)"),
        },
        after_loop=True,
        online={
            "out": "L",
            "out_heading": "L = (mᵢ + log₂ ℓᵢ)·ln 2",
            "o_heading": "O row = bf16(Oᵢ / ℓᵢ)",
        },
    ),
}

HIDDEN = [
    "The register layouts are kernel.py's own (Gluon states them): each consumer warpgroup's accumulators are "
    "NVMMADistributedLayout v3 with 4 warps along M, so warp w of warpgroup g holds rows 64g + 16w .. 64g + 16w + 15 "
    "of Sij and Oi; P stays in those registers as wgmma's A operand.",
    "When the wgmma products and the softmax actually overlap is the hardware's: the steps here are the order the "
    "code issues them, and each step's schedule says which partition issues it and which ring slot it reads.",
]


def tensors(cfg: Config) -> dict[str, Tensor]:
    r = traffic.rules(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal)
    return {
        "Q": Tensor(("q", "none"), "none", r["Q"]),
        "K": Tensor(("kv", "none"), "none", r["K"]),
        "V": Tensor(("kv", "none"), "none", r["V"]),
        "O": Tensor(("q", "none"), "once", r["O"], unwritten_note=WRITTEN_ONCE),
        "L": Tensor(("q", "none"), "once", r["L"], cols="1", unwritten_note=WRITTEN_ONCE),
    }


def launch(cfg: Config) -> dict[str, Any]:
    return {
        "kernel": K,
        "br": cfg.br,
        "bc": cfg.bc,
        "num_warps": 12,
        "num_stages": tiles.stages(cfg.d),
        "partitions": "a producer warp (24 registers per thread) and two consumer warpgroups of 4 warps (240 each)",
        "shared_bytes": tiles.shared_bytes(cfg.d),
        "source": "launcher.FWD_CONFIGS",
        "why": f"the launcher's config for D={cfg.d}: Bc={cfg.bc}, {tiles.stages(cfg.d)} ring slots, ping-pong and "
        "intra-warpgroup overlap on",
        "rule": tiles.RULE,
    }


def tensor_cores(cfg: Config) -> dict[str, Any]:
    from flashviz.hardware.peaks import tensor_core_words

    warps = 8  # the two consumer warpgroups: warp w holds rows 16w .. 16w + 15 of the block's 128
    scores = dot(cfg.br, cfg.bc, cfg.d, warps, "Qi", "Kj", "Sij")
    pv = dot(cfg.br, cfg.d, cfg.bc, warps, "Sij", "Vj", "Oi")
    scores["title"] = [sub("S", "ij"), " = ", sub("Q", "i"), " ", sub("K", "j"), "ᵀ"]
    pv["title"] = [sub("O", "i"), " += bf16(P) ", sub("V", "j")]
    scores["b_transposed"], pv["b_transposed"] = True, False
    return {
        "ops": {"first_tile": scores, "scores": scores, "online_softmax": pv, "last_pv": pv},
        "warps": warps,
        "warpgroups": 2,
        "num_stages": tiles.stages(cfg.d),
        "d_padded": cfg.d,
        "hidden": HIDDEN,
        "why": "Each consumer warpgroup issues its own m64nNk16 wgmma for its 64 rows; ping-pong passes the tensor "
        "cores from one warpgroup to the other so that one's softmax runs under the other's products. "
        + tensor_core_words(),
    }


def picture(cfg: Config) -> Texts:
    t = tensors(cfg)
    causal = CAUSAL_CHIPS if cfg.causal else ""
    smem = tiles.shared_bytes(cfg.d)
    return Texts(
        tagline="FlashAttention-3 forward in Gluon: a producer warp and two consumer warpgroups",
        tensors=t,
        sram_titles={
            K: [
                f"On chip, program of block i = {{block}} · rows {{rows}} · {grouped(smem)} bytes of shared "
                f"memory ({tiles.stages(cfg.d)} ring slots of Kj, Vj, Qi, O staging), accumulators in registers"
            ],
        },
        summaries={
            K: [
                "All ",
                *plural(cfg.tr, "program"),
                f" of Q run at once, each on Br = {cfg.br} rows split between two consumer warpgroups: every one is "
                "at phase ",
                slot("phase"),
                " of ",
                slot("phases"),
                ", ",
                slot("math"),
                when("j", " on tile j = ", slot("j")),
                f". No program needs anything from another.{causal}",
            ]
        },
        counting=[
            [b("Q"), " is read once, and ", b("O"), " and ", b("L"), " are written once and never read back."],
            [b("K"), " and ", b("V"), " are read once per block of Q: ", sub("T", "r"), " times, as fa2-triton's."],
            [
                b("The same bytes, moved earlier."),
                " A producer warp issues every load by TMA into a ring of shared-memory slots while the consumers "
                "compute, so the counts are FA2's at the same tiles; what FA3 changes is when they happen.",
            ],
        ],
        carries={
            "view": "online",
            "buffers": {"m": "mi", "l": "li", "o": "Oi"},
            "o_heading": "Oᵢ row (unnormalised, fp32)",
        },
        substeps_note=["the sub-operations appear on each ", code("online_softmax"), " step"],
        headline=["O", "L"],
        against="float64 attention of the bf16 inputs",
        veil=lambda place: width_veil(cfg, t, place.block),
        launch=launch(cfg),
        tensor_cores=tensor_cores(cfg),
        # the model's lanes, and the recorded H200 run's measured lanes and tensor pipe beside them
        schedule={
            **schedule.model(cfg, cfg.recorded_blocks(cfg.tr)),
            **measured.beside(cfg, cfg.recorded_blocks(cfg.tr)),
        },
    )
