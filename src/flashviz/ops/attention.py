"""flashviz.attention and flashviz.attention_varlen: FlashAttention forward and backward on torch tensors.

Each checks its arguments (flashviz.ops.checks: one-line ValueErrors naming the argument), chooses the backend
(flashviz.ops.backends) and runs the kernels through the torch operators of flashviz.ops.library, which
torch.compile traces and whose autograd gives dQ, dK, dV. Under torch.compile the checks of the tensors run in the
operators' fake implementations (at compile time), and packed sequences' cumulative lengths are not read back to the
host (that would stop the graph).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import torch

from flashviz.ops import checks, library
from flashviz.runtime.tuning import bucket


def attention(q, k, v, causal: bool = False, scale: float | None = None, return_lse: bool = False,
              window=(-1, -1), softcap: float = 0.0, backend: str = "auto"):  # fmt: skip
    """Softmax attention softmax(scale * q k^T) v by FlashAttention, forward and backward.

    q: (B, Hq, Nq, D); k, v: (B, Hkv, Nk, D), Hq a multiple of Hkv (grouped-query attention: q head h reads
        K/V head h // (Hq / Hkv); Hkv = 1 is multi-query). bfloat16 or float16 CUDA tensors (CPU tensors under
        TRITON_INTERPRET=1), D in {32, 64, 96, 128, 256}, any N >= 1, unit stride in the last dimension.
    causal: query row r attends to key columns <= r + Nk - Nq (aligned to the bottom-right, as a KV cache is).
    scale: multiplies the scores; None means 1/sqrt(D).
    return_lse: also return L = log(sum_c exp(s_rc)), (B, Hq, Nq) float32, natural log (-inf, and O = 0, for a
        row that sees no key).
    window: (left, right), query row r sees key columns c with -left <= c - (r + Nk - Nq) <= right; -1 means
        unbounded on that side; with causal, right is 0.
    softcap: > 0 replaces each scaled score s by softcap * tanh(s / softcap) (Gemma 2); 0 does not.
    backend: "auto" (FlashAttention-3 in Gluon on an sm_90 GPU where it measured faster for the shape, else
        FlashAttention-2 in Triton), "fa3" or "fa2" to force one (`flashviz.ops.backends`). fa3 (sm_90, D in
        {64, 128}, scale > 0) takes every option here in its forward (the backward of an option, and of
        grouped-query attention, and of Nq != Nk, is fa2's); auto runs fa3 with an option only where it was timed
        faster (D = 128, causal, Nq >= 2048: FA3_OPTIONS_MIN_QUERIES), fa2 elsewhere (decode among it).

    Returns O, (B, Hq, Nq, D) in the input dtype, or (O, L). Differentiable in q, k and v (through O and L), and
    traced by torch.compile (the operators flashviz::attention_forward and flashviz::attention_backward).
    """
    causal, scale, softcap, return_lse = (checks.plain(x) for x in (causal, scale, softcap, return_lse))
    return _attention(q, k, v, causal, scale, return_lse, window, softcap, backend)


def _attention(q, k, v, causal, scale, return_lse, window, softcap, backend):
    left, right = checks.check_arguments(causal, scale, window, softcap)
    _check_return_lse(return_lse)
    chosen = None
    if not torch.compiler.is_compiling():
        checks.check_tensors(q, k, v)
        checks.check_softcap(q, scale, softcap)
        chosen = library.choose(backend, q, k, causal, _scale(q, scale), left, right, softcap, False, q.shape[2])
    o, lse = library.call(q, k, v, None, None, 0, 0, causal, scale, left, right, softcap, backend, chosen)
    return (o, lse) if return_lse else o


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q: int, max_seqlen_k: int, causal: bool = False,
                     scale: float | None = None, return_lse: bool = False, window=(-1, -1), softcap: float = 0.0,
                     backend: str = "auto"):  # fmt: skip
    """`attention` over packed sequences of different lengths, none attending across a boundary.

    q: (total_q, Hq, D); k, v: (total_k, Hkv, D): the batch's sequences one after the other. cu_seqlens_q,
        cu_seqlens_k: int32 (B + 1,) cumulative lengths, from 0 to total, strictly increasing (sequence b is rows
        cu[b] .. cu[b+1]); max_seqlen_q, max_seqlen_k: at least the longest sequence (checked; a value past the total
        rows is taken as the total).
    causal, scale, window, softcap: as in `attention`, per sequence (causal aligned to each one's bottom-right).
    backend: "auto", "fa3" or "fa2", as in `attention` (auto: fa3 where it was timed faster, D = 128, causal,
        max_seqlen_q >= 2048; fa2 elsewhere).

    Returns O, (total_q, Hq, D), or (O, L) with L (Hq, total_q) float32. Differentiable in q, k and v, and traced
    by torch.compile (the cumulative lengths are then not checked on the host).
    """
    causal, scale, softcap = checks.plain(causal), checks.plain(scale), checks.plain(softcap)
    return_lse = checks.plain(return_lse)
    max_seqlen_q, max_seqlen_k = checks.plain(max_seqlen_q), checks.plain(max_seqlen_k)
    left, right = checks.check_arguments(causal, scale, window, softcap)
    _check_return_lse(return_lse)
    chosen = None
    if torch.compiler.is_compiling():
        max_seqlen_q, max_seqlen_k = min(max_seqlen_q, q.shape[0]), min(max_seqlen_k, k.shape[0])
    else:
        checks.check_tensors(q, k, v, varlen=True)
        checks.check_softcap(q, scale, softcap)
        max_seqlen_q, max_seqlen_k = checks.check_varlen(q, k, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)
        chosen = library.choose(backend, q, k, causal, _scale(q, scale), left, right, softcap, True, max_seqlen_q)
    cu_q, cu_k = cu_seqlens_q.contiguous(), cu_seqlens_k.contiguous()
    o, lse = library.call(q, k, v, cu_q, cu_k, max_seqlen_q, max_seqlen_k, causal, scale, left, right, softcap,
                          backend, chosen)  # fmt: skip
    return (o, lse) if return_lse else o


def _scale(q, scale) -> float:
    return 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)


def _check_return_lse(return_lse) -> None:
    if not isinstance(return_lse, bool):
        raise ValueError(f"return_lse must be True or False; got {checks.shown(return_lse)}")


def tune(lengths: Iterable[int], d: int, heads: int = 16, kv_heads: int | None = None, batch: int = 1,
         causal: bool = True, dtype: str = "bfloat16", window: tuple[int, int] = (-1, -1), softcap: float = 0.0,
         backward: bool = True) -> list[dict[str, Any]]:  # fmt: skip
    """Tune flashviz.attention for a model's shapes before a job runs: one forward (and backward) at each length's
    bucket, on fresh random inputs on the current CUDA GPU, so that the job's first steps find the choices made (in
    this process and on disk: flashviz.runtime.tuning). Returns a row per bucket: its length, and the seconds its first
    call took and a second one takes."""
    import time

    import torch

    if not torch.cuda.is_available():
        raise ValueError("flashviz tune needs a CUDA GPU (the interpreter's tiles are fixed: nothing to tune)")
    kv_heads = heads if kv_heads is None else kv_heads
    rows = []
    for n in sorted({bucket(n) for n in lengths}):
        q = torch.randn(batch, heads, n, d, dtype=getattr(torch, dtype), device="cuda", requires_grad=backward)
        k, v = (torch.randn(batch, kv_heads, n, d, dtype=q.dtype, device="cuda", requires_grad=backward) for _ in "kv")
        times = []
        for _ in range(2):
            start = time.perf_counter()
            o = attention(q, k, v, causal=causal, window=window, softcap=softcap)
            if backward:
                o.backward(torch.randn_like(o))
            torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
        rows.append({"n": n, "first_s": times[0], "again_s": times[1]})
    return rows
