"""The FlashAttention-2 forward executor: fa2_forward.cu's loops, in float32, on the memory model.

Every block i of the launch runs (blocks are independent, so running them one after another gives
the same numbers as running them at once). Steps with values are recorded for the chosen blocks;
counters are kept for all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos.picture import locator
from flashviz.model.tiling import span

from ...engine.memory import SRAM
from ...engine.online import online_tiles
from ...engine.recorder import Grid, Recorder, blocks_of_q, run_launch
from ...engine.scores import score_tile
from . import picture as drawing
from .record import KERNEL, NAME

if TYPE_CHECKING:
    from flashviz.model.config import Config

ALGO = NAME
WHERE = locator(drawing.KERNELS, drawing.PICKER)  # (op, indices) -> its kernel, blockIdx.x and pick


def phase_of(op: str, j: int | None, tc: int) -> int:
    """Position of a step in a block's program: load_q, then 3 per tile, then write_back (tc: that
    block's tile count, which causal attention makes differ between blocks)."""
    if op == "load_q":
        return 0
    if op == "write_back":
        return 1 + 3 * tc
    assert j is not None, op  # the other steps are inside the loop over tiles
    return 1 + 3 * j + ("load_kv", "scores", "online_softmax").index(op)


def block(rec: Recorder, cfg: Config, i: int) -> None:
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    scale = np.float32(cfg.softmax_scale)
    keep = i in rec.recorded
    tc = cfg.tiles_of_block(i)
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
    r0, r1 = span(i, br, n)
    nr = r1 - r0

    # step: load_q -- Qi = Q[i]; Oi = 0; mi = -inf; li = 0
    q, t = rec.hbm.read("Q", slice(r0, r1))
    Qi[:nr] = q
    rec.emit(
        i,
        None,
        "load_q",
        phase_of("load_q", None, tc),
        [t],
        {"Qi": Qi, "Oi": Oi, "mi": mi, "li": li},
        carries={"mi": mi.copy(), "li": li.copy()} if keep else None,
    )

    for j in range(tc):
        c0, c1 = span(j, bc, n)
        nc = c1 - c0
        # step: load_kv -- Kj, Vj = K[j], V[j]; rows past N stay zero
        k, tk = rec.hbm.read("K", slice(c0, c1))
        v, tv = rec.hbm.read("V", slice(c0, c1))
        Kj[:nc], Kj[nc:] = k, 0.0
        Vj[:nc], Vj[nc:] = v, 0.0
        rec.emit(
            i,
            j,
            "load_kv",
            phase_of("load_kv", j, tc),
            [tk, tv],
            {"Kj": Kj, "Vj": Vj},
        )

        # step: scores -- Sij = Qi @ Kj.T * scale; columns past N (and, causal, past the row) score -inf
        score_tile(Sij, Qi, Kj, scale, r0, c0, c1, cfg.causal, fl)  # (Br, Bc)
        rec.emit(
            i,
            j,
            "scores",
            phase_of("scores", j, tc),
            [],
            {"Sij": Sij},
        )

        # step: online_softmax -- new max, rescaled sum, rescaled output
        m_old, l_old = mi.copy(), li.copy()  # (Br,)
        m_ij = fl.rowmax(Sij)  # (Br,) fmaxf: a NaN score is passed over
        m_new = fl.fmax(mi, m_ij)  # (Br,) a row with no finite score yet stays -inf, and then (as on the GPU)
        # alpha = exp(-inf - -inf) and P = exp(Sij - -inf) are NaN: the row's li, Oi, O and L are NaN
        alpha = fl.exp(fl.sub(mi, m_new))  # (Br,) rescale factor exp(m_old - m_new)
        Sij[:] = fl.exp(fl.sub(Sij, m_new[:, None]))  # (Br, Bc) Sij now holds P = exp(Sij - m_new)
        lsum = fl.rowsum(Sij)  # (Br,)
        li[:] = fl.add(fl.mul(alpha, li), lsum)
        pv = fl.matmul(Sij, Vj)  # (Br, D)
        Oi[:] = fl.add(fl.mul(alpha[:, None], Oi), pv)  # rescaled by alpha only: no division in the loop
        mi[:] = m_new
        phase = phase_of("online_softmax", j, tc)
        if not keep:
            rec.emit(i, j, "online_softmax", phase, [])
            continue
        carries = {
            "m_old": m_old,
            "m_ij": m_ij,
            "mi": mi.copy(),
            "alpha": alpha,
            "l_old": l_old,
            "rowsum": lsum,
            "li": li.copy(),
        }
        parts = (  # the values of words.PARTS's three
            {"m_old": m_old, "m_ij": m_ij, "m_new": m_new},
            {"alpha": alpha, "l_old": l_old, "rowsum": lsum, "l_new": li.copy()},
            {"alpha": alpha, "PV": pv},  # Oi before and after: the neighbouring sram snapshots
        )
        rec.emit(
            i,
            j,
            "online_softmax",
            phase,
            [],
            {"Sij": Sij, "Oi": Oi, "mi": mi, "li": li},
            carries=carries,
            parts=parts,
        )

    # step: write_back -- O[i], L[i] = Oi/li, mi + log(li); rows past N are not stored
    Oi[:] = fl.div(Oi, li[:, None])  # the one division, once per block  # (Br, D)
    L_i = fl.add(mi, fl.log(li))  # (Br,)
    to = rec.hbm.write("O", slice(r0, r1), Oi[:nr])
    tl = rec.hbm.write("L", slice(r0, r1), L_i[:nr])
    rec.emit(
        i,
        None,
        "write_back",
        phase_of("write_back", None, tc),
        [tl, to],
        {"Oi": Oi},
        carries={"mi": mi.copy(), "li": li.copy(), "L": L_i} if keep else None,
    )


