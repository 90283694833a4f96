"""The FlashAttention(-1) forward executor: fa1_forward.cu's loops, in float32, on the memory model.

One CUDA block per head runs everything: K/V tiles j on the outer loop, blocks of Q i on the inner loop,
so the steps come in kernel order (j outer) and blocks of Q take turns. Steps with values are recorded
for the chosen blocks of Q (and every outer-loop load_kv); counters are kept for all. A phase is simply a
position in the one block's program.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos.picture import locator
from flashviz.model.tiling import span

from ...engine.memory import SRAM
from ...engine.recorder import Grid, Recorder, blocks_of_q, run_launch, visible_parts
from ...engine.scores import score_tile
from . import narrative
from . import picture as drawing
from .record import KERNEL, NAME

if TYPE_CHECKING:
    from flashviz.model.config import Config

ALGO = NAME
WHERE = locator(drawing.KERNELS, drawing.PICKER)  # (op, indices) -> its kernel, blockIdx.x and pick

# op -> (label, TeX)
LABELS = {
    "init": (
        "O[i], l[i], m[i] = 0, 0, -inf",
        r"O[i] \leftarrow 0;\; \ell[i] \leftarrow 0;\; m[i] \leftarrow -\infty",
    ),
    "load_kv": ("Kj, Vj = K[j], V[j]", r"K_j, V_j \leftarrow K[j], V[j]"),
    "load_qi": (
        "Qi, Oi, li, mi = Q[i], O[i], l[i], m[i]",
        r"Q_i, O_i, \ell_i, m_i \leftarrow Q[i], O[i], \ell[i], m[i]",
    ),
    "scores": ("Sij = Qi @ Kj.T", r"S_{ij} = \tau\, Q_i K_j^{\top}"),
    "update": (
        "mi, li, Oi = ...",
        r"m_i, \ell_i, O_i \leftarrow \mathrm{update}(m_i, \ell_i, O_i, S_{ij}, V_j)",
    ),
    "write_back": ("O[i], l[i], m[i] = Oi, li, mi", r"O[i], \ell[i], m[i] \leftarrow O_i, \ell_i, m_i"),
}
SUBSTEPS = (
    (
        "tile max and sum",
        "m_ij = Sij.max(-1); Pij = exp(Sij - m_ij); l_ij = Pij.sum(-1)",
        r"\tilde m_{ij} = \mathrm{rowmax}(S_{ij}),\ \tilde P_{ij} = e^{S_{ij} - \tilde m_{ij}},\ "
        r"\tilde \ell_{ij} = \mathrm{rowsum}(\tilde P_{ij})",
    ),
    (
        "new max and sum",
        "mi_new = max(mi, m_ij); li_new = exp(mi - mi_new)*li + exp(m_ij - mi_new)*l_ij",
        r"m_i^{\text{new}} = \max(m_i, \tilde m_{ij}),\ \ell_i^{\text{new}} = e^{m_i - m_i^{\text{new}}}\ell_i"
        r" + e^{\tilde m_{ij} - m_i^{\text{new}}}\tilde\ell_{ij}",
    ),
    (
        "normalised output",
        "Oi = (li*exp(mi - mi_new)*Oi + exp(m_ij - mi_new)*Pij @ Vj) / li_new",
        r"O_i = \big(\ell_i e^{m_i - m_i^{\text{new}}} O_i + e^{\tilde m_{ij} - m_i^{\text{new}}}"
        r" \tilde P_{ij} V_j\big) / \ell_i^{\text{new}}",
    ),
)


def execute(cfg: Config, inputs: dict[str, np.ndarray]) -> Recorder:
    """Run the launch (one block per head) on the memory model; return what was recorded."""
    rec = Recorder(KERNEL, WHERE, LABELS, set(cfg.recorded_blocks(cfg.tr)))
    qkv = {name: inputs[name] for name in ("Q", "K", "V")}
    n, d = cfg.n, cfg.d
    return run_launch(rec, cfg, qkv, {"O": (n, d), "l": (n,), "m": (n,)}, [Grid(1, program)])  # one block per head


def program(rec: Recorder, cfg: Config, block: int) -> None:
    """The one block's program: every block of Q initialised in HBM, then per tile of K/V every block of Q visited."""
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    scale = np.float32(cfg.softmax_scale)

    fl = rec.flops  # the arithmetic below, counted as it is done
    sram = SRAM()
    Qi = sram.alloc("Qi", (br, d))  # (Br, D)
    Oi = sram.alloc("Oi", (br, d))  # (Br, D)
    Kj = sram.alloc("Kj", (bc, d))  # (Bc, D)
    Vj = sram.alloc("Vj", (bc, d))  # (Bc, D)
    Sij = sram.alloc("Sij", (br, bc))  # (Br, Bc)
    mi = sram.alloc("mi", (br,), fill=-np.inf)  # (Br,)
    li = sram.alloc("li", (br,))  # (Br,)
    rec.sram_footprint = sram.footprint()
    phase = 0

    for i in range(cfg.tr):
        r0, r1 = span(i, br, n)
        nr = r1 - r0
        # step: init -- O[i], l[i], m[i] = 0, 0, -inf in HBM
        to = rec.hbm.write("O", slice(r0, r1), np.zeros((nr, d), np.float32))
        tl = rec.hbm.write("l", slice(r0, r1), np.zeros(nr, np.float32))
        tm = rec.hbm.write("m", slice(r0, r1), np.full(nr, -np.inf, np.float32))
        keep = i in rec.recorded
        rec.emit(
            i,
            None,
            "init",
            phase,
            [to, tl, tm],
            {},
            narrative.init(i, r0, r1, d) if keep else "",
            indices={"i": i},
        )
        phase += 1

    for j in range(cfg.tc):
        c0, c1 = span(j, bc, n)
        nc = c1 - c0
        # step: load_kv -- Kj, Vj = K[j], V[j]; rows past N stay zero
        k, tk = rec.hbm.read("K", slice(c0, c1))
        v, tv = rec.hbm.read("V", slice(c0, c1))
        Kj[:nc], Kj[nc:] = k, 0.0
        Vj[:nc], Vj[nc:] = v, 0.0
        i0 = cfg.first_block(j)  # the blocks before it lie wholly above the diagonal
        rec.emit(
            None,
            j,
            "load_kv",
            phase,
            [tk, tv],
            {"Kj": Kj, "Vj": Vj},
            narrative.load_kv(j, cfg.tc, c0, c1, bc, d, cfg.tr - i0) if rec.recorded else "",
            indices={"j": j},
        )
        phase += 1

        for i in range(i0, cfg.tr):
            keep = i in rec.recorded
            r0, r1 = span(i, br, n)
            nr = r1 - r0
            at = {"j": j, "i": i}
            # step: load_qi -- Qi, Oi, li, mi = Q[i], O[i], l[i], m[i]; rows past N: 0, 0, 0, -inf
            q, tq = rec.hbm.read("Q", slice(r0, r1))
            o, to = rec.hbm.read("O", slice(r0, r1))
            l, tl = rec.hbm.read("l", slice(r0, r1))
            m, tm = rec.hbm.read("m", slice(r0, r1))
            Qi[:nr], Qi[nr:] = q, 0.0
            Oi[:nr], Oi[nr:] = o, 0.0
            li[:nr], li[nr:] = l[:, 0], 0.0
            mi[:nr], mi[nr:] = m[:, 0], -np.inf
            rec.emit(
                i,
                j,
                "load_qi",
                phase,
                [tq, to, tl, tm],
                {"Qi": Qi, "Oi": Oi, "mi": mi, "li": li},
                narrative.load_qi(i, j, r0, r1, d, li[:nr], mi[:nr]) if keep else "",
                carries={"mi": mi.copy(), "li": li.copy()} if keep else None,
                indices=at,
            )
            phase += 1

            # step: scores -- Sij = Qi @ Kj.T * scale; columns past N (and, causal, past the row) score -inf
            score_tile(Sij, Qi, Kj, scale, r0, c0, c1, cfg.causal, fl)  # (Br, Bc)
            rec.emit(
                i,
                j,
                "scores",
                phase,
                [],
                {"Sij": Sij},
                narrative.scores(j, Sij, nr, nc, float(scale), causal=cfg.causal) if keep else "",
                indices=at,
            )
            phase += 1

            # step: update -- tile max and sum, new max and sum, normalised output
            m_old, l_old = mi.copy(), li.copy()  # (Br,)
            m_ij = fl.rowmax(Sij)  # (Br,) fmaxf: a NaN score is passed over
            m_sub = np.where(np.isneginf(m_ij), np.float32(0), m_ij)  # a row wholly masked (causal) adds nothing
            Sij[:] = fl.exp(fl.sub(Sij, m_sub[:, None]))  # (Br, Bc) Sij now holds P~ij = exp(Sij - m_ij)
            l_ij = fl.rowsum(Sij)  # (Br,)
            m_new = fl.fmax(mi, m_ij)  # (Br,) -inf for a row with no finite score yet: then alpha, beta are NaN
            alpha = fl.exp(fl.sub(mi, m_new))  # (Br,) exp(m_old - m_new)
            beta = fl.exp(fl.sub(m_ij, m_new))  # (Br,) exp(m_ij - m_new)
            l_new = fl.add(fl.mul(alpha, li), fl.mul(beta, l_ij))  # (Br,)
            pv = fl.matmul(Sij, Vj)  # (Br, D)
            # O is kept normalised: rescaled by l*alpha, and divided by the new l on every visit  # (Br, D)
            kept = fl.mul(fl.mul(li, alpha)[:, None], Oi)
            Oi[:] = fl.div(fl.add(kept, fl.mul(beta[:, None], pv)), l_new[:, None])
            mi[:] = m_new
            li[:] = l_new
            if keep:
                carries = {
                    "m_old": m_old,
                    "m_ij": m_ij,
                    "mi": mi.copy(),
                    "alpha": alpha,
                    "beta": beta,
                    "l_old": l_old,
                    "l_ij": l_ij,
                    "li": li.copy(),
                }
                substeps = visible_parts(
                    SUBSTEPS,
                    (
                        {"m_ij": m_ij, "l_ij": l_ij},
                        {
                            "m_old": m_old,
                            "m_new": mi.copy(),
                            "alpha": alpha,
                            "beta": beta,
                            "l_old": l_old,
                            "l_new": li.copy(),
                        },
                        {"PV": pv},  # Oi before and after: the neighbouring sram snapshots
                    ),
                )
                rec.emit(
                    i,
                    j,
                    "update",
                    phase,
                    [],
                    {"Sij": Sij, "Oi": Oi, "mi": mi, "li": li},
                    narrative.update(j, m_old, mi, alpha, l_old, li, nr),
                    carries=carries,
                    substeps=substeps,
                    indices=at,
                )
            else:
                rec.emit(i, j, "update", phase, [], indices=at)
            phase += 1

            # step: write_back -- O[i], l[i], m[i] = Oi, li, mi; rows past N are not stored
            to = rec.hbm.write("O", slice(r0, r1), Oi[:nr])
            tl = rec.hbm.write("l", slice(r0, r1), li[:nr])
            tm = rec.hbm.write("m", slice(r0, r1), mi[:nr])
            rec.emit(
                i,
                j,
                "write_back",
                phase,
                [to, tl, tm],
                {},
                narrative.write_back(i, j, cfg.tiles_of_block(i), r0, r1, d) if keep else "",
                carries={"mi": mi.copy(), "li": li.copy()} if keep else None,
                indices=at,
            )
            phase += 1


trace_blocks = blocks_of_q  # one CUDA block per block of Q
