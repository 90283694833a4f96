"""A FlashAttention-2 forward in Triton, written as people write one (the conventions of Triton's fused-attention
tutorial: Q, K, V, sm_scale, M, Out, four strides per tensor, Z, H, N_CTX, HEAD_DIM, BLOCK_M, BLOCK_N), with masks
for a ragged N. It has no `# step:` markers: flashviz finds its steps from its loads and dots.

    flashviz trace --kernel examples/my_attn.py:attn_fwd --meta BLOCK_M=16,BLOCK_N=16 --n 40 --d 16
"""

import triton
import triton.language as tl


@triton.jit
def attn_fwd(
    Q, K, V, sm_scale, M, Out,
    stride_qz, stride_qh, stride_qm, stride_qk,
    stride_kz, stride_kh, stride_kn, stride_kk,
    stride_vz, stride_vh, stride_vk, stride_vn,
    stride_oz, stride_oh, stride_om, stride_on,
    Z, H, N_CTX,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr = False,
):  # fmt: skip
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    q_base = Q + off_z.to(tl.int64) * stride_qz + off_h.to(tl.int64) * stride_qh
    k_base = K + off_z.to(tl.int64) * stride_kz + off_h.to(tl.int64) * stride_kh
    v_base = V + off_z.to(tl.int64) * stride_vz + off_h.to(tl.int64) * stride_vh
    o_base = Out + off_z.to(tl.int64) * stride_oz + off_h.to(tl.int64) * stride_oh

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < N_CTX
    # load q: it stays for the whole loop
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk, mask=row_ok[:, None], other=0.0)

    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # exp(x) = exp2(x * log2(e))

    hi = tl.minimum((start_m + 1) * BLOCK_M, N_CTX) if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        col_ok = cols < N_CTX
        k = tl.load(k_base + cols[None, :] * stride_kn + offs_d[:, None] * stride_kk, mask=col_ok[None, :], other=0.0)
        qk = tl.dot(q, k)  # (BLOCK_M, BLOCK_N)
        keep = col_ok[None, :]
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= cols[None, :])
        qk = tl.where(keep, qk * qk_scale, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(v_base + cols[:, None] * stride_vk + offs_d[None, :] * stride_vn, mask=col_ok[:, None], other=0.0)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij

    # epilogue: the only division; M is the log-sum-exp in units of log2, as the tutorial stores it
    acc = acc / l_i[:, None]
    tl.store(M + off_hz * N_CTX + offs_m, m_i + tl.math.log2(l_i), mask=row_ok)
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_on, acc.to(Out.dtype.element_ty),
             mask=row_ok[:, None])  # fmt: skip
