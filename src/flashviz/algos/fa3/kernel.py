"""FlashAttention-3 on Hopper in Gluon, forward and backward: the seed's algorithm, overlapped in time.

The same math as `algos/fa2_triton/kernel.py` (block i keeps Qi and the carries mi, li, Oi; the tiles Kj, Vj stream
past; exp2 with the scale folded into one multiply; one division at the end; L = m + log l), scheduled the way
FlashAttention-3 schedules it on an H100/H200 (Shah et al., 2024), in Triton's Gluon dialect, which states what
Triton's `tl.*` leaves to the compiler: which warps do what, where each tile lives, who waits on whom.

Forward (`fa3_fwd`), one program (CTA) per block of Br = 128 rows of Q at a time, three partitions of warps:
- a producer warp issues every load by TMA: the two halves of Qi, then Kj and Vj into a ring of STAGES shared-memory
  buffers; each buffer has a "ready" mbarrier (the copy engine completes it when the bytes land) and an "empty" one
  (both consumers arrive when their tensor cores are done reading it);
- two consumer warpgroups (4 warps each) own 64 rows of Qi each and run Sij = Qi Kj^T and Oi += P Vj on the tensor
  cores (wgmma, asynchronous) and the online softmax in registers;
- ping-pong (PINGPONG): the consumers take turns issuing their matrix products (a pair of mbarriers passes the
  turn), so that one's exp2/rowmax/rowsum runs while the other's products occupy the tensor cores;
- intra-warpgroup overlap (OVERLAP): within a warpgroup, Sij of tile j+1 and Oi += P Vj of tile j are issued
  together, and the softmax of tile j+1 runs while Oi's product is still on the tensor cores;
- registers move to where the work is: gl.warp_specialize gives the producer 24 per thread and each consumer 240
  (setmaxnreg in the PTX);
- persistent (the launcher's grid): as many programs as SMs, each looping over blocks in a fixed, load-balanced
  order (causal: the blocks with the most tiles first), so that the next block's Q loads overlap this one's epilogue.
Causal attention masks only the diagonal tiles; ragged N reads rows past N as zeros (TMA) and never stores them.

The options of issue 22, each a constexpr that is off by default and then compiled out (the plain build's PTX is the
same as before they existed; tests/test_fa3_compile.py): BAND -- Nq != Nk with causal aligned to the bottom-right
(query r sees keys <= r + Nk - Nq), a sliding window (left, right), packed sequences -- finds each block's sequence
and the tiles of keys its band covers at run time (_band_block, _band_tiles, the arithmetic of fa2-triton's
_q_stages): the tiles left of the band are skipped as the causal ones above the diagonal are, and the rest run in
stretches with one mask each (the band's left edge, the tiles inside it unmasked, its right edge); a row that sees no
key gets O = 0 and L = -inf. SOFTCAP caps the scaled scores, c tanh(s / c), before the mask and the softmax, so that
L is the log-sum-exp of the capped scores (FlashAttention-2's backward rebuilds P from it). VARLEN reads packed
(total, H, D) tensors from each sequence's first row, lists its blocks in a table the launcher sorts (most tiles
first), and stores O by masked stores from shared memory (a TMA store would write the next sequence's rows).

Backward (`fa3_bwd_preprocess`, `fa3_bwd`), FlashAttention-3's structure: a small pre-kernel writes
Delta = rowsum(dO * O) (minus dL when L itself is differentiated); then one program per Bc = 128 rows of K and V
(block j), a producer warp streaming Qi and dOi by TMA through a ring, two consumer warpgroups each owning 64 rows of
Kj, Vj with dKj, dVj accumulating in registers over every block i of Q; each step writes its dSij to shared memory,
and each consumer multiplies the whole dSij by its half of Kj's columns and adds the (Br x D/2) result into an fp32
dQ buffer by atomic adds that nobody waits for (the reductions overlap the next step's products).

Tiles of 4-d (B, H, N, D) tensors move by host-side TMA descriptors with blocks of [1, 1, rows, D]. The regions
between `# step: NAME` and `# end step` carry the step names of the other kernels, each once along the path the
launches run: forward load_q (_fwd_producer), load_kv (_load_kv), first_tile (_fwd_consumer: tile 0's scores and
softmax, peeled), scores and online_softmax (_fwd_tiles_overlapped: the two interleave, which is the point: tile
j's online_softmax runs tile j-1's P V), last_pv and write_back (_fwd_consumer); backward load_kv,
load_q (_bwd_producer), probs, dv, ds, dk, dq (_bwd_steps), write_back (_bwd_consumer); Delta: load_do_o,
write_delta. _fwd_tiles_plain (the ablation without overlap) marks scores and online_softmax again.

Gluon has no interpreter: this module compiles for sm_90 on any machine (tests/test_fa3_compile.py) and runs on a
Hopper GPU only. `launcher.py` launches it.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from flashviz.algos.triton_compat import as_block, tma_load, tma_store

LOG2E = gl.constexpr(1.4426950408889634)  # 1 / ln 2: exp(x) = exp2(x * LOG2E)
LN2 = gl.constexpr(0.6931471805599453)
WG_ROWS = gl.constexpr(64)  # rows of Q (forward) or of K, V (backward) per consumer warpgroup: one wgmma M
NUM_WG = gl.constexpr(2)  # consumer warpgroups per program
PRODUCER_REGS = gl.constexpr(24)  # registers per thread of the producer warp (setmaxnreg's floor)
CONSUMER_REGS = gl.constexpr(240)  # of each consumer warpgroup: 128 threads x (24 + 240 + 240) = 64512 <= 65536
MAXNREG = 168  # the kernel's register cap at entry, 12 warps x 32 x 168 = 64512: setmaxnreg moves them around

# Masks a stretch of tiles applies.
NO_MASK = gl.constexpr(0)  # tiles wholly inside N (and, when causal, wholly below the diagonal)
MASK_COLUMNS = gl.constexpr(1)  # the last tile of keys reaches past N: key column >= N is masked
MASK_CAUSAL = gl.constexpr(2)  # a diagonal tile: key column > query row is masked
# The options' mask (BAND): key column c of query row r is masked outside [0, Nk) and outside the band
# -left <= c - (r + Nk - Nq) <= right; a row that has seen no key yet keeps P = 0 (its running max stays -inf).
MASK_BAND = gl.constexpr(3)

# Soft-capping (SOFTCAP): s -> c tanh(s / c); how tanh is computed.
CAP_EXACT = gl.constexpr(1)  # 1 - 2 / (exp2(2 x log2 e) + 1), as fa2-triton's kernel: a MUFU exp2 and a division,
# and below |x| = TANH_SERIES, where that difference cancels as x -> 0, the series x - x^3/3 (relative error < 2e-7)
TANH_SERIES = gl.constexpr(0.03125)
TANH_X3 = gl.constexpr(-1.0 / 3.0)
CAP_FAST = gl.constexpr(2)  # tanh.approx.f32: one MUFU op, relative error about 2^-11 (below bf16's rounding of s)


# ----------------------------------------------------------------------------------------------------------
# Layouts and small helpers
# ----------------------------------------------------------------------------------------------------------
@gluon.constexpr_function
def mma_layout(n):
    """The accumulator layout of one warpgroup's wgmma with N = n (M = 64 rows, 4 warps along M, K = 16)."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, n, 16])


@gluon.constexpr_function
def operand_a(parent):
    """Registers as wgmma's A operand (16-bit elements): P and dS stay in registers between the products."""
    return gl.DotOperandLayout(operand_index=0, parent=parent, k_width=2)


# Timestamps (issue 20; off unless TS_TILES > 0): %globaltimer (ns) at step boundaries of the first block of the
# first TS_PROGRAMS programs, one int64 per slot, slots per partition as ts_slots() below
# (bench/fa3_schedule_record.py reads them).
TS_PROGRAMS = gl.constexpr(4)
PARTS = gl.constexpr(3)  # consumer wg0, consumer wg1, producer


@gluon.constexpr_function
def ts_slots(tiles):
    """Slots per partition: block start, Qi arrived, 5 per tile (K wait start, K arrived, Sij done, softmax done,
    P V done: at tile j the P V of tile j-1, the overlapped schedule's), block end."""
    return 3 + 5 * tiles


@gluon.jit
def _stamp(TS, slot, on, TS_TILES: gl.constexpr):
    if TS_TILES > 0:
        t = gl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=gl.int64, is_pure=False, pack=1)
        gl.store(TS + slot, t, mask=on)


