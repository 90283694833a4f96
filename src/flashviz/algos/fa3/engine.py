"""The fa3 forward executor: kernel.py's `_fwd_producer`, `_load_kv`, `_fwd_consumer` and `_fwd_tiles_overlapped`
(ping-pong and intra-warpgroup overlap on, as every launch of `launcher.py` runs them), with their
arithmetic, on the memory model, one block of Q (one CTA's turn) at a time.

Arithmetic (the same rules as fa2-triton's engine): Q, K, V are bf16 (float32 arrays holding bf16 values); the
wgmma products are exact and summed in fp32; the running max is in units of log2, the scale times log2(e) one
multiply (`qk_scale`, fp32); Pij = exp2(Sij·qk_scale − m_new) in fp32, li sums the fp32 Pij, Pij is rounded to bf16
only as P·V's operand; Oi is rescaled by alpha then P·V is accumulated into it; causal masking only on the diagonal
tiles (key column > query row), ragged N masks the key columns ≥ N of the last tile; one division at the end,
O stored in bf16, L = (mi + log2 li)·ln 2 in fp32.

Order (the overlapped schedule): tile 0's scores and softmax are peeled (`first_tile`); then for tile j ≥ 1 `scores`
issues Sij = Qi Kjᵀ and `online_softmax` rescales Oi by tile j−1's alpha, adds bf16(P_{j−1})·V_{j−1}, and only then
masks Sij and takes tile j's softmax; `last_pv` adds the last tile's P·V; `write_back` divides. Summed in this
order every row's arithmetic is the very sequence of fa2-triton's engine at the same tiles (tests hold them equal).

Ownership, recorded in each step's `schedule` (docs/trace-schema.md): the producer warp issues load_q and load_kv;
consumer warpgroup w owns rows i·128 + 64w .. i·128 + 64w + 63 of Qi, Sij, mi, li, Oi; tile j's Kj, Vj sit in ring
slot j mod STAGES at mbarrier phase (j div STAGES) mod 2 — the ring counts tiles from 0 in each program, and with one
head the launch has Tr <= 132 programs for the N the engine runs, one block each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flashviz.algos.picture import locator
from flashviz.model import precision
from flashviz.model.precision import bf16
from flashviz.model.tiling import span

from ...engine.memory import SRAM
from ...engine.recorder import Grid, Recorder, blocks_of_q, run_launch
from . import picture as drawing
from .record import KERNEL, NAME
from .tiles import NUM_WG, WG_ROWS, stages

if TYPE_CHECKING:
    from flashviz.model.config import Config

ALGO = NAME
WHERE = locator(drawing.KERNELS, drawing.PICKER)
LOG2E = 1.4426950408889634  # kernel.py's LOG2E
LN2 = np.float32(0.6931471805599453)  # kernel.py's LN2
SMS = 132  # the H200's SMs: the persistent launch runs min(blocks, SMS) programs

NO_MASK, MASK_COLUMNS, MASK_CAUSAL = "NO_MASK", "MASK_COLUMNS", "MASK_CAUSAL"  # kernel.py's masks


def phase_of(op: str, j: int | None, tc: int) -> int:
    """load_q 0; tile 0: load_kv 1, first_tile 2; tile j >= 1: load_kv 3j, scores 3j + 1, online_softmax 3j + 2;
    last_pv 3·tc, write_back 3·tc + 1 (tc: that block's tile count)."""
    if op == "load_q":
        return 0
    if op == "last_pv":
        return 3 * tc
    if op == "write_back":
        return 3 * tc + 1
    assert j is not None, op
    if j == 0:
        return {"load_kv": 1, "first_tile": 2}[op]
    return 3 * j + ("load_kv", "scores", "online_softmax").index(op)


def mask_of(cfg: Config, i: int, j: int) -> str:
    """The mask kernel.py applies to tile j of block i: tile 0 always takes the last tile's mask (MASK_LAST, a
    no-op on a tile wholly inside); tiles below n_full = (i·Br)//Bc (causal) or N//Bc none; the rest MASK_LAST."""
    last = MASK_CAUSAL if cfg.causal else MASK_COLUMNS
    n_full = (i * cfg.br) // cfg.bc if cfg.causal else cfg.n // cfg.bc
    if j == 0 or j >= max(n_full, 1):
        return last
    return NO_MASK


def program_of(cfg: Config, i: int) -> int:
    """The program (CTA) that runs block i with one head: `_fwd_tile_coords` (causal: the blocks with the most tiles
    first, t = Tr − 1 − i; otherwise t = i), and program t runs block t when there are at most SMS blocks."""
    return cfg.tr - 1 - i if cfg.causal else i


def owners(cfg: Config, i: int) -> list[dict[str, Any]]:
    """Consumer warpgroup w owns rows [i·Br + 64w, i·Br + 64w + 64) of the block (padding rows past N included)."""
    r0 = i * cfg.br
    out = []
    for w in range(NUM_WG):
        first, end = r0 + w * WG_ROWS, r0 + (w + 1) * WG_ROWS
        out.append({"warpgroup": w, "rows": [first, end], "valid": max(0, min(cfg.n, end) - first)})
    return out


def ring(cfg: Config, j: int) -> dict[str, int]:
    """Where tile j's Kj, Vj sit in the ring: slot j mod STAGES, filled for the (j div STAGES)-th time."""
    st = stages(cfg.d)
    return {"slot": j % st, "use": j // st, "phase": (j // st) & 1, "stages": st}


def chunks(a: np.ndarray, b: np.ndarray) -> list[float]:
    """a · b as wgmma adds it up: one fp32 partial sum per k-step of 16."""
    return [float(np.dot(a[k : k + 16], b[k : k + 16])) for k in range(0, a.shape[0], 16)]


def block(rec: Recorder, cfg: Config, i: int) -> None:
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    qk_scale = np.float32(cfg.softmax_scale * LOG2E)  # the launcher passes scale * log2(e) (> 0: tiles.check)
    keep = i in rec.recorded
    tc = cfg.tiles_of_block(i)
    fl = rec.flops
    sram = SRAM()
    Qi = sram.alloc("Qi", (br, d), itemsize=2)  # (Br, D) bf16: q_smem, one (64, D) half per consumer warpgroup
    Kj = sram.alloc("Kj", (bc, d), itemsize=2)  # (Bc, D) bf16: one slot of the K ring
    Vj = sram.alloc("Vj", (bc, d), itemsize=2)  # (Bc, D) bf16: one slot of the V ring
    Sij = sram.alloc("Sij", (br, bc), where="registers")  # (Br, Bc) fp32 accumulators, 64 rows per warpgroup
    mi = sram.alloc("mi", (br,), fill=-np.inf, where="registers")  # (Br,) in units of log2
    li = sram.alloc("li", (br,), where="registers")  # (Br,)
    Oi = sram.alloc("Oi", (br, d), where="registers")  # (Br, D) fp32 accumulators, 64 rows per warpgroup
    rec.sram_footprint = sram.footprint()
    r0, r1 = span(i, br, n)
    nr = r1 - r0
    rows = np.arange(r0, r0 + br)  # (Br,) query row of each row of Qi
    wg = owners(cfg, i)
    program = program_of(cfg, i)
    V_ring: dict[int, np.ndarray] = {}  # tile -> its V values, while its slot holds it (P·V reads tile j−1's)
    P = np.zeros((br, bc), np.float32)  # (Br, Bc) fp32 Pij carried to the next step's P·V
    alpha = np.zeros((br,), np.float32)  # (Br,) the factor not yet applied to Oi

    def consumers(j: int | None = None, **more: Any) -> dict[str, Any]:
        return {"partition": "consumers", "program": program, "warpgroups": wg, **more}

    def pv(j_pv: int) -> np.ndarray:
        """Oi = Oi * alpha, then Oi += bf16(P) @ V(j_pv) accumulated by wgmma (tile j_pv's P·V)."""
        P16 = bf16(P)  # (Br, Bc) _operand: Pij.to(bf16), wgmma's A from registers
        out = fl.matmul(P16, V_ring[j_pv])  # (Br, D) fp32
        Oi[:] = fl.mul(Oi, alpha[:, None]) + out
        return out

    def softmax(j: int) -> dict[str, np.ndarray]:
        nonlocal P, alpha
        cols = j * bc + np.arange(bc)  # (Bc,) key column of each column of Sij
        mask = mask_of(cfg, i, j)
        if mask == MASK_CAUSAL:
            Sij[rows[:, None] < cols[None, :]] = -np.inf
        elif mask == MASK_COLUMNS:
            Sij[:, cols >= n] = -np.inf
        m_old, l_old = mi.copy(), li.copy()  # (Br,)
        m_ij = fl.mul(fl.rowmax(Sij), qk_scale)  # (Br,) gl.max(Sij, 1) * qk_scale
        m_new = fl.fmax(mi, m_ij)  # (Br,)
        P = fl.exp2(fl.fma(Sij, qk_scale, -m_new[:, None]))  # (Br, Bc) fp32
        alpha = fl.exp2(fl.sub(mi, m_new))  # (Br,)
        lsum = fl.rowsum(P)  # (Br,)
        li[:] = fl.fma(li, alpha, lsum)
        mi[:] = m_new
        Sij[:] = P
        return {"m_old": m_old, "m_ij": m_ij, "m_new": m_new, "alpha": alpha, "l_old": l_old, "rowsum": lsum}

    # step: load_q -- the producer: two TMA loads, Q[i·Br + 64w : +64] into q_smem[w]; rows past N read as zeros
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
        schedule={"partition": "producer", "program": program, "warpgroups": wg},
    )

    for j in range(tc):
        c0, c1 = span(j, bc, n)
        nc = c1 - c0
        slot = ring(cfg, j)
        # step: load_kv -- the producer: Kj, Vj by TMA into ring slot s once both consumers freed it
        k, tk = rec.hbm.read("K", slice(c0, c1))
        v, tv = rec.hbm.read("V", slice(c0, c1))
        Kj[:nc], Kj[nc:] = k, 0.0
        Vj[:nc], Vj[nc:] = v, 0.0
        V_ring[j] = Vj.copy()
        V_ring.pop(j - slot["stages"], None)  # that slot now holds tile j
        rec.emit(
            i,
            j,
            "load_kv",
            phase_of("load_kv", j, tc),
            [tk, tv],
            {"Kj": Kj, "Vj": Vj},
            code=({"s": slot["slot"], "phase": slot["phase"]}, f"ring slot {slot['slot']} of {slot['stages']}"),
            schedule={"partition": "producer", "program": program, "ring": slot},
        )

        mask = mask_of(cfg, i, j)
        if j == 0:
            # step: first_tile -- tile 0 peeled: Sij = Qi K0ᵀ (wgmma, waited), masked with MASK_LAST, its softmax
            fl.matmul(Qi, Kj.T, out=Sij)  # (Br, Bc)
            raw = Sij.copy() if keep else None
            parts = softmax(0)
            rec.emit(
                i,
                0,
                "first_tile",
                phase_of("first_tile", 0, tc),
                [],
                {"Sij": Sij, "mi": mi, "li": li},
                carries={k_: v_ for k_, v_ in parts.items()} | {"mi": mi.copy(), "li": li.copy()} if keep else None,
                code=({"s": slot["slot"], "phase": slot["phase"]}, f"{mask}; ring slot {slot['slot']}"),
                schedule=consumers(ring=slot, mask=mask, pv_of=None),
                mma={"dot": "scores", "row": r0, "col": c0, "parts": chunks(Qi[0], Kj[0]), "value": float(raw[0, 0])}
                if keep and raw is not None and np.isfinite(raw[0, 0])
                else None,
                facts={"raw": raw},  # the scores before the mask and the softmax, for its words
            )
            continue

        prev = ring(cfg, j - 1)
        # step: scores -- Sij = wgmma(Qi, Kjᵀ), issued asynchronously (fp32, not yet scaled, not yet masked)
        fl.matmul(Qi, Kj.T, out=Sij)  # (Br, Bc)
        rec.emit(
            i,
            j,
            "scores",
            phase_of("scores", j, tc),
            [],
            {"Sij": Sij},
            code=({"s": slot["slot"]}, f"ring slot {slot['slot']}"),
            schedule=consumers(ring=slot, pv_of=None),
            mma={"dot": "scores", "row": r0, "col": c0, "parts": chunks(Qi[0], Kj[0]), "value": float(Sij[0, 0])}
            if keep
            else None,
        )

        # step: online_softmax -- tile j−1's rescale and P·V (under Sij's product), then tile j's mask and softmax
        alpha_prev = alpha.copy()  # (Br,) tile j−1's factor, applied to Oi now
        p_prev = bf16(P)[0] if keep else None
        out = pv(j - 1)
        parts = softmax(j)
        code = ({"s": slot["slot"], "sp": prev["slot"], "phase_p": prev["phase"]}, f"{mask}; P·V of tile {j - 1}")
        sched = consumers(ring=slot, mask=mask, pv_of=j - 1, pv_ring=prev)
        if not keep or p_prev is None:
            rec.emit(i, j, "online_softmax", phase_of("online_softmax", j, tc), [], code=code, schedule=sched)
            continue
        shown = (  # the values of words.PARTS's three
            {"alpha": alpha_prev, "PV": out},
            {"m_old": parts["m_old"], "m_ij": parts["m_ij"], "m_new": parts["m_new"]},
            {"alpha": parts["alpha"], "l_old": parts["l_old"], "rowsum": parts["rowsum"], "l_new": li.copy()},
        )
        rec.emit(
            i,
            j,
            "online_softmax",
            phase_of("online_softmax", j, tc),
            [],
            {"Sij": Sij, "Oi": Oi, "mi": mi, "li": li},
            carries={**parts, "mi": mi.copy(), "li": li.copy()},
            parts=shown,
            code=code,
            schedule=sched,
            mma={
                "dot": "pv",
                "row": r0,
                "col": 0,
                "parts": chunks(p_prev, V_ring[j - 1][:, 0]),
                "value": float(out[0, 0]),
            },
        )

    # step: last_pv -- the last tile's rescale and P·V
    last = ring(cfg, tc - 1)
    p_last = bf16(P)[0] if keep else None
    out = pv(tc - 1)
    rec.emit(
        i,
        tc - 1,
        "last_pv",
        phase_of("last_pv", tc - 1, tc),
        [],
        {"Oi": Oi},
        code=({"sp": last["slot"], "phase_p": last["phase"]}, f"ring slot {last['slot']}"),
        schedule=consumers(ring=last, pv_of=tc - 1, pv_ring=last),
        mma={"dot": "pv", "row": r0, "col": 0, "parts": chunks(p_last, V_ring[tc - 1][:, 0]), "value": float(out[0, 0])}
        if keep and p_last is not None
        else None,
        facts={"pv": out} if keep else None,  # the last tile's P·V, for its words
    )

    # step: write_back -- Oi / li, stored as bf16 by TMA (rows past N dropped); L = (mi + log2(li)) * ln 2, fp32
    Oi[:] = bf16(fl.div(Oi, li[:, None]))
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
        schedule=consumers(),
    )