def fast_block(rec: Recorder, cfg: Config, i: int) -> None:
    """Block i, not recorded: `block`'s arithmetic vectorised over its tiles (engine.online: the same numbers bit for
    bit), its steps tallied as `block` emits them."""
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    tc = cfg.tiles_of_block(i)
    fl = rec.flops
    r0, r1 = span(i, br, n)
    nr = r1 - r0

    # load_q; load_kv of every tile: Kt, Vt (Tc, Bc, D), rows past N zero
    Qi = np.zeros((br, d), np.float32)  # (Br, D)
    q, tq = rec.hbm.read("Q", slice(r0, r1))
    Qi[:nr] = q
    spans = [span(j, bc, n) for j in range(tc)]
    Kt, tk = rec.hbm.read_tiles("K", spans, bc)
    Vt, tv = rec.hbm.read_tiles("V", spans, bc)
    # scores, then online_softmax, of every tile
    scores = [phase_of("scores", j, tc) for j in range(tc)]
    scale = np.float32(cfg.softmax_scale)
    mi, li, Oi = online_tiles(fl, Qi, Kt, Vt, scale, r0, n, cfg.causal, lambda: rec.tally_flops(scores))
    rec.tally_flops([phase_of("online_softmax", j, tc) for j in range(tc)])
    # write_back
    Oi = fl.div(Oi, li[:, None])  # (Br, D)
    L_i = fl.add(mi, fl.log(li))  # (Br,)
    to = rec.hbm.write("O", slice(r0, r1), Oi[:nr])
    tl = rec.hbm.write("L", slice(r0, r1), L_i[:nr])
    rec.tally_flops([phase_of("write_back", None, tc)])

    # the steps, in the block's order
    rec.tally(None, "load_q", phase_of("load_q", None, tc), [tq], {"i": i})
    for j in range(tc):
        at = {"i": i, "j": j}
        rec.tally(j, "load_kv", phase_of("load_kv", j, tc), [tk[j], tv[j]], at)
        rec.tally(j, "scores", phase_of("scores", j, tc), [], at)
        rec.tally(j, "online_softmax", phase_of("online_softmax", j, tc), [], at)
    rec.tally(None, "write_back", phase_of("write_back", None, tc), [tl, to], {"i": i})


def execute(cfg: Config, inputs: dict[str, np.ndarray]) -> Recorder:
    """Run every block of the launch on the memory model; return what was recorded."""
    rec = Recorder(KERNEL, WHERE, set(cfg.recorded_blocks(cfg.tr)))
    qkv = {name: inputs[name] for name in ("Q", "K", "V")}
    return run_launch(rec, cfg, qkv, {"O": (cfg.n, cfg.d), "L": (cfg.n,)}, [Grid(cfg.tr, block, fast=fast_block)])


trace_blocks = blocks_of_q  # one CUDA block per block of Q
