"""fa2-triton's picture (docs/trace-schema.md): fa2's schedule, one program per block of Q, with where each buffer
really lives (Qi, Kj, Vj in shared memory as bf16; Sij, Oi, mi, li in registers), the launch (tiles, warps, stages,
and where they come from) and what its two matrix products do on the tensor cores."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from flashviz.algos.picture import (
    CAUSAL_CHIPS,
    FA2_SRAM_ROWS,
    WRITTEN_ONCE,
    Kernel,
    Move,
    Op,
    Picker,
    Place,
    Rich,
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
from flashviz.model.pairs import tiling_of

from . import models, tiles, traffic
from . import options as option_words
from .loops import plan, stages

if TYPE_CHECKING:
    from flashviz.model.config import Config

K = "fa2_fwd"
KERNELS = (
    Kernel(
        K,
        ("load_q", "load_kv", "scores", "online_softmax", "write_back"),
        grid="Tr",
        scope=K,
        main=True,
        block_index="block",  # several q heads or packed sequences: the pick, beside the kernel's own i
    ),
)
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
    "PV": r"\mathrm{bf16}(P)\,V_j",
}
OPS = {
    "load_q": Op(
        "read",
        "Before the loop: one TMA load brings Qi into shared memory (bf16); the fp32 accumulator Oi and the carries "
        "start in registers.",
        moves={"Q": Move(("Qi",))},
        online={"reloads": True},
    ),
    "load_kv": Op(
        "read",
        "A tile of K and V arrives by TMA, bf16 into shared memory (with num_stages > 1 the next tiles are already "
        "on their way while this one is used).",
        moves={"K": Move(("Kj",)), "V": Move(("Vj",))},
    ),
    "scores": Op(
        "compute",
        "One tl.dot on the tensor cores: this block's Br queries against the tile's Bc keys, bf16 in, fp32 out, not "
        "yet scaled.",
        notes={"Sij": "= QᵢKⱼᵀ (unscaled)"},
        notes_masked={"Sij": "masked: key > query → −∞"},
    ),
    "online_softmax": Op(
        "softmax",
        "The online softmax in base 2 (scale·log₂e folded in), then the second tl.dot: bf16(P)·Vj added into Oi.",
        notes={"Sij": "holds P = exp2(S·qk_scale − mᵢ)", "Oi": "rescaled + bf16(P)V"},
        value_tex=ONLINE_TEX,
        online={"rescales": True},
    ),
    "write_back": Op(
        "write",
        "After the loop: one division; O leaves in bf16 by TMA, L in fp32.",
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
    "Which thread holds which element of a warp's 16 rows is fixed by the PTX ISA's fragment layout for the "
    "instruction; how Triton arranges the operands in shared memory (swizzling) and whether bf16(P) is fed to the "
    "second dot from registers is its compiler's choice, not visible in kernel.py.",
    "The instruction shapes and the warps' rows follow Triton 3.x's rules (supportMMA, mmaVersionToInstrShape, "
    "warpsPerTileV3), read from its source, not from this launch's compiled code; the ladder's H200 run found wgmma "
    "in the compiled code of its 64×64 and 128×64 tiles (8 warps).",
]


def tensors(cfg: Config) -> dict[str, Tensor]:
    r = models.rules(cfg)
    return {
        "Q": Tensor(("q", "none"), "none", r["Q"]),
        "K": Tensor(("kv", "none"), "none", r["K"]),
        "V": Tensor(("kv", "none"), "none", r["V"]),
        "O": Tensor(("q", "none"), "once", r["O"], unwritten_note=WRITTEN_ONCE),
        "L": Tensor(("q", "none"), "once", r["L"], cols="1", unwritten_note=WRITTEN_ONCE),
    }


def launch(cfg: Config) -> dict[str, Any]:
    ws = tiles.warps_and_stages(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal)
    return {
        "kernel": "fa2_fwd",
        "br": cfg.br,
        "bc": cfg.bc,
        "d_padded": tiles.padded(cfg.d),
        **ws,
        "shared_bytes": tiles.shared_bytes(cfg.d, cfg.br, cfg.bc, ws["num_stages"]),
        "rule": tiles.rule_text(),
    }


def tensor_cores(cfg: Config) -> dict[str, Any]:
    from flashviz.hardware.peaks import tensor_core_words  # the ladder's recorded run, read (issue 17 item 12)

    ws = tiles.warps_and_stages(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal)
    warps = ws["num_warps"]
    dp = tiles.padded(cfg.d)
    scores = tiles.dot(cfg.br, cfg.bc, dp, warps, "Qi", "Kj", "Sij")
    pv = tiles.dot(cfg.br, dp, cfg.bc, warps, "Sij", "Vj", "Oi")
    scores["title"] = [sub("S", "ij"), " = ", sub("Q", "i"), " ", sub("K", "j"), "ᵀ"]
    pv["title"] = [sub("O", "i"), " += bf16(P) ", sub("V", "j")]
    scores["b_transposed"], pv["b_transposed"] = True, False
    return {
        "ops": {"scores": scores, "online_softmax": pv},
        "warps": warps,
        "warpgroups": warps // 4,
        "num_stages": ws["num_stages"],
        "d_padded": dp,
        "hidden": HIDDEN,
        "why": "A CUDA core does one fused multiply-add per thread per instruction; one tensor-core instruction of a "
        "warpgroup does 64·N·16 of them at once. " + tensor_core_words(),
    }


def veil_of(cfg: Config, t: Mapping[str, Tensor]) -> Callable[[Place], list[dict[str, Any]] | None]:
    """What a step's block never touches: one head of plain causal attention as fa2 draws it (`width_veil`), else
    the keys outside its band and the other sequences' keys (options.veil)."""
    if not cfg.has_options:
        return lambda place: width_veil(cfg, t, place.block)
    picks = plan(cfg)
    cache: dict[int, list[dict[str, Any]] | None] = {}

    def veil(place: Place) -> list[dict[str, Any]] | None:
        if place.block not in cache:
            seg, i = picks[place.block]
            cache[place.block] = option_words.veil(cfg, t, stages(cfg, seg, i), (seg.k0, seg.k0 + seg.nk))
        return cache[place.block]

    return veil


