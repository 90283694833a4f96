"""flashviz.attention as an attention implementation of Hugging Face transformers.

    import flashviz.integrations.transformers as fv_hf
    fv_hf.register()  # once per process
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="flashviz", dtype=torch.bfloat16)

Each attention layer then runs FlashAttention-2 in Triton (`flashviz.attention`), forward and backward:
- grouped-query attention as it is: k and v keep their own heads (no repeat_kv);
- causal masking from `module.is_causal` (or the layer's `is_causal`), aligned to the bottom-right, which is where a
  KV cache puts the new queries (decode and prefill with a cache: Nq < Nk);
- `sliding_window` W (Mistral, Gemma 2: a query sees the W keys ending at its own position) as window=(W-1, W-1),
  as transformers' FlashAttention integration passes it;
- `softcap` (Gemma 2's attn_logit_softcapping) and `scaling`;
- packed sequences (batch 1 whose position_ids restart at 0, as DataCollatorWithFlattening makes them, or
  FlashAttention's cu_seq_lens_q/k and max_length_q/k keyword arguments) as `flashviz.attention_varlen`, so that no
  token attends across a boundary.
- a padded batch (the 2-d mask (B, Nk) of transformers' FlashAttention mask builder, 1 a token, 0 padding, left or
  right): its tokens packed without the padding (the queries are the last Nq positions, where a cache puts the new
  tokens) and run as `flashviz.attention_varlen`; the padding's outputs are zeros.
Refused, with a one-line ValueError: dropout > 0 (in training), and any other attention mask (a custom 4-d mask, a
static cache's unfilled slots, whose mask is shorter than the keys): the kernels take no arbitrary mask.
Needs `pip install 'flashviz[transformers]'` (transformers) and `flashviz[triton]`.
"""

from __future__ import annotations

from flashviz.model.echo import cut

NAME = "flashviz"
_INSTALL = "pip install 'flashviz[transformers]'"


def _transformers():
    try:
        import transformers  # noqa: F401
        from transformers import AttentionInterface
        from transformers.masking_utils import AttentionMaskInterface
    except ImportError as e:
        why = cut(str(e), 80)
        raise ImportError(f"flashviz.integrations.transformers needs transformers: {_INSTALL} ({why})") from None
    return AttentionInterface, AttentionMaskInterface


def register(name: str = NAME) -> None:
    """Register `attention_forward` as attn_implementation=`name` ("flashviz"), with the mask builder of
    transformers' FlashAttention (None unless some token is padding: then the 2-d padding mask, which
    `attention_forward` packs away)."""
    AttentionInterface, AttentionMaskInterface = _transformers()
    from transformers.masking_utils import flash_attention_mask

    AttentionInterface.register(name, attention_forward)
    AttentionMaskInterface.register(name, flash_attention_mask)
    _skip_flash_import(name)


def _skip_flash_import(name: str) -> None:
    """transformers takes every attn_implementation whose name contains "flash" for a FlashAttention package or Hub
    kernel, and imports it when a model is built (`utils.generic.is_flash_attention_requested`, then
    `modeling_utils.lazy_import_flash_attention`), which fails for "flashviz": skip that import for this name."""
    from transformers import modeling_utils

    load = getattr(modeling_utils, "lazy_import_flash_attention", None)
    if load is None or getattr(load, "flashviz_skips", None) is not None:
        if load is not None:
            load.flashviz_skips.add(name)
        return

    def lazy_import_flash_attention(implementation, *args, **kwargs):
        if implementation in skips:
            return None
        return load(implementation, *args, **kwargs)

    skips = {name}
    lazy_import_flash_attention.flashviz_skips = skips  # type: ignore[attr-defined]
    modeling_utils.lazy_import_flash_attention = lazy_import_flash_attention


def _packed(position_ids, query, key):
    """(cu_q, cu_k, max_q, max_k) when position_ids (1, N) pack several sequences (restarting at 0), else
    None (one sequence, or a cache: Nq != Nk)."""
    import torch

    if position_ids is None or query.shape[0] != 1 or query.shape[2] == 1 or query.shape[2] != key.shape[2]:
        return None
    pos = position_ids.reshape(-1)
    if pos.numel() != query.shape[2]:
        return None
    step = torch.diff(pos)
    if bool((step == 1).all()):
        return None
    if int(pos[0]) != 0 or not bool(((step == 1) | (pos[1:] == 0)).all()):
        raise ValueError(
            "position_ids of a packed batch must count 0, 1, 2, ... within each sequence and restart at 0; "
            f"got {cut(str(pos.tolist()))}"
        )
    starts = torch.nonzero(pos == 0).flatten()
    ends = torch.cat([starts[1:], starts.new_tensor([pos.numel()])])
    cu = torch.cat([starts, starts.new_tensor([pos.numel()])]).to(device=query.device, dtype=torch.int32)
    longest = int((ends - starts).max())
    return cu, cu, longest, longest


def _longest(cu) -> int:
    return int((cu[1:] - cu[:-1]).max())


