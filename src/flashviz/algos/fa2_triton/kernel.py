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
Every loop runs in three stages: the tiles that cross the left edge of the band a query may see (masked), the
tiles wholly inside it (no mask), the tiles that cross its right edge or N (masked); tiles wholly outside are never
visited. The band: query row r (of Nq) sees key column c (of Nk) when c - (r + Nk - Nq) lies in [-left, right]
(causal: right = 0, aligned to the bottom-right as in FlashAttention-2; unbounded sides pass a huge value).
Grouped-query attention: q head h reads K/V head h // GROUP, and one dkdv program sums the GROUP q heads of its
K/V head. Packed sequences (VARLEN): cu_q, cu_k hold the cumulative lengths; each program reads its sequence's
start and length and its descriptors end there. Soft-capping (SOFTCAP): scores become c * tanh(s / c).
The regions between `# step: NAME` and `# end step` carry the .cu files' step names.

This module needs Triton; `launcher.py` imports it only when a kernel is first launched. Set
TRITON_INTERPRET=1 before importing it to run the kernels on the CPU (that is how CI tests them).
"""

from __future__ import annotations

import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)  # 1 / ln 2: exp(x) = exp2(x * LOG2E)
TANH_SERIES = tl.constexpr(0.03125)  # _tanh takes its series below this |x|
TANH_X3 = tl.constexpr(-1.0 / 3.0)  # tanh x = x - x^3/3 + 2 x^5/15 - ...
LN2 = tl.constexpr(0.6931471805599453)

# Masks a loop stage applies to its tiles.
NO_MASK = tl.constexpr(0)  # tiles wholly inside the band (and inside Nk)
MASK_BAND = tl.constexpr(1)  # tiles that cross an edge of the band or N: each element is checked


# ----------------------------------------------------------------------------------------------------------
# Forward
# ----------------------------------------------------------------------------------------------------------
@triton.jit
def _fwd_tiles(
    Oi, mi, li, Qi, desc_k, desc_v, rows, lo, hi, Nk, off, left, right, qk_scale, softcap2,
    Bc: tl.constexpr, MASK: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, INPUT_PRECISION: tl.constexpr,
    SCALE_FIRST: tl.constexpr, SOFTCAP: tl.constexpr,
):  # fmt: skip
    """Stream the tiles Kj, Vj of rows [lo, hi) past the block of queries `rows`, updating the carries Oi, mi, li.
    SCALE_FIRST (a scale <= 0, or soft-capping): each score is scaled before the max, since max(S) * scale is then
    not the max of the scaled S; SOFTCAP: qk_scale = scale / c and the scores become softcap2 * tanh (c log2 e)."""
    for start in tl.range(lo, hi, Bc, warp_specialize=WARP_SPECIALIZE):
        # step: load_kv
        Kj = desc_k.load([start, 0])  # (Bc, D)
        Vj = desc_v.load([start, 0])  # (Bc, D)
        # end step

        # step: scores
        Sij = tl.dot(Qi, Kj.T, input_precision=INPUT_PRECISION)  # (Br, Bc), fp32, not yet scaled
        if SCALE_FIRST:
            Sij = Sij * qk_scale  # scaled now, before the mask: -inf stays -inf
            if SOFTCAP:
                Sij = softcap2 * _tanh(Sij)  # c * tanh(scale * s / c), in units of log2
        if MASK == MASK_BAND:
            cols = start + tl.arange(0, Bc)
            Sij = tl.where(_visible(rows[:, None], cols[None, :], Nk, off, left, right), Sij, float("-inf"))
        # end step

        # step: online_softmax
        if SCALE_FIRST:
            m_new = tl.maximum(mi, tl.max(Sij, 1))  # running max, in units of log2
        else:
            m_new = tl.maximum(mi, tl.max(Sij, 1) * qk_scale)
        m_use = m_new
        if MASK == MASK_BAND:
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row that has seen no key yet: P = 0, not NaN
        if SCALE_FIRST:
            Pij = tl.math.exp2(Sij - m_use[:, None])  # (Br, Bc)
        else:
            Pij = tl.math.exp2(Sij * qk_scale - m_use[:, None])
        alpha = tl.math.exp2(mi - m_use)  # rescales what the carries hold to the new max
        li = li * alpha + tl.sum(Pij, 1)
        Oi = Oi * alpha[:, None]
        Oi = tl.dot(Pij.to(Vj.dtype), Vj, Oi, input_precision=INPUT_PRECISION)
        mi = m_new
        # end step
    return Oi, mi, li


@triton.jit(do_not_specialize=["H", "N", "Nk", "LEFT", "RIGHT", "LN"])
def fa2_fwd(
    Q, K, V, O, L,
    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sob, soh, son,
    H, N, Dv, qk_scale,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
    INPUT_PRECISION: tl.constexpr = "tf32", SCALE_FIRST: tl.constexpr = False,
    Nk=-1, GROUP=1, LEFT=1 << 30, RIGHT=1 << 30, softcap2=0.0, SOFTCAP: tl.constexpr = False,
    VARLEN: tl.constexpr = False, cu_q=None, cu_k=None, LN=-1, BAND_LEFT: tl.constexpr = False,
):  # fmt: skip
    """Grid (Tr, B*H). Q, O: (B, H, N, Dv), K, V: (B, H // GROUP, Nk, Dv), unit last stride; L: (B, H, N) fp32.

    D is Dv rounded up to a power of two (the columns past Dv read as zeros and are never stored);
    qk_scale = scale * log2(e), SCALE_FIRST set when it is <= 0. INPUT_PRECISION is tl.dot's for float32 Q, K, V
    (the ladder's private fp32 runs: "ieee" multiplies on the CUDA cores, "tf32" on the tensor cores); bf16 and
    fp16 tiles ignore it. Nk -1: Nk = N. LEFT, RIGHT: the band (CAUSAL makes RIGHT at most 0; BAND_LEFT: LEFT
    is bounded, so that the loop has a left edge to mask, which is compiled only then). VARLEN: Q, O are
    (total, H, Dv) with sqb = sob = 0, N and Nk the longest sequences, L (H, LN = total) and cu_q, cu_k int32.
    """
    Tr = tl.num_programs(0)
    # causal: the blocks with the most tiles start first, so the last wave is made of short programs
    i = Tr - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    hk = h // GROUP
    q0, Nq, k0, Nkv, lrow = _seqs(cu_q, cu_k, b, h, H, N, Nk, LN, VARLEN)
    if i * Br >= Nq:  # a block past its sequence (VARLEN)
        return
    right = RIGHT
    if CAUSAL:
        right = tl.minimum(RIGHT, 0)
    off = Nkv - Nq  # query row r is aligned with key column r + off (bottom-right)
    rows = i * Br + tl.arange(0, Br)

    # step: load_q
    desc_q = tl.make_tensor_descriptor(Q + b.to(tl.int64) * sqb + h.to(tl.int64) * sqh + q0.to(tl.int64) * sqn,
                                       shape=[Nq, Dv], strides=[sqn, 1], block_shape=[Br, D])  # fmt: skip
    desc_k = tl.make_tensor_descriptor(K + b.to(tl.int64) * skb + hk.to(tl.int64) * skh + k0.to(tl.int64) * skn,
                                       shape=[Nkv, Dv], strides=[skn, 1], block_shape=[Bc, D])  # fmt: skip
    desc_v = tl.make_tensor_descriptor(V + b.to(tl.int64) * svb + hk.to(tl.int64) * svh + k0.to(tl.int64) * svn,
                                       shape=[Nkv, Dv], strides=[svn, 1], block_shape=[Bc, D])  # fmt: skip
    Qi = desc_q.load([i * Br, 0])  # (Br, D); stays for the whole loop
    Oi = tl.zeros([Br, D], dtype=tl.float32)
    mi = tl.full([Br], float("-inf"), dtype=tl.float32)
    li = tl.zeros([Br], dtype=tl.float32)
    # end step

    # the band's left edge (masked), the tiles wholly inside it, its right edge and the ragged end (masked)
    lo, a, c, hi = _q_stages(i * Br, Nq, Nkv, off, LEFT, right, Br, Bc)
    if BAND_LEFT:
        Oi, mi, li = _fwd_tiles(Oi, mi, li, Qi, desc_k, desc_v, rows, lo, a, Nkv, off, LEFT, right, qk_scale,
                                softcap2, Bc, MASK_BAND, False, INPUT_PRECISION, SCALE_FIRST, SOFTCAP)  # fmt: skip
    Oi, mi, li = _fwd_tiles(Oi, mi, li, Qi, desc_k, desc_v, rows, a, c, Nkv, off, LEFT, right, qk_scale, softcap2,
                            Bc, NO_MASK, WARP_SPECIALIZE, INPUT_PRECISION, SCALE_FIRST, SOFTCAP)  # fmt: skip
    Oi, mi, li = _fwd_tiles(Oi, mi, li, Qi, desc_k, desc_v, rows, c, hi, Nkv, off, LEFT, right, qk_scale, softcap2,
                            Bc, MASK_BAND, False, INPUT_PRECISION, SCALE_FIRST, SOFTCAP)  # fmt: skip

    # step: write_back
    Oi = Oi / tl.where(li == 0.0, 1.0, li)[:, None]  # the only division (a row that sees no key: O = 0, L = -inf)
    desc_o = tl.make_tensor_descriptor(O + b.to(tl.int64) * sob + h.to(tl.int64) * soh + q0.to(tl.int64) * son,
                                       shape=[Nq, Dv], strides=[son, 1], block_shape=[Br, D])  # fmt: skip
    desc_o.store([i * Br, 0], Oi.to(desc_o.dtype))  # rows >= Nq are not stored
    tl.store(L + lrow + rows, (mi + tl.math.log2(li)) * LN2, mask=rows < Nq)
    # end step


# ----------------------------------------------------------------------------------------------------------
# Split-KV forward (Flash-Decoding): few queries against many keys
# ----------------------------------------------------------------------------------------------------------
@triton.jit(do_not_specialize=["Nq", "Nk", "LEFT", "RIGHT", "KLO", "CHUNK"])
def fa2_fwd_split(
    Q, K, V, Opart, Lpart,
    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn,
    Hkv, Nq, Nk, Dv, qk_scale, LEFT, RIGHT, softcap2, KLO, CHUNK,
    GROUP: tl.constexpr, D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr,
    SCALE_FIRST: tl.constexpr, SOFTCAP: tl.constexpr, BAND_LEFT: tl.constexpr,
):  # fmt: skip
    """Grid (S, Tr, B*Hkv): chunk s of the keys [KLO + s*CHUNK, KLO + (s+1)*CHUNK) against block i of the packed rows
    of K/V head hk -- the GROUP q heads that read hk, packed row p = r*GROUP + g for query row r of q head
    hk*GROUP + g, so that Kj, Vj are read once for the whole group. Writes the chunk's partial carries, fp32:
    Opart (S, B*Hkv, Nq*GROUP, D) normalised, Lpart (S, B*Hkv, Nq*GROUP) = m + log2 l in units of log2 (-inf: the
    chunk holds no key the row sees); fa2_fwd_combine merges them. The tiles are fa2_fwd's (`_fwd_tiles`), in the
    same three stages, cut to the chunk: tiles of the chunk outside the band are never visited."""
    s = tl.program_id(0)
    i = tl.program_id(1)
    bhk = tl.program_id(2)
    b = bhk // Hkv
    hk = bhk % Hkv
    rows_p = Nq * GROUP  # packed rows of this K/V head
    p = i * Br + tl.arange(0, Br)  # (Br,) packed rows
    rows = p // GROUP  # their query rows
    g = p % GROUP
    right = RIGHT
    if CAUSAL:
        right = tl.minimum(RIGHT, 0)
    off = Nk - Nq

    # step: load_q
    cols = tl.arange(0, D)
    q_ptr = Q + b.to(tl.int64) * sqb + (hk * GROUP + g).to(tl.int64)[:, None] * sqh + rows.to(tl.int64)[:, None] * sqn
    Qi = tl.load(q_ptr + cols[None, :], mask=(p[:, None] < rows_p) & (cols[None, :] < Dv), other=0.0)  # (Br, D)
    desc_k = tl.make_tensor_descriptor(K + b.to(tl.int64) * skb + hk.to(tl.int64) * skh,
                                       shape=[Nk, Dv], strides=[skn, 1], block_shape=[Bc, D])  # fmt: skip
    desc_v = tl.make_tensor_descriptor(V + b.to(tl.int64) * svb + hk.to(tl.int64) * svh,
                                       shape=[Nk, Dv], strides=[svn, 1], block_shape=[Bc, D])  # fmt: skip
    Oi = tl.zeros([Br, D], dtype=tl.float32)
    mi = tl.full([Br], float("-inf"), dtype=tl.float32)
    li = tl.zeros([Br], dtype=tl.float32)
    # end step

    # the block's three stages (its query rows r0 .. r1), cut to the chunk [k_lo, k_hi) (a multiple of Bc wide)
    r0 = (i * Br) // GROUP
    r_last = (tl.minimum(i * Br + Br, rows_p) - 1) // GROUP
    lo, a, c, hi = _q_stages_rows(r0, r_last - r0 + 1, Nq, Nk, off, LEFT, right, Bc)
    k_lo = KLO + s * CHUNK
    k_hi = tl.minimum(k_lo + CHUNK, Nk)
    lo = tl.minimum(tl.maximum(lo, k_lo), k_hi)
    hi = tl.maximum(tl.minimum(hi, k_hi), lo)
    a = tl.minimum(tl.maximum(a, lo), hi)
    c = tl.minimum(tl.maximum(c, a), hi)
    if BAND_LEFT:
        Oi, mi, li = _fwd_tiles(Oi, mi, li, Qi, desc_k, desc_v, rows, lo, a, Nk, off, LEFT, right, qk_scale,
                                softcap2, Bc, MASK_BAND, False, "tf32", SCALE_FIRST, SOFTCAP)  # fmt: skip
    Oi, mi, li = _fwd_tiles(Oi, mi, li, Qi, desc_k, desc_v, rows, a, c, Nk, off, LEFT, right, qk_scale, softcap2,
                            Bc, NO_MASK, False, "tf32", SCALE_FIRST, SOFTCAP)  # fmt: skip
    Oi, mi, li = _fwd_tiles(Oi, mi, li, Qi, desc_k, desc_v, rows, c, hi, Nk, off, LEFT, right, qk_scale, softcap2,
                            Bc, MASK_BAND, False, "tf32", SCALE_FIRST, SOFTCAP)  # fmt: skip

    # step: write_back
    Oi = Oi / tl.where(li == 0.0, 1.0, li)[:, None]  # this chunk's O (0 where the row saw no key of it)
    part = (s * tl.num_programs(2) + bhk).to(tl.int64) * rows_p
    tl.store(Opart + (part + p)[:, None] * D + cols[None, :], Oi, mask=p[:, None] < rows_p)
    tl.store(Lpart + part + p, mi + tl.math.log2(li), mask=p < rows_p)
    # end step


@triton.jit(do_not_specialize=["Nq", "S"])
def fa2_fwd_combine(
    Opart, Lpart, O, L, soh, son, Hkv, Nq, Dv, S,
    GROUP: tl.constexpr, D: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    """Grid (cdiv(Nq*GROUP, BLOCK), B*Hkv): the S chunks' carries of each packed row merged by the log-sum-exp rule
    (flashviz.model.merge: L = log sum_s exp(L_s), O = sum_s exp(L_s - L) O_s), written to O (B, Hq, Nq, Dv) in its
    dtype
    (soh, son its head and row strides; the batch stride is Hq * soh) and L (B, Hq, Nq) fp32, natural log."""
    i = tl.program_id(0)
    bhk = tl.program_id(1)
    b = bhk // Hkv
    hk = bhk % Hkv
    rows_p = Nq * GROUP
    p = i * BLOCK + tl.arange(0, BLOCK)
    live = p < rows_p
    cols = tl.arange(0, D)
    nbh = tl.num_programs(1)
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for s in range(S):
        m = tl.maximum(m, tl.load(Lpart + (s * nbh + bhk).to(tl.int64) * rows_p + p, mask=live, other=float("-inf")))
    m_use = tl.where(m == float("-inf"), 0.0, m)  # no chunk saw a key: O = 0, L = -inf
    total = tl.zeros([BLOCK], dtype=tl.float32)
    acc = tl.zeros([BLOCK, D], dtype=tl.float32)
    for s in range(S):
        part = (s * nbh + bhk).to(tl.int64) * rows_p
        w = tl.math.exp2(tl.load(Lpart + part + p, mask=live, other=float("-inf")) - m_use)  # (BLOCK,)
        Os = tl.load(Opart + (part + p)[:, None] * D + cols[None, :], mask=live[:, None], other=0.0)
        total += w
        acc += w[:, None] * Os
    acc = acc / tl.where(total == 0.0, 1.0, total)[:, None]
    rows = p // GROUP
    h = hk * GROUP + p % GROUP
    head = (b * Hkv * GROUP + h).to(tl.int64)
    tl.store(O + head[:, None] * soh + rows.to(tl.int64)[:, None] * son + cols[None, :], acc.to(O.dtype.element_ty),
             mask=live[:, None] & (cols[None, :] < Dv))  # fmt: skip
    tl.store(L + head * Nq + rows, (m_use + tl.math.log2(total)) * LN2, mask=live)


@triton.jit
def _q_stages_rows(r0, nrows, Nq, Nk, off, left, right, Bc: tl.constexpr):
    """_q_stages for the query rows [r0, r0 + nrows) (a block of packed GQA rows holds a run of query rows whose
    count is not its tile size)."""
    r1 = tl.minimum(r0 + nrows, Nq) - 1  # the last real row
    lo = tl.maximum(r0 + off - left, 0) // Bc * Bc
    hi = tl.maximum(tl.minimum(r1 + off + right + 1, Nk), lo)
    a = tl.cdiv(tl.maximum(r1 + off - left, 0), Bc) * Bc  # the first tile every row sees whole (left edge)
    c = tl.maximum(tl.minimum(r0 + off + right + 1, Nk), 0) // Bc * Bc  # tiles ending before the right edge
    a = tl.minimum(tl.maximum(a, lo), hi)
    c = tl.minimum(tl.maximum(c, a), hi)
    return lo, a, c, hi


@triton.jit
def _seqs(cu_q, cu_k, b, h, H, N, Nk, LN, VARLEN: tl.constexpr):
    """Sequence b's first row and length in Q and in K (all N, Nk rows unless VARLEN), and where its L starts."""
    if VARLEN:
        q0 = tl.load(cu_q + b)
        Nq = tl.load(cu_q + b + 1) - q0
        k0 = tl.load(cu_k + b)
        Nkv = tl.load(cu_k + b + 1) - k0
    else:
        q0 = b * 0
        Nq = N + b * 0
        k0 = b * 0
        Nkv = Nk + b * 0
        if Nk < 0:
            Nkv = N + b * 0
    return q0, Nq, k0, Nkv, _lrow(b, h, H, N, LN, q0, VARLEN)


@triton.jit
def _lrow(b, h, H, N, LN, q0, VARLEN: tl.constexpr):
    """Where q head h of sequence b starts in L (and Delta): (B, H, N), or (H, LN) for packed sequences."""
    if VARLEN:
        return h.to(tl.int64) * LN + q0
    else:
        return (b * H + h).to(tl.int64) * N


@triton.jit
def _visible(r, c, Nk, off, left, right):
    """Whether query row r sees key column c (broadcast shapes): inside Nk and inside the band."""
    d = c - (r + off)
    return (c < Nk) & (d <= right) & (d >= -left)


@triton.jit
def _tanh(x):
    """tanh in fp32 by one exp2, 1 - 2 / (exp2(2 x log2 e) + 1) (an absolute error of ~2e-7), and below |x| = 1/32,
    where that difference cancels to nothing as x -> 0 (a softcap far above the scores), by its series x - x^3/3
    (a relative error below 2e-7)."""
    far = 1.0 - 2.0 / (tl.math.exp2(x * (2.0 * LOG2E)) + 1.0)
    return tl.where(tl.abs(x) < TANH_SERIES, x + x * x * x * TANH_X3, far)


@triton.jit
def _q_stages(r0, Nq, Nk, off, left, right, Br: tl.constexpr, Bc: tl.constexpr):
    """The tiles of keys the block of queries [r0, r0 + Br) visits, in three stages: [lo, a) masked, [a, c) wholly
    inside the band for every real row (no mask), [c, hi) masked; lo and the unmasked tiles start at multiples of
    Bc. Tiles wholly outside the band (above or left of it) are skipped."""
    return _q_stages_rows(r0, Br, Nq, Nk, off, left, right, Bc)


@triton.jit
def _k_stages(c0, Nq, Nk, off, left, right, Br: tl.constexpr, Bc: tl.constexpr):
    """The blocks of queries that the tile of keys [c0, c0 + Bc) meets: [lo, a) masked, [a, c) unmasked (every
    row sees every column: rows past Nq read as zeros and add nothing), [c, hi) masked."""
    c1 = tl.minimum(c0 + Bc, Nk) - 1  # the last real column
    lo = tl.maximum(c0 - off - right, 0) // Br * Br
    hi = tl.maximum(tl.minimum(c1 - off + left + 1, Nq), lo)
    a = tl.cdiv(tl.maximum(c0 + Bc - 1 - off - right, 0), Br) * Br
    c = tl.maximum(c0 - off + left + 1, 0) // Br * Br
    if c0 + Bc > Nk:  # the ragged last tile: its columns >= Nk hold zeros and are masked everywhere
        a = hi
    a = tl.minimum(tl.maximum(a, lo), hi)
    c = tl.minimum(tl.maximum(c, a), hi)
    return lo, a, c, hi


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
    """Grid (Tr, B*H): Delta = rowsum(dO * O) - dL, fp32 (B, H, N). dL is the gradient reaching L, if any.
    Packed sequences run as one (B = 1, N = total rows): the rows are independent."""
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
    dKj, dVj, Kj, Vj, desc_q, desc_do, desc_dq, dQ, L, Delta, sdqn, cols, lo, hi, Nq, Nk, off, left, right,
    Dv, qk_scale, softcap2,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, MASK: tl.constexpr,
    DQ_ATOMIC: tl.constexpr, TMA_REDUCE: tl.constexpr, SOFTCAP: tl.constexpr,
):  # fmt: skip
    """Stream the blocks Qi, dOi of rows [lo, hi) past the keys `cols`, accumulating dKj, dVj (and adding into dQ)."""
    for start in tl.range(lo, hi, Br):
        rows = start + tl.arange(0, Br)
        # step: load_q
        Qi = desc_q.load([start, 0])  # (Br, D); rows >= Nq read as zeros
        dOi = desc_do.load([start, 0])  # (Br, D)
        Li = tl.load(L + rows, mask=rows < Nq, other=0.0) * LOG2E  # (Br,), in units of log2
        Di = tl.load(Delta + rows, mask=rows < Nq, other=0.0)
        # end step

        # step: probs
        SijT = tl.dot(Kj, Qi.T)  # (Bc, Br): the tile transposed, so that Kj's rows stay rows
        if SOFTCAP:
            TijT = _tanh(SijT * qk_scale)  # (Bc, Br): the capped score is softcap2 * T
            PijT = tl.math.exp2(TijT * softcap2 - Li[None, :])
        else:
            PijT = tl.math.exp2(SijT * qk_scale - Li[None, :])
        if MASK == MASK_BAND:
            PijT = tl.where(_visible(rows[None, :], cols[:, None], Nk, off, left, right), PijT, 0.0)
        # end step

        # step: dv
        dVj = tl.dot(PijT.to(dOi.dtype), dOi, dVj)  # dVj += Pij^T dOi
        # end step

        # step: ds
        dPijT = tl.dot(Vj, dOi.T)  # (Bc, Br)
        dSijT = PijT * (dPijT - Di[None, :])  # scale is applied once, at the end
        if SOFTCAP:
            dSijT = dSijT * (1.0 - TijT * TijT)  # through c * tanh(s / c)
        # end step

        # step: dk
        dSijT = dSijT.to(Qi.dtype)
        dKj = tl.dot(dSijT, Qi, dKj)  # dKj += dSij^T Qi
        # end step

        if DQ_ATOMIC:
            # step: dq
            dQi = tl.dot(dSijT.T, Kj)  # (Br, D): this tile's share of dQ[i]
            if TMA_REDUCE:
                desc_dq.atomic_add([start, 0], dQi)  # a bulk reduction into fp32 dQ; rows >= Nq are dropped
            else:
                dcols = tl.arange(0, D)
                tl.atomic_add(dQ + rows[:, None] * sdqn + dcols[None, :], dQi,
                              mask=(rows[:, None] < Nq) & (dcols[None, :] < Dv), sem="relaxed")  # fmt: skip
            # end step
    return dKj, dVj


@triton.jit(do_not_specialize=["H", "N", "Nk", "LEFT", "RIGHT", "LN"])
def fa2_bwd_dkdv(
    Q, K, V, dO, L, Delta, dQ, dK, dV,
    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn,
    sdqb, sdqh, sdqn, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn,
    H, N, Dv, scale, qk_scale, Nk, GROUP: tl.constexpr, LEFT, RIGHT, softcap2, cu_q, cu_k, LN,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr,
    DQ_ATOMIC: tl.constexpr, TMA_REDUCE: tl.constexpr, SOFTCAP: tl.constexpr, VARLEN: tl.constexpr,
    BAND_LEFT: tl.constexpr,
):  # fmt: skip
    """Grid (Tc, B*H/GROUP): block j owns Bc rows of one K/V head. With DQ_ATOMIC, dQ is an fp32 buffer of zeros
    that receives dSij Kj (unscaled) from every tile; otherwise fa2_bwd_dq computes dQ."""
    bhk = tl.program_id(1)
    Hk = H // GROUP
    _dkdv_block(Q, K, V, dO, L, Delta, dQ, dK, dV,
                sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn,
                sdqb, sdqh, sdqn, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn,
                tl.program_id(0), bhk // Hk, bhk % Hk, H, N, Dv, scale, qk_scale, Nk, GROUP, LEFT, RIGHT, softcap2,
                cu_q, cu_k, LN, D, Br, Bc, CAUSAL, DQ_ATOMIC, TMA_REDUCE, SOFTCAP, VARLEN, BAND_LEFT)  # fmt: skip


@triton.jit
def _dkdv_block(
    Q, K, V, dO, L, Delta, dQ, dK, dV,
    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn,
    sdqb, sdqh, sdqn, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn,
    j, b, hk, H, N, Dv, scale, qk_scale, Nk, GROUP: tl.constexpr, LEFT, RIGHT, softcap2, cu_q, cu_k, LN,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr,
    DQ_ATOMIC: tl.constexpr, TMA_REDUCE: tl.constexpr, SOFTCAP: tl.constexpr, VARLEN: tl.constexpr,
    BAND_LEFT: tl.constexpr,
):  # fmt: skip
    """Block j of K/V head hk of sequence b: dKj and dVj, summed over the GROUP q heads that read it (and, with
    DQ_ATOMIC, the reductions into dQ)."""
    q0, Nq, k0, Nkv, _ = _seqs(cu_q, cu_k, b, hk * GROUP, H, N, Nk, LN, VARLEN)
    if j * Bc >= Nkv:  # a tile past its sequence (VARLEN)
        return
    right = RIGHT
    if CAUSAL:
        right = tl.minimum(RIGHT, 0)
    off = Nkv - Nq
    cols = j * Bc + tl.arange(0, Bc)

    # step: load_kv
    desc_k = tl.make_tensor_descriptor(K + b.to(tl.int64) * skb + hk.to(tl.int64) * skh + k0.to(tl.int64) * skn,
                                       shape=[Nkv, Dv], strides=[skn, 1], block_shape=[Bc, D])  # fmt: skip
    desc_v = tl.make_tensor_descriptor(V + b.to(tl.int64) * svb + hk.to(tl.int64) * svh + k0.to(tl.int64) * svn,
                                       shape=[Nkv, Dv], strides=[svn, 1], block_shape=[Bc, D])  # fmt: skip
    Kj = desc_k.load([j * Bc, 0])  # (Bc, D); Kj and Vj stay for the whole loop
    Vj = desc_v.load([j * Bc, 0])
    dKj = tl.zeros([Bc, D], dtype=tl.float32)
    dVj = tl.zeros([Bc, D], dtype=tl.float32)
    # end step

    # the blocks of queries below the band's right edge (masked), wholly inside it, at its left edge (masked)
    lo, a, c, hi = _k_stages(j * Bc, Nq, Nkv, off, LEFT, right, Br, Bc)
    # GROUP is a constexpr and the loop unrolled: a runtime loop around the tile loops spilled dKj, dVj (stack 136-520
    # bytes at D=64 and 128, bench/attention_compile_check.py); unrolled, GROUP = 1 compiles as before GQA
    for g in tl.static_range(GROUP):
        h = hk * GROUP + g
        Lh = L + _lrow(b, h, H, N, LN, q0, VARLEN)
        Dh = Delta + _lrow(b, h, H, N, LN, q0, VARLEN)
        desc_q = tl.make_tensor_descriptor(Q + b.to(tl.int64) * sqb + h.to(tl.int64) * sqh + q0.to(tl.int64) * sqn,
                                           shape=[Nq, Dv], strides=[sqn, 1], block_shape=[Br, D])  # fmt: skip
        desc_do = tl.make_tensor_descriptor(dO + b.to(tl.int64) * sdb + h.to(tl.int64) * sdh + q0.to(tl.int64) * sdn,
                                            shape=[Nq, Dv], strides=[sdn, 1], block_shape=[Br, D])  # fmt: skip
        dQh = dQ + b.to(tl.int64) * sdqb + h.to(tl.int64) * sdqh + q0.to(tl.int64) * sdqn
        desc_dq = desc_q  # a placeholder unless the reductions go through a descriptor of their own
        if DQ_ATOMIC and TMA_REDUCE:
            desc_dq = tl.make_tensor_descriptor(dQh, shape=[Nq, Dv], strides=[sdqn, 1], block_shape=[Br, D])
        dKj, dVj = _dkdv_tiles(dKj, dVj, Kj, Vj, desc_q, desc_do, desc_dq, dQh, Lh, Dh, sdqn, cols, lo, a, Nq, Nkv,
                               off, LEFT, right, Dv, qk_scale, softcap2,
                               D, Br, Bc, MASK_BAND, DQ_ATOMIC, TMA_REDUCE, SOFTCAP)  # fmt: skip
        dKj, dVj = _dkdv_tiles(dKj, dVj, Kj, Vj, desc_q, desc_do, desc_dq, dQh, Lh, Dh, sdqn, cols, a, c, Nq, Nkv,
                               off, LEFT, right, Dv, qk_scale, softcap2,
                               D, Br, Bc, NO_MASK, DQ_ATOMIC, TMA_REDUCE, SOFTCAP)  # fmt: skip
        if BAND_LEFT:
            dKj, dVj = _dkdv_tiles(dKj, dVj, Kj, Vj, desc_q, desc_do, desc_dq, dQh, Lh, Dh, sdqn, cols, c, hi, Nq,
                                   Nkv, off, LEFT, right, Dv, qk_scale, softcap2,
                                   D, Br, Bc, MASK_BAND, DQ_ATOMIC, TMA_REDUCE, SOFTCAP)  # fmt: skip

    # step: write_back
    desc_dk = tl.make_tensor_descriptor(dK + b.to(tl.int64) * sdkb + hk.to(tl.int64) * sdkh + k0.to(tl.int64) * sdkn,
                                        shape=[Nkv, Dv], strides=[sdkn, 1], block_shape=[Bc, D])  # fmt: skip
    desc_dv = tl.make_tensor_descriptor(dV + b.to(tl.int64) * sdvb + hk.to(tl.int64) * sdvh + k0.to(tl.int64) * sdvn,
                                        shape=[Nkv, Dv], strides=[sdvn, 1], block_shape=[Bc, D])  # fmt: skip
    desc_dk.store([j * Bc, 0], (dKj * scale).to(desc_dk.dtype))
    desc_dv.store([j * Bc, 0], dVj.to(desc_dv.dtype))
    # end step


@triton.jit
def _dq_tiles(
    dQi, Qi, dOi, Li, Di, desc_k, desc_v, rows, lo, hi, Nk, off, left, right, qk_scale, softcap2,
    Bc: tl.constexpr, MASK: tl.constexpr, SOFTCAP: tl.constexpr,
):  # fmt: skip
    for start in tl.range(lo, hi, Bc):
        # step: load_kv
        Kj = desc_k.load([start, 0])  # (Bc, D)
        Vj = desc_v.load([start, 0])
        # end step

        # step: probs
        Sij = tl.dot(Qi, Kj.T)  # (Br, Bc)
        if SOFTCAP:
            Tij = _tanh(Sij * qk_scale)
            Pij = tl.math.exp2(Tij * softcap2 - Li[:, None])
        else:
            Pij = tl.math.exp2(Sij * qk_scale - Li[:, None])
        if MASK == MASK_BAND:
            cols = start + tl.arange(0, Bc)
            Pij = tl.where(_visible(rows[:, None], cols[None, :], Nk, off, left, right), Pij, 0.0)
        # end step

        # step: ds
        dPij = tl.dot(dOi, Vj.T)  # (Br, Bc)
        dSij = Pij * (dPij - Di[:, None])
        if SOFTCAP:
            dSij = dSij * (1.0 - Tij * Tij)
        # end step

        # step: dq
        dQi = tl.dot(dSij.to(Kj.dtype), Kj, dQi)  # dQi += dSij Kj
        # end step
    return dQi


@triton.jit(do_not_specialize=["H", "N", "Nk", "LEFT", "RIGHT", "LN"])
def fa2_bwd_dq(
    Q, K, V, dO, L, Delta, dQ,
    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn, sdqb, sdqh, sdqn,
    H, N, Dv, scale, qk_scale, Nk, GROUP, LEFT, RIGHT, softcap2, cu_q, cu_k, LN,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr, SOFTCAP: tl.constexpr,
    VARLEN: tl.constexpr, BAND_LEFT: tl.constexpr,
):  # fmt: skip
    """Grid (Tr, B*H): block i owns Br rows of Q and writes dQ[i] = scale * sum_j dSij Kj once."""
    _dq_block(Q, K, V, dO, L, Delta, dQ,
              sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn, sdqb, sdqh, sdqn,
              tl.program_id(0), tl.num_programs(0), tl.program_id(1), H, N, Dv, scale, qk_scale, Nk, GROUP, LEFT,
              RIGHT, softcap2, cu_q, cu_k, LN, D, Br, Bc, CAUSAL, SOFTCAP, VARLEN, BAND_LEFT)  # fmt: skip


@triton.jit(do_not_specialize=["H", "N", "Nk", "LEFT", "RIGHT", "LN"])
def fa2_bwd_fused(
    Q, K, V, dO, L, Delta, dQ, dK, dV,
    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn,
    sdqb, sdqh, sdqn, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn,
    H, N, Dv, scale, qk_scale, Nk, GROUP: tl.constexpr, LEFT, RIGHT, softcap2, cu_q, cu_k, LN,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, BrQ: tl.constexpr, BcQ: tl.constexpr,
    CAUSAL: tl.constexpr, SOFTCAP: tl.constexpr, VARLEN: tl.constexpr, BAND_LEFT: tl.constexpr,
):  # fmt: skip
    """Grid (Tc + Tr, B*H): fa2_bwd_dkdv's blocks (Bc rows of K, V; blocks of Br queries), then fa2_bwd_dq's
    (BrQ rows of Q; tiles of BcQ keys), in one launch, so that each fills the other's last wave. With GQA the
    dkdv half runs in the programs of each group's first q head (the others' end at once)."""
    Tc = tl.cdiv(Nk, Bc)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    if tl.program_id(0) < Tc:
        if h % GROUP == 0:
            _dkdv_block(Q, K, V, dO, L, Delta, dQ, dK, dV,
                        sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn,
                        sdqb, sdqh, sdqn, sdkb, sdkh, sdkn, sdvb, sdvh, sdvn,
                        tl.program_id(0), b, h // GROUP, H, N, Dv, scale, qk_scale, Nk, GROUP, LEFT, RIGHT, softcap2,
                        cu_q, cu_k, LN, D, Br, Bc, CAUSAL, False, False, SOFTCAP, VARLEN, BAND_LEFT)  # fmt: skip
    else:
        _dq_block(Q, K, V, dO, L, Delta, dQ,
                  sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn, sdqb, sdqh, sdqn,
                  tl.program_id(0) - Tc, tl.num_programs(0) - Tc, bh, H, N, Dv, scale, qk_scale, Nk, GROUP, LEFT,
                  RIGHT, softcap2, cu_q, cu_k, LN, D, BrQ, BcQ, CAUSAL, SOFTCAP, VARLEN, BAND_LEFT)  # fmt: skip


@triton.jit
def _dq_block(
    Q, K, V, dO, L, Delta, dQ,
    sqb, sqh, sqn, skb, skh, skn, svb, svh, svn, sdb, sdh, sdn, sdqb, sdqh, sdqn,
    pid, Tr, bh, H, N, Dv, scale, qk_scale, Nk, GROUP, LEFT, RIGHT, softcap2, cu_q, cu_k, LN,
    D: tl.constexpr, Br: tl.constexpr, Bc: tl.constexpr, CAUSAL: tl.constexpr, SOFTCAP: tl.constexpr,
    VARLEN: tl.constexpr, BAND_LEFT: tl.constexpr,
):  # fmt: skip
    """Block number pid of q head bh: dQ[i] for i = pid (causal: the longest blocks first)."""
    i = Tr - 1 - pid if CAUSAL else pid
    b = bh // H
    h = bh % H
    hk = h // GROUP
    q0, Nq, k0, Nkv, lrow = _seqs(cu_q, cu_k, b, h, H, N, Nk, LN, VARLEN)
    if i * Br >= Nq:
        return
    right = RIGHT
    if CAUSAL:
        right = tl.minimum(RIGHT, 0)
    off = Nkv - Nq
    rows = i * Br + tl.arange(0, Br)

    # step: load_q
    desc_q = tl.make_tensor_descriptor(Q + b.to(tl.int64) * sqb + h.to(tl.int64) * sqh + q0.to(tl.int64) * sqn,
                                       shape=[Nq, Dv], strides=[sqn, 1], block_shape=[Br, D])  # fmt: skip
    desc_do = tl.make_tensor_descriptor(dO + b.to(tl.int64) * sdb + h.to(tl.int64) * sdh + q0.to(tl.int64) * sdn,
                                        shape=[Nq, Dv], strides=[sdn, 1], block_shape=[Br, D])  # fmt: skip
    Qi = desc_q.load([i * Br, 0])
    dOi = desc_do.load([i * Br, 0])
    Li = tl.load(L + lrow + rows, mask=rows < Nq, other=0.0) * LOG2E
    Di = tl.load(Delta + lrow + rows, mask=rows < Nq, other=0.0)
    dQi = tl.zeros([Br, D], dtype=tl.float32)
    # end step

    desc_k = tl.make_tensor_descriptor(K + b.to(tl.int64) * skb + hk.to(tl.int64) * skh + k0.to(tl.int64) * skn,
                                       shape=[Nkv, Dv], strides=[skn, 1], block_shape=[Bc, D])  # fmt: skip
    desc_v = tl.make_tensor_descriptor(V + b.to(tl.int64) * svb + hk.to(tl.int64) * svh + k0.to(tl.int64) * svn,
                                       shape=[Nkv, Dv], strides=[svn, 1], block_shape=[Bc, D])  # fmt: skip
    lo, a, c, hi = _q_stages(i * Br, Nq, Nkv, off, LEFT, right, Br, Bc)
    if BAND_LEFT:
        dQi = _dq_tiles(dQi, Qi, dOi, Li, Di, desc_k, desc_v, rows, lo, a, Nkv, off, LEFT, right, qk_scale,
                        softcap2, Bc, MASK_BAND, SOFTCAP)  # fmt: skip
    dQi = _dq_tiles(dQi, Qi, dOi, Li, Di, desc_k, desc_v, rows, a, c, Nkv, off, LEFT, right, qk_scale, softcap2,
                    Bc, NO_MASK, SOFTCAP)  # fmt: skip
    dQi = _dq_tiles(dQi, Qi, dOi, Li, Di, desc_k, desc_v, rows, c, hi, Nkv, off, LEFT, right, qk_scale, softcap2,
                    Bc, MASK_BAND, SOFTCAP)  # fmt: skip

    # step: write_back
    desc_dq = tl.make_tensor_descriptor(dQ + b.to(tl.int64) * sdqb + h.to(tl.int64) * sdqh + q0.to(tl.int64) * sdqn,
                                        shape=[Nq, Dv], strides=[sdqn, 1], block_shape=[Br, D])  # fmt: skip
    desc_dq.store([i * Br, 0], (dQi * scale).to(desc_dq.dtype))
    # end step
