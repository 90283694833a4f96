"""The standard-attention executor: standard.cu's three kernels, in float32, on the memory model.

Block i of each kernel owns rows i*Br .. of S, P and O, and only reads what block i of the kernel before
it wrote (rows of S, then rows of P). So running block i through all three kernels before block i+1 gives
the same numbers, and the same counts, as three launches one after another; the steps are listed block
after block, like FA2's. Phases still follow the launches: every block finishes kernel 1 before any
block starts kernel 2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flashviz.algos.picture import locator
from flashviz.model.tiling import span

from ...engine.memory import SRAM
from ...engine.recorder import Grid, Recorder, blocks_of_q, run_launch
from ...engine.scores import score_tile, score_tiles
from . import picture as drawing
from .record import KERNEL, NAME

if TYPE_CHECKING:
    from flashviz.model.config import Config

ALGO = NAME
WHERE = locator(drawing.KERNELS, drawing.PICKER)  # (op, indices) -> its kernel, blockIdx.x and pick

KERNELS = ("standard_scores", "standard_softmax", "standard_pv")


def phase_of(cfg: Config, op: str, j: int | None = None, k: int = 0, tc: int = 0) -> int:
    """Position of a step in the launch sequence. Kernel 1 takes 1 + 2*Tc phases (load_q, then load_k and
    scores per tile), kernel 2 one per row of a block (k: the row within the block), kernel 3 2 per tile
    then write_o (tc: the block's own tile count, which causal attention makes differ between blocks)."""
    p1 = 1 + 2 * cfg.tc  # kernel 2 starts here
    p2 = p1 + min(cfg.br, cfg.n)  # kernel 3 starts here
    return {
        "load_q": 0,
        "load_k": 1 + 2 * (j or 0),
        "scores": 2 + 2 * (j or 0),
        "softmax_row": p1 + k,
        "load_pv": p2 + 2 * (j or 0),
        "accumulate": p2 + 2 * (j or 0) + 1,
        "write_o": p2 + 2 * tc,
    }[op]


def footprint(srams: dict[str, SRAM]) -> dict[str, Any]:
    """The largest kernel's shared memory, with every kernel's own footprint under `kernels`."""
    prints = {name: s.footprint() for name, s in srams.items()}
    largest = max(prints, key=lambda name: prints[name]["bytes"])
    return {**prints[largest], "kernel": largest, "kernels": prints}


def block(rec: Recorder, cfg: Config, i: int) -> None:
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    scale = np.float32(cfg.softmax_scale)
    keep = i in rec.recorded
    tc = cfg.tiles_of_block(i)
    w = min(n, tc * bc)  # columns of S and P this block's rows use (N unless causal)
    r0, r1 = span(i, br, n)
    nr = r1 - r0
    fl = rec.flops  # the arithmetic below, counted as it is done

    # kernel 1: standard_scores -- S = scale * Q K^T, tile by tile, each tile stored to HBM
    k1 = SRAM()
    Qi = k1.alloc("Qi", (br, d))  # (Br, D)
    Kj = k1.alloc("Kj", (bc, d))  # (Bc, D)
    Sij = k1.alloc("Sij", (br, bc))  # (Br, Bc)

    # step: load_q -- Qi = Q[i]; rows past N stay zero
    q, t = rec.hbm.read("Q", slice(r0, r1))
    Qi[:nr] = q
    rec.emit(
        i,
        None,
        "load_q",
        phase_of(cfg, "load_q"),
        [t],
        {"Qi": Qi},
    )

    for j in range(tc):
        c0, c1 = span(j, bc, n)
        nc = c1 - c0
        # step: load_k -- Kj = K[j]; rows past N stay zero
        kj, tk = rec.hbm.read("K", slice(c0, c1))
        Kj[:nc], Kj[nc:] = kj, 0.0
        rec.emit(
            i,
            j,
            "load_k",
            phase_of(cfg, "load_k", j),
            [tk],
            {"Kj": Kj},
        )

        # step: scores -- Sij = Qi @ Kj.T * scale (past N, and causal past the row: -inf); S[i][j] = Sij
        score_tile(Sij, Qi, Kj, scale, r0, c0, c1, cfg.causal, fl)  # (Br, Bc)
        ts = rec.hbm.write("S", slice(r0, r1), Sij[:nr, :nc], cols=slice(c0, c1))
        rec.emit(
            i,
            j,
            "scores",
            phase_of(cfg, "scores", j),
            [ts],
            {"Sij": Sij},
        )

    # kernel 2: standard_softmax -- one row of S at a time, whole in SRAM; P = softmax(S) stored to HBM
    k2 = SRAM()
    Sr = k2.alloc("Sr", (n,))  # (N,) one row of S, then of P
    mr = k2.alloc("mr", (1,), fill=-np.inf)  # the row's max
    lr = k2.alloc("lr", (1,))  # the row's sum of exp(S - max)
    for k, r in enumerate(range(r0, r1)):
        # step: softmax_row -- Sr = S[r]; mr, lr = max, sum exp(Sr - mr); P[r] = Sr = exp(Sr - mr) / lr
        s, ts = rec.hbm.read("S", slice(r, r + 1), cols=slice(0, w))
        Sr[:w] = s[0]
        mr[0] = fl.rowmax(Sr[:w])  # fmaxf; -inf for a row with no finite score: P is NaN
        lr[0] = fl.rowsum(fl.exp(fl.sub(Sr[:w], mr[0])))
        Sr[:w] = fl.div(fl.exp(fl.sub(Sr[:w], mr[0])), lr[0])  # the kernel computes each exp twice
        tp = rec.hbm.write("P", slice(r, r + 1), Sr[:w], cols=slice(0, w))
        rec.emit(
            i,
            None,
            "softmax_row",
            phase_of(cfg, "softmax_row", k=k),
            [ts, tp],
            {"Sr": Sr, "mr": mr, "lr": lr},
            carries={"mr": mr.copy(), "lr": lr.copy()} if keep else None,
            indices={"i": i, "r": r},
        )

    # kernel 3: standard_pv -- O = P V, tile by tile; Oi is stored once
    k3 = SRAM()
    Pij = k3.alloc("Pij", (br, bc))  # (Br, Bc)
    Vj = k3.alloc("Vj", (bc, d))  # (Bc, D)
    Oi = k3.alloc("Oi", (br, d))  # (Br, D)
    if rec.sram_footprint is None:
        rec.sram_footprint = footprint(dict(zip(KERNELS, (k1, k2, k3), strict=True)))
    for j in range(tc):
        c0, c1 = span(j, bc, n)
        nc = c1 - c0
        # step: load_pv -- Pij, Vj = P[i][j], V[j]; rows and columns past N stay zero
        p, tp = rec.hbm.read("P", slice(r0, r1), cols=slice(c0, c1))
        Pij[:] = 0.0
        Pij[:nr, :nc] = p
        v, tv = rec.hbm.read("V", slice(c0, c1))
        Vj[:nc], Vj[nc:] = v, 0.0
        rec.emit(
            i,
            j,
            "load_pv",
            phase_of(cfg, "load_pv", j),
            [tp, tv],
            {"Pij": Pij, "Vj": Vj},
        )

        # step: accumulate -- Oi += Pij @ Vj (P is already normalised: nothing to rescale)
        Oi[:] = fl.add(Oi, fl.matmul(Pij, Vj))  # (Br, D)
        rec.emit(
            i,
            j,
            "accumulate",
            phase_of(cfg, "accumulate", j),
            [],
            {"Oi": Oi},
        )

    # step: write_o -- O[i] = Oi; rows past N are not stored
    to = rec.hbm.write("O", slice(r0, r1), Oi[:nr])
    rec.emit(
        i,
        None,
        "write_o",
        phase_of(cfg, "write_o", tc=tc),
        [to],
        {},
    )


def fast_block(rec: Recorder, cfg: Config, i: int) -> None:
    """Block i of the three kernels, not recorded: `block`'s arithmetic vectorised (every tile's scores at once, every
    row's softmax at once, every tile's Pij @ Vj at once: per tile and per row the same operations and products of the
    same shapes; Oi summed tile after tile), its steps tallied as `block` emits them. The same numbers bit for bit
    (tests/test_engine_vectorised.py)."""
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    scale = np.float32(cfg.softmax_scale)
    tc = cfg.tiles_of_block(i)
    w = min(n, tc * bc)
    r0, r1 = span(i, br, n)
    nr = r1 - r0
    fl = rec.flops
    spans = [span(j, bc, n) for j in range(tc)]
    steps: list[tuple[Any, ...]] = []

    # kernel 1: S = scale * Q K^T, every tile at once, each tile stored to HBM
    Qi = np.zeros((br, d), np.float32)  # (Br, D)
    q, tq = rec.hbm.read("Q", slice(r0, r1))
    Qi[:nr] = q
    Kt, tk = rec.hbm.read_tiles("K", spans, bc)  # (Tc, Bc, D)
    S = score_tiles(Qi, Kt, scale, r0, n, cfg.causal, fl)  # (Tc, Br, Bc)
    rec.tally_flops([phase_of(cfg, "scores", j) for j in range(tc)])
    steps.append((None, "load_q", phase_of(cfg, "load_q"), [tq], {"i": i}))
    for j, (c0, c1) in enumerate(spans):
        ts = rec.hbm.write("S", slice(r0, r1), S[j, :nr, : c1 - c0], cols=slice(c0, c1))
        steps.append((j, "load_k", phase_of(cfg, "load_k", j), [tk[j]], {"i": i, "j": j}))
        steps.append((j, "scores", phase_of(cfg, "scores", j), [ts], {"i": i, "j": j}))

    # kernel 2: every row of the block at once (each row's max, sum and P as the row kernel computes them)
    rows = rec.hbm.tensors["S"][r0:r1, :w].copy()  # (nr, w)
    mr = fl.rowmax(rows)  # (nr,)
    lr = fl.rowsum(fl.exp(fl.sub(rows, mr[:, None])))  # (nr,)
    P = fl.div(fl.exp(fl.sub(rows, mr[:, None])), lr[:, None])  # (nr, w): the kernel computes each exp twice
    rec.tally_flops([phase_of(cfg, "softmax_row", k=k) for k in range(nr)])
    for k, r in enumerate(range(r0, r1)):
        _, ts = rec.hbm.read("S", slice(r, r + 1), cols=slice(0, w))
        tp = rec.hbm.write("P", slice(r, r + 1), P[k], cols=slice(0, w))
        steps.append((None, "softmax_row", phase_of(cfg, "softmax_row", k=k), [ts, tp], {"i": i, "r": r}))

    # kernel 3: every tile's Pij @ Vj at once; Oi summed tile after tile
    Pt = np.zeros((tc, br, bc), np.float32)  # (Tc, Br, Bc) rows and columns past N zero
    pt = []
    for j, (c0, c1) in enumerate(spans):
        p, tp = rec.hbm.read("P", slice(r0, r1), cols=slice(c0, c1))
        Pt[j, :nr, : c1 - c0] = p
        pt.append(tp)
    Vt, tv = rec.hbm.read_tiles("V", spans, bc)  # (Tc, Bc, D)
    pv = fl.matmul(Pt, Vt)  # (Tc, Br, D)
    Oi = np.zeros((br, d), np.float32)  # (Br, D)
    for j in range(tc):
        Oi = np.add(Oi, pv[j])
    fl.count("add", tc * br * d)
    rec.tally_flops([phase_of(cfg, "accumulate", j) for j in range(tc)])
    for j in range(tc):
        steps.append((j, "load_pv", phase_of(cfg, "load_pv", j), [pt[j], tv[j]], {"i": i, "j": j}))
        steps.append((j, "accumulate", phase_of(cfg, "accumulate", j), [], {"i": i, "j": j}))
    to = rec.hbm.write("O", slice(r0, r1), Oi[:nr])
    steps.append((None, "write_o", phase_of(cfg, "write_o", tc=tc), [to], {"i": i}))
    for step in steps:
        rec.tally(*step)


def execute(cfg: Config, inputs: dict[str, np.ndarray]) -> Recorder:
    """Run every block of the three kernels on the memory model; return what was recorded."""
    rec = Recorder(KERNEL, WHERE, set(cfg.recorded_blocks(cfg.tr)))
    qkv = {name: inputs[name] for name in ("Q", "K", "V")}
    n, d = cfg.n, cfg.d
    return run_launch(rec, cfg, qkv, {"S": (n, n), "P": (n, n), "O": (n, d)}, [Grid(cfg.tr, block, fast=fast_block)])


trace_blocks = blocks_of_q  # one CUDA block per block of Q
