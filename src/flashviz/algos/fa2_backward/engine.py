"""The FlashAttention-2 backward executor: fa2_backward.cu's two kernels, in float32, on the memory model.

First the forward (fa2's engine) runs on the same Q, K, V to produce the O and L the backward needs. Then
the preprocessing kernel (one block per block i of Q) computes Delta = rowsum(dO ∘ O) and zeroes dQ, and
the main kernel (one block per tile j of K/V) streams every block i of Q past its Kj, Vj, keeping dKj,
dVj in SRAM and adding into dQ[i] in HBM. Blocks are independent apart from those atomic adds into dQ,
which commute, so running the blocks one after another (j = 0, 1, ...) gives a valid order of the adds.
Steps with values are recorded for the chosen blocks; counters are kept for all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flashviz.algos.picture import locator
from flashviz.model.tiling import span

from ...engine.memory import SRAM
from ...engine.recorder import Grid, Recorder, run_launch
from ..fa2 import engine as fa2
from . import picture as drawing
from .record import KERNEL, NAME

if TYPE_CHECKING:
    from flashviz.model.config import Config

ALGO = NAME
WHERE = locator(drawing.KERNELS, drawing.PICKER)  # (op, indices) -> its kernel, blockIdx.x and pick

INNER = ("load_q", "probs", "dv", "ds", "dk", "dq")  # one visit of block i by block j
PRE_PHASES = 2  # the preprocessing kernel's program: load_do_o, write_delta


def phase_of(op: str, i: int | None, i0: int, visits: int) -> int:
    """Position of a step in the launch's program: the preprocessing kernel's two steps, then the main
    block's load_kv, six steps per visited block i (i0 its first), write_back (visits: that block's)."""
    if op == "load_do_o":
        return 0
    if op == "write_delta":
        return 1
    if op == "load_kv":
        return PRE_PHASES
    if op == "write_back":
        return PRE_PHASES + 1 + len(INNER) * visits
    assert i is not None, op  # the other steps are inside the loop over blocks of Q
    return PRE_PHASES + 1 + len(INNER) * (i - i0) + INNER.index(op)


def recorded_preprocess_blocks(cfg: Config) -> set[int]:
    """Blocks of the preprocessing kernel whose values are recorded: all Tr of them when the main kernel
    records all of its blocks, else block 0 (its steps are two small ones per block)."""
    return set(range(cfg.tr)) if set(cfg.recorded_blocks(cfg.tc)) == set(range(cfg.tc)) else {0}


def preprocess_block(rec: Recorder, cfg: Config, i: int) -> None:
    n, d, br = cfg.n, cfg.d, cfg.br
    keep = i in rec.recorded
    sram = SRAM()
    dOi = sram.alloc("dOi", (br, d))  # (Br, D)
    Oi = sram.alloc("Oi", (br, d))  # (Br, D)
    Deltai = sram.alloc("Deltai", (br,))  # (Br,)
    r0, r1 = span(i, br, n)
    nr = r1 - r0

    # step: load_do_o -- dOi, Oi = dO[i], O[i]; rows past N stay zero
    do, tdo = rec.hbm.read("dO", slice(r0, r1))
    o, to = rec.hbm.read("O", slice(r0, r1))
    dOi[:nr], Oi[:nr] = do, o
    rec.emit(
        i,
        None,
        "load_do_o",
        phase_of("load_do_o", i, 0, 0),
        [tdo, to],
        {"dOi": dOi, "Oi": Oi},
        indices={"i": i},
    )

    # step: write_delta -- Deltai = rowsum(dOi * Oi) to Delta[i]; dQ[i] = 0 for the main kernel's atomic adds
    Deltai[:] = rec.flops.rowsum(rec.flops.mul(dOi, Oi))  # (Br,) a product per element, then a row sum
    td = rec.hbm.write("Delta", slice(r0, r1), Deltai[:nr])
    tq = rec.hbm.write("dQ", slice(r0, r1), np.zeros((nr, d), dtype=np.float32))
    rec.emit(
        i,
        None,
        "write_delta",
        phase_of("write_delta", i, 0, 0),
        [td, tq],
        {"Deltai": Deltai},
        carries={"Deltai": Deltai.copy()} if keep else None,
        indices={"i": i},
    )


def main_block(rec: Recorder, cfg: Config, j: int) -> None:
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    scale = np.float32(cfg.softmax_scale)
    keep = j in rec.recorded
    sram = SRAM()
    Kj = sram.alloc("Kj", (bc, d))  # (Bc, D)
    Vj = sram.alloc("Vj", (bc, d))  # (Bc, D)
    dKj = sram.alloc("dKj", (bc, d))  # (Bc, D)
    dVj = sram.alloc("dVj", (bc, d))  # (Bc, D)
    Qi = sram.alloc("Qi", (br, d))  # (Br, D)
    dOi = sram.alloc("dOi", (br, d))  # (Br, D)
    Pij = sram.alloc("Pij", (br, bc))  # (Br, Bc)
    dSij = sram.alloc("dSij", (br, bc))  # (Br, Bc)
    Li = sram.alloc("Li", (br,))  # (Br,)
    Deltai = sram.alloc("Deltai", (br,))  # (Br,)
    rec.sram_footprint = sram.footprint()
    fl = rec.flops  # the arithmetic below, counted as it is done
    c0, c1 = span(j, bc, n)
    nc = c1 - c0
    cols = np.arange(c0, c0 + bc)[None, :]  # (1, Bc) key column of each SRAM column
    i0 = cfg.first_block(j)
    visits = cfg.tr - i0

    # step: load_kv -- Kj, Vj = K[j], V[j]; dKj = dVj = 0; rows past N stay zero
    k, tk = rec.hbm.read("K", slice(c0, c1))
    v, tv = rec.hbm.read("V", slice(c0, c1))
    Kj[:nc], Vj[:nc] = k, v
    rec.emit(
        j,
        j,
        "load_kv",
        phase_of("load_kv", None, i0, visits),
        [tk, tv],
        {"Kj": Kj, "Vj": Vj, "dKj": dKj, "dVj": dVj},
        indices={"j": j},
    )

    for i in range(i0, cfg.tr):
        r0, r1 = span(i, br, n)
        nr = r1 - r0
        rows = np.arange(r0, r0 + br)[:, None]  # (Br, 1) query row of each SRAM row
        at = {"j": j, "i": i}

        def emit(op, transfers, sram_changed, carries=None, i=i, at=at):
            rec.emit(j, j, op, phase_of(op, i, i0, visits), transfers, sram_changed, carries, indices=at)

        # step: load_q -- Qi, dOi, Li, Deltai = Q[i], dO[i], L[i], Delta[i]; padding rows zero
        q, tq = rec.hbm.read("Q", slice(r0, r1))
        do, tdo = rec.hbm.read("dO", slice(r0, r1))
        l, tl = rec.hbm.read("L", slice(r0, r1))
        dd, td = rec.hbm.read("Delta", slice(r0, r1))
        Qi[:nr], Qi[nr:] = q, 0.0
        dOi[:nr], dOi[nr:] = do, 0.0
        Li[:nr], Li[nr:] = l[:, 0], 0.0
        Deltai[:nr], Deltai[nr:] = dd[:, 0], 0.0
        emit(
            "load_q",
            [tq, tdo, tl, td],
            {"Qi": Qi, "dOi": dOi, "Li": Li, "Deltai": Deltai},
            {"Li": Li.copy(), "Deltai": Deltai.copy()} if keep else None,
        )

        # step: probs -- Pij = exp(Sij - Li) from the forward's L; dead entries (past N, causal mask) are 0
        S = fl.mul(fl.matmul(Qi, Kj.T), scale)  # (Br, Bc) the scores Sij, in registers
        live = (rows < n) & (cols < n)  # (Br, Bc)
        if cfg.causal:
            live &= cols <= rows
        Pij[:] = np.where(live, fl.exp(np.where(live, fl.sub(S, Li[:, None]), 0.0)), 0.0)
        emit(
            "probs",
            [],
            {"Pij": Pij},
            {"Sij": np.where(live, S, -np.inf).astype(np.float32)} if keep else None,
        )

        # step: dv -- dVj += Pij.T @ dOi
        dVj[:] = fl.add(dVj, fl.matmul(Pij.T, dOi))  # (Bc, D)
        emit("dv", [], {"dVj": dVj})

        # step: ds -- dPij = dOi @ Vj.T; dSij = Pij * (dPij - Deltai)
        dP = fl.matmul(dOi, Vj.T)  # (Br, Bc) dPij, in registers
        dSij[:] = fl.mul(Pij, fl.sub(dP, Deltai[:, None]))
        emit(
            "ds",
            [],
            {"dSij": dSij},
            {"dPij": dP} if keep else None,
        )

        # step: dk -- dKj += scale * dSij.T @ Qi
        dKj[:] = fl.add(dKj, fl.mul(scale, fl.matmul(dSij.T, Qi)))  # (Bc, D)
        emit("dk", [], {"dKj": dKj})

        # step: dq -- dQ[i] += scale * dSij @ Kj, one atomicAdd per element: a read and a write of dQ
        # the kernel skips the rows past N (`continue`): counted on the nr real rows
        fl.count("matmul", 2 * nr * bc * d)
        add = fl.mul(scale, (dSij @ Kj)[:nr])  # (nr, D)
        dq, tqr = rec.hbm.read("dQ", slice(r0, r1))
        dq = fl.add(dq, add)
        tqw = rec.hbm.write("dQ", slice(r0, r1), dq)
        emit(
            "dq",
            [tqr, tqw],
            {},
            {"dQi_add": add[:nr].copy(), "dQi": dq} if keep else None,
        )

    # step: write_back -- dK[j], dV[j] = dKj, dVj; rows past N are not stored
    tk = rec.hbm.write("dK", slice(c0, c1), dKj[:nc])
    tv = rec.hbm.write("dV", slice(c0, c1), dVj[:nc])
    rec.emit(
        j,
        j,
        "write_back",
        phase_of("write_back", None, i0, visits),
        [tk, tv],
        {},
        indices={"j": j},
    )


def fast_main_block(rec: Recorder, cfg: Config, j: int) -> None:
    """Block j of fa2_bwd, not recorded: `main_block`'s arithmetic vectorised over the blocks of Q it visits (every
    visit's scores, P, Pᵀ dOi, dP, dS, dSᵀ Qi and dS Kj at once: per visit the same operations and products of the same
    shapes), dKj and dVj summed visit after visit, dQ's rows added to in HBM as the atomics add them; its steps tallied
    as `main_block` emits them. The same numbers bit for bit (tests/test_engine_vectorised.py)."""
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    scale = np.float32(cfg.softmax_scale)
    fl = rec.flops
    c0, c1 = span(j, bc, n)
    nc = c1 - c0
    i0 = cfg.first_block(j)
    visits = cfg.tr - i0
    here = {"j": j}

    Kj = np.zeros((bc, d), np.float32)  # (Bc, D)
    Vj = np.zeros((bc, d), np.float32)  # (Bc, D)
    k, tk = rec.hbm.read("K", slice(c0, c1))
    v, tv = rec.hbm.read("V", slice(c0, c1))
    Kj[:nc], Vj[:nc] = k, v
    steps: list[tuple[Any, ...]] = [(j, "load_kv", phase_of("load_kv", None, i0, visits), [tk, tv], here)]
    # load_q of every visit: Qi, dOi (visits, Br, D), Li, Deltai (visits, Br); padding rows zero
    spans = [span(i, br, n) for i in range(i0, cfg.tr)]
    Qt, tq = rec.hbm.read_tiles("Q", spans, br)
    dOt, tdo = rec.hbm.read_tiles("dO", spans, br)
    Lt, tl = rec.hbm.read_tiles("L", spans, br)
    Dt, td = rec.hbm.read_tiles("Delta", spans, br)
    Lt, Dt = Lt[:, :, 0], Dt[:, :, 0]  # (visits, Br)
    phases = {op: [phase_of(op, i, i0, visits) for i in range(i0, cfg.tr)] for op in INNER}
    # probs: Pij = exp(Sij - Li) where live, else 0
    S = fl.mul(fl.matmul(Qt, Kj.T), scale)  # (visits, Br, Bc)
    rows = (np.arange(i0, cfg.tr) * br)[:, None, None] + np.arange(br)[None, :, None]  # (visits, Br, 1)
    cols = np.arange(c0, c0 + bc)[None, None, :]  # (1, 1, Bc)
    live = (rows < n) & (cols < n)  # (visits, Br, Bc)
    if cfg.causal:
        live &= cols <= rows
    P = np.where(live, fl.exp(np.where(live, fl.sub(S, Lt[:, :, None]), 0.0)), 0.0).astype(np.float32)
    rec.tally_flops(phases["probs"])
    # dv: dVj += Pijᵀ @ dOi, visit after visit
    pv = fl.matmul(P.swapaxes(-1, -2), dOt)  # (visits, Bc, D)
    dVj = np.zeros((bc, d), np.float32)
    for q in range(visits):
        dVj = np.add(dVj, pv[q])
    fl.count("add", visits * bc * d)
    rec.tally_flops(phases["dv"])
    # ds: dSij = Pij * (dOi @ Vjᵀ - Deltai)
    dS = fl.mul(P, fl.sub(fl.matmul(dOt, Vj.T), Dt[:, :, None]))  # (visits, Br, Bc)
    rec.tally_flops(phases["ds"])
    # dk: dKj += scale * dSijᵀ @ Qi, visit after visit
    kq = fl.mul(scale, fl.matmul(dS.swapaxes(-1, -2), Qt))  # (visits, Bc, D)
    dKj = np.zeros((bc, d), np.float32)
    for q in range(visits):
        dKj = np.add(dKj, kq[q])
    fl.count("add", visits * bc * d)
    rec.tally_flops(phases["dk"])
    # dq: dQ[i] += scale * dSij @ Kj on the real rows, one visit after another (each its own rows of dQ)
    dk_rows = np.matmul(dS, Kj)  # (visits, Br, D)
    for q, (r0, r1) in enumerate(spans):
        nr = r1 - r0
        fl.count("matmul", 2 * nr * bc * d)
        add = fl.mul(scale, dk_rows[q, :nr])  # (nr, D)
        dq, tqr = rec.hbm.read("dQ", slice(r0, r1))
        tqw = rec.hbm.write("dQ", slice(r0, r1), fl.add(dq, add))
        rec.tally_flops([phases["dq"][q]])
        at = {"j": j, "i": i0 + q}
        transfers = {"load_q": [tq[q], tdo[q], tl[q], td[q]], "dq": [tqr, tqw]}
        for op in INNER:
            steps.append((j, op, phases[op][q], transfers.get(op, []), at))
    tkw = rec.hbm.write("dK", slice(c0, c1), dKj[:nc])
    tvw = rec.hbm.write("dV", slice(c0, c1), dVj[:nc])
    steps.append((j, "write_back", phase_of("write_back", None, i0, visits), [tkw, tvw], here))
    for step in steps:
        rec.tally(*step)


def execute(cfg: Config, inputs: dict[str, np.ndarray]) -> Recorder:
    """Run the forward for O and L, then every block of both backward kernels on the memory model."""
    forward = fa2.execute(cfg.replace(algo=fa2.ALGO, record=()), inputs).hbm.tensors  # records no steps
    rec = Recorder(KERNEL, WHERE, recorded_preprocess_blocks(cfg))
    given = {
        **{name: inputs[name] for name in ("Q", "K", "V")},
        "O": forward["O"],  # (N, D) the forward's output, an input here
        "L": forward["L"][:, 0],  # (N,) the forward's log-sum-exp: all the softmax statistics needed
        "dO": inputs["dO"],
    }
    n, d = cfg.n, cfg.d
    return run_launch(
        rec,
        cfg,
        given,
        {"Delta": (n,), "dQ": (n, d), "dK": (n, d), "dV": (n, d)},
        # the preprocessing kernel's blocks of Q, then the main kernel's, whose blocks are the tiles j
        [
            Grid(cfg.tr, preprocess_block),
            Grid(cfg.tc, main_block, set(cfg.recorded_blocks(cfg.tc)), fast=fast_main_block),
        ],
    )


def trace_blocks(cfg: Config, recorded: set[int]) -> list[dict[str, Any]]:
    """The main kernel's blocks for the trace: block j owns rows [first, end) of K and V."""
    return [
        {
            "j": j,
            "rows": list(span(j, cfg.bc, cfg.n)),
            "first_i": cfg.first_block(j),
            "recorded": j in recorded,
        }
        for j in range(cfg.tc)
    ]
