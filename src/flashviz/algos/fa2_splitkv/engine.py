"""The Flash-Decoding executor: fa2_splitkv.cu's two kernels, in float32, on the memory model.

The split kernel's blocks (i, s) run FA2's loop over chunk s of the K/V tiles and write a partial (Oi / li and
L = mi + log li) for the rows of block i; the combine kernel's block i then merges the S partials of its rows with
the log-sum-exp rule (flashviz.model.merge). The S blocks of one block of Q run in lockstep, step for step, as on the
GPU
(a GPU runs them at once); the block picker's pick is the block of Q, i, of both kernels. Steps with values are
recorded for the chosen blocks; counters are kept for all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from flashviz.algos.picture import locator
from flashviz.model.tiling import span

from ...engine.memory import SRAM
from ...engine.online import online_tiles
from ...engine.recorder import Grid, Recorder, blocks_of_q, run_launch
from ...engine.scores import score_tile
from . import picture as drawing
from .record import CHUNK, KERNEL, chunk, splits

if TYPE_CHECKING:
    from flashviz.model.config import Config

WHERE = locator(drawing.KERNELS, drawing.PICKER)  # (op, indices) -> its kernel, blockIdx.x and pick


def split_phases(cfg: Config) -> int:
    """Phases of the split kernel: its longest block's program, load_q, 3 per tile of a full chunk, write_partial."""
    return 2 + 3 * min(CHUNK, cfg.tc)


def phase_of(op: str, t: int | None, tiles: int, first: int) -> int:
    """Position of a step in the launch's program: a split block's load_q, 3 per tile t of its chunk (tiles of
    them), write_partial; then (from `first`, the split kernel's phases) the combine's load_first, 2 per further
    partial s = t, write_out (tiles: S)."""
    if op == "load_q":
        return 0
    if op == "write_partial":
        return 1 + 3 * tiles
    if op == "load_first":
        return first
    if op == "write_out":
        return first + 1 + 2 * (tiles - 1)
    assert t is not None, op  # the other steps are inside a loop
    if op in ("load_partial", "merge"):
        return first + 1 + 2 * (t - 1) + ("load_partial", "merge").index(op)
    return 1 + 3 * t + ("load_kv", "scores", "online_softmax").index(op)


def split_block(rec: Recorder, cfg: Config, i: int, s: int) -> Iterator[None]:
    """Block (i, s) of the split kernel, one step per `next()` (its S siblings run in lockstep with it)."""
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    scale = np.float32(cfg.softmax_scale)
    keep = i in rec.recorded
    j0, j1 = chunk(s, n, bc)
    tiles = j1 - j0
    fl = rec.flops
    sram = SRAM()
    Qi = sram.alloc("Qi", (br, d))  # (Br, D)
    Oi = sram.alloc("Oi", (br, d))  # (Br, D)
    Kj = sram.alloc("Kj", (bc, d))  # (Bc, D)
    Vj = sram.alloc("Vj", (bc, d))  # (Bc, D)
    Sij = sram.alloc("Sij", (br, bc))  # (Br, Bc)
    mi = sram.alloc("mi", (br,), fill=-np.inf)  # (Br,)
    li = sram.alloc("li", (br,))  # (Br,)
    if rec.sram_footprint is None:
        rec.sram_footprint = sram.footprint()
    r0, r1 = span(i, br, n)
    nr = r1 - r0
    at = {"i": i, "s": s}

    # step: load_q -- Qi = Q[i]; Oi = 0; mi = -inf; li = 0
    q, t = rec.hbm.read("Q", slice(r0, r1))
    Qi[:nr] = q
    rec.emit(
        i,
        None,
        "load_q",
        phase_of("load_q", None, tiles, 0),
        [t],
        {"Qi": Qi, "Oi": Oi, "mi": mi, "li": li},
        carries={"mi": mi.copy(), "li": li.copy()} if keep else None,
        indices=at,
    )
    yield

    for j in range(j0, j1):
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
            phase_of("load_kv", j - j0, tiles, 0),
            [tk, tv],
            {"Kj": Kj, "Vj": Vj},
            indices={**at, "j": j},
        )
        yield

        # step: scores -- Sij = Qi @ Kj.T * scale; columns past N score -inf
        score_tile(Sij, Qi, Kj, scale, r0, c0, c1, False, fl)  # (Br, Bc)
        rec.emit(
            i,
            j,
            "scores",
            phase_of("scores", j - j0, tiles, 0),
            [],
            {"Sij": Sij},
            indices={**at, "j": j},
        )
        yield

        # step: online_softmax -- new max, rescaled sum, rescaled output (fa2's, over this chunk only)
        m_old, l_old = mi.copy(), li.copy()  # (Br,)
        m_ij = fl.rowmax(Sij)  # (Br,)
        m_new = fl.fmax(mi, m_ij)  # (Br,)
        alpha = fl.exp(fl.sub(mi, m_new))  # (Br,) exp(m_old - m_new); 0 on the chunk's first tile
        Sij[:] = fl.exp(fl.sub(Sij, m_new[:, None]))  # (Br, Bc) P = exp(Sij - m_new)
        lsum = fl.rowsum(Sij)  # (Br,)
        li[:] = fl.add(fl.mul(alpha, li), lsum)
        pv = fl.matmul(Sij, Vj)  # (Br, D)
        Oi[:] = fl.add(fl.mul(alpha[:, None], Oi), pv)
        mi[:] = m_new
        phase = phase_of("online_softmax", j - j0, tiles, 0)
        if not keep:
            rec.emit(i, j, "online_softmax", phase, [], indices={**at, "j": j})
            yield
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
            {"alpha": alpha, "PV": pv},
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
            indices={**at, "j": j},
        )
        yield

    # step: write_partial -- Opart[s][i], Lpart[s][i] = Oi/li, mi + log(li); rows past N are not stored
    Oi[:] = fl.div(Oi, li[:, None])  # (Br, D)
    L_i = fl.add(mi, fl.log(li))  # (Br,)
    to = rec.hbm.write("Opart", slice(s * n + r0, s * n + r1), Oi[:nr])
    tl = rec.hbm.write("Lpart", slice(s * n + r0, s * n + r1), L_i[:nr])
    rec.emit(
        i,
        None,
        "write_partial",
        phase_of("write_partial", None, tiles, 0),
        [tl, to],
        {"Oi": Oi},
        carries={"mi": mi.copy(), "li": li.copy(), "L": L_i} if keep else None,
        indices=at,
    )
    yield


