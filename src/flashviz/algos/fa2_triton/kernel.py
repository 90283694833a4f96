"""FlashAttention-2 in Triton, forward and backward: the seed's algorithm on tensor cores.

The same algorithm as `fa2_forward.cu` and `fa2_backward.cu`, in bf16/fp16 with fp32 carries, made fast:
- forward: one program per Br rows of Q (block i) keeps Qi, the carries mi, li and the accumulator Oi in
  registers and streams the tiles Kj, Vj of width Bc; exp2 with scale*log2(e) folded into one multiply;
  one division at the end; L = m + log l (natural log) written for the backward.
- backward: a preprocessing kernel writes Delta = rowsum(dO * O) (minus dL when L itself is differentiated);
  then one program per Bc rows of K and V (block j) rebuilds Pij = exp(scale * Qi Kj^T - Li) tile by tile
  from Q, K and L and accumulates dKj and dVj; dQ either goes to an fp32 buffer by TMA reductions from the
  same loop (DQ_ATOMIC) or comes from a second kernel, one program per block i, that rebuilds Pij again.
  Nothing of size N x N is ever written.

Tiles move by tensor descriptors (TMA on Hopper): rows past N read as zeros and are never stored, which
is how ragged N works; a head dimension that is not a power of two (96) pads its columns the same way.
Causal attention splits each loop into the tiles wholly below the diagonal (no mask) and the diagonal tiles
(masked). The regions between `# step: NAME` and `# end step` carry the .cu files' step names.

This module needs Triton; `flashviz.triton_attention` imports it only when attention is called. Set
TRITON_INTERPRET=1 before importing it to run the kernels on the CPU (that is how CI tests them).
"""

from __future__ import annotations

import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)  # 1 / ln 2: exp(x) = exp2(x * LOG2E)
LN2 = tl.constexpr(0.6931471805599453)

# Masks a loop stage applies to its tiles.
NO_MASK = tl.constexpr(0)  # tiles wholly inside N (and, when causal, wholly below the diagonal)
MASK_COLUMNS = tl.constexpr(1)  # the last tile of keys reaches past N: key column >= N is masked
MASK_CAUSAL = tl.constexpr(2)  # a diagonal tile: key column > query row is masked (so is column >= N)


# ----------------------------------------------------------------------------------------------------------
# Forward
# ----------------------------------------------------------------------------------------------------------
@triton.jit
def _fwd_tiles(
    Oi, mi, li, Qi, desc_k, desc_v, i, lo, hi, N, qk_scale,
    Br: tl.constexpr, Bc: tl.constexpr, MASK: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
    INPUT_PRECISION: tl.constexpr, SCALE_FIRST: tl.constexpr,
):  # fmt: skip
    """Stream the tiles Kj, Vj of rows [lo, hi) past block i, updating the carries Oi, mi, li. SCALE_FIRST (a
    scale <= 0): each score is scaled before the max, since max(S) * scale is then not the max of the scaled S."""
    rows = i * Br + tl.arange(0, Br)
    for start in tl.range(lo, hi, Bc, warp_specialize=WARP_SPECIALIZE):
        # step: load_kv
        Kj = desc_k.load([start, 0])  # (Bc, D)
        Vj = desc_v.load([start, 0])  # (Bc, D)
        # end step

        # step: scores
        Sij = tl.dot(Qi, Kj.T, input_precision=INPUT_PRECISION)  # (Br, Bc), fp32, not yet scaled
        if SCALE_FIRST:
            Sij = Sij * qk_scale  # scaled now, before the mask: -inf stays -inf
        if MASK == MASK_CAUSAL:
            cols = start + tl.arange(0, Bc)
            Sij = tl.where(rows[:, None] >= cols[None, :], Sij, float("-inf"))
        elif MASK == MASK_COLUMNS:
            cols = start + tl.arange(0, Bc)
            Sij = tl.where(cols[None, :] < N, Sij, float("-inf"))
        # end step

        # step: online_softmax
        if SCALE_FIRST:
            m_new = tl.maximum(mi, tl.max(Sij, 1))  # running max, in units of log2
            Pij = tl.math.exp2(Sij - m_new[:, None])  # (Br, Bc)
        else:
            m_new = tl.maximum(mi, tl.max(Sij, 1) * qk_scale)  # running max, in units of log2
            Pij = tl.math.exp2(Sij * qk_scale - m_new[:, None])  # (Br, Bc)
        alpha = tl.math.exp2(mi - m_new)  # rescales what the carries hold to the new max
        li = li * alpha + tl.sum(Pij, 1)
        Oi = Oi * alpha[:, None]
        Oi = tl.dot(Pij.to(Vj.dtype), Vj, Oi, input_precision=INPUT_PRECISION)
        mi = m_new
        # end step
    return Oi, mi, li