def picture(cfg: Config) -> Texts:
    t = tensors(cfg)
    causal = CAUSAL_CHIPS if cfg.masks_tiles else ""
    smem = traffic.sram_bytes(cfg.n, cfg.d, cfg.br, cfg.bc)
    segmented = cfg.group > 1 or cfg.seqlens is not None
    program = "block {block} (i = {i})" if segmented else "program i = {block}"
    pairs = tiling_of(cfg)["pairs"] if cfg.has_options else []
    return Texts(
        tagline="FlashAttention-2 forward in Triton: bf16 tiles on the tensor cores",
        tensors=t,
        sram_titles={
            K: [
                f"On chip, {program} · rows {{rows}} · {grouped(smem)} bytes of shared memory "
                "(one stage), accumulators in registers"
            ],
        },
        summaries={
            K: [
                "All ",
                *plural(cfg.q_blocks, "program"),
                f" of Q{heads_words(cfg)} run at once, each on its own Br = {cfg.br} rows: every one is at phase ",
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
            [b("K"), " and ", b("V"), " are read once per block of Q: ", sub("T", "r"), " times.", *band_words(cfg)],
            [
                b("Half the bytes of fp32."),
                " Q, K, V and O are bf16: 2 bytes per element, so the same element counts as the seed's fp32 kernel "
                "(at the same tiles) move half the bytes; L stays fp32 (4 bytes).",
            ],
            [
                b("Bigger tiles, fewer passes."),
                " K and V are re-read once per block of Q, so the tiles a tensor-core kernel can afford (Br = 128 "
                "rows instead of the seed's 32) divide that re-reading by four; ",
                code("flashviz ladder"),
                " shows what each step bought on the H200.",
            ],
        ],
        carries={
            "view": "online",
            "buffers": {"m": "mi", "l": "li", "o": "Oi"},
            "o_heading": "Oᵢ row (unnormalised, fp32)",
        },
        substeps_note=["the sub-operations appear on each ", code("mi, li, Oi = …"), " step"],
        headline=["O", "L"],
        against="float64 attention of the bf16 inputs",
        veil=veil_of(cfg, t),
        launch=launch(cfg),
        tensor_cores=tensor_cores(cfg),
        options=option_words.section(cfg, pairs),
    )


def heads_words(cfg: Config) -> str:
    """Whose blocks the launch holds, with the options of real models."""
    parts = [f", of {cfg.group} q heads sharing one K/V head"] if cfg.group > 1 else []
    if cfg.seqlens is not None:
        parts.append(f", of {len(cfg.seqlens)} packed sequences")
    return "".join(parts)


def band_words(cfg: Config) -> Rich:
    """The counting rule's words for what the band leaves out."""
    if not cfg.has_options:
        return []
    words: Rich = []
    if cfg.masks_tiles:
        words.append(" A block reads only the tiles its band reaches (the tiles left and right of it are skipped).")
    if cfg.group > 1:
        words += [
            " Each of the ",
            b(cfg.group),
            " q heads of this K/V head reads them itself: the counts are per K/V head.",
        ]
    if cfg.seqlens is not None:
        words.append(" Each block reads its own sequence's keys only.")
    return words