def fast_block(rec: Recorder, cfg: Config, i: int) -> None:
    """Block i, not recorded: `block`'s arithmetic vectorised over its tiles, its steps tallied as `block` emits them:
    every tile's scores, mask, softmax, bf16(P) and P @ Vj at once (per tile the same operations and products of the
    same shapes), the running max by fmaxf tile after tile, and li, Oi in the kernel's order (Oi takes tile j's P·V
    under tile j+1's scores: the same sums in the same order). The same numbers bit for bit
    (tests/test_engine_vectorised.py)."""
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    qk_scale = np.float32(cfg.softmax_scale * LOG2E)
    tc = cfg.tiles_of_block(i)
    fl = rec.flops
    r0, r1 = span(i, br, n)
    nr = r1 - r0
    rows = np.arange(r0, r0 + br)  # (Br,)
    first = phase_of("first_tile", 0, tc)
    later = [phase_of("online_softmax", j, tc) for j in range(1, tc)]

    Qi = np.zeros((br, d), np.float32)  # (Br, D)
    q, tq = rec.hbm.read("Q", slice(r0, r1))
    Qi[:nr] = q
    spans = [span(j, bc, n) for j in range(tc)]
    Kt, tk = rec.hbm.read_tiles("K", spans, bc)  # (Tc, Bc, D)
    Vt, tv = rec.hbm.read_tiles("V", spans, bc)  # (Tc, Bc, D)
    S = fl.matmul(Qi, Kt.swapaxes(-1, -2))  # (Tc, Br, Bc) wgmma(Qi, Kjᵀ): tile 0's at first_tile, the rest at scores
    rec.tally_flops([first] + [phase_of("scores", j, tc) for j in range(1, tc)])
    # softmax of every tile: its mask, max, P, alpha, rowsum (tile 0's at first_tile, tile j's at online_softmax j)
    cols = np.arange(tc * bc).reshape(tc, 1, bc)  # (Tc, 1, Bc)
    masks = np.array([mask_of(cfg, i, j) for j in range(tc)]).reshape(tc, 1, 1)
    masked = ((masks == MASK_CAUSAL) & (rows[None, :, None] < cols)) | ((masks == MASK_COLUMNS) & (cols >= n))
    S[np.broadcast_to(masked, S.shape)] = -np.inf
    start = np.full(br, -np.inf, np.float32)
    m_ij = fl.mul(fl.rowmax(S), qk_scale)  # (Tc, Br)
    m_new = fl.running_max(m_ij, start)  # (Tc, Br) mi after tile j
    P = fl.exp2(fl.fma(S, qk_scale, -m_new[:, :, None]))  # (Tc, Br, Bc)
    m_old = np.concatenate([start[None], m_new[:-1]])  # (Tc, Br)
    alpha = fl.exp2(fl.sub(m_old, m_new))  # (Tc, Br)
    lsum = fl.rowsum(P)  # (Tc, Br)
    li = np.zeros(br, np.float32)  # (Br,)
    for j in range(tc):
        li = precision.fma(li, alpha[j], lsum[j])
    fl.count("mul", tc * br)  # the fma's, as `block` counts them
    fl.count("add", tc * br)
    rec.tally_flops([first, *later])
    # P·V of every tile, each rescaling Oi first (tile j's at online_softmax j+1, the last tile's at last_pv)
    pv = fl.matmul(bf16(P), Vt)  # (Tc, Br, D)
    Oi = np.zeros((br, d), np.float32)  # (Br, D)
    for j in range(tc):
        Oi = np.multiply(Oi, alpha[j][:, None]) + pv[j]
    fl.count("mul", tc * br * d)
    rec.tally_flops([*later, phase_of("last_pv", tc - 1, tc)])
    # write_back
    mi = m_new[-1] if tc else start
    Oi = bf16(fl.div(Oi, li[:, None]))
    L_i = fl.mul(fl.add(mi, fl.log2(li)), LN2)  # (Br,)
    to = rec.hbm.write("O", slice(r0, r1), Oi[:nr])
    tl = rec.hbm.write("L", slice(r0, r1), L_i[:nr])
    rec.tally_flops([phase_of("write_back", None, tc)])

    rec.tally(None, "load_q", phase_of("load_q", None, tc), [tq], {"i": i})
    for j in range(tc):
        at = {"i": i, "j": j}
        rec.tally(j, "load_kv", phase_of("load_kv", j, tc), [tk[j], tv[j]], at)
        if j == 0:
            rec.tally(0, "first_tile", first, [], at)
            continue
        rec.tally(j, "scores", phase_of("scores", j, tc), [], at)
        rec.tally(j, "online_softmax", phase_of("online_softmax", j, tc), [], at)
    rec.tally(tc - 1, "last_pv", phase_of("last_pv", tc - 1, tc), [], {"i": i, "j": tc - 1})
    rec.tally(None, "write_back", phase_of("write_back", None, tc), [tl, to], {"i": i})


def execute(cfg: Config, inputs: dict[str, np.ndarray]) -> Recorder:
    """Run every block of the launch on the memory model (Q, K, V rounded to bf16 first); return what was recorded."""
    rec = Recorder(KERNEL, WHERE, set(cfg.recorded_blocks(cfg.tr)))
    qkv = {name: bf16(np.asarray(inputs[name], dtype=np.float32)) for name in ("Q", "K", "V")}
    grid = Grid(cfg.tr, block, fast=fast_block)
    return run_launch(rec, cfg, qkv, {"O": (cfg.n, cfg.d), "L": (cfg.n,)}, [grid])


trace_blocks = blocks_of_q  # one block of Q per program's turn (and head)
