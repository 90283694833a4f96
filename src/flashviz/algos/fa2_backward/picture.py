"""fa2-backward's picture (docs/trace-schema.md): the preprocessing kernel (one block per block of Q), then fa2_bwd
(one block per tile of K/V), whose blocks the picker picks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flashviz.algos.picture import (
    CAUSAL_CHIPS,
    NOT_WRITTEN,
    Axis,
    Buffer,
    Kernel,
    Move,
    Op,
    Picker,
    Place,
    Tensor,
    Texts,
    b,
    code,
    grouped,
    plural,
    rows_before_veil,
    slot,
    sub,
)
from flashviz.model.tiling import first_block

from . import traffic

if TYPE_CHECKING:
    from flashviz.model.config import Config

PRE, BWD = "fa2_bwd_preprocess", "fa2_bwd"
KERNELS = (
    Kernel(PRE, ("load_do_o", "write_delta"), grid="Tr", scope="preprocess", tile_loop=None),
    Kernel(
        BWD,
        ("load_kv", "load_q", "probs", "dv", "ds", "dk", "dq", "write_back"),
        grid="Tc",
        scope=BWD,
        tile_loop=None,
        main=True,
    ),
)
PICKER = Picker((BWD,), index="block", letter="j", label="block j")

BUFFERS = {
    "Kj": Buffer(("Bc", "D"), ("kv", "none"), (BWD,), "Kⱼ", copy_of="K", align_under="Qi"),
    "Vj": Buffer(("Bc", "D"), ("kv", "none"), (BWD,), "Vⱼ", copy_of="V", align_under="dOi"),
    "dKj": Buffer(("Bc", "D"), ("kv", "none"), (BWD,), "dKⱼ"),
    "dVj": Buffer(("Bc", "D"), ("kv", "none"), (BWD,), "dVⱼ"),
    "Qi": Buffer(("Br", "D"), ("q", "none"), (BWD,), "Qᵢ", copy_of="Q"),
    "dOi": Buffer(("Br", "D"), ("q", "none"), (PRE, BWD), "dOᵢ", copy_of="dO"),
    "Oi": Buffer(("Br", "D"), ("q", "none"), (PRE,), "Oᵢ"),
    "Pij": Buffer(("Br", "Bc"), ("q", "kv"), (BWD,), "Pᵢⱼ"),
    "dSij": Buffer(("Br", "Bc"), ("q", "kv"), (BWD,), "dSᵢⱼ"),
    "Li": Buffer(("Br", "1"), ("q", "none"), (BWD,), "Lᵢ", copy_of="L"),
    "Deltai": Buffer(("Br", "1"), ("q", "none"), (PRE, BWD), "Δᵢ"),
}
SRAM_ROWS = (("Kj", "Vj", "dKj", "dVj"), ("Qi", "dOi", "Oi", "Pij", "dSij", "Li", "Deltai"))

OPS = {
    "load_do_o": Op(
        "read",
        "Preprocessing: dOi and Oi come in to compute Δ = rowsum(dO ∘ O).",
        moves={"dO": Move(("dOi",)), "O": Move(("Oi",))},
    ),
    "write_delta": Op(
        "write",
        "Δ goes out (N values) and dQ is zeroed for the atomic adds to come.",
        moves={"Delta": Move(("Deltai",), {"carry": "Deltai"}), "dQ": Move((), {"fill": 0})},
    ),
    "load_kv": Op(
        "read",
        "Block j's tile of K and V arrives in SRAM, to stay there; dKj and dVj start at 0 beside it.",
        moves={"K": Move(("Kj",)), "V": Move(("Vj",))},
    ),
    "load_q": Op(
        "read",
        "A block of Q streams in with its dOi, Li and Δi: everything this visit needs.",
        moves={"Q": Move(("Qi",)), "dO": Move(("dOi",)), "L": Move(("Li",)), "Delta": Move(("Deltai",))},
    ),
    "probs": Op(
        "softmax",
        "Pij is recomputed from the forward's L: exp(Qi Kjᵀ · scale − Li); P was never stored.",
        notes_masked={"Pij": "0 where key > query"},
    ),
    "dv": Op("compute", "dVj += Pijᵀ dOi, in SRAM."),
    "ds": Op("softmax", "dSij = Pij ∘ (dOi Vjᵀ − Δi)."),
    "dk": Op("compute", "dKj += scale · dSijᵀ Qi, in SRAM."),
    "dq": Op(
        "write",
        "dQ[i] += scale · dSij Kj, with atomicAdd in HBM: a read and a write of each element.",
        moves={"dQ": Move(("dSij",), {"carry": "dQi"})},
    ),
    "write_back": Op(
        "write",
        "After the loop over the blocks of Q: dKj and dVj are complete and leave once.",
        moves={"dK": Move(("dKj",)), "dV": Move(("dVj",))},
    ),
}


def tensors(cfg: Config) -> dict[str, Tensor]:
    r = traffic.rules(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal)
    vector = {"L", "Delta"}
    writes = {"Delta": "once", "dQ": "accumulated", "dK": "once", "dV": "once"}
    keys: tuple[Axis, Axis] = ("kv", "none")
    axes = {"K": keys, "V": keys, "dK": keys, "dV": keys}
    return {
        name: Tensor(
            axes.get(name, ("q", "none")),
            writes.get(name, "none"),  # type: ignore[arg-type]
            r[name],
            cols="1" if name in vector else "D",
            label="Δ" if name == "Delta" else None,
            scale_like="Deltai" if name == "Delta" else None,
            unwritten_note=NOT_WRITTEN if name in writes else None,
        )
        for name in ("Q", "K", "V", "O", "L", "dO", "Delta", "dQ", "dK", "dV")
    }


def veil(cfg: Config, t: dict[str, Tensor], at: Place) -> list[dict[str, Any]] | None:
    """Block j of fa2_bwd never visits the blocks of Q before the one holding its first column (O: read only by the
    preprocessing kernel, every row of it)."""
    if at.kernel != BWD:
        return None
    return rows_before_veil(cfg, t, first_block(at.block, cfg.br, cfg.bc, True), skip=("O",))


def picture(cfg: Config) -> Texts:
    t = tensors(cfg)
    summary = [
        "After the preprocessing kernel, all ",
        *plural(cfg.tc, "block"),
        " of ",
        code(BWD),
        f" run at once, each on its own tile of Bc = {cfg.bc} keys: every one is at phase ",
        slot("phase"),
        " of ",
        slot("phases"),
        ", ",
        slot("math"),
        ". They share only dQ, which they add into with atomicAdd." + (CAUSAL_CHIPS if cfg.causal else ""),
    ]
    size = grouped(traffic.sram_bytes(cfg.n, cfg.d, cfg.br, cfg.bc))
    return Texts(
        tagline="FlashAttention-2 backward, tile by tile",
        tensors=t,
        sram_titles={
            PRE: ["SRAM of fa2_bwd_preprocess block i = {block} · rows {rows}"],
            BWD: [f"SRAM of fa2_bwd block j = {{block}} · K/V rows {{rows}} · {size} bytes"],
        },
        summaries={PRE: summary, BWD: summary},
        counting=[
            [
                b("L"),
                " from the forward pass is what makes this possible: ",
                sub("P", "ij"),
                " = exp(",
                sub("S", "ij"),
                " − ",
                sub("L", "i"),
                ") is recomputed tile by tile, never stored.",
            ],
            [
                b("Δ"),
                " = rowsum(dO ∘ O) is computed once by a small preprocessing kernel and read by every tile.",
            ],
            [
                b("K/V on the outer loop:"),
                " each block owns one tile j and accumulates ",
                sub("dK", "j"),
                ", ",
                sub("dV", "j"),
                " in SRAM, written once. ",
                b("dQ"),
                " is shared by every tile, so it is accumulated in HBM with atomicAdd: each element added counts one "
                "read and one write.",
            ],
        ],
        carries={
            "view": "table",
            "labels": {
                "Li": "Lᵢ",
                "Deltai": "Δᵢ = rowsum(dO∘O)",
                "Sij": "Sᵢⱼ row",
                "dPij": "dPᵢⱼ row",
                "dQi_add": "this block's share of dQ row",
                "dQi": "dQ row after the add",
            },
        },
        substeps_note=["this algorithm's steps have no sub-operations"],
        headline=["dQ", "dK", "dV"],
        against="the float64 gradients of plain softmax attention",
        veil=lambda at: veil(cfg, t, at),
    )