@triton.jit(do_not_specialize=["H", "N"])
def fa2_fwd(
    Q, K, V, O, L,
    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sob, soh, son,
    H, N, Dv, qk_scale,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
    INPUT_PRECISION: tl.constexpr = "tf32", SCALE_FIRST: tl.constexpr = False,
):  # fmt: skip
    """Grid (Tr, B*H). Q, K, V, O: (B, H, N, Dv) with unit last stride; L: (B, H, N) contiguous fp32.

    D is Dv rounded up to a power of two (the columns past Dv read as zeros and are never stored);
    qk_scale = scale * log2(e), SCALE_FIRST set when it is <= 0. INPUT_PRECISION is tl.dot's for float32 Q, K, V
    (the ladder's private fp32 runs: "ieee" multiplies on the CUDA cores, "tf32" on the tensor cores); bf16 and
    fp16 tiles ignore it.
    """
    Tr = tl.num_programs(0)
    # causal: the blocks with the most tiles start first, so the last wave is made of short programs
    i = Tr - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H

    # step: load_q
    desc_q = tl.make_tensor_descriptor(Q + b.to(tl.int64) * sqb + h.to(tl.int64) * sqh, shape=[N, Dv],
                                       strides=[sqn, 1], block_shape=[Br, D])  # fmt: skip
    desc_k = tl.make_tensor_descriptor(K + b.to(tl.int64) * skb + h.to(tl.int64) * skh, shape=[N, Dv],
                                       strides=[skn, 1], block_shape=[Bc, D])  # fmt: skip
    desc_v = tl.make_tensor_descriptor(V + b.to(tl.int64) * svb + h.to(tl.int64) * svh, shape=[N, Dv],
                                       strides=[svn, 1], block_shape=[Bc, D])  # fmt: skip
    Qi = desc_q.load([i * Br, 0])  # (Br, D); stays for the whole loop
    Oi = tl.zeros([Br, D], dtype=tl.float32)
    mi = tl.full([Br], float("-inf"), dtype=tl.float32)
    li = tl.zeros([Br], dtype=tl.float32)
    # end step

    if CAUSAL:
        # tiles wholly below the diagonal, then the diagonal tiles of block i (Br is a multiple of Bc)
        Oi, mi, li = _fwd_tiles(Oi, mi, li, Qi, desc_k, desc_v, i, 0, i * Br, N, qk_scale,
                                Br, Bc, NO_MASK, WARP_SPECIALIZE, INPUT_PRECISION, SCALE_FIRST)  # fmt: skip
        Oi, mi, li = _fwd_tiles(Oi, mi, li, Qi, desc_k, desc_v, i, i * Br, tl.minimum((i + 1) * Br, N), N,
                                qk_scale, Br, Bc, MASK_CAUSAL, WARP_SPECIALIZE, INPUT_PRECISION,
                                SCALE_FIRST)  # fmt: skip
    else:
        full = (N // Bc) * Bc  # tiles wholly inside N, then the ragged last one (if any)
        Oi, mi, li = _fwd_tiles(Oi, mi, li, Qi, desc_k, desc_v, i, 0, full, N, qk_scale,
                                Br, Bc, NO_MASK, WARP_SPECIALIZE, INPUT_PRECISION, SCALE_FIRST)  # fmt: skip
        if full < N:
            Oi, mi, li = _fwd_tiles(Oi, mi, li, Qi, desc_k, desc_v, i, full, N, N, qk_scale,
                                    Br, Bc, MASK_COLUMNS, False, INPUT_PRECISION, SCALE_FIRST)  # fmt: skip

    # step: write_back
    Oi = Oi / li[:, None]  # the only division
    desc_o = tl.make_tensor_descriptor(O + b.to(tl.int64) * sob + h.to(tl.int64) * soh, shape=[N, Dv],
                                       strides=[son, 1], block_shape=[Br, D])  # fmt: skip
    desc_o.store([i * Br, 0], Oi.to(desc_o.dtype))  # rows >= N are not stored
    rows = i * Br + tl.arange(0, Br)
    tl.store(L + bh.to(tl.int64) * N + rows, (mi + tl.math.log2(li)) * LN2, mask=rows < N)
    # end step


# ----------------------------------------------------------------------------------------------------------
# Backward
# ----------------------------------------------------------------------------------------------------------
@triton.jit(do_not_specialize=["H", "N"])
def fa2_bwd_preprocess(
    O, dO, dL, Delta,
    sob, soh, son, sdb, sdh, sdn,
    H, N, Dv,
    D: tl.constexpr, Br: tl.constexpr, HAS_DL: tl.constexpr,
):  # fmt: skip
    """Grid (Tr, B*H): Delta = rowsum(dO * O) - dL, fp32 (B, H, N). dL is the gradient reaching L, if any."""
    i = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    rows = i * Br + tl.arange(0, Br)
    cols = tl.arange(0, D)
    live = (rows[:, None] < N) & (cols[None, :] < Dv)
    # step: load_do_o
    Oi = tl.load(O + b.to(tl.int64) * sob + h.to(tl.int64) * soh + rows[:, None] * son + cols[None, :],
                 mask=live, other=0.0)  # fmt: skip
    dOi = tl.load(dO + b.to(tl.int64) * sdb + h.to(tl.int64) * sdh + rows[:, None] * sdn + cols[None, :],
                  mask=live, other=0.0)  # fmt: skip
    # end step
    # step: write_delta
    Di = tl.sum(Oi.to(tl.float32) * dOi.to(tl.float32), 1)  # (Br,)
    if HAS_DL:
        Di -= tl.load(dL + bh.to(tl.int64) * N + rows, mask=rows < N, other=0.0)
    tl.store(Delta + bh.to(tl.int64) * N + rows, Di, mask=rows < N)
    # end step


@triton.jit
def _dkdv_tiles(
    dKj, dVj, Kj, Vj, desc_q, desc_do, desc_dq, dQ, L, Delta, sdqn, j, lo, hi, N, Dv, qk_scale,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, MASK: tl.constexpr,
    DQ_ATOMIC: tl.constexpr, TMA_REDUCE: tl.constexpr,
):  # fmt: skip
    """Stream the blocks Qi, dOi of rows [lo, hi) past tile j, accumulating dKj, dVj (and adding into dQ)."""
    cols = j * Bc + tl.arange(0, Bc)
    for start in tl.range(lo, hi, Br):
        rows = start + tl.arange(0, Br)
        # step: load_q
        Qi = desc_q.load([start, 0])  # (Br, D); rows >= N read as zeros
        dOi = desc_do.load([start, 0])  # (Br, D)
        Li = tl.load(L + rows, mask=rows < N, other=0.0) * LOG2E  # (Br,), in units of log2
        Di = tl.load(Delta + rows, mask=rows < N, other=0.0)
        # end step

        # step: probs
        SijT = tl.dot(Kj, Qi.T)  # (Bc, Br): the tile transposed, so that Kj's rows stay rows
        PijT = tl.math.exp2(SijT * qk_scale - Li[None, :])
        if MASK == MASK_CAUSAL:
            PijT = tl.where(cols[:, None] <= rows[None, :], PijT, 0.0)
        elif MASK == MASK_COLUMNS:
            PijT = tl.where(cols[:, None] < N, PijT, 0.0)
        # end step

        # step: dv
        dVj = tl.dot(PijT.to(dOi.dtype), dOi, dVj)  # dVj += Pij^T dOi
        # end step

        # step: ds
        dPijT = tl.dot(Vj, dOi.T)  # (Bc, Br)
        dSijT = PijT * (dPijT - Di[None, :])  # scale is applied once, at the end
        # end step

        # step: dk
        dSijT = dSijT.to(Qi.dtype)
        dKj = tl.dot(dSijT, Qi, dKj)  # dKj += dSij^T Qi
        # end step

        if DQ_ATOMIC:
            # step: dq
            dQi = tl.dot(dSijT.T, Kj)  # (Br, D): this tile's share of dQ[i]
            if TMA_REDUCE:
                desc_dq.atomic_add([start, 0], dQi)  # a bulk reduction into fp32 dQ; rows >= N are dropped
            else:
                dcols = tl.arange(0, D)
                tl.atomic_add(dQ + rows[:, None] * sdqn + dcols[None, :], dQi,
                              mask=(rows[:, None] < N) & (dcols[None, :] < Dv), sem="relaxed")  # fmt: skip
            # end step
    return dKj, dVj


@triton.jit(do_not_specialize=["H", "N"])
def fa2_bwd_dkdv(
    Q, K, V, dO, L, Delta, dQ, dK, dV,
    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn,
    sdqb, sdqh, sdqn, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn,
    H, N, Dv, scale, qk_scale,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr,
    DQ_ATOMIC: tl.constexpr, TMA_REDUCE: tl.constexpr,
):  # fmt: skip
    """Grid (Tc, B*H): block j owns Bc rows of K and V. With DQ_ATOMIC, dQ is an fp32 buffer of zeros that
    receives dSij Kj (unscaled) from every tile; otherwise fa2_bwd_dq computes dQ."""
    _dkdv_block(Q, K, V, dO, L, Delta, dQ, dK, dV,
                sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn,
                sdqb, sdqh, sdqn, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn,
                tl.program_id(0), tl.program_id(1), H, N, Dv, scale, qk_scale,
                D, Br, Bc, CAUSAL, DQ_ATOMIC, TMA_REDUCE)  # fmt: skip


@triton.jit
def _dkdv_block(
    Q, K, V, dO, L, Delta, dQ, dK, dV,
    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn,
    sdqb, sdqh, sdqn, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn,
    j, bh, H, N, Dv, scale, qk_scale,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr,
    DQ_ATOMIC: tl.constexpr, TMA_REDUCE: tl.constexpr,
):  # fmt: skip
    """Block j of head bh: dKj and dVj (and, with DQ_ATOMIC, the reductions into dQ)."""
    b = bh // H
    h = bh % H
    L += bh.to(tl.int64) * N
    Delta += bh.to(tl.int64) * N
    desc_q = tl.make_tensor_descriptor(Q + b.to(tl.int64) * sqb + h.to(tl.int64) * sqh, shape=[N, Dv],
                                       strides=[sqn, 1], block_shape=[Br, D])  # fmt: skip
    desc_do = tl.make_tensor_descriptor(dO + b.to(tl.int64) * sdb + h.to(tl.int64) * sdh, shape=[N, Dv],
                                        strides=[sdn, 1], block_shape=[Br, D])  # fmt: skip
    dQ += b.to(tl.int64) * sdqb + h.to(tl.int64) * sdqh
    desc_dq = desc_q  # a placeholder unless the reductions go through a descriptor of their own
    if DQ_ATOMIC and TMA_REDUCE:
        desc_dq = tl.make_tensor_descriptor(dQ, shape=[N, Dv], strides=[sdqn, 1], block_shape=[Br, D])

    # step: load_kv
    desc_k = tl.make_tensor_descriptor(K + b.to(tl.int64) * skb + h.to(tl.int64) * skh, shape=[N, Dv],
                                       strides=[skn, 1], block_shape=[Bc, D])  # fmt: skip
    desc_v = tl.make_tensor_descriptor(V + b.to(tl.int64) * svb + h.to(tl.int64) * svh, shape=[N, Dv],
                                       strides=[svn, 1], block_shape=[Bc, D])  # fmt: skip
    Kj = desc_k.load([j * Bc, 0])  # (Bc, D); Kj and Vj stay for the whole loop
    Vj = desc_v.load([j * Bc, 0])
    dKj = tl.zeros([Bc, D], dtype=tl.float32)
    dVj = tl.zeros([Bc, D], dtype=tl.float32)
    # end step

    if CAUSAL:
        # the diagonal blocks of Q (rows j*Bc .. j*Bc+Bc; Bc is a multiple of Br), then every block below
        dKj, dVj = _dkdv_tiles(dKj, dVj, Kj, Vj, desc_q, desc_do, desc_dq, dQ, L, Delta, sdqn, j,
                               j * Bc, tl.minimum((j + 1) * Bc, N), N, Dv, qk_scale,
                               D, Br, Bc, MASK_CAUSAL, DQ_ATOMIC, TMA_REDUCE)  # fmt: skip
        dKj, dVj = _dkdv_tiles(dKj, dVj, Kj, Vj, desc_q, desc_do, desc_dq, dQ, L, Delta, sdqn, j,
                               (j + 1) * Bc, N, N, Dv, qk_scale,
                               D, Br, Bc, NO_MASK, DQ_ATOMIC, TMA_REDUCE)  # fmt: skip
    elif DQ_ATOMIC:
        if (j + 1) * Bc > N:
            # the ragged last tile: its key columns >= N hold zeros; their Pij must not reach dQ
            dKj, dVj = _dkdv_tiles(dKj, dVj, Kj, Vj, desc_q, desc_do, desc_dq, dQ, L, Delta, sdqn, j,
                                   0, N, N, Dv, qk_scale, D, Br, Bc, MASK_COLUMNS, DQ_ATOMIC, TMA_REDUCE)  # fmt: skip
        else:
            dKj, dVj = _dkdv_tiles(dKj, dVj, Kj, Vj, desc_q, desc_do, desc_dq, dQ, L, Delta, sdqn, j,
                                   0, N, N, Dv, qk_scale, D, Br, Bc, NO_MASK, DQ_ATOMIC, TMA_REDUCE)  # fmt: skip
    else:
        # rows >= N of the last block of Q read as zeros (and L, Delta as 0): they add nothing
        dKj, dVj = _dkdv_tiles(dKj, dVj, Kj, Vj, desc_q, desc_do, desc_dq, dQ, L, Delta, sdqn, j,
                               0, N, N, Dv, qk_scale, D, Br, Bc, NO_MASK, DQ_ATOMIC, TMA_REDUCE)  # fmt: skip

    # step: write_back
    desc_dk = tl.make_tensor_descriptor(dK + b.to(tl.int64) * sdkb + h.to(tl.int64) * sdkh, shape=[N, Dv],
                                        strides=[sdkn, 1], block_shape=[Bc, D])  # fmt: skip
    desc_dv = tl.make_tensor_descriptor(dV + b.to(tl.int64) * sdvb + h.to(tl.int64) * sdvh, shape=[N, Dv],
                                        strides=[sdvn, 1], block_shape=[Bc, D])  # fmt: skip
    desc_dk.store([j * Bc, 0], (dKj * scale).to(desc_dk.dtype))
    desc_dv.store([j * Bc, 0], dVj.to(desc_dv.dtype))
    # end step


@triton.jit
def _dq_tiles(
    dQi, Qi, dOi, Li, Di, desc_k, desc_v, i, lo, hi, N, qk_scale,
    Br: tl.constexpr, Bc: tl.constexpr, MASK: tl.constexpr,
):  # fmt: skip
    rows = i * Br + tl.arange(0, Br)
    for start in tl.range(lo, hi, Bc):
        # step: load_kv
        Kj = desc_k.load([start, 0])  # (Bc, D)
        Vj = desc_v.load([start, 0])
        # end step

        # step: probs
        Sij = tl.dot(Qi, Kj.T)  # (Br, Bc)
        Pij = tl.math.exp2(Sij * qk_scale - Li[:, None])
        if MASK == MASK_CAUSAL:
            cols = start + tl.arange(0, Bc)
            Pij = tl.where(rows[:, None] >= cols[None, :], Pij, 0.0)
        elif MASK == MASK_COLUMNS:
            cols = start + tl.arange(0, Bc)
            Pij = tl.where(cols[None, :] < N, Pij, 0.0)
        # end step

        # step: ds
        dPij = tl.dot(dOi, Vj.T)  # (Br, Bc)
        dSij = Pij * (dPij - Di[:, None])
        # end step

        # step: dq
        dQi = tl.dot(dSij.to(Kj.dtype), Kj, dQi)  # dQi += dSij Kj
        # end step
    return dQi


@triton.jit(do_not_specialize=["H", "N"])
def fa2_bwd_dq(
    Q, K, V, dO, L, Delta, dQ,
    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn, sdqb, sdqh, sdqn,
    H, N, Dv, scale, qk_scale,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    """Grid (Tr, B*H): block i owns Br rows of Q and writes dQ[i] = scale * sum_j dSij Kj once."""
    _dq_block(Q, K, V, dO, L, Delta, dQ,
              sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn, sdqb, sdqh, sdqn,
              tl.program_id(0), tl.program_id(1), H, N, Dv, scale, qk_scale, D, Br, Bc, CAUSAL)  # fmt: skip


@triton.jit(do_not_specialize=["H", "N"])
def fa2_bwd_fused(
    Q, K, V, dO, L, Delta, dQ, dK, dV,
    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn,
    sdqb, sdqh, sdqn, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn,
    H, N, Dv, scale, qk_scale,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, BrQ: tl.constexpr, BcQ: tl.constexpr,
    CAUSAL: tl.constexpr,
):  # fmt: skip
    """Grid (Tc + Tr, B*H): fa2_bwd_dkdv's blocks (Bc rows of K, V; blocks of Br queries), then fa2_bwd_dq's
    (BrQ rows of Q; tiles of BcQ keys), in one launch, so that each fills the other's last wave."""
    Tc = tl.cdiv(N, Bc)
    if tl.program_id(0) < Tc:
        _dkdv_block(Q, K, V, dO, L, Delta, dQ, dK, dV,
                    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn,
                    sdqb, sdqh, sdqn, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn,
                    tl.program_id(0), tl.program_id(1), H, N, Dv, scale, qk_scale,
                    D, Br, Bc, CAUSAL, False, False)  # fmt: skip
    else:
        _dq_block(Q, K, V, dO, L, Delta, dQ,
                  sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn, sdqb, sdqh, sdqn,
                  tl.program_id(0) - Tc, tl.program_id(1), H, N, Dv, scale, qk_scale, D, BrQ, BcQ, CAUSAL)  # fmt: skip


@triton.jit
def _dq_block(
    Q, K, V, dO, L, Delta, dQ,
    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn, sdqb, sdqh, sdqn,
    pid, bh, H, N, Dv, scale, qk_scale,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    """Block number pid of head bh: dQ[i] for i = pid (causal: the longest blocks first)."""
    Tr = tl.cdiv(N, Br)
    i = Tr - 1 - pid if CAUSAL else pid
    b = bh // H
    h = bh % H
    rows = i * Br + tl.arange(0, Br)

    # step: load_q
    desc_q = tl.make_tensor_descriptor(Q + b.to(tl.int64) * sqb + h.to(tl.int64) * sqh, shape=[N, Dv],
                                       strides=[sqn, 1], block_shape=[Br, D])  # fmt: skip
    desc_do = tl.make_tensor_descriptor(dO + b.to(tl.int64) * sdb + h.to(tl.int64) * sdh, shape=[N, Dv],
                                        strides=[sdn, 1], block_shape=[Br, D])  # fmt: skip
    Qi = desc_q.load([i * Br, 0])
    dOi = desc_do.load([i * Br, 0])
    Li = tl.load(L + bh.to(tl.int64) * N + rows, mask=rows < N, other=0.0) * LOG2E
    Di = tl.load(Delta + bh.to(tl.int64) * N + rows, mask=rows < N, other=0.0)
    dQi = tl.zeros([Br, D], dtype=tl.float32)
    # end step

    desc_k = tl.make_tensor_descriptor(K + b.to(tl.int64) * skb + h.to(tl.int64) * skh, shape=[N, Dv],
                                       strides=[skn, 1], block_shape=[Bc, D])  # fmt: skip
    desc_v = tl.make_tensor_descriptor(V + b.to(tl.int64) * svb + h.to(tl.int64) * svh, shape=[N, Dv],
                                       strides=[svn, 1], block_shape=[Bc, D])  # fmt: skip
    if CAUSAL:
        dQi = _dq_tiles(dQi, Qi, dOi, Li, Di, desc_k, desc_v, i, 0, i * Br, N, qk_scale, Br, Bc, NO_MASK)
        dQi = _dq_tiles(dQi, Qi, dOi, Li, Di, desc_k, desc_v, i, i * Br, tl.minimum((i + 1) * Br, N), N,
                        qk_scale, Br, Bc, MASK_CAUSAL)  # fmt: skip
    else:
        full = (N // Bc) * Bc
        dQi = _dq_tiles(dQi, Qi, dOi, Li, Di, desc_k, desc_v, i, 0, full, N, qk_scale, Br, Bc, NO_MASK)
        if full < N:
            dQi = _dq_tiles(dQi, Qi, dOi, Li, Di, desc_k, desc_v, i, full, N, N, qk_scale, Br, Bc, MASK_COLUMNS)

    # step: write_back
    desc_dq = tl.make_tensor_descriptor(dQ + b.to(tl.int64) * sdqb + h.to(tl.int64) * sdqh, shape=[N, Dv],
                                        strides=[sdqn, 1], block_shape=[Br, D])  # fmt: skip
    desc_dq.store([i * Br, 0], (dQi * scale).to(desc_dq.dtype))
    # end step
