"""fa1's picture (docs/trace-schema.md): one CUDA block per head that visits the blocks of Q in turn; the picker
picks a block of Q (its `indices.i`), and O, l, m are carried through HBM."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flashviz.algos.picture import (
    NOT_WRITTEN,
    Buffer,
    Kernel,
    Move,
    Op,
    Picker,
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

from ..fa2 import picture as fa2
from . import traffic

if TYPE_CHECKING:
    from flashviz.model.config import Config

K = "fa1"
KERNELS = (
    Kernel(
        K,
        ("init", "load_kv", "load_qi", "scores", "update", "write_back"),
        grid="1",
        scope=K,
        main=True,
        lockstep=False,
    ),
)
PICKER = Picker((K,), index="i", letter="i", label="block of Q, i")

BUFFERS = {name: Buffer(b.dims, b.axes, (K,), b.label, b.copy_of, b.align_under) for name, b in fa2.BUFFERS.items()}
SRAM_ROWS = fa2.SRAM_ROWS

OPS = {
    "init": Op(
        "write",
        "FA1 begins by writing O = 0, l = 0, m = −∞ to HBM: the carries live there between visits.",
        moves={"O": Move((), {"fill": 0}), "l": Move((), {"fill": 0}), "m": Move((), {"fill": None})},
    ),
    "load_kv": fa2.OPS["load_kv"],
    "load_qi": Op(
        "read",
        "Qi and the carries Oi, li, mi come in from HBM: the round trip FA2 removes.",
        moves={"Q": Move(("Qi",)), "O": Move(("Oi",)), "l": Move(("li",)), "m": Move(("mi",))},
        online={"reloads": True},
    ),
    "scores": fa2.SCORES,
    "update": Op(
        "softmax",
        "The update: the tile's own max and sum, the new running max and sum, and Oi rescaled and divided by the "
        "new sum.",
        notes={"Sij": "holds P\u0303 = exp(S − m\u0303)"},
        value_tex={**fa2.ONLINE_TEX, "l_ij": r"\tilde\ell_{ij}", "beta": r"\beta = e^{\tilde m_{ij} - m^{\text{new}}}"},
        online={"rescales": True},
    ),
    "write_back": Op(
        "write",
        "The carries go back to HBM: Oi, li, mi written, to be read again by the next tile's visit.",
        moves={"O": Move(("Oi",)), "l": Move(("li",)), "m": Move(("mi",))},
    ),
}


def tensors(cfg: Config) -> dict[str, Tensor]:
    r = traffic.rules(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal)
    return {
        "Q": Tensor(("q", "none"), "none", r["Q"]),
        "K": Tensor(("kv", "none"), "none", r["K"]),
        "V": Tensor(("kv", "none"), "none", r["V"]),
        "O": Tensor(("q", "none"), "carried", r["O"], unwritten_note=NOT_WRITTEN),
        "l": Tensor(("q", "none"), "carried", r["l"], cols="1", unwritten_note=NOT_WRITTEN),
        "m": Tensor(("q", "none"), "carried", r["m"], cols="1", unwritten_note=NOT_WRITTEN),
    }


def picture(cfg: Config) -> Texts:
    t = tensors(cfg)
    head = "SRAM of the one block per head"
    size = f"{grouped(traffic.sram_bytes(cfg.n, cfg.d, cfg.br, cfg.bc))} bytes"
    return Texts(
        tagline="FlashAttention-1 forward: O, l, m carried through HBM",
        tensors=t,
        sram_titles={K: [f"{head} · now on block i = {{i}} · {size}", f"{head} · outer loop over j · {size}"]},
        summaries={
            K: [
                "FlashAttention-1 runs ",
                b("one"),
                " CUDA block per head: it loops over the ",
                *plural(cfg.tc, "tile"),
                " of K/V outside and visits the ",
                *plural(cfg.tr, "block"),
                " of Q one after another inside, at phase ",
                slot("phase"),
                " of ",
                slot("phases"),
                ": ",
                slot("math"),
                ". The chips are the blocks of Q it visits; pick one to jump to its visit in this tile.",
            ]
        },
        counting=[
            [b("K"), " and ", b("V"), " stream once, on the outer loop over j."],
            [
                b("Carried back and forth."),
                " Every inner iteration reads ",
                sub("Q", "i"),
                ", ",
                sub("O", "i"),
                ", ",
                sub("ℓ", "i"),
                ", ",
                sub("m", "i"),
                " from HBM and writes ",
                sub("O", "i"),
                ", ",
                sub("ℓ", "i"),
                ", ",
                sub("m", "i"),
                " back: the carries make ",
                sub("T", "c"),
                " round trips, and O is divided by ℓ on every visit.",
            ],
            [
                b("What FA2 changes:"),
                " it swaps the loops. With ",
                sub("Q", "i"),
                " on the outer loop one block of O is built start to finish in SRAM, so ",
                sub("O", "i"),
                ", ",
                sub("m", "i"),
                ", ",
                sub("ℓ", "i"),
                " never make the trip; the division happens once, and m and ℓ leave as the single array L. "
                "It also runs ",
                sub("T", "r"),
                ' blocks per head where this kernel runs one ("On the GPU"). FA2 does not always move fewer '
                "bytes: it re-reads K and V ",
                sub("T", "r"),
                " times where this kernel re-reads Q and its carries ",
                sub("T", "c"),
                " times, so with ",
                sub("B", "c"),
                " > ",
                sub("B", "r"),
                " this kernel moves fewer.",
            ],
        ],
        carries={
            "view": "online",
            "buffers": {"m": "mi", "l": "li", "o": "Oi"},
            "o_heading": "Oᵢ row (normalised each visit)",
        },
        substeps_note=["the sub-operations appear on each ", code("mi, li, Oi = …"), " step"],
        headline=["O", "l", "m"],
        against="plain softmax attention",
        # the tile held skips the blocks of Q before the one holding its first column
        veil=lambda at: (
            None if at.tile is None else rows_before_veil(cfg, t, first_block(at.tile, cfg.br, cfg.bc, True))
        ),
    )