def split_blocks(rec: Recorder, cfg: Config, i: int) -> None:
    """The S blocks (i, 0..S-1) of the split kernel, step for step together (independent blocks: any order gives
    the same numbers; this one keeps the trace's steps in phase order)."""
    programs = [split_block(rec, cfg, i, s) for s in range(splits(cfg.n, cfg.bc))]
    while programs:
        programs = [p for p in programs if next(p, StopIteration) is not StopIteration]


def fast_split_blocks(rec: Recorder, cfg: Config, i: int) -> None:
    """The S blocks (i, s) of the split kernel for a block i not recorded: each chunk's FA2 loop vectorised over its
    tiles (engine.online: the same numbers bit for bit), the steps tallied in `split_blocks`' order (the S programs
    step for step)."""
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    scale = np.float32(cfg.softmax_scale)
    fl = rec.flops
    r0, r1 = span(i, br, n)
    nr = r1 - r0
    programs = []
    for s in range(splits(n, bc)):
        j0, j1 = chunk(s, n, bc)
        tiles = j1 - j0
        at = {"i": i, "s": s}
        Qi = np.zeros((br, d), np.float32)  # (Br, D)
        q, tq = rec.hbm.read("Q", slice(r0, r1))
        Qi[:nr] = q
        spans = [span(j, bc, n) for j in range(j0, j1)]
        Kt, tk = rec.hbm.read_tiles("K", spans, bc)  # (tiles, Bc, D)
        Vt, tv = rec.hbm.read_tiles("V", spans, bc)
        scores = [phase_of("scores", t, tiles, 0) for t in range(tiles)]
        tally = lambda p=scores: rec.tally_flops(p)  # noqa: E731
        mi, li, Oi = online_tiles(fl, Qi, Kt, Vt, scale, r0, n, False, tally, c0=j0 * bc)
        rec.tally_flops([phase_of("online_softmax", t, tiles, 0) for t in range(tiles)])
        Oi = fl.div(Oi, li[:, None])  # (Br, D)
        L_i = fl.add(mi, fl.log(li))  # (Br,)
        to = rec.hbm.write("Opart", slice(s * n + r0, s * n + r1), Oi[:nr])
        tl = rec.hbm.write("Lpart", slice(s * n + r0, s * n + r1), L_i[:nr])
        rec.tally_flops([phase_of("write_partial", None, tiles, 0)])
        steps: list[tuple[Any, ...]] = [(None, "load_q", phase_of("load_q", None, tiles, 0), [tq], at)]
        for t, j in enumerate(range(j0, j1)):
            here = {**at, "j": j}
            steps.append((j, "load_kv", phase_of("load_kv", t, tiles, 0), [tk[t], tv[t]], here))
            steps.append((j, "scores", phase_of("scores", t, tiles, 0), [], here))
            steps.append((j, "online_softmax", phase_of("online_softmax", t, tiles, 0), [], here))
        steps.append((None, "write_partial", phase_of("write_partial", None, tiles, 0), [tl, to], at))
        programs.append(steps)
    for r in range(max(len(p) for p in programs)):  # split_blocks' order: step r of each program in turn
        for steps in programs:
            if r < len(steps):
                rec.tally(*steps[r])


