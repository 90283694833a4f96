"""fa2-splitkv's picture (docs/trace-schema.md): the split kernel, whose S blocks per block of Q each run FA2's loop
over one chunk of K/V, and the combine kernel; their SRAM and their words."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashviz.algos.picture import (
    FA2_SRAM_ROWS,
    WRITTEN_ONCE,
    Buffer,
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
)

from . import traffic
from .record import CHUNK, splits

if TYPE_CHECKING:
    from flashviz.model.config import Config

K, C = "fa2_splitkv", "fa2_splitkv_combine"
KERNELS = (
    Kernel(K, ("load_q", "load_kv", "scores", "online_softmax", "write_partial"), grid="Tr", scope=K, main=True),
    Kernel(C, ("load_first", "load_partial", "merge", "write_out"), grid="Tr", scope=C, tile_loop=None),
)
PICKER = Picker((K, C), index="block", letter="i", label="block i")

BUFFERS = {
    **fa2_buffers(K),
    "Oc": Buffer(("Br", "D"), ("q", "none"), (C,), "Oᶜ"),
    "Os": Buffer(("Br", "D"), ("q", "none"), (C,), "Oₛ"),
    "Lc": Buffer(("Br", "1"), ("q", "none"), (C,), "Lᶜ"),
    "Ls": Buffer(("Br", "1"), ("q", "none"), (C,), "Lₛ"),
}
SRAM_ROWS = (*FA2_SRAM_ROWS, ("Oc", "Os", "Lc", "Ls"))

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
MERGE_TEX = {
    "m": r"m = \max(L_c, L_s)",
    "wc": r"w_c = e^{L_c - m}",
    "ws": r"w_s = e^{L_s - m}",
    "Lc_old": r"L_c^{\text{old}}",
    "Lc": r"L_c = m + \log(w_c + w_s)",
}
OPS = {
    "load_q": Op(
        "read",
        "A split block starts: Qi comes in (each of the S chunks' blocks loads it) and the three carries start empty.",
        moves={"Q": Move(("Qi",))},
        online={"reloads": True},
    ),
    "load_kv": Op(
        "read",
        "A tile of this block's chunk of K and V arrives in SRAM. Nothing is computed yet.",
        moves={"K": Move(("Kj",)), "V": Move(("Vj",))},
    ),
    "scores": Op(
        "compute",
        "One matrix product in SRAM: the scores of this block's Br queries against the tile's Bc keys.",
        notes={"Sij": "= τ QᵢKⱼᵀ"},
    ),
    "online_softmax": Op(
        "softmax",
        "FA2's online softmax, over this chunk's tiles only: a new running max, the sum and the output rescaled.",
        notes={"Sij": "holds P = exp(S − mᵢ)", "Oi": "rescaled + PV"},
        value_tex=ONLINE_TEX,
        online={"rescales": True},
    ),
    "write_partial": Op(
        "write",
        "After the chunk: Oi / li and L = mi + log li leave as a partial result, to be merged by the combine kernel.",
        moves={
            "Lpart": Move(("mi", "li"), {"carry": "L"}),
            "Opart": Move(("Oi",), note=" (÷ ℓᵢ)"),
        },
        after_loop=True,
        online={
            "out": "L",
            "out_heading": "Lₛ = mᵢ + log ℓᵢ",
            "o_heading": "partial O row = Oᵢ / ℓᵢ",
        },
    ),
    "load_first": Op(
        "read",
        "The combine starts from partial 0 of its rows: Oc and Lc.",
        moves={"Opart": Move(("Oc",)), "Lpart": Move(("Lc",))},
    ),
    "load_partial": Op(
        "read",
        "The next partial of these rows comes back from HBM.",
        moves={"Opart": Move(("Os",)), "Lpart": Move(("Ls",))},
    ),
    "merge": Op(
        "compute",
        "The log-sum-exp rule: two normalised partials, weighted by e^(L − L'), become one.",
        notes={"Oc": "= wᶜ Oᶜ + wₛ Oₛ", "Lc": "= log(e^Lᶜ + e^Lₛ)"},
        value_tex=MERGE_TEX,
    ),
    "write_out": Op(
        "write",
        "Every partial merged: O and L are written once.",
        moves={"O": Move(("Oc",)), "L": Move(("Lc",))},
        after_loop=True,
    ),
}


def tensors(cfg: Config) -> dict[str, Tensor]:
    r = traffic.rules(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal)
    partial = "not written yet:\nwritten once per chunk,\nat write_partial"
    return {
        "Q": Tensor(("q", "none"), "none", r["Q"]),
        "K": Tensor(("kv", "none"), "none", r["K"]),
        "V": Tensor(("kv", "none"), "none", r["V"]),
        "Opart": Tensor(("none", "none"), "once", r["Opart"], unwritten_note=partial),
        "Lpart": Tensor(("none", "none"), "once", r["Lpart"], cols="1", label="Lpart", unwritten_note=partial),
        "O": Tensor(("q", "none"), "once", r["O"], unwritten_note=WRITTEN_ONCE),
        "L": Tensor(("q", "none"), "once", r["L"], cols="1", unwritten_note=WRITTEN_ONCE),
    }


def picture(cfg: Config) -> Texts:
    t = tensors(cfg)
    S = splits(cfg.n, cfg.bc)
    return Texts(
        tagline="Flash-Decoding: FA2 with the keys split into chunks, then a log-sum-exp combine",
        tensors=t,
        sram_titles={
            K: [f"SRAM of split block i = {{block}} · rows {{rows}} · {grouped(sram_bytes(cfg))} bytes"],
            C: ["SRAM of combine block i = {block} · rows {rows}"],
        },
        summaries={
            K: [
                "All ",
                *plural(cfg.tr * S, "block"),
                f" of the split kernel run at once: each of the Tr = {cfg.tr} blocks of Q is split into S = {S} "
                f"block{'s' if S != 1 else ''}, one per chunk of {CHUNK} K/V tiles. Every one is at phase ",
                slot("phase"),
                " of ",
                slot("phases"),
                ", ",
                slot("math"),
                when("j", " on tile j = ", slot("j")),
                ".",
            ],
            C: [
                "All ",
                *plural(cfg.tr, "block"),
                " of the combine kernel run at once, one per block of Q, each merging its rows' S partials: phase ",
                slot("phase"),
                " of ",
                slot("phases"),
                ", ",
                slot("math"),
                ".",
            ],
        },
        counting=[
            [b("K"), " and ", b("V"), " are read once per block of Q (", sub("T", "r"), " times), as in FA2."],
            [b("Q"), f" is read once per chunk: S = {S} times, by each split block of a block of Q."],
            [
                b("The price of the split."),
                " Each of the S partials (",
                b("Opart"),
                ", ",
                b("Lpart"),
                ") is written to HBM and read back once by the combine: 2·S·N·(D + 1) elements that FA2 never moves. ",
                b("What it buys."),
                " ",
                sub("T", "r"),
                " × S × B·H blocks instead of ",
                sub("T", "r"),
                " × B·H: when N of queries is small (decoding, one block of Q) FA2 leaves most SMs idle, "
                'and the split fills them ("Compare the algorithms").',
            ],
        ],
        carries={
            "view": "online",
            "buffers": {"m": "mi", "l": "li", "o": "Oi"},
            "o_heading": "Oᵢ row (unnormalised)",
        },
        substeps_note=["the sub-operations appear on each ", code("mi, li, Oi = …"), " and merge step"],
        headline=["O", "L"],
        against="plain softmax attention",
    )


def sram_bytes(cfg: Config) -> int:
    return traffic.sram_bytes(cfg.n, cfg.d, cfg.br, cfg.bc)