def _padded(mask, query, key, value, **options):
    """attention over a padded batch: `mask` (B, Nk), nonzero for a token, zero for padding. The tokens are packed
    without the padding, sequence after sequence (a sequence with no query left is left out), run as attention_varlen
    (causal aligned to each sequence's bottom-right) and put back in place; padding's rows are zeros. (B, Nq, Hq, D)"""
    import torch

    from flashviz.ops import attention as flashviz_attention

    batch, hq, nq, d = query.shape
    nk = key.shape[2]
    if mask.dim() != 2 or tuple(mask.shape) != (batch, nk):
        raise ValueError(
            f"attention_mask must be None or a padding mask (B, Nk) = {(batch, nk)} with "
            f"attn_implementation={NAME!r}: the kernels take no custom mask (causal, window and packed sequences are "
            f"options); got a {tuple(mask.shape)} mask"
        )
    keep_k = mask.to(device=query.device) != 0  # (B, Nk)
    keep_q = keep_k[:, nk - nq :]  # (B, Nq): the new tokens are the last Nq positions
    live = keep_q.any(dim=1)  # (B,) sequences with a query
    out = query.new_zeros(batch * nq, hq, d)
    if not bool(live.any()):
        return out.view(batch, nq, hq, d)
    keep_k = keep_k & live[:, None]
    at_q = torch.nonzero(keep_q.flatten()).flatten()  # rows of the (B*Nq) queries that are tokens
    at_k = torch.nonzero(keep_k.flatten()).flatten()
    q = query.transpose(1, 2).reshape(batch * nq, hq, d)[at_q]  # (total_q, Hq, D)
    k, v = (t.transpose(1, 2).reshape(batch * nk, t.shape[1], t.shape[3])[at_k] for t in (key, value))
    lens_q, lens_k = keep_q.sum(1)[live], keep_k.sum(1)[live]
    cu_q, cu_k = (torch.nn.functional.pad(n.cumsum(0), (1, 0)).to(torch.int32) for n in (lens_q, lens_k))
    o = flashviz_attention.attention_varlen(q, k, v, cu_q, cu_k, int(lens_q.max()), int(lens_k.max()), **options)
    return out.index_copy(0, at_q, o).view(batch, nq, hq, d)


def attention_forward(module, query, key, value, attention_mask, dropout: float = 0.0, scaling: float | None = None,
                      sliding_window: int | None = None, softcap: float | None = None, is_causal: bool | None = None,
                      **kwargs):  # fmt: skip
    """transformers' attention function: query (B, Hq, Nq, D), key and value (B, Hkv, Nk, D); returns
    (attn_output (B, Nq, Hq, D), None). See the module's docstring for what is mapped and what is refused."""
    import torch

    from flashviz.ops import attention as flashviz_attention

    if dropout and getattr(module, "training", True):
        raise ValueError(f"dropout must be 0 with attn_implementation={NAME!r} (the kernels have none); got {dropout}")
    if kwargs.get("output_attentions"):
        raise ValueError(f"output_attentions must be False with attn_implementation={NAME!r}: no weights are formed")
    if kwargs.get("s_aux") is not None:
        raise ValueError(f"s_aux (attention sinks) must be None with attn_implementation={NAME!r}")
    causal = bool(is_causal if is_causal is not None else getattr(module, "is_causal", True))
    window = (-1, -1)
    if sliding_window is not None and sliding_window > 0 and sliding_window < key.shape[2]:
        window = (int(sliding_window) - 1, int(sliding_window) - 1)
    softcap = float(softcap) if softcap else 0.0
    scale = None if scaling is None else float(scaling)
    if attention_mask is not None:
        return _padded(attention_mask, query, key, value, causal=causal, scale=scale, window=window,
                       softcap=softcap), None  # fmt: skip
    if kwargs.get("cu_seq_lens_q") is not None and kwargs.get("cu_seq_lens_k") is not None:  # FlashAttention's own
        cu_q, cu_k = (
            kwargs[name].to(device=query.device, dtype=torch.int32) for name in ("cu_seq_lens_q", "cu_seq_lens_k")
        )
        packed = (
            cu_q,
            cu_k,
            int(kwargs.get("max_length_q") or _longest(cu_q)),
            int(kwargs.get("max_length_k") or _longest(cu_k)),
        )
    else:
        packed = _packed(kwargs.get("position_ids"), query, key)
    if packed is not None and query.shape[0] == 1:
        cu_q, cu_k, max_q, max_k = packed
        q, k, v = (t[0].transpose(0, 1) for t in (query, key, value))  # (total, H, D)
        o = flashviz_attention.attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal=causal, scale=scale,
                                              window=window, softcap=softcap)  # fmt: skip
        return o[None], None  # (1, total, Hq, D)
    o = flashviz_attention.attention(query, key, value, causal=causal, scale=scale, window=window, softcap=softcap)
    return o.transpose(1, 2), None  # (B, Nq, Hq, D)