def combine_block(rec: Recorder, cfg: Config, i: int) -> None:
    """Block i of the combine kernel: the S partials of its rows merged, in order, into O[i] and L[i]."""
    n, d, br = cfg.n, cfg.d, cfg.br
    keep = i in rec.recorded
    S = splits(n, cfg.bc)
    first = split_phases(cfg)
    fl = rec.flops
    sram = SRAM()
    Oc = sram.alloc("Oc", (br, d))  # (Br, D) the merged output so far
    Os = sram.alloc("Os", (br, d))  # (Br, D) partial s
    Lc = sram.alloc("Lc", (br,))  # (Br,)
    Ls = sram.alloc("Ls", (br,))  # (Br,)
    r0, r1 = span(i, br, n)
    nr = r1 - r0

    # step: load_first -- Oc, Lc = Opart[0][i], Lpart[0][i]; rows past N stay zero
    o, to = rec.hbm.read("Opart", slice(r0, r1))
    lp, tl = rec.hbm.read("Lpart", slice(r0, r1))
    Oc[:nr], Lc[:nr] = o, lp.reshape(-1)
    rec.emit(
        i,
        None,
        "load_first",
        phase_of("load_first", None, S, first),
        [to, tl],
        {"Oc": Oc, "Lc": Lc},
        indices={"i": i},
    )

    for s in range(1, S):
        # step: load_partial -- Os, Ls = Opart[s][i], Lpart[s][i]
        o, to = rec.hbm.read("Opart", slice(s * n + r0, s * n + r1))
        lp, tl = rec.hbm.read("Lpart", slice(s * n + r0, s * n + r1))
        Os[:nr], Ls[:nr] = o, lp.reshape(-1)
        rec.emit(
            i,
            None,
            "load_partial",
            phase_of("load_partial", s, S, first),
            [to, tl],
            {"Os": Os, "Ls": Ls},
            indices={"i": i, "s": s},
        )

        # step: merge -- the log-sum-exp rule: the partial with the larger L weighs more
        L_old = Lc.copy()  # (Br,)
        m = fl.fmax(Lc, Ls)  # (Br,)
        wc = fl.exp(fl.sub(Lc, m))  # (Br,)
        ws = fl.exp(fl.sub(Ls, m))  # (Br,)
        total = fl.add(wc, ws)  # (Br,)
        L_new = fl.add(m, fl.log(total))  # (Br,)
        ac, as_ = fl.div(wc, total), fl.div(ws, total)  # (Br,) the two weights, summing to 1
        Oc[:] = fl.add(fl.mul(Oc, ac[:, None]), fl.mul(Os, as_[:, None]))  # (Br, D)
        Lc[:] = L_new
        rec.emit(
            i,
            None,
            "merge",
            phase_of("merge", s, S, first),
            [],
            {"Oc": Oc, "Lc": Lc},
            carries={"Lc": Lc.copy(), "weight_c": ac, "weight_s": as_} if keep else None,
            parts=({"m": m, "wc": wc, "ws": ws}, {"Lc_old": L_old, "Lc": Lc.copy()}) if keep else None,
            indices={"i": i, "s": s},
        )

    # step: write_out -- O[i], L[i] = Oc, Lc; rows past N are not stored
    to = rec.hbm.write("O", slice(r0, r1), Oc[:nr])
    tl = rec.hbm.write("L", slice(r0, r1), Lc[:nr])
    rec.emit(
        i,
        None,
        "write_out",
        phase_of("write_out", None, S, first),
        [to, tl],
        {"Oc": Oc, "Lc": Lc},
        indices={"i": i},
    )


def execute(cfg: Config, inputs: dict[str, np.ndarray]) -> Recorder:
    """Run every block of both kernels on the memory model; return what was recorded."""
    rec = Recorder(KERNEL, WHERE, set(cfg.recorded_blocks(cfg.tr)))
    qkv = {name: inputs[name] for name in ("Q", "K", "V")}
    n, d, S = cfg.n, cfg.d, splits(cfg.n, cfg.bc)
    outputs = {"Opart": (S * n, d), "Lpart": (S * n,), "O": (n, d), "L": (n,)}
    grids = [Grid(cfg.tr, split_blocks, fast=fast_split_blocks), Grid(cfg.tr, combine_block)]
    return run_launch(rec, cfg, qkv, outputs, grids)


trace_blocks = blocks_of_q  # the pick is the block of Q, i, of both kernels
