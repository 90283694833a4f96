"""The Triton FA2 forward executor: kernel.py's `fa2_fwd` and `_fwd_tiles`, with their arithmetic, on the memory
model. Q, K, V are bf16 (float32 arrays holding bf16 values); the products are exact and summed in fp32 as the
tensor cores accumulate them; the scale times log2(e) is one multiply and the exponentials are exp2; P is rounded to
bf16 before P·V; O is written in bf16, L in fp32. The kernel's fused multiply-adds (`Sij * qk_scale - m_new`,
`li * alpha + rowsum`) are rounded once, as on the GPU; exp2 and log2 are NumPy's exact ones where the GPU uses its
approximate `ex2.approx` and `lg2.approx` (a few units in the last place of fp32).

The loop over tiles runs in the kernel's three stages (`stages`, kernel.py's `_q_stages`): under BAND_LEFT the tiles
crossing the window's left edge (masked), the tiles wholly inside every row's band (NO_MASK), then those crossing its
right edge (the diagonal under causal, the window's right side) or Nk (MASK_BAND); tiles wholly outside the band
are never visited. With the options of real models (flashviz.model.config, issue 22) the launch is one K/V head: its
`group` q heads one above the other in Q, O and L, each holding the packed sequences (`plan`: a pick is a block of
one (q head, sequence) segment, against that sequence's keys); Nq ≠ Nk aligns the band to the bottom-right; soft-
capping scales each score first and caps it, c·log2e·tanh(scale·s/c), as SCALE_FIRST does.

Its arithmetic goes through the recorder's FLOP counter (`rec.flops`), as the kernel computes it: on whole tiles, and
D wide with D rounded up to a power of two (`pad`: the kernel's zero columns are multiplied too); flops.py is the
closed form.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flashviz.algos.picture import locator
from flashviz.model import band, precision
from flashviz.model.precision import bf16
from flashviz.model.tiling import span

from ...engine.memory import SRAM
from ...engine.recorder import Grid, Recorder, blocks_of_q, run_launch
from . import picture as drawing
from . import segments as segment_words
from .loops import NO_MASK, plan, stages
from .record import KERNEL, NAME
from .tiles import padded

if TYPE_CHECKING:
    from flashviz.engine.flops import Flops
    from flashviz.model.config import Config

ALGO = NAME
WHERE = locator(drawing.KERNELS, drawing.PICKER)  # (op, indices) -> its kernel, blockIdx.x and pick
LOG2E = 1.4426950408889634  # kernel.py's LOG2E: exp(x) = exp2(x * LOG2E)
LN2 = np.float32(0.6931471805599453)
TWO_LOG2E = np.float32(2.0 * LOG2E)  # _tanh's constant, folded by Triton (a constexpr product) and taken as fp32
TANH_SERIES = np.float32(0.03125)  # kernel.py's TANH_SERIES and TANH_X3: _tanh's series near 0, in fp32
TANH_X3 = np.float32(-1.0 / 3.0)


def phase_of(op: str, k: int | None, tc: int) -> int:
    """load_q, then 3 per tile, then write_back (k: the tile's place in the block's loop; tc: its tile count)."""
    if op == "load_q":
        return 0
    if op == "write_back":
        return 1 + 3 * tc
    assert k is not None, op
    return 1 + 3 * k + ("load_kv", "scores", "online_softmax").index(op)


def chunks(a: np.ndarray, b: np.ndarray) -> list[float]:
    """a · b as the tensor cores add it up: one fp32 partial sum per k-step of 16 (a, b: one row and one column)."""
    return [float(np.dot(a[k : k + 16], b[k : k + 16])) for k in range(0, a.shape[0], 16)]


def tanh(fl: Flops, x: np.ndarray) -> np.ndarray:
    """kernel.py's `_tanh` in fp32: x + x·x·x·(−1/3) below |x| = 1/32, 1 − 2 / (exp2(x·(2·log2 e)) + 1) elsewhere;
    the kernel computes both on every score and selects (so both are counted)."""
    e = fl.exp2(fl.mul(x, TWO_LOG2E))
    far = fl.sub(np.float32(1.0), fl.div(np.float32(2.0), fl.add(e, np.float32(1.0))))
    near0 = fl.add(x, fl.mul(fl.mul(fl.mul(x, x), x), TANH_X3))
    return np.where(np.abs(x) < TANH_SERIES, near0, far)


def block(rec: Recorder, cfg: Config, pick: int, picks: list[tuple[band.Segment, int]] | None = None) -> None:
    seg, i = (picks or plan(cfg))[pick]
    n, nk, d, br, bc = seg.nq, seg.nk, cfg.d, cfg.br, cfg.bc
    off = seg.off
    left, right = cfg.sides
    capped = cfg.softcap > 0
    if capped:  # the host: qk_scale = scale / c, softcap2 = c * log2(e), SCALE_FIRST
        qk_scale, softcap2 = np.float32(cfg.softmax_scale / cfg.softcap), np.float32(cfg.softcap * LOG2E)
    else:
        qk_scale, softcap2 = np.float32(cfg.softmax_scale * LOG2E), np.float32(0.0)
    scale_first = bool(qk_scale <= 0) or capped  # the host's SCALE_FIRST
    keep = pick in rec.recorded
    tiles = stages(cfg, seg, i)
    tc = len(tiles)
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
    r0, r1 = span(i, br, n)  # rows of the segment
    nr = r1 - r0
    q0, k0 = seg.q0, seg.k0  # where the segment's rows start in Q (O, L) and its keys in K, V
    rows = np.arange(r0, r0 + br)  # (Br,) query row of each row of Qi, padding rows included
    segmented = cfg.group > 1 or cfg.seqlens is not None
    at = {"block": pick} if segmented else {}  # the pick, where it is not block i (picture.Kernel.block_index)
    where = segment_words.where_words(cfg, seg) if segmented else ""

    # step: load_q -- Qi = desc_q.load([i * Br, 0]); rows past the sequence's N read as zeros
    q, t = rec.hbm.read("Q", slice(q0 + r0, q0 + r1))
    Qi[:nr] = q
    rec.emit(
        pick,
        None,
        "load_q",
        phase_of("load_q", None, tc),
        [t],
        {"Qi": Qi, "Oi": Oi, "mi": mi, "li": li},
        carries={"mi": mi.copy(), "li": li.copy()} if keep else None,
        indices={**at, "i": i},
        code=({}, where) if where else None,
    )

    for k, (start, stage) in enumerate(tiles):
        j = start // bc
        c0, c1 = start, min(start + bc, nk)
        nc = c1 - c0
        note = f"{where} \u00b7 {stage} stage" if where else f"{stage} stage"
        code = ({"start": start}, note)
        idx = {**at, "i": i, "j": j}
        # step: load_kv -- Kj, Vj = desc_k.load([start, 0]), desc_v.load([start, 0]); rows past Nk read as zeros
        kk, tk = rec.hbm.read("K", slice(k0 + c0, k0 + c1))
        v, tv = rec.hbm.read("V", slice(k0 + c0, k0 + c1))
        Kj[:nc], Kj[nc:] = kk, 0.0
        Vj[:nc], Vj[nc:] = v, 0.0
        rec.emit(
            pick,
            j,
            "load_kv",
            phase_of("load_kv", k, tc),
            [tk, tv],
            {"Kj": Kj, "Vj": Vj},
            indices=idx,
            code=code,
        )

        # step: scores -- Sij = tl.dot(Qi, Kj.T): exact bf16 products summed in fp32, not yet scaled; then the mask
        fl.matmul(Qi, Kj.T, out=Sij)  # (Br, Bc)
        fl.count("matmul", 2 * br * bc * pad)
        raw = Sij[0, 0] if keep else 0.0
        if scale_first:  # SCALE_FIRST: a scale <= 0, or soft-capping, scales each score before the max (and the mask)
            Sij[:] = fl.mul(Sij, qk_scale)
            if capped:
                Sij[:] = fl.mul(softcap2, tanh(fl, Sij))  # c * tanh(scale * s / c), in units of log2
        cols = start + np.arange(bc)  # (Bc,) key column of each column of Sij
        if stage != NO_MASK:  # MASK_BAND: each element checked (_visible)
            Sij[~band.visible(rows[:, None], cols[None, :], nk, off, left, right)] = -np.inf
        mma = None
        if keep:
            parts = chunks(Qi[0], Kj[0])
            mma = {"dot": "scores", "row": q0 + r0, "col": k0 + c0, "parts": parts, "value": float(raw)}
        rec.emit(
            pick,
            j,
            "scores",
            phase_of("scores", k, tc),
            [],
            {"Sij": Sij},
            indices=idx,
            code=code,
            mma=mma,
        )

        # step: online_softmax -- in units of log2: m_new, Pij = exp2(Sij * qk_scale - m_use), alpha, li, Oi
        m_old, l_old = mi.copy(), li.copy()  # (Br,)
        if scale_first:
            m_ij = fl.rowmax(Sij)  # (Br,) tl.max(Sij, 1) of the scores already scaled
        else:
            m_ij = fl.mul(fl.rowmax(Sij), qk_scale)  # (Br,) tl.max(Sij, 1) * qk_scale
        m_new = fl.fmax(mi, m_ij)  # (Br,) tl.maximum
        m_use = m_new
        if stage != NO_MASK:  # a row that has seen no key yet: P = 0, not NaN
            m_use = np.where(m_new == -np.inf, np.float32(0.0), m_new).astype(np.float32)
        if scale_first:
            P = fl.exp2(fl.sub(Sij, m_use[:, None]))  # (Br, Bc)
        else:
            P = fl.exp2(fl.fma(Sij, qk_scale, -m_use[:, None]))  # (Br, Bc) fp32, the fused multiply-add then exp2
        alpha = fl.exp2(fl.sub(mi, m_use))  # (Br,)
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
        phase = phase_of("online_softmax", k, tc)
        if not keep:
            rec.emit(pick, j, "online_softmax", phase, [], indices=idx, code=code)
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
            pick,
            j,
            "online_softmax",
            phase,
            [],
            {"Sij": Sij, "Oi": Oi, "mi": mi, "li": li},
            carries=carries,
            parts=shown,
            indices=idx,
            code=code,
            mma={"dot": "pv", "row": q0 + r0, "col": 0, "parts": chunks(P16[0], Vj[:, 0]), "value": float(pv[0, 0])},
            facts={"rounding": rounding},  # the largest change bf16 made to P, for its words
        )

    # step: write_back -- Oi / li (a row that saw no key: O = 0, L = -inf), stored as bf16 (rows past N are not
    # stored); L = (mi + log2(li)) * ln 2 in fp32
    safe = np.where(li == 0.0, np.float32(1.0), li).astype(np.float32)  # tl.where(li == 0.0, 1.0, li)
    Oi[:] = bf16(fl.div(Oi, safe[:, None]))  # Oi.to(desc_o.dtype): the tile the store moves holds bf16 values
    fl.count("div", br * pad)
    L_i = fl.mul(fl.add(mi, fl.log2(li)), LN2)  # (Br,)
    to = rec.hbm.write("O", slice(q0 + r0, q0 + r1), Oi[:nr])
    tl = rec.hbm.write("L", slice(q0 + r0, q0 + r1), L_i[:nr])
    rec.emit(
        pick,
        None,
        "write_back",
        phase_of("write_back", None, tc),
        [tl, to],
        {"Oi": Oi},
        carries={"mi": mi.copy(), "li": li.copy(), "L": L_i} if keep else None,
        indices={**at, "i": i},
        code=({}, where) if where else None,
    )


def fast_block(rec: Recorder, cfg: Config, pick: int, picks: list[tuple[band.Segment, int]] | None = None) -> None:
    """Pick `pick`, not recorded: `block`'s arithmetic vectorised over the tiles it visits, its steps tallied as
    `block` emits them: the tiles' scores, (SCALE_FIRST) their scale and soft cap, each stage's band mask, maxima, P,
    its bf16 rounding and P @ Vj at once (per tile the same operations and products of the same shapes), the running
    max by fmaxf tile after tile, and li, Oi (which each tile rescales) in the kernel's order; with every option of
    real models (a segment's rows and keys, the band, the rows that see no key). The same numbers bit for bit
    (tests/test_engine_vectorised.py)."""
    seg, i = (picks or plan(cfg))[pick]
    n, nk, d, br, bc = seg.nq, seg.nk, cfg.d, cfg.br, cfg.bc
    left, right = cfg.sides
    capped = cfg.softcap > 0
    if capped:
        qk_scale, softcap2 = np.float32(cfg.softmax_scale / cfg.softcap), np.float32(cfg.softcap * LOG2E)
    else:
        qk_scale, softcap2 = np.float32(cfg.softmax_scale * LOG2E), np.float32(0.0)
    scale_first = bool(qk_scale <= 0) or capped
    tiles = stages(cfg, seg, i)
    tc = len(tiles)
    fl = rec.flops
    pad = padded(d) - d
    r0, r1 = span(i, br, n)
    nr = r1 - r0
    q0, k0 = seg.q0, seg.k0
    rows = np.arange(r0, r0 + br)  # (Br,)
    segmented = cfg.group > 1 or cfg.seqlens is not None
    at = {"block": pick} if segmented else {}

    Qi = np.zeros((br, d), np.float32)  # (Br, D)
    q, tq = rec.hbm.read("Q", slice(q0 + r0, q0 + r1))
    Qi[:nr] = q
    starts = np.array([start for start, _ in tiles], dtype=np.int64)
    spans = [(k0 + int(start), k0 + min(int(start) + bc, nk)) for start in starts]
    Kt, tk = rec.hbm.read_tiles("K", spans, bc)  # (Tc, Bc, D)
    Vt, tv = rec.hbm.read_tiles("V", spans, bc)  # (Tc, Bc, D)
    # scores: tl.dot(Qi, Kj.T) per tile, then (SCALE_FIRST) the scale and the cap, then each tile's stage's mask
    S = fl.matmul(Qi, Kt.swapaxes(-1, -2))  # (Tc, Br, Bc)
    fl.count("matmul", tc * 2 * br * bc * pad)
    if scale_first:
        S = fl.mul(S, qk_scale)
        if capped:
            S = fl.mul(softcap2, tanh(fl, S))
    masked_stage = np.array([stage != NO_MASK for _, stage in tiles], dtype=bool).reshape(tc, 1, 1)
    cols = starts.reshape(tc, 1, 1) + np.arange(bc).reshape(1, 1, bc)  # (Tc, 1, Bc) key column of each column
    hidden = ~band.visible(rows[None, :, None], cols, nk, seg.off, left, right)  # (Tc, Br, Bc)
    S[np.broadcast_to(masked_stage & hidden, S.shape)] = -np.inf
    rec.tally_flops([phase_of("scores", k, tc) for k in range(tc)])
    # online_softmax, in units of log2
    start = np.full(br, -np.inf, np.float32)
    if scale_first:
        m_ij = fl.rowmax(S)  # (Tc, Br)
    else:
        m_ij = fl.mul(fl.rowmax(S), qk_scale)  # (Tc, Br)
    m_new = fl.running_max(m_ij, start)  # (Tc, Br) mi after tile k
    # a row that has seen no key yet, in a masked stage: P = 0, not NaN
    m_use = np.where(masked_stage[:, :, 0] & (m_new == -np.inf), np.float32(0.0), m_new).astype(np.float32)
    if scale_first:
        P = fl.exp2(fl.sub(S, m_use[:, :, None]))  # (Tc, Br, Bc)
    else:
        P = fl.exp2(fl.fma(S, qk_scale, -m_use[:, :, None]))  # (Tc, Br, Bc)
    m_old = np.concatenate([start[None], m_new[:-1]])  # (Tc, Br) mi before tile k
    alpha = fl.exp2(fl.sub(m_old, m_use))  # (Tc, Br)
    lsum = fl.rowsum(P)  # (Tc, Br)
    pv = fl.matmul(bf16(P), Vt)  # (Tc, Br, D) fp32 accumulation of bf16(P) @ Vj
    fl.count("matmul", tc * 2 * br * bc * pad)
    li = np.zeros(br, np.float32)  # (Br,)
    Oi = np.zeros((br, d), np.float32)  # (Br, D)
    for k in range(tc):  # the carries, tile after tile: li = fma(li, alpha, rowsum), Oi = Oi * alpha + P @ Vj
        li = precision.fma(li, alpha[k], lsum[k])
        Oi = np.multiply(Oi, alpha[k][:, None]) + pv[k]
    fl.count("mul", tc * (br + br * d + br * pad))  # as `block` counts: the fma's, Oi * alpha, the padding's
    fl.count("add", tc * br)
    rec.tally_flops([phase_of("online_softmax", k, tc) for k in range(tc)])
    # write_back: a row that saw no key: O = 0, L = -inf
    mi = m_new[-1] if tc else start
    safe = np.where(li == 0.0, np.float32(1.0), li).astype(np.float32)
    Oi = bf16(fl.div(Oi, safe[:, None]))
    fl.count("div", br * pad)
    L_i = fl.mul(fl.add(mi, fl.log2(li)), LN2)  # (Br,)
    to = rec.hbm.write("O", slice(q0 + r0, q0 + r1), Oi[:nr])
    tl = rec.hbm.write("L", slice(q0 + r0, q0 + r1), L_i[:nr])
    rec.tally_flops([phase_of("write_back", None, tc)])

    rec.tally(None, "load_q", phase_of("load_q", None, tc), [tq], {**at, "i": i})
    for k, (begin, _) in enumerate(tiles):
        idx = {**at, "i": i, "j": begin // bc}
        rec.tally(begin // bc, "load_kv", phase_of("load_kv", k, tc), [tk[k], tv[k]], idx)
        rec.tally(begin // bc, "scores", phase_of("scores", k, tc), [], idx)
        rec.tally(begin // bc, "online_softmax", phase_of("online_softmax", k, tc), [], idx)
    rec.tally(None, "write_back", phase_of("write_back", None, tc), [tl, to], {**at, "i": i})


def execute(cfg: Config, inputs: dict[str, np.ndarray]) -> Recorder:
    """Run every block of the launch on the memory model (Q, K, V rounded to bf16 first); return what was recorded.
    With the options of real models, the blocks of every q head of one K/V head and every packed sequence."""
    blocks = cfg.q_blocks
    rec = Recorder(KERNEL, WHERE, set(cfg.recorded_blocks(blocks)))
    qkv = {name: bf16(np.asarray(inputs[name], dtype=np.float32)) for name in ("Q", "K", "V")}
    rows = cfg.q_rows
    picks = plan(cfg)
    run = lambda r, c, b: block(r, c, b, picks)  # noqa: E731
    fast = lambda r, c, b: fast_block(r, c, b, picks)  # noqa: E731
    return run_launch(rec, cfg, qkv, {"O": (rows, cfg.d), "L": (rows,)}, [Grid(blocks, run, fast=fast)])


def trace_blocks(cfg: Config, recorded: set[int]) -> list[dict[str, Any]]:
    """The picks (the trace's `blocks`): one program per block of Q (and head); with several q heads or packed
    sequences, each block with its segment (`segment`, the trace's `layout.segments`) and its sequence's keys."""
    if cfg.group == 1 and cfg.seqlens is None:
        return blocks_of_q(cfg, recorded)
    out = []
    index = {(s.head, s.seq): k for k, s in enumerate(cfg.segments())}
    for pick, (seg, i) in enumerate(plan(cfg)):
        r0, r1 = span(i, cfg.br, seg.nq)
        out.append(
            {
                "i": i,
                "rows": [seg.q0 + r0, seg.q0 + r1],
                "recorded": pick in recorded,
                "segment": index[(seg.head, seg.seq)],
                "keys": [seg.k0, seg.k0 + seg.nk],
                "label": f"{pick} \u00b7 {segment_words.short(cfg, seg)} i = {i} \u00b7 rows "
                f"{seg.q0 + r0}\u2013{seg.q0 + r1 - 1}",
            }
        )
    return out
