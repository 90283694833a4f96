"""flashviz: watch the FlashAttention-2 kernel run tile by tile, with real numbers."""

__version__ = "0.1.0"


def attention(q, k, v, causal=False, scale=None, return_lse=False, window=(-1, -1), softcap=0.0, backend="auto"):
    """FlashAttention, forward and backward: softmax(scale * q k^T) v for q (B, Hq, Nq, D) and k, v (B, Hkv, Nk, D)
    (grouped-query attention when Hkv < Hq; causal aligned to the bottom-right when Nq != Nk), with a sliding
    window (left, right) and soft-capping; backend "auto" (FlashAttention-3 in Gluon on Hopper where faster and
    able, else FlashAttention-2 in Triton), "fa3" or "fa2".

    Needs torch and Triton (pip install 'flashviz[triton]'); see flashviz.ops.attention.attention for the
    arguments. Imported on first call, so that `import flashviz` needs neither.
    """
    try:
        from flashviz.ops.attention import attention as _attention
    except ImportError as e:
        raise ImportError(f"flashviz.attention needs torch and Triton: pip install 'flashviz[triton]' ({e})") from None
    return _attention(q, k, v, causal=causal, scale=scale, return_lse=return_lse, window=window, softcap=softcap,
                      backend=backend)  # fmt: skip


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=False, scale=None,
                     return_lse=False, window=(-1, -1), softcap=0.0, backend="auto"):  # fmt: skip
    """`attention` over packed sequences: q (total_q, Hq, D), k and v (total_k, Hkv, D), int32 cumulative lengths
    cu_seqlens_q, cu_seqlens_k (B + 1,); no attention across a sequence's boundary. See
    flashviz.ops.attention.attention_varlen. Needs torch and Triton (pip install 'flashviz[triton]')."""
    try:
        from flashviz.ops.attention import attention_varlen as _attention_varlen
    except ImportError as e:
        raise ImportError(f"flashviz.attention needs torch and Triton: pip install 'flashviz[triton]' ({e})") from None
    return _attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=causal,
                             scale=scale, return_lse=return_lse, window=window, softcap=softcap,
                             backend=backend)  # fmt: skip


def tune(lengths, d, heads=16, kv_heads=None, batch=1, causal=True, dtype="bfloat16", window=(-1, -1), softcap=0.0,
         backward=True):  # fmt: skip
    """Tune flashviz.attention for a model's shapes before a job runs (on a CUDA GPU): one forward and backward at
    each length's bucket (the next power of two), so that the job's first steps launch at once; the choices are kept
    on disk for this GPU, Triton and kernels (flashviz.runtime.tuning). See flashviz.ops.attention.tune."""
    from flashviz.ops.attention import tune as _tune

    return _tune(lengths, d, heads=heads, kv_heads=kv_heads, batch=batch, causal=causal, dtype=dtype, window=window,
                 softcap=softcap, backward=backward)  # fmt: skip


def ring_attention(q, k, v, group=None, causal=False, scale=None, layout="zigzag", return_lse=False):
    """Attention over a sequence split across the ranks of a torch.distributed group, K/V shards passed around the
    ring: each rank passes its shard (B, H, N/P, D) as `ring_shard` cuts it and gets its shard of O (and L). See
    flashviz.ops.ring.ring_attention for the arguments. Needs torch and Triton (pip install 'flashviz[triton]')."""
    from flashviz.ops.ring import ring_attention as _ring_attention

    return _ring_attention(q, k, v, group=group, causal=causal, scale=scale, layout=layout, return_lse=return_lse)


def ring_shard(x, rank, world, layout="zigzag", dim=2):
    """Rank `rank`'s shard of the whole tensor `x` (sequence along `dim`) for ring_attention: see flashviz.ops.ring."""
    from flashviz.ops.ring import ring_shard as _ring_shard

    return _ring_shard(x, rank, world, layout=layout, dim=dim)


def ring_unshard(shards, layout="zigzag", dim=2):
    """The whole tensor from every rank's shard, in rank order (the inverse of ring_shard): see flashviz.ops.ring."""
    from flashviz.ops.ring import ring_unshard as _ring_unshard

    return _ring_unshard(shards, layout=layout, dim=dim)


def trace(*args, **kwargs):
    """Run the engine on one launch and return its Trace: see flashviz.api.trace for the arguments
    (algo, n, d, br, bc, causal, seed, scale, inputs, block; or kernel=, your own Triton kernel). Imported on first
    call: `import flashviz` stays light."""
    from .api import trace as _trace

    return _trace(*args, **kwargs)


def show(*args, **kwargs):
    """The viewer as a notebook widget (anywidget): see flashviz.api.show. pip install 'flashviz[notebook]'."""
    from .api import show as _show

    return _show(*args, **kwargs)
