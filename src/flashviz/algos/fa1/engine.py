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

from ...engine import recorder
from ...engine.memory import SRAM
from ...engine.recorder import Grid, Recorder, blocks_of_q, run_launch
from ...engine.scores import score_tile
from . import picture as drawing
from .record import KERNEL, NAME

if TYPE_CHECKING:
    from flashviz.model.config import Config

ALGO = NAME
WHERE = locator(drawing.KERNELS, drawing.PICKER)  # (op, indices) -> its kernel, blockIdx.x and pick


def execute(cfg: Config, inputs: dict[str, np.ndarray]) -> Recorder:
    """Run the launch (one block per head) on the memory model; return what was recorded."""
    rec = Recorder(KERNEL, WHERE, set(cfg.recorded_blocks(cfg.tr)))
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
            indices={"j": j},
        )
        phase += 1

        run: list[int] = []  # blocks of Q not recorded, visited next: run at once (visit_all) before a recorded one
        for i in [*range(i0, cfg.tr), None]:
            if i is not None and i not in rec.recorded and recorder.VECTORISED:
                run.append(i)
                continue
            if run:
                visit_all(rec, cfg, j, run, phase, Kj, Vj)
                phase += 4 * len(run)
                run = []
            if i is None:
                break
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
                parts = (  # the values of words.PARTS's three
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
                )
                rec.emit(
                    i,
                    j,
                    "update",
                    phase,
                    [],
                    {"Sij": Sij, "Oi": Oi, "mi": mi, "li": li},
                    carries=carries,
                    parts=parts,
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
                carries={"mi": mi.copy(), "li": li.copy()} if keep else None,
                indices=at,
            )
            phase += 1


def visit_all(
    rec: Recorder, cfg: Config, j: int, blocks: list[int], phase: int, Kj: np.ndarray, Vj: np.ndarray
) -> None:
    """The visits of tile j to `blocks` (consecutive blocks of Q, none recorded; phases from `phase`), at once: each
    visit's load_qi, scores, update and write_back as `program` runs them, vectorised over the visits (per visit the
    same operations and products of the same shapes: the same numbers bit for bit, tests/test_engine_vectorised.py),
    the steps tallied in the program's order."""
    n, br = cfg.n, cfg.br
    scale = np.float32(cfg.softmax_scale)
    fl = rec.flops
    rec.vectorised += len(blocks)
    c0, c1 = span(j, cfg.bc, n)
    spans = [span(i, br, n) for i in blocks]
    B = len(blocks)
    # load_qi: Qi, Oi, li, mi of each visit; rows past N: 0, 0, 0, -inf
    Qt, tq = rec.hbm.read_tiles("Q", spans, br)  # (B, Br, D)
    Ot, to = rec.hbm.read_tiles("O", spans, br)  # (B, Br, D)
    lt, tl = rec.hbm.read_tiles("l", spans, br)
    mt, tm = rec.hbm.read_tiles("m", spans, br)
    li, mi = lt[:, :, 0].copy(), mt[:, :, 0].copy()  # (B, Br)
    for q, (r0, r1) in enumerate(spans):
        mi[q, r1 - r0 :] = -np.inf
    # scores
    S = fl.matmul(Qt, Kj.T)  # (B, Br, Bc)
    S = fl.mul(S, scale)
    S[:, :, c1 - c0 :] = -np.inf
    if cfg.causal:
        cols = np.arange(c0, c0 + S.shape[2])[None, None, :]  # (1, 1, Bc)
        rows = np.array([r0 for r0, _ in spans])[:, None, None] + np.arange(br)[None, :, None]  # (B, Br, 1)
        crossing = np.array([c1 - 1 > r0 for r0, _ in spans])[:, None, None]  # the tiles that cross the diagonal
        S[np.broadcast_to(crossing & (cols > rows), S.shape)] = -np.inf
    rec.tally_flops([phase + 4 * q + 1 for q in range(B)])
    # update: tile max and sum, new max and sum, normalised output
    m_ij = fl.rowmax(S)  # (B, Br)
    m_sub = np.where(np.isneginf(m_ij), np.float32(0), m_ij)  # (B, Br)
    P = fl.exp(fl.sub(S, m_sub[:, :, None]))  # (B, Br, Bc)
    l_ij = fl.rowsum(P)  # (B, Br)
    m_new = fl.fmax(mi, m_ij)  # (B, Br)
    alpha = fl.exp(fl.sub(mi, m_new))
    beta = fl.exp(fl.sub(m_ij, m_new))
    l_new = fl.add(fl.mul(alpha, li), fl.mul(beta, l_ij))  # (B, Br)
    pv = fl.matmul(P, Vj)  # (B, Br, D)
    kept = fl.mul(fl.mul(li, alpha)[:, :, None], Ot)
    Oi = fl.div(fl.add(kept, fl.mul(beta[:, :, None], pv)), l_new[:, :, None])  # (B, Br, D)
    rec.tally_flops([phase + 4 * q + 2 for q in range(B)])
    # write_back
    for q, (i, (r0, r1)) in enumerate(zip(blocks, spans, strict=True)):
        nr = r1 - r0
        tow = rec.hbm.write("O", slice(r0, r1), Oi[q, :nr])
        tlw = rec.hbm.write("l", slice(r0, r1), l_new[q, :nr])
        tmw = rec.hbm.write("m", slice(r0, r1), m_new[q, :nr])
        at = {"j": j, "i": i}
        base = phase + 4 * q
        rec.tally(j, "load_qi", base, [tq[q], to[q], tl[q], tm[q]], at)
        rec.tally(j, "scores", base + 1, [], at)
        rec.tally(j, "update", base + 2, [], at)
        rec.tally(j, "write_back", base + 3, [tow, tlw, tmw], at)


trace_blocks = blocks_of_q  # one CUDA block per block of Q
