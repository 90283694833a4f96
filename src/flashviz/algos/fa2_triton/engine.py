"""The Triton FA2 forward executor: kernel.py's `fa2_fwd` and `_fwd_tiles`, with their arithmetic, on the memory
model. Q, K, V are bf16 (float32 arrays holding bf16 values); the products are exact and summed in fp32 as the
tensor cores accumulate them; the scale times log2(e) is one multiply and the exponentials are exp2; P is rounded to
bf16 before P·V; O is written in bf16, L in fp32. The kernel's fused multiply-adds (`Sij * qk_scale - m_new`,
`li * alpha + rowsum`) are rounded once, as on the GPU; exp2 and log2 are NumPy's exact ones where the GPU uses its
approximate `ex2.approx` and `lg2.approx` (a few units in the last place of fp32).

The loop over tiles runs in the kernel's stages: not causal, the tiles wholly inside N unmasked, then the ragged
last one with its columns >= N masked; causal, the tiles wholly below block i's diagonal unmasked, then its diagonal
tiles masked (key column > query row).

Its arithmetic goes through the recorder's FLOP counter (`rec.flops`), as the kernel computes it: on whole tiles, and
D wide with D rounded up to a power of two (`pad`: the kernel's zero columns are multiplied too); flops.py is the
closed form.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos.picture import locator
from flashviz.model import precision
from flashviz.model.precision import bf16
from flashviz.model.tiling import span

from ...engine.memory import SRAM
from ...engine.recorder import Grid, Recorder, blocks_of_q, run_launch
from . import picture as drawing
from .record import KERNEL, NAME
from .tiles import padded

if TYPE_CHECKING:
    from flashviz.model.config import Config

ALGO = NAME
WHERE = locator(drawing.KERNELS, drawing.PICKER)  # (op, indices) -> its kernel, blockIdx.x and pick
LOG2E = 1.4426950408889634  # kernel.py's LOG2E: exp(x) = exp2(x * LOG2E)
LN2 = np.float32(0.6931471805599453)

NO_MASK, MASK_COLUMNS, MASK_CAUSAL = "NO_MASK", "MASK_COLUMNS", "MASK_CAUSAL"  # kernel.py's loop stages


def phase_of(op: str, j: int | None, tc: int) -> int:
    """load_q, then 3 per tile, then write_back (tc: that block's tile count)."""
    if op == "load_q":
        return 0
    if op == "write_back":
        return 1 + 3 * tc
    assert j is not None, op
    return 1 + 3 * j + ("load_kv", "scores", "online_softmax").index(op)


def stage_of(cfg: Config, i: int, j: int) -> str:
    """The loop stage of kernel.py that runs tile j of block i: which mask `_fwd_tiles` applies to it."""
    if cfg.causal:
        return NO_MASK if j * cfg.bc < i * cfg.br else MASK_CAUSAL
    return NO_MASK if (j + 1) * cfg.bc <= cfg.n else MASK_COLUMNS


def chunks(a: np.ndarray, b: np.ndarray) -> list[float]:
    """a · b as the tensor cores add it up: one fp32 partial sum per k-step of 16 (a, b: one row and one column)."""
    return [float(np.dot(a[k : k + 16], b[k : k + 16])) for k in range(0, a.shape[0], 16)]


def block(rec: Recorder, cfg: Config, i: int) -> None:
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    qk_scale = np.float32(cfg.softmax_scale * LOG2E)  # the host passes scale * log2(e); the kernel takes it as fp32
    scale_first = bool(qk_scale <= 0)  # the host's SCALE_FIRST
    keep = i in rec.recorded
    tc = cfg.tiles_of_block(i)
    fl = rec.flops  # the arithmetic below, counted as it is done
    pad = padded(d) - d  # the tiles' columns past D, zeros the kernel computes with (96 runs as 128)
    sram = SRAM()
    Qi = sram.alloc("Qi", (br, d), itemsize=2)  # (Br, D) bf16, by TMA into shared memory
    Kj = sram.alloc("Kj", (bc, d), itemsize=2)  # (Bc, D) bf16
    Vj = sram.alloc("Vj", (bc, d), itemsize=2)  # (Bc, D) bf16
    Sij = sram.alloc("Sij", (br, bc), where="registers")  # (Br, Bc) fp32 accumulators
    mi = sram.alloc("mi", (br,), fill=-np.inf, where="registers")  # (Br,) in units of log2
    li = sram.alloc("li", (br,), where="registers")  # (Br,)
    Oi = sram.alloc("Oi", (br, d), where="registers")  # (Br, D) fp32 accumulators
    rec.sram_footprint = sram.footprint()
    r0, r1 = span(i, br, n)
    nr = r1 - r0
    rows = np.arange(r0, r0 + br)  # (Br,) query row of each row of Qi, padding rows included

    # step: load_q -- Qi = desc_q.load([i * Br, 0]); rows past N read as zeros
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
        start = j * bc
        c0, c1 = span(j, bc, n)
        nc = c1 - c0
        stage = stage_of(cfg, i, j)
        code = ({"start": start}, f"{stage} stage")
        # step: load_kv -- Kj, Vj = desc_k.load([start, 0]), desc_v.load([start, 0]); rows past N read as zeros
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
            code=code,
        )

        # step: scores -- Sij = tl.dot(Qi, Kj.T): exact bf16 products summed in fp32, not yet scaled; then the mask
        fl.matmul(Qi, Kj.T, out=Sij)  # (Br, Bc)
        fl.count("matmul", 2 * br * bc * pad)
        if scale_first:  # kernel.py's SCALE_FIRST: a scale <= 0 scales each score before the max (and the mask)
            Sij[:] = fl.mul(Sij, qk_scale)
        cols = start + np.arange(bc)  # (Bc,) key column of each column of Sij
        if stage == MASK_CAUSAL:
            Sij[rows[:, None] < cols[None, :]] = -np.inf
        elif stage == MASK_COLUMNS:
            Sij[:, cols >= n] = -np.inf
        mma = None
        if keep:
            parts = chunks(Qi[0], Kj[0])
            mma = {"dot": "scores", "row": r0, "col": c0, "parts": parts, "value": float(Sij[0, 0])}
        rec.emit(
            i,
            j,
            "scores",
            phase_of("scores", j, tc),
            [],
            {"Sij": Sij},
            code=code,
            mma=mma,
        )

        # step: online_softmax -- in units of log2: m_new, Pij = exp2(Sij * qk_scale - m_new), alpha, li, Oi
        m_old, l_old = mi.copy(), li.copy()  # (Br,)
        if scale_first:
            m_ij = fl.rowmax(Sij)  # (Br,) tl.max(Sij, 1) of the scores already scaled
            m_new = fl.fmax(mi, m_ij)
            P = fl.exp2(fl.sub(Sij, m_new[:, None]))  # (Br, Bc)
        else:
            m_ij = fl.mul(fl.rowmax(Sij), qk_scale)  # (Br,) tl.max(Sij, 1) * qk_scale
            m_new = fl.fmax(mi, m_ij)  # (Br,) tl.maximum
            P = fl.exp2(fl.fma(Sij, qk_scale, -m_new[:, None]))  # (Br, Bc) fp32, the fused multiply-add then exp2
        alpha = fl.exp2(fl.sub(mi, m_new))  # (Br,)
        lsum = fl.rowsum(P)  # (Br,) fp32
        li[:] = fl.fma(li, alpha, lsum)
        P16 = bf16(P)  # (Br, Bc) Pij.to(Vj.dtype): what the tensor cores multiply
        pv = fl.matmul(P16, Vj)  # (Br, D) fp32 accumulation
        fl.count("matmul", 2 * br * bc * pad)
        # tl.dot(P, Vj, Oi * alpha): the add into Oi is the accumulate of the tensor cores' multiply-add, in matmul
        Oi[:] = fl.mul(Oi, alpha[:, None]) + pv
        fl.count("mul", br * pad)
        mi[:] = m_new
        Sij[:] = P
        phase = phase_of("online_softmax", j, tc)
        if not keep:
            rec.emit(i, j, "online_softmax", phase, [], code=code)
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
        shown = (  # the values of words.PARTS's three
            {"m_old": m_old, "m_ij": m_ij, "m_new": m_new},
            {"alpha": alpha, "l_old": l_old, "rowsum": lsum, "l_new": li.copy()},
            {"alpha": alpha, "PV": pv},
        )
        rounding = float(np.abs(P - P16)[:nr].max()) if nr else 0.0
        rec.emit(
            i,
            j,
            "online_softmax",
            phase,
            [],
            {"Sij": Sij, "Oi": Oi, "mi": mi, "li": li},
            carries=carries,
            parts=shown,
            code=code,
            mma={"dot": "pv", "row": r0, "col": 0, "parts": chunks(P16[0], Vj[:, 0]), "value": float(pv[0, 0])},
            facts={"rounding": rounding},  # the largest change bf16 made to P, for its words
        )

    # step: write_back -- Oi / li, stored as bf16 (rows past N are not stored); L = (mi + log2(li)) * ln 2 in fp32
    Oi[:] = bf16(fl.div(Oi, li[:, None]))  # Oi.to(desc_o.dtype): the tile the store moves holds bf16 values
    fl.count("div", br * pad)
    L_i = fl.mul(fl.add(mi, fl.log2(li)), LN2)  # (Br,)
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
    """Block i, not recorded: `block`'s arithmetic vectorised over its tiles, its steps tallied as `block` emits them:
    the tiles' scores, masks, maxima, P, its bf16 rounding and P @ Vj at once (per tile the same operations and
    products of the same shapes), the running max by fmaxf tile after tile, and li, Oi (which each tile rescales) in
    the kernel's order. The same numbers bit for bit (tests/test_engine_vectorised.py)."""
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    qk_scale = np.float32(cfg.softmax_scale * LOG2E)
    scale_first = bool(qk_scale <= 0)
    tc = cfg.tiles_of_block(i)
    fl = rec.flops
    pad = padded(d) - d
    r0, r1 = span(i, br, n)
    nr = r1 - r0
    rows = np.arange(r0, r0 + br)  # (Br,)

    Qi = np.zeros((br, d), np.float32)  # (Br, D)
    q, tq = rec.hbm.read("Q", slice(r0, r1))
    Qi[:nr] = q
    spans = [span(j, bc, n) for j in range(tc)]
    Kt, tk = rec.hbm.read_tiles("K", spans, bc)  # (Tc, Bc, D)
    Vt, tv = rec.hbm.read_tiles("V", spans, bc)  # (Tc, Bc, D)
    # scores: tl.dot(Qi, Kj.T) per tile, then (SCALE_FIRST) the scale, then each tile's stage's mask
    S = fl.matmul(Qi, Kt.swapaxes(-1, -2))  # (Tc, Br, Bc)
    fl.count("matmul", tc * 2 * br * bc * pad)
    if scale_first:
        S = fl.mul(S, qk_scale)
    cols = np.arange(tc * bc).reshape(tc, 1, bc)  # (Tc, 1, Bc) key column of each column of Sij
    stages = np.array([stage_of(cfg, i, j) for j in range(tc)]).reshape(tc, 1, 1)
    masked = ((stages == MASK_CAUSAL) & (rows[None, :, None] < cols)) | ((stages == MASK_COLUMNS) & (cols >= n))
    S[np.broadcast_to(masked, S.shape)] = -np.inf
    rec.tally_flops([phase_of("scores", j, tc) for j in range(tc)])
    # online_softmax, in units of log2
    start = np.full(br, -np.inf, np.float32)
    if scale_first:
        m_ij = fl.rowmax(S)  # (Tc, Br)
        m_new = fl.running_max(m_ij, start)  # (Tc, Br) mi after tile j
        P = fl.exp2(fl.sub(S, m_new[:, :, None]))  # (Tc, Br, Bc)
    else:
        m_ij = fl.mul(fl.rowmax(S), qk_scale)  # (Tc, Br)
        m_new = fl.running_max(m_ij, start)
        P = fl.exp2(fl.fma(S, qk_scale, -m_new[:, :, None]))  # (Tc, Br, Bc)
    m_old = np.concatenate([start[None], m_new[:-1]])  # (Tc, Br) mi before tile j
    alpha = fl.exp2(fl.sub(m_old, m_new))  # (Tc, Br)
    lsum = fl.rowsum(P)  # (Tc, Br)
    pv = fl.matmul(bf16(P), Vt)  # (Tc, Br, D) fp32 accumulation of bf16(P) @ Vj
    fl.count("matmul", tc * 2 * br * bc * pad)
    li = np.zeros(br, np.float32)  # (Br,)
    Oi = np.zeros((br, d), np.float32)  # (Br, D)
    for j in range(tc):  # the carries, tile after tile: li = fma(li, alpha, rowsum), Oi = Oi * alpha + P @ Vj
        li = precision.fma(li, alpha[j], lsum[j])
        Oi = np.multiply(Oi, alpha[j][:, None]) + pv[j]
    fl.count("mul", tc * (br + br * d + br * pad))  # as `block` counts: the fma's, Oi * alpha, the padding's
    fl.count("add", tc * br)
    rec.tally_flops([phase_of("online_softmax", j, tc) for j in range(tc)])
    # write_back
    mi = m_new[-1] if tc else start
    Oi = bf16(fl.div(Oi, li[:, None]))
    fl.count("div", br * pad)
    L_i = fl.mul(fl.add(mi, fl.log2(li)), LN2)  # (Br,)
    to = rec.hbm.write("O", slice(r0, r1), Oi[:nr])
    tl = rec.hbm.write("L", slice(r0, r1), L_i[:nr])
    rec.tally_flops([phase_of("write_back", None, tc)])

    rec.tally(None, "load_q", phase_of("load_q", None, tc), [tq], {"i": i})
    for j in range(tc):
        at = {"i": i, "j": j}
        rec.tally(j, "load_kv", phase_of("load_kv", j, tc), [tk[j], tv[j]], at)
        rec.tally(j, "scores", phase_of("scores", j, tc), [], at)
        rec.tally(j, "online_softmax", phase_of("online_softmax", j, tc), [], at)
    rec.tally(None, "write_back", phase_of("write_back", None, tc), [tl, to], {"i": i})


def execute(cfg: Config, inputs: dict[str, np.ndarray]) -> Recorder:
    """Run every block of the launch on the memory model (Q, K, V rounded to bf16 first); return what was recorded."""
    rec = Recorder(KERNEL, WHERE, set(cfg.recorded_blocks(cfg.tr)))
    qkv = {name: bf16(np.asarray(inputs[name], dtype=np.float32)) for name in ("Q", "K", "V")}
    grid = Grid(cfg.tr, block, fast=fast_block)
    return run_launch(rec, cfg, qkv, {"O": (cfg.n, cfg.d), "L": (cfg.n,)}, [grid])


trace_blocks = blocks_of_q  # one program per block of Q (and head)