@gluon.jit
def _stage(it, STAGES: gl.constexpr):
    """Buffer and mbarrier phase of the it-th use of a ring of STAGES buffers."""
    return it % STAGES, (it // STAGES) & 1


@gluon.jit
def _as4(buf, desc):
    """A (rows, D) shared-memory tile seen as the [1, 1, rows, D] block of a 4-d TMA descriptor (the same bytes)."""
    return as_block(buf, desc)


@gluon.jit
def _fwd_tile_coords(t, Tr, BH, CAUSAL: gl.constexpr):
    """Block number t of the schedule -> (bh, i). Causal: the blocks with the most tiles first, across heads;
    otherwise head by head (consecutive programs share K, V in L2)."""
    if CAUSAL:
        i = Tr - 1 - t // BH
        bh = t % BH
    else:
        bh = t // Tr
        i = t % Tr
    return bh, i


@gluon.jit
def _fwd_num_tiles(i, N, Br: gl.constexpr, Bc: gl.constexpr, CAUSAL: gl.constexpr):
    """(tiles of keys block i visits, how many of the first are unmasked)."""
    if CAUSAL:
        n = gl.minimum(gl.cdiv((i + 1) * Br, Bc), gl.cdiv(N, Bc))
        n_full = (i * Br) // Bc  # every column of these tiles is <= the block's first row
    else:
        n = gl.cdiv(N, Bc)
        n_full = N // Bc
    return n, n_full


# ----------------------------------------------------------------------------------------------------------
# The options (issue 22): Nq != Nk, a window, packed sequences. Each block of Q finds its sequence and the tiles of
# keys its band covers at run time; the producer and both consumers compute the same ones.
# ----------------------------------------------------------------------------------------------------------
@gluon.jit
def _band_block(t, H, N, num_blocks, cu_q, cu_k, blocks, Nk, Br: gl.constexpr, CAUSAL: gl.constexpr,
                VARLEN: gl.constexpr):  # fmt: skip
    """Block t of the schedule (BAND) -> (bh, b, h, i, q0, nq, nk): block i of the rows of sequence b, q head h, the
    sequence's first row in Q, its queries and its keys. Dense: N = Nq, bh = b * H + h, the order of
    _fwd_tile_coords. VARLEN: N = total rows of Q; entry e of `blocks` (two int32: sequence, block) in the
    launcher's order, the blocks with the most tiles first; causal: each entry across the heads, else head by head."""
    if VARLEN:
        NB = num_blocks // H
        if CAUSAL:
            e = t // H
            h = t % H
        else:
            h = t // NB
            e = t % NB
        b = gl.load(blocks + 2 * e)
        i = gl.load(blocks + 2 * e + 1)
        q0 = gl.load(cu_q + b)
        nq = gl.load(cu_q + b + 1) - q0
        nk = gl.load(cu_k + b + 1) - gl.load(cu_k + b)
        bh = h
    else:
        Tr = gl.cdiv(N, Br)
        bh, i = _fwd_tile_coords(t, Tr, num_blocks // Tr, CAUSAL)
        b = bh // H
        h = bh % H
        q0 = i * 0
        nq = N + i * 0
        nk = Nk + i * 0
    return bh, b, h, i, q0, nq, nk


@gluon.jit
def _band_tiles(r0, nq, nk, left, right, Br: gl.constexpr, Bc: gl.constexpr):
    """The tiles of keys that the query rows [r0, r0 + Br) of a sequence of nq queries and nk keys visit (BAND), cut
    as fa2-triton's _q_stages cuts them: (jlo, s1, s2, jhi): tile jlo (masked; the overlapped loop peels it),
    [jlo + 1, s1) crossing the band's left edge (masked), [s1, s2) wholly inside the band for every real row (no
    mask), [s2, jhi) crossing its right edge or nk (masked). Tiles wholly left of the band or right of it (above the
    diagonal) are never visited. A block that sees no key at all still visits one tile, every score of it masked
    (O = 0, L = -inf, as fa2's kernels give)."""
    off = nk - nq  # query row r is aligned with key column r + off (bottom-right)
    r1 = gl.minimum(r0 + Br, nq) - 1  # the block's last real row
    jlo = gl.maximum(r0 + off - left, 0) // Bc
    hi = gl.maximum(gl.minimum(r1 + off + right + 1, nk), jlo * Bc)
    jhi = gl.maximum(gl.cdiv(hi, Bc), jlo + 1)
    a = gl.cdiv(gl.maximum(r1 + off - left, 0), Bc)  # from here on every row's left edge is behind the tile
    c = gl.maximum(gl.minimum(r0 + off + right + 1, nk), 0) // Bc  # tiles that end before every row's right edge
    s1 = gl.minimum(gl.maximum(a, jlo + 1), jhi)
    s2 = gl.minimum(gl.maximum(c, s1), jhi)
    return jlo, s1, s2, jhi


# ----------------------------------------------------------------------------------------------------------
# Forward: the producer
# ----------------------------------------------------------------------------------------------------------
@gluon.jit
def _load_kv(desc_k, desc_v, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, b, h, j, it,
             Bc: gl.constexpr, STAGES: gl.constexpr):  # fmt: skip
    s, phase = _stage(it, STAGES)
    # step: load_kv
    mbarrier.wait(k_empty.index(s), phase ^ 1)  # a fresh mbarrier's previous phase counts as complete
    mbarrier.expect(k_ready.index(s), desc_k.block_type.nbytes)
    tma_load(desc_k, [b, h, j * Bc, 0], k_ready.index(s), _as4(k_smem.index(s), desc_k))
    mbarrier.wait(v_empty.index(s), phase ^ 1)
    mbarrier.expect(v_ready.index(s), desc_v.block_type.nbytes)
    tma_load(desc_v, [b, h, j * Bc, 0], v_ready.index(s), _as4(v_smem.index(s), desc_v))
    # end step
    return it + 1


@gluon.jit
def _load_kv_packed(desc_k, desc_v, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, h, row, it,
                    STAGES: gl.constexpr):  # fmt: skip
    """_load_kv for packed sequences (VARLEN): descriptors of (1, H, total, D), Kj and Vj from key row `row` (the
    sequence's first + j * Bc). Rows past the sequence are the next one's (masked as columns >= nk) or, past the
    total, zeros."""
    s, phase = _stage(it, STAGES)
    mbarrier.wait(k_empty.index(s), phase ^ 1)
    mbarrier.expect(k_ready.index(s), desc_k.block_type.nbytes)
    tma_load(desc_k, [0, h, row, 0], k_ready.index(s), _as4(k_smem.index(s), desc_k))
    mbarrier.wait(v_empty.index(s), phase ^ 1)
    mbarrier.expect(v_ready.index(s), desc_v.block_type.nbytes)
    tma_load(desc_v, [0, h, row, 0], v_ready.index(s), _as4(v_smem.index(s), desc_v))
    return it + 1


@gluon.jit
def _load_kv_any(desc_k, desc_v, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, b, h, j, k0, it,
                 Bc: gl.constexpr, STAGES: gl.constexpr, VARLEN: gl.constexpr):  # fmt: skip
    if VARLEN:
        it = _load_kv_packed(desc_k, desc_v, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, h, k0 + j * Bc, it,
                             STAGES)  # fmt: skip
    else:
        it = _load_kv(desc_k, desc_v, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, b, h, j, it, Bc, STAGES)
    return it


@gluon.jit
def _fwd_producer(desc_q, desc_k, desc_v, q_smem, k_smem, v_smem, q_ready, q_empty, k_ready, k_empty, v_ready,
                  v_empty, H, N, num_blocks,
                  Bc: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr, KV_FIRST: gl.constexpr,
                  GROUP: gl.constexpr, TS=None, TS_TILES: gl.constexpr = 0, Nk=None, left=None, right=None,
                  cu_q=None, cu_k=None, blocks=None, BAND: gl.constexpr = False,
                  VARLEN: gl.constexpr = False):  # fmt: skip
    """One warp: every TMA load of every block this program runs, as soon as its buffer is free. KV_FIRST: a
    block's first Kj, Vj go before its Qi, so that they load while the consumers still finish the last block.
    GROUP: q heads per K/V head (grouped-query attention): q head h reads K/V head h // GROUP. BAND: the options'
    blocks and tiles (_band_block, _band_tiles); VARLEN: packed sequences, loaded from their first rows."""
    Br: gl.constexpr = NUM_WG * WG_ROWS
    Tr = gl.cdiv(N, Br)
    BH = num_blocks // Tr
    it = 0  # tiles of K, V loaded so far (across blocks): the ring's position
    n_blocks_done = 0
    for t in range(gl.program_id(0), num_blocks, gl.num_programs(0)):
        if BAND:
            bh, b, h, i, q0, nq, nk = _band_block(t, H, N, num_blocks, cu_q, cu_k, blocks, Nk, Br, CAUSAL, VARLEN)
            hk = h // GROUP
            jlo, _, _, n = _band_tiles(i * Br, nq, nk, left, right, Br, Bc)
            k0 = 0
            if VARLEN:
                k0 = gl.load(cu_k + b)
        else:
            bh, i = _fwd_tile_coords(t, Tr, BH, CAUSAL)
            b = bh // H
            h = bh % H
            hk = h // GROUP
            n, _ = _fwd_num_tiles(i, N, Br, Bc, CAUSAL)
            jlo = 0
            k0 = 0
            q0 = 0
        ts_base = (gl.program_id(0) * PARTS + 2) * ts_slots(TS_TILES)
        ts_on = (gl.program_id(0) < TS_PROGRAMS) & (n_blocks_done == 0)
        _stamp(TS, ts_base, ts_on, TS_TILES)
        first = 0
        if KV_FIRST:
            it = _load_kv_any(desc_k, desc_v, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, b, hk, jlo, k0, it,
                              Bc, STAGES, VARLEN)  # fmt: skip
            first = 1
        if VARLEN:  # packed sequences: Qi from the sequence's row q0 + i * Br (rows past it are never stored)
            for w in gl.static_range(NUM_WG):
                mbarrier.wait(q_empty.index(w), (n_blocks_done & 1) ^ 1)
                mbarrier.expect(q_ready.index(w), desc_q.block_type.nbytes)
                tma_load(desc_q, [0, h, q0 + i * Br + w * WG_ROWS, 0], q_ready.index(w),
                                                _as4(q_smem.index(w), desc_q))  # fmt: skip
            _stamp(TS, ts_base + 1, ts_on, TS_TILES)
        else:
            # step: load_q
            for w in gl.static_range(NUM_WG):
                mbarrier.wait(q_empty.index(w), (n_blocks_done & 1) ^ 1)  # the consumer is done with the last Qi
                mbarrier.expect(q_ready.index(w), desc_q.block_type.nbytes)
                tma_load(desc_q, [b, h, i * Br + w * WG_ROWS, 0], q_ready.index(w),
                                                _as4(q_smem.index(w), desc_q))  # fmt: skip
            _stamp(TS, ts_base + 1, ts_on, TS_TILES)
            # end step
        for j in range(jlo + first, n):
            # producer slots per tile: 2 + 5 j: before the K buffer's wait, + 1: Kj and Vj issued
            _stamp(TS, ts_base + 2 + 5 * (j - jlo), ts_on & (j - jlo < TS_TILES), TS_TILES)
            it = _load_kv_any(desc_k, desc_v, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, b, hk, j, k0, it,
                              Bc, STAGES, VARLEN)  # fmt: skip
            _stamp(TS, ts_base + 3 + 5 * (j - jlo), ts_on & (j - jlo < TS_TILES), TS_TILES)
        _stamp(TS, ts_base + ts_slots(TS_TILES) - 1, ts_on, TS_TILES)
        n_blocks_done += 1  # noqa: SIM113 (a Gluon loop: no enumerate)


# ----------------------------------------------------------------------------------------------------------
# Forward: a consumer warpgroup
# ----------------------------------------------------------------------------------------------------------
@gluon.jit
def _turn_wait(turn, turns, W: gl.constexpr, PINGPONG: gl.constexpr):
    """Ping-pong: wait until the other warpgroup has issued its products. Warpgroup 0 goes first (the phase before a
    fresh mbarrier's first counts as complete), then they alternate."""
    if PINGPONG:
        mbarrier.wait(turn.index(W), (turns & 1) ^ (1 if W == 0 else 0))
    return turns + 1


@gluon.jit
def _turn_pass(turn, W: gl.constexpr, PINGPONG: gl.constexpr):
    if PINGPONG:
        mbarrier.arrive(turn.index((W + 1) % NUM_WG), count=1)


@gluon.jit
def _mask(Sij, j, rows, N, Bc: gl.constexpr, MASK: gl.constexpr, s_layout: gl.constexpr, firsts=0,
          BAND_LEFT: gl.constexpr = False):  # fmt: skip
    """Sij with the scores tile j's mask hides set to -inf. MASK_BAND, bounds computed once per block: `rows` holds
    each row's last key column (its band's right edge, cut to the sequence's keys); with BAND_LEFT, `firsts` each
    row's first key column and `rows` the width last - first, so that one unsigned compare per score checks both
    edges (a compare of the column with each bound took registers that the softmax then spilled)."""
    if MASK == MASK_BAND:
        local = gl.arange(0, Bc, layout=gl.SliceLayout(0, s_layout))
        if BAND_LEFT:  # one unsigned compare: 0 <= column - first <= width
            d = (local[None, :] - (firsts - j * Bc)[:, None]).to(gl.uint32, bitcast=True)
            Sij = gl.where(d <= rows.to(gl.uint32, bitcast=True)[:, None], Sij, float("-inf"))
        else:
            Sij = gl.where(local[None, :] <= (rows - j * Bc)[:, None], Sij, float("-inf"))
    else:
        cols = j * Bc + gl.arange(0, Bc, layout=gl.SliceLayout(0, s_layout))
        if MASK == MASK_CAUSAL:
            Sij = gl.where(cols[None, :] <= rows[:, None], Sij, float("-inf"))
        elif MASK == MASK_COLUMNS:
            Sij = gl.where(cols[None, :] < N, Sij, float("-inf"))
    return Sij


@gluon.jit
def _cap(Sij, qk_scale, softcap2, SOFTCAP: gl.constexpr):
    """Soft-capping (SOFTCAP > 0): qk_scale = scale / c, softcap2 = c log2(e): the scores become c tanh(scale s / c)
    in units of log2, already scaled (the softmax then takes them as they are). SOFTCAP = 0: Sij unchanged."""
    if SOFTCAP == CAP_FAST:
        x = Sij * qk_scale
        Sij = softcap2 * gl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [x], dtype=gl.float32,
                                                   is_pure=True, pack=1)  # fmt: skip
    elif SOFTCAP == CAP_EXACT:
        x = Sij * qk_scale
        far = 1.0 - 2.0 / (gl.exp2(x * (2.0 * LOG2E)) + 1.0)
        Sij = softcap2 * gl.where(gl.abs(x) < TANH_SERIES, x + x * x * x * TANH_X3, far)
    return Sij


@gluon.jit
def _softmax(Sij, mi, li, qk_scale, o_layout: gl.constexpr, GUARD: gl.constexpr = False,
             SCALED: gl.constexpr = False):  # fmt: skip
    """Online softmax of one tile: the new running max, Pij = exp2(scale * log2e * Sij - m) (fp32, in Sij's
    registers), the factor alpha that moves what the carries hold to the new max (in Oi's row layout), and li.
    GUARD (the options' masked tiles): a row whose scores are all -inf so far takes m = 0 for its P (P = 0, not NaN)
    and keeps mi = -inf. SCALED (soft-capping): Sij is already scaled, in units of log2."""
    if SCALED:
        m_new = gl.maximum(mi, gl.max(Sij, 1))
    else:
        m_new = gl.maximum(mi, gl.max(Sij, 1) * qk_scale)  # running max, in units of log2
    m_use = m_new
    if GUARD:
        m_use = gl.where(m_new == float("-inf"), 0.0, m_new)
    if SCALED:
        Pij = gl.exp2(Sij - m_use[:, None])
    else:
        Pij = gl.exp2(Sij * qk_scale - m_use[:, None])  # (64, Bc)
    alpha = gl.exp2(mi - m_use)
    li = li * alpha + gl.sum(Pij, 1)
    return m_new, Pij, gl.convert_layout(alpha, gl.SliceLayout(1, o_layout)), li


@gluon.jit
def _operand(Pij, dtype: gl.constexpr, o_layout: gl.constexpr):
    """Pij rounded to bf16/fp16 as wgmma's A operand: it stays in registers (the layouts match; no shared memory).
    Done only once the previous P V has finished reading the registers the last P lives in."""
    return gl.convert_layout(Pij.to(dtype), operand_a(o_layout))


@gluon.jit
def _nonzero(li, BAND: gl.constexpr):
    """li as Oi's divisor: with the options a row may see no key (li = 0 and Oi = 0): it divides by 1 (O = 0)."""
    if BAND:
        li = gl.where(li == 0.0, 1.0, li)
    return li


@gluon.jit
def _store_packed(O, o_buf, h, H, row0, live, D: gl.constexpr):
    """Packed sequences (VARLEN): this warpgroup's 64 rows of O (total, H, D), already in o_buf, from packed row row0,
    the first `live` of them (a TMA store would also write the rows past the sequence: the next one's). Read back
    from shared memory in a layout of 16-byte rows pieces, so that each thread stores a few contiguous vectors."""
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    rows = gl.arange(0, WG_ROWS, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, D, layout=gl.SliceLayout(0, layout))
    Oi = o_buf.load(layout)
    base = O + row0.to(gl.int64) * (H * D) + h * D
    gl.store(base + (rows[:, None] * (H * D) + cols[None, :]), Oi, mask=rows[:, None] < live)


@gluon.jit
def _fwd_tiles_overlapped(Oi, mi, li, Pij, alpha, q, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, it,
                          turns, rows, lo, hi, N, qk_scale,
                          W: gl.constexpr, Bc: gl.constexpr, STAGES: gl.constexpr, MASK: gl.constexpr,
                          PINGPONG: gl.constexpr, TS=None, ts_base=0, ts_on=False,
                          TS_TILES: gl.constexpr = 0, j0=0, firsts=0, softcap2=0.0,
                          BAND_LEFT: gl.constexpr = False, SOFTCAP: gl.constexpr = 0):  # fmt: skip
    """Tiles j in [lo, hi), software-pipelined within the warpgroup: Sij of tile j and Oi += P V of tile j-1 are
    issued together; the softmax of tile j runs while P V is still on the tensor cores. Pij (fp32) and alpha
    arrive from tile j-1 (alpha not yet applied to Oi); Pij becomes wgmma's bf16 operand only here, so that the
    softmax never writes the registers an unfinished P V reads. j0: the block's first tile (its timestamp slots
    count from there); rows, N, firsts, BAND_LEFT: _mask's; softcap2, SOFTCAP: _cap's."""
    s_layout: gl.constexpr = mma_layout(Bc)
    o_layout: gl.constexpr = Oi.type.layout
    for j in range(lo, hi):
        s, phase = _stage(it, STAGES)
        sp, phase_p = _stage(it - 1, STAGES)  # tile j-1's buffers
        ts_j = ts_base + 2 + 5 * (j - j0)
        _stamp(TS, ts_j, ts_on & (j - j0 < TS_TILES), TS_TILES)
        mbarrier.wait(k_ready.index(s), phase)
        _stamp(TS, ts_j + 1, ts_on & (j - j0 < TS_TILES), TS_TILES)
        turns = _turn_wait(turn, turns, W, PINGPONG)
        # step: scores
        Sij = warpgroup_mma(q, k_smem.index(s).permute((1, 0)), gl.zeros([WG_ROWS, Bc], gl.float32, s_layout),
                            use_acc=False, is_async=True)  # fmt: skip
        # end step
        # step: online_softmax
        Oi = Oi * alpha[:, None]  # tile j-1's rescale, under Sij's product
        P = _operand(Pij, q.dtype, o_layout)
        mbarrier.wait(v_ready.index(sp), phase_p)
        Oi = warpgroup_mma(P, v_smem.index(sp), Oi, is_async=True)  # tile j-1's P V
        _turn_pass(turn, W, PINGPONG)
        Sij = warpgroup_mma_wait(1, deps=(Sij,))  # Sij done; P V may still run
        _stamp(TS, ts_j + 2, ts_on & (j - j0 < TS_TILES), TS_TILES)
        mbarrier.arrive(k_empty.index(s), count=1)
        Sij = _cap(Sij, qk_scale, softcap2, SOFTCAP)
        Sij = _mask(Sij, j, rows, N, Bc, MASK, s_layout, firsts, BAND_LEFT)
        mi, Pij, alpha, li = _softmax(Sij, mi, li, qk_scale, o_layout, MASK == MASK_BAND, SOFTCAP > 0)
        _stamp(TS, ts_j + 3, ts_on & (j - j0 < TS_TILES), TS_TILES)
        # A wait that returns at once (Vj-1's phase cannot move before v_empty below) and ends the basic block:
        # without it ptxas schedules the wait for P V above the softmax, and the overlap is lost (SASS).
        mbarrier.wait(v_ready.index(sp), phase_p)
        Oi = warpgroup_mma_wait(0, deps=(Oi,))
        _stamp(TS, ts_j + 4, ts_on & (j - j0 < TS_TILES), TS_TILES)
        mbarrier.arrive(v_empty.index(sp), count=1)
        # end step
        it += 1
    return Oi, mi, li, Pij, alpha, it, turns


@gluon.jit
def _fwd_tiles_plain(Oi, mi, li, q, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, it, turns,
                     rows, lo, hi, N, qk_scale,
                     W: gl.constexpr, Bc: gl.constexpr, STAGES: gl.constexpr, MASK: gl.constexpr,
                     PINGPONG: gl.constexpr, firsts=0, softcap2=0.0, BAND_LEFT: gl.constexpr = False,
                     SOFTCAP: gl.constexpr = 0):  # fmt: skip
    """Tiles j in [lo, hi), one after the other: Sij, wait, softmax, P V, wait (the ablation without OVERLAP)."""
    s_layout: gl.constexpr = mma_layout(Bc)
    o_layout: gl.constexpr = Oi.type.layout
    for j in range(lo, hi):
        s, phase = _stage(it, STAGES)
        mbarrier.wait(k_ready.index(s), phase)
        turns = _turn_wait(turn, turns, W, PINGPONG)
        # step: scores
        Sij = warpgroup_mma(q, k_smem.index(s).permute((1, 0)), gl.zeros([WG_ROWS, Bc], gl.float32, s_layout),
                            use_acc=False, is_async=True)  # fmt: skip
        _turn_pass(turn, W, PINGPONG)
        Sij = warpgroup_mma_wait(0, deps=(Sij,))
        mbarrier.arrive(k_empty.index(s), count=1)
        Sij = _cap(Sij, qk_scale, softcap2, SOFTCAP)
        Sij = _mask(Sij, j, rows, N, Bc, MASK, s_layout, firsts, BAND_LEFT)
        # end step
        mi, Pij, alpha, li = _softmax(Sij, mi, li, qk_scale, o_layout, MASK == MASK_BAND, SOFTCAP > 0)
        # step: online_softmax
        Oi = Oi * alpha[:, None]
        P = _operand(Pij, q.dtype, o_layout)
        mbarrier.wait(v_ready.index(s), phase)
        turns = _turn_wait(turn, turns, W, PINGPONG)
        Oi = warpgroup_mma(P, v_smem.index(s), Oi, is_async=True)
        _turn_pass(turn, W, PINGPONG)
        Oi = warpgroup_mma_wait(0, deps=(Oi,))
        mbarrier.arrive(v_empty.index(s), count=1)
        # end step
        it += 1
    return Oi, mi, li, it, turns


@gluon.jit
def _fwd_consumer(desc_o, L, q_smem, k_smem, v_smem, o_smem, q_ready, q_empty, k_ready, k_empty, v_ready, v_empty,
                  turn, H, N, num_blocks, qk_scale,
                  W: gl.constexpr, D: gl.constexpr, Bc: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                  PINGPONG: gl.constexpr, OVERLAP: gl.constexpr, TS=None, TS_TILES: gl.constexpr = 0, Nk=None,
                  left=None, right=None, softcap2=None, cu_q=None, cu_k=None, blocks=None, O=None,
                  BAND: gl.constexpr = False, BAND_LEFT: gl.constexpr = False, SOFTCAP: gl.constexpr = 0,
                  VARLEN: gl.constexpr = False):  # fmt: skip
    """Consumer warpgroup W: rows [W*64, W*64 + 64) of every block this program runs. BAND: the options' blocks and
    tiles (_band_block, _band_tiles), masked by MASK_BAND; SOFTCAP: scores capped (_cap); VARLEN: packed sequences,
    O stored by masked stores (_store_packed), L (H, total)."""
    Br: gl.constexpr = NUM_WG * WG_ROWS
    s_layout: gl.constexpr = mma_layout(Bc)
    o_layout: gl.constexpr = mma_layout(D)
    row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)
    dtype: gl.constexpr = q_smem.dtype
    MASK_LAST: gl.constexpr = MASK_CAUSAL if CAUSAL else MASK_COLUMNS
    MASK_FIRST: gl.constexpr = MASK_BAND if BAND else MASK_LAST  # tile 0's (peeled) mask, whatever tile it is
    Tr = gl.cdiv(N, Br)
    BH = num_blocks // Tr
    q = q_smem.index(W)  # (64, D): this warpgroup's half of Qi
    it = 0
    turns = 0
    n_blocks_done = 0
    for t in range(gl.program_id(0), num_blocks, gl.num_programs(0)):
        if BAND:
            bh, b, h, i, q0, nq, nk = _band_block(t, H, N, num_blocks, cu_q, cu_k, blocks, Nk, Br, CAUSAL, VARLEN)
            jlo, s1, s2, n = _band_tiles(i * Br, nq, nk, left, right, Br, Bc)
        else:
            bh, i = _fwd_tile_coords(t, Tr, BH, CAUSAL)
            b = bh // H
            h = bh % H
            n, n_full = _fwd_num_tiles(i, N, Br, Bc, CAUSAL)
            jlo = 0
            nk = N
        rows = i * Br + W * WG_ROWS + gl.arange(0, WG_ROWS, layout=row_layout)
        if BAND:  # each row's last and first key column (MASK_BAND), its band aligned to the bottom-right
            lasts = gl.minimum(rows + (nk - nq) + right, nk - 1)
            firsts = rows + (nk - nq) - left
            if BAND_LEFT:  # as a first column and a width (a row that sees no key: past every column, width 0)
                empty = lasts < gl.maximum(firsts, 0)
                lasts = gl.where(empty, 0, lasts - firsts)
                firsts = gl.where(empty, 1 << 30, firsts)
        else:
            lasts = rows
            firsts = 0
        ts_base = (gl.program_id(0) * PARTS + W) * ts_slots(TS_TILES)
        ts_on = (gl.program_id(0) < TS_PROGRAMS) & (n_blocks_done == 0)
        _stamp(TS, ts_base, ts_on, TS_TILES)
        mbarrier.wait(q_ready.index(W), n_blocks_done & 1)
        _stamp(TS, ts_base + 1, ts_on, TS_TILES)
        Oi = gl.zeros([WG_ROWS, D], gl.float32, o_layout)
        mi = gl.full([WG_ROWS], float("-inf"), gl.float32, row_layout)
        li = gl.zeros([WG_ROWS], gl.float32, row_layout)
        if OVERLAP:
            # step: first_tile
            # the block's first tile: its scores and softmax only (its P V goes with the next one's scores); masked
            s, phase = _stage(it, STAGES)
            _stamp(TS, ts_base + 2, ts_on, TS_TILES)
            mbarrier.wait(k_ready.index(s), phase)
            _stamp(TS, ts_base + 3, ts_on, TS_TILES)
            turns = _turn_wait(turn, turns, W, PINGPONG)
            Sij = warpgroup_mma(q, k_smem.index(s).permute((1, 0)), gl.zeros([WG_ROWS, Bc], gl.float32, s_layout),
                                use_acc=False, is_async=True)  # fmt: skip
            _turn_pass(turn, W, PINGPONG)
            Sij = warpgroup_mma_wait(0, deps=(Sij,))
            _stamp(TS, ts_base + 4, ts_on, TS_TILES)
            mbarrier.arrive(k_empty.index(s), count=1)
            Sij = _cap(Sij, qk_scale, softcap2, SOFTCAP)
            Sij = _mask(Sij, jlo, lasts, nk, Bc, MASK_FIRST, s_layout, firsts, BAND_LEFT)
            mi, Pij, alpha, li = _softmax(Sij, mi, li, qk_scale, o_layout, BAND, SOFTCAP > 0)
            _stamp(TS, ts_base + 5, ts_on, TS_TILES)
            it += 1
            # end step
            if BAND:  # the band's left edge (masked), the tiles inside it, its right edge and the end of the keys
                if BAND_LEFT:
                    Oi, mi, li, Pij, alpha, it, turns = _fwd_tiles_overlapped(
                        Oi, mi, li, Pij, alpha, q, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, it,
                        turns, lasts, jlo + 1, s1, nk, qk_scale, W, Bc, STAGES, MASK_BAND, PINGPONG, TS, ts_base,
                        ts_on, TS_TILES, jlo, firsts, softcap2, BAND_LEFT, SOFTCAP)  # fmt: skip
                Oi, mi, li, Pij, alpha, it, turns = _fwd_tiles_overlapped(
                    Oi, mi, li, Pij, alpha, q, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, it, turns,
                    lasts, s1, s2, nk, qk_scale, W, Bc, STAGES, NO_MASK, PINGPONG, TS, ts_base, ts_on, TS_TILES,
                    jlo, firsts, softcap2, BAND_LEFT, SOFTCAP)  # fmt: skip
                Oi, mi, li, Pij, alpha, it, turns = _fwd_tiles_overlapped(
                    Oi, mi, li, Pij, alpha, q, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, it, turns,
                    lasts, s2, n, nk, qk_scale, W, Bc, STAGES, MASK_BAND, PINGPONG, TS, ts_base, ts_on, TS_TILES,
                    jlo, firsts, softcap2, BAND_LEFT, SOFTCAP)  # fmt: skip
            else:
                mid = gl.maximum(n_full, 1)
                Oi, mi, li, Pij, alpha, it, turns = _fwd_tiles_overlapped(
                    Oi, mi, li, Pij, alpha, q, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, it, turns,
                    rows, 1, mid, N, qk_scale, W, Bc, STAGES, NO_MASK, PINGPONG, TS, ts_base, ts_on, TS_TILES,
                    softcap2=softcap2, SOFTCAP=SOFTCAP)  # fmt: skip
                Oi, mi, li, Pij, alpha, it, turns = _fwd_tiles_overlapped(
                    Oi, mi, li, Pij, alpha, q, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, it, turns,
                    rows, mid, n, N, qk_scale, W, Bc, STAGES, MASK_LAST, PINGPONG, TS, ts_base, ts_on, TS_TILES,
                    softcap2=softcap2, SOFTCAP=SOFTCAP)  # fmt: skip
            mbarrier.arrive(q_empty.index(W), count=1)  # every Sij of this block is done: Qi's buffer is free
            # step: last_pv
            # the last tile's P V
            sp, phase_p = _stage(it - 1, STAGES)
            mbarrier.wait(v_ready.index(sp), phase_p)
            turns = _turn_wait(turn, turns, W, PINGPONG)
            Oi = Oi * alpha[:, None]
            Oi = warpgroup_mma(_operand(Pij, dtype, o_layout), v_smem.index(sp), Oi, is_async=True)
            _turn_pass(turn, W, PINGPONG)
            Oi = warpgroup_mma_wait(0, deps=(Oi,))
            mbarrier.arrive(v_empty.index(sp), count=1)
            # end step
        else:
            if BAND:
                Oi, mi, li, it, turns = _fwd_tiles_plain(
                    Oi, mi, li, q, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, it, turns,
                    lasts, jlo, s1, nk, qk_scale, W, Bc, STAGES, MASK_BAND, PINGPONG, firsts, softcap2,
                    BAND_LEFT, SOFTCAP)  # fmt: skip
                Oi, mi, li, it, turns = _fwd_tiles_plain(
                    Oi, mi, li, q, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, it, turns,
                    lasts, s1, s2, nk, qk_scale, W, Bc, STAGES, NO_MASK, PINGPONG, firsts, softcap2,
                    BAND_LEFT, SOFTCAP)  # fmt: skip
                Oi, mi, li, it, turns = _fwd_tiles_plain(
                    Oi, mi, li, q, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, it, turns,
                    lasts, s2, n, nk, qk_scale, W, Bc, STAGES, MASK_BAND, PINGPONG, firsts, softcap2,
                    BAND_LEFT, SOFTCAP)  # fmt: skip
            else:
                Oi, mi, li, it, turns = _fwd_tiles_plain(
                    Oi, mi, li, q, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, it, turns,
                    rows, 0, n_full, N, qk_scale, W, Bc, STAGES, NO_MASK, PINGPONG, softcap2=softcap2,
                    SOFTCAP=SOFTCAP)  # fmt: skip
                Oi, mi, li, it, turns = _fwd_tiles_plain(
                    Oi, mi, li, q, k_smem, v_smem, k_ready, k_empty, v_ready, v_empty, turn, it, turns,
                    rows, n_full, n, N, qk_scale, W, Bc, STAGES, MASK_LAST, PINGPONG, softcap2=softcap2,
                    SOFTCAP=SOFTCAP)  # fmt: skip
            mbarrier.arrive(q_empty.index(W), count=1)

        # step: write_back
        Oi = Oi / gl.convert_layout(_nonzero(li, BAND), gl.SliceLayout(1, o_layout))[:, None]  # the only division
        o_buf = o_smem.index(W)
        if VARLEN:  # rows past the sequence are the next one's: a masked store, not TMA
            # the block's coordinates read again rather than held in registers over the tiles
            bh, b, h, i, q0, nq, nk = _band_block(t, H, N, num_blocks, cu_q, cu_k, blocks, Nk, Br, CAUSAL, VARLEN)
            rows = i * Br + W * WG_ROWS + gl.arange(0, WG_ROWS, layout=row_layout)
            o_buf.store(Oi.to(dtype))
            _store_packed(O, o_buf, h, H, q0 + i * Br + W * WG_ROWS, nq - i * Br - W * WG_ROWS, D)
            gl.store(L + h.to(gl.int64) * N + q0 + rows, (mi + gl.log2(li)) * LN2, mask=rows < nq)
        else:
            tma.store_wait(0)  # the last block's O has left o_buf
            o_buf.store(Oi.to(dtype))
            fence_async_shared()
            # rows >= N are dropped
            tma_store(desc_o, [b, h, i * Br + W * WG_ROWS, 0], _as4(o_buf, desc_o))
            gl.store(L + bh.to(gl.int64) * N + rows, (mi + gl.log2(li)) * LN2, mask=rows < N)
        _stamp(TS, ts_base + ts_slots(TS_TILES) - 1, ts_on, TS_TILES)
        # end step
        n_blocks_done += 1  # noqa: SIM113 (a Gluon loop: no enumerate)
    tma.store_wait(0)


@gluon.jit(do_not_specialize=["H", "N", "num_blocks", "Nk", "LEFT", "RIGHT"])
def fa3_fwd(desc_q, desc_k, desc_v, desc_o, L, H, N, num_blocks, qk_scale,
            D: gl.constexpr, Bc: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
            PINGPONG: gl.constexpr, OVERLAP: gl.constexpr, KV_FIRST: gl.constexpr = False,
            GROUP: gl.constexpr = 1, TS=None, TS_TILES: gl.constexpr = 0,
            Nk=None, LEFT=None, RIGHT=None, softcap2=None, cu_q=None, cu_k=None, blocks=None, O=None,
            BAND: gl.constexpr = False, BAND_LEFT: gl.constexpr = False, SOFTCAP: gl.constexpr = 0,
            VARLEN: gl.constexpr = False):  # fmt: skip
    """Grid (programs,): each loops over blocks t = pid, pid + programs, ... < num_blocks = Tr * B * H (persistent
    when programs < num_blocks). desc_q, desc_o: TMA descriptors of (B, H, N, D) with blocks [1, 1, 64, D];
    desc_k, desc_v: of (B, H // GROUP, N, D), blocks [1, 1, Bc, D] (GROUP > 1: grouped-query attention, q head h
    reads K/V head h // GROUP); L: (B, H, N) fp32, natural log; qk_scale = scale * log2(e).

    The options (issue 22; each off by default, and then compiled out: the same kernel as without them):
    - BAND: query row r of Nq = N sees key column c of Nk when -LEFT <= c - (r + Nk - Nq) <= RIGHT (the launcher
      passes 2**30 for an unbounded side, RIGHT = 0 when causal): K, V (B, H // GROUP, Nk, D); each block visits
      only the tiles its band covers (_band_tiles); BAND_LEFT: LEFT is bounded (a left edge to mask);
    - SOFTCAP (CAP_EXACT or CAP_FAST): qk_scale = scale / c, softcap2 = c log2(e): scores c tanh(scale s / c), and
      L the log-sum-exp of the capped scores (FlashAttention-2's backward rebuilds P from it);
    - VARLEN (with BAND): packed sequences: descriptors of (1, H, total, D) (Q, O) and (1, H // GROUP, total_k, D),
      cu_q, cu_k int32 cumulative lengths, blocks the (sequence, block) list of the launcher, num_blocks = its length
      * H, N = total rows of Q, L (H, total), O the output's pointer (masked stores, not TMA)."""
    dtype: gl.constexpr = desc_q.dtype
    tile_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([WG_ROWS, D], dtype)
    kv_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([Bc, D], dtype)
    q_smem = gl.allocate_shared_memory(dtype, [NUM_WG, WG_ROWS, D], tile_layout)
    o_smem = gl.allocate_shared_memory(dtype, [NUM_WG, WG_ROWS, D], tile_layout)
    k_smem = gl.allocate_shared_memory(dtype, [STAGES, Bc, D], kv_layout)
    v_smem = gl.allocate_shared_memory(dtype, [STAGES, Bc, D], kv_layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [NUM_WG, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [NUM_WG, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [NUM_WG, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for w in gl.static_range(NUM_WG):
        mbarrier.init(q_ready.index(w), count=1)
        mbarrier.init(q_empty.index(w), count=1)
        mbarrier.init(turn.index(w), count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(s), count=1)
        mbarrier.init(k_empty.index(s), count=NUM_WG)  # both consumers read every Kj, Vj
        mbarrier.init(v_ready.index(s), count=1)
        mbarrier.init(v_empty.index(s), count=NUM_WG)

    if TS_TILES > 0:
        ts = TS
    else:
        ts = L  # never written (the partitions' stamps are compiled out); a pointer so that no None is passed on
    # the options' arguments, or stand-ins that are never read (as ts above)
    if BAND:
        nk = Nk
        left = LEFT
        if CAUSAL:
            right = 0  # causal: the band ends at the diagonal, a constant
        else:
            right = RIGHT
    else:
        nk = N
        left = N
        right = N
    if SOFTCAP > 0:
        cap = softcap2
    else:
        cap = qk_scale
    if VARLEN:
        cuq = cu_q
        cuk = cu_k
        tab = blocks
        out = O
    else:
        cuq = L
        cuk = L
        tab = L
        out = L
    gl.warp_specialize(
        [
            (_fwd_consumer, (desc_o, L, q_smem, k_smem, v_smem, o_smem, q_ready, q_empty, k_ready, k_empty, v_ready,
                             v_empty, turn, H, N, num_blocks, qk_scale, 0, D, Bc, STAGES, CAUSAL, PINGPONG, OVERLAP, ts,
                             TS_TILES, nk, left, right, cap, cuq, cuk, tab, out, BAND, BAND_LEFT, SOFTCAP, VARLEN)),
            (_fwd_consumer, (desc_o, L, q_smem, k_smem, v_smem, o_smem, q_ready, q_empty, k_ready, k_empty, v_ready,
                             v_empty, turn, H, N, num_blocks, qk_scale, 1, D, Bc, STAGES, CAUSAL, PINGPONG, OVERLAP, ts,
                             TS_TILES, nk, left, right, cap, cuq, cuk, tab, out, BAND, BAND_LEFT, SOFTCAP, VARLEN)),
            (_fwd_producer, (desc_q, desc_k, desc_v, q_smem, k_smem, v_smem, q_ready, q_empty, k_ready, k_empty,
                             v_ready, v_empty, H, N, num_blocks, Bc, STAGES, CAUSAL, KV_FIRST, GROUP, ts, TS_TILES,
                             nk, left, right, cuq, cuk, tab, BAND, VARLEN)),
        ],
        [4, 1],
        [CONSUMER_REGS, PRODUCER_REGS],
    )  # fmt: skip


# ----------------------------------------------------------------------------------------------------------
# Backward: Delta
# ----------------------------------------------------------------------------------------------------------
@gluon.jit(do_not_specialize=["H", "N"])
def fa3_bwd_preprocess(O, dO, dL, Delta, sob, soh, son, sdb, sdh, sdn, H, N,
                       D: gl.constexpr, Br: gl.constexpr, HAS_DL: gl.constexpr):  # fmt: skip
    """Grid (cdiv(N, Br), B*H), 4 warps: Delta = rowsum(dO * O) - dL, fp32 (B, H, N)."""
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    i = gl.program_id(0)
    bh = gl.program_id(1)
    b = bh // H
    h = bh % H
    rows = i * Br + gl.arange(0, Br, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, D, layout=gl.SliceLayout(0, layout))
    live = rows[:, None] < N
    # step: load_do_o
    Oi = gl.load(O + b.to(gl.int64) * sob + h.to(gl.int64) * soh + rows[:, None] * son + cols[None, :], mask=live)
    dOi = gl.load(dO + b.to(gl.int64) * sdb + h.to(gl.int64) * sdh + rows[:, None] * sdn + cols[None, :], mask=live)
    # end step
    # step: write_delta
    Di = gl.sum(Oi.to(gl.float32) * dOi.to(gl.float32), 1)  # (Br,)
    if HAS_DL:
        Di -= gl.load(dL + bh.to(gl.int64) * N + rows, mask=rows < N, other=0.0)
    gl.store(Delta + bh.to(gl.int64) * N + rows, Di, mask=rows < N)
    # end step


# ----------------------------------------------------------------------------------------------------------
# Backward: dK, dV in registers, dQ by atomic adds
# ----------------------------------------------------------------------------------------------------------
@gluon.jit
def _bwd_coords(N, CAUSAL: gl.constexpr):
    """(bh, j) of this program. Causal: grid (B*H, Tc), so that every head's block 0 (the most blocks of Q to visit)
    starts first; otherwise grid (Tc, B*H), so that concurrent programs of one head share Qi, dOi in L2."""
    if CAUSAL:
        bh = gl.program_id(0)
        j = gl.program_id(1)
    else:
        j = gl.program_id(0)
        bh = gl.program_id(1)
    return bh, j


@gluon.jit
def _bwd_range(j, N, CAUSAL: gl.constexpr):
    """(first block i of Q, first unmasked one, Tr): causal visits the blocks at or below the diagonal; the two
    blocks of 64 rows that overlap block j's 128 key rows are masked."""
    Tr = gl.cdiv(N, WG_ROWS)
    if CAUSAL:
        lo = j * 2
        mid = gl.minimum(lo + 2, Tr)
    else:
        lo = 0
        mid = 0
    return lo, mid, Tr


@gluon.jit
def _bwd_producer(desc_q, desc_k, desc_v, desc_do, k_smem, v_smem, q_smem, do_smem, kv_ready, qdo_ready, qdo_empty,
                  H, N, STAGES: gl.constexpr, CAUSAL: gl.constexpr):  # fmt: skip
    """One warp: Kj, Vj once, then Qi and dOi of every block i through a ring of STAGES buffers."""
    bh, j = _bwd_coords(N, CAUSAL)
    b = bh // H
    h = bh % H
    lo, _, Tr = _bwd_range(j, N, CAUSAL)
    # step: load_kv
    mbarrier.expect(kv_ready.index(0), 2 * NUM_WG * desc_k.block_type.nbytes)
    for w in gl.static_range(NUM_WG):
        row = j * (NUM_WG * WG_ROWS) + w * WG_ROWS
        tma_load(desc_k, [b, h, row, 0], kv_ready.index(0), _as4(k_smem.index(w), desc_k))
        tma_load(desc_v, [b, h, row, 0], kv_ready.index(0), _as4(v_smem.index(w), desc_v))
    # end step
    for i in range(lo, Tr):
        s, phase = _stage(i - lo, STAGES)
        # step: load_q
        mbarrier.wait(qdo_empty.index(s), phase ^ 1)
        mbarrier.expect(qdo_ready.index(s), 2 * desc_q.block_type.nbytes)
        tma_load(desc_q, [b, h, i * WG_ROWS, 0], qdo_ready.index(s),
                                        _as4(q_smem.index(s), desc_q))  # fmt: skip
        tma_load(desc_do, [b, h, i * WG_ROWS, 0], qdo_ready.index(s),
                                        _as4(do_smem.index(s), desc_do))  # fmt: skip
        # end step


@gluon.jit
def _red_add_pairs(ptrs, vals, live):
    """dQ[ptrs] += vals by `red.global.add.v2.f32`, two neighbouring columns per instruction (sm_90), where the two
    elements inline asm receives are neighbours in memory (checked, else two scalar reductions); nobody waits."""
    gl.inline_asm_elementwise(
        """{
        .reg .pred l0, l1, adj, pair, npair, s0, s1;
        .reg .b64 gap;
        setp.ne.b32 l0, $6, 0;
        setp.ne.b32 l1, $7, 0;
        sub.s64 gap, $3, $2;
        setp.eq.s64 adj, gap, 4;
        and.pred pair, adj, l0;
        and.pred pair, pair, l1;
        not.pred npair, pair;
        and.pred s0, npair, l0;
        and.pred s1, npair, l1;
        @pair red.relaxed.gpu.global.add.v2.f32 [$2], {$4, $5};
        @s0 red.relaxed.gpu.global.add.f32 [$2], $4;
        @s1 red.relaxed.gpu.global.add.f32 [$3], $5;
        mov.b32 $0, 0;
        mov.b32 $1, 0;
        }""",
        "=r,=r,l,l,f,f,r,r",
        [ptrs.to(gl.int64), vals, live.to(gl.int32)],
        dtype=gl.int32,
        is_pure=False,
        pack=2,
    )


@gluon.jit
def _bwd_steps(dKj, dVj, Kw, Vw, k_smem, q_smem, do_smem, p_smem, ds_smem, qdo_ready, qdo_empty, ds_ready, ds_empty,
               L, Delta, dQ, kcols, lo, mid, hi, N, qk_scale,
               W: gl.constexpr, D: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
               VEC_ATOMIC: gl.constexpr):  # fmt: skip
    """Blocks i in [lo, hi) of 64 rows of Q past this warpgroup's 64 rows of Kj, Vj; causal: those below mid are
    masked (one loop with a select, not two loops: two copies of this body do not fit in the registers).
    Sij and dPij are (64 queries, 64 keys) in registers, with Li and Delta_i one value per row; Pij and dSij go to
    shared memory, where the products that need them transposed (dV, dK) and the other warpgroup (dQ) read them."""
    s_layout: gl.constexpr = mma_layout(WG_ROWS)  # (64 query rows, this warpgroup's 64 keys)
    dq_layout: gl.constexpr = mma_layout(D // NUM_WG)
    dtype: gl.constexpr = q_smem.dtype
    row_layout: gl.constexpr = gl.SliceLayout(1, s_layout)
    p_buf = p_smem.index(W)
    for i in range(lo, hi):
        s, phase = _stage(i - lo, STAGES)
        buf, phase_ds = _stage(i - lo, 2)
        qi = q_smem.index(s)
        doi = do_smem.index(s)
        qrows = i * WG_ROWS + gl.arange(0, WG_ROWS, layout=row_layout)
        Li = gl.load(L + qrows, mask=qrows < N, other=float("inf")) * LOG2E  # rows >= N: P = 0
        Di = gl.load(Delta + qrows, mask=qrows < N, other=0.0)
        mbarrier.wait(qdo_ready.index(s), phase)
        # step: probs
        Sij = warpgroup_mma(qi, Kw.permute((1, 0)), gl.zeros([WG_ROWS, WG_ROWS], gl.float32, s_layout),
                            use_acc=False, is_async=True)  # fmt: skip
        dPij = warpgroup_mma(doi, Vw.permute((1, 0)), gl.zeros([WG_ROWS, WG_ROWS], gl.float32, s_layout),
                             use_acc=False, is_async=True)  # fmt: skip
        Sij = warpgroup_mma_wait(1, deps=(Sij,))
        Pij = gl.exp2(Sij * qk_scale - Li[:, None])  # (64 queries, 64 keys)
        if CAUSAL:
            Pij = gl.where((qrows[:, None] >= kcols[None, :]) | (i >= mid), Pij, 0.0)
        p_buf.store(Pij.to(dtype))
        fence_async_shared()
        # end step
        # step: dv
        dVj = warpgroup_mma(p_buf.permute((1, 0)), doi, dVj, is_async=True)  # dVj += Pij^T dOi
        # end step
        # step: ds
        dPij = warpgroup_mma_wait(1, deps=(dPij,))
        dSij = (Pij * (dPij - Di[:, None])).to(dtype)  # the scale is applied once, at the end
        mbarrier.wait(ds_empty.index(buf), phase_ds ^ 1)  # both dQ products of two steps ago are done with buf
        ds_buf = ds_smem.index(buf * NUM_WG + W)
        ds_buf.store(dSij)
        fence_async_shared()
        mbarrier.arrive(ds_ready.index(buf), count=1)
        # end step
        # step: dk
        dKj = warpgroup_mma(ds_buf.permute((1, 0)), qi, dKj, is_async=True)  # dKj += dSij^T Qi
        # end step
        # step: dq
        mbarrier.wait(ds_ready.index(buf), phase_ds)  # the other warpgroup's 64 keys of dSij are there too
        # dQi[:, this warpgroup's D/2 columns] = dSij (64 x 128 keys) Kj[:, those columns], in two halves of keys
        dQi = warpgroup_mma(
            ds_smem.index(buf * NUM_WG),
            k_smem.index(0).slice(W * (D // NUM_WG), D // NUM_WG, dim=1),
            gl.zeros([WG_ROWS, D // NUM_WG], gl.float32, dq_layout),
            use_acc=False,
            is_async=True,
        )
        dQi = warpgroup_mma(
            ds_smem.index(buf * NUM_WG + 1),
            k_smem.index(1).slice(W * (D // NUM_WG), D // NUM_WG, dim=1),
            dQi,
            is_async=True,
        )
        dVj, dKj, dQi = warpgroup_mma_wait(0, deps=(dVj, dKj, dQi))
        mbarrier.arrive(qdo_empty.index(s), count=1)
        mbarrier.arrive(ds_empty.index(buf), count=1)
        # 32-bit offsets from the block's first row: fewer registers than a tensor of 64-bit pointers
        rows = gl.arange(0, WG_ROWS, layout=gl.SliceLayout(1, dq_layout))
        cols = W * (D // NUM_WG) + gl.arange(0, D // NUM_WG, layout=gl.SliceLayout(0, dq_layout))
        ptrs = (dQ + i * WG_ROWS * D) + (rows[:, None] * D + cols[None, :])
        live = rows[:, None] < N - i * WG_ROWS
        if VEC_ATOMIC:
            _red_add_pairs(ptrs, dQi, live)
        else:
            gl.atomic_add(ptrs, dQi, mask=live, sem="relaxed")  # nobody waits for these
        # end step
    return dKj, dVj


@gluon.jit
def _bwd_consumer(L, Delta, dQ, dK, dV, k_smem, v_smem, q_smem, do_smem, p_smem, ds_smem, kv_ready, qdo_ready,
                  qdo_empty, ds_ready, ds_empty, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn, H, N, scale, qk_scale,
                  W: gl.constexpr, D: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                  VEC_ATOMIC: gl.constexpr):  # fmt: skip
    """Consumer warpgroup W: rows [W*64, W*64 + 64) of block j of K and V."""
    s_layout: gl.constexpr = mma_layout(WG_ROWS)
    kv_layout: gl.constexpr = mma_layout(D)
    bh, j = _bwd_coords(N, CAUSAL)
    b = bh // H
    h = bh % H
    lo, mid, Tr = _bwd_range(j, N, CAUSAL)
    L += bh.to(gl.int64) * N
    Delta += bh.to(gl.int64) * N
    dQ += bh.to(gl.int64) * N * D  # dQ: (B, H, N, D) fp32, contiguous
    j0 = j * (NUM_WG * WG_ROWS) + W * WG_ROWS
    kcols = j0 + gl.arange(0, WG_ROWS, layout=gl.SliceLayout(0, s_layout))
    dKj = gl.zeros([WG_ROWS, D], gl.float32, kv_layout)
    dVj = gl.zeros([WG_ROWS, D], gl.float32, kv_layout)
    mbarrier.wait(kv_ready.index(0), 0)
    Kw = k_smem.index(W)
    Vw = v_smem.index(W)
    dKj, dVj = _bwd_steps(dKj, dVj, Kw, Vw, k_smem, q_smem, do_smem, p_smem, ds_smem, qdo_ready, qdo_empty, ds_ready,
                          ds_empty, L, Delta, dQ, kcols, lo, mid, Tr, N, qk_scale, W, D, STAGES, CAUSAL,
                          VEC_ATOMIC)  # fmt: skip

    # step: write_back
    rows = j0 + gl.arange(0, WG_ROWS, layout=gl.SliceLayout(1, kv_layout))
    cols = gl.arange(0, D, layout=gl.SliceLayout(0, kv_layout))
    live = rows[:, None] < N
    gl.store(dK + b.to(gl.int64) * sdkb + h.to(gl.int64) * sdkh + rows[:, None] * sdkn + cols[None, :],
             (dKj * scale).to(dK.dtype.element_ty), mask=live)  # fmt: skip
    gl.store(dV + b.to(gl.int64) * sdvb + h.to(gl.int64) * sdvh + rows[:, None] * sdvn + cols[None, :],
             dVj.to(dV.dtype.element_ty), mask=live)  # fmt: skip
    # end step


@gluon.jit(do_not_specialize=["H", "N"])
def fa3_bwd(desc_q, desc_k, desc_v, desc_do, L, Delta, dQ, dK, dV, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn,
            H, N, scale, qk_scale,
            D: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr, VEC_ATOMIC: gl.constexpr = False):  # fmt: skip
    """Grid (Tc, B*H) (causal: (B*H, Tc)), Tc = cdiv(N, 128): block j's dKj, dVj, and its share of dQ added into
    dQ, an fp32 (B, H, N, D) buffer of zeros (unscaled: the caller multiplies by scale). Descriptors: blocks
    [1, 1, 64, D] of Q, K, V, dO; L: natural log; Delta from fa3_bwd_preprocess."""
    dtype: gl.constexpr = desc_q.dtype
    tile_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([WG_ROWS, D], dtype)
    # K's columns are cut in halves for the dQ product: its swizzle must not straddle D/2 columns
    k_layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=D, element_bitwidth=16, rank=2)
    ds_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([WG_ROWS, WG_ROWS], dtype)
    k_smem = gl.allocate_shared_memory(dtype, [NUM_WG, WG_ROWS, D], k_layout)
    v_smem = gl.allocate_shared_memory(dtype, [NUM_WG, WG_ROWS, D], tile_layout)
    q_smem = gl.allocate_shared_memory(dtype, [STAGES, WG_ROWS, D], tile_layout)
    do_smem = gl.allocate_shared_memory(dtype, [STAGES, WG_ROWS, D], tile_layout)
    p_smem = gl.allocate_shared_memory(dtype, [NUM_WG, WG_ROWS, WG_ROWS], ds_layout)
    ds_smem = gl.allocate_shared_memory(dtype, [2 * NUM_WG, WG_ROWS, WG_ROWS], ds_layout)  # (buffer, warpgroup)
    kv_ready = gl.allocate_shared_memory(gl.int64, [1, 1], mbarrier.MBarrierLayout())
    qdo_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    qdo_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    ds_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    ds_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(kv_ready.index(0), count=1)
    for s in gl.static_range(STAGES):
        mbarrier.init(qdo_ready.index(s), count=1)
        mbarrier.init(qdo_empty.index(s), count=NUM_WG)
    for s in gl.static_range(2):
        mbarrier.init(ds_ready.index(s), count=NUM_WG)
        mbarrier.init(ds_empty.index(s), count=NUM_WG)

    gl.warp_specialize(
        [
            (_bwd_consumer, (L, Delta, dQ, dK, dV, k_smem, v_smem, q_smem, do_smem, p_smem, ds_smem, kv_ready,
                             qdo_ready, qdo_empty, ds_ready, ds_empty, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn, H, N, scale,
                             qk_scale, 0, D, STAGES, CAUSAL, VEC_ATOMIC)),
            (_bwd_consumer, (L, Delta, dQ, dK, dV, k_smem, v_smem, q_smem, do_smem, p_smem, ds_smem, kv_ready,
                             qdo_ready, qdo_empty, ds_ready, ds_empty, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn, H, N, scale,
                             qk_scale, 1, D, STAGES, CAUSAL, VEC_ATOMIC)),
            (_bwd_producer, (desc_q, desc_k, desc_v, desc_do, k_smem, v_smem, q_smem, do_smem, kv_ready, qdo_ready,
                             qdo_empty, H, N, STAGES, CAUSAL)),
        ],
        [4, 1],
        [CONSUMER_REGS, PRODUCER_REGS],
    )  # fmt: skip
