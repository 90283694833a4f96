"""flashviz.attention's kernels as torch operators: `flashviz::attention_forward` and `flashviz::attention_backward`
(torch.library.custom_op), each with a fake implementation (the outputs' shapes and dtypes from the inputs'), and
the forward's autograd registered, so that torch.compile traces a model calling flashviz.attention or
attention_varlen with no graph break (fullgraph=True), and CUDA graphs capture the calls.

An operator takes plain values only: the tensors, the packed sequences' cumulative lengths (or None) and their
maxima, and the options as numbers (the window's two sides, -1 unbounded; softcap 0 for none) and the backend's
name. Which kernels run is decided when the operator runs (`choose`), by flashviz.ops.backends.choose: "fa3"
(the forward of flashviz.algos.fa3.launcher; its backward flashviz.ops.fa3.backward: FlashAttention-2's Triton
kernels, which measured faster, or, for plain attention, fa3's own where fa3.BACKWARD says so) or "fa2"
(flashviz.algos.fa2_triton.launcher). The public functions
check their arguments before they call an operator; under torch.compile the fake implementations check the
tensors (a one-line ValueError at compile time).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from flashviz.algos.fa2_triton import launcher as fa2_launcher
from flashviz.ops import backends, checks
from flashviz.runtime.tma import tma_ready


def options(left: int, right: int, softcap: float, cu_q: Tensor | None, cu_k: Tensor | None, max_q: int,
            max_k: int) -> fa2_launcher.Options:  # fmt: skip
    """The launcher's Options of an operator's plain arguments (PLAIN: plain attention)."""
    if cu_q is None and (left, right, softcap) == (-1, -1, 0.0):
        return fa2_launcher.PLAIN
    return fa2_launcher.Options(left, right, float(softcap), cu_q, cu_k, max_q, max_k)


def choose(backend: str, q: Tensor, k: Tensor, causal: bool, scale: float, left: int, right: int, softcap: float,
           varlen: bool, queries: int) -> str:  # fmt: skip
    """The backend that runs this call: "fa3" or "fa2" (flashviz.ops.backends.choose; ValueError, one line, where
    the one asked for cannot run)."""
    unmeasured = backends.unmeasured(q, k, (left, right), softcap, varlen, causal, queries)
    return backends.choose(backend, q, causal, scale, unmeasured=unmeasured, n=queries)


def run_forward(q: Tensor, k: Tensor, v: Tensor, cu_q: Tensor | None, cu_k: Tensor | None, max_q: int, max_k: int,
                causal: bool, scale: float, left: int, right: int, softcap: float,
                backend: str) -> tuple[Tensor, Tensor]:  # fmt: skip
    """(O, L) by the kernels of `backend` ("fa3" or "fa2", as `choose` named it): what the operator runs, and what
    an inference call runs without it (no autograd: less host time a call)."""
    opts = options(left, right, softcap, cu_q, cu_k, max_q, max_k)
    q, k, v = tma_ready(q), tma_ready(k), tma_ready(v)
    if backend == backends.FA3:
        from flashviz.algos.fa3 import launcher as fa3_launcher

        return fa3_launcher.forward(q, k, v, causal, scale, opts=None if opts is fa2_launcher.PLAIN else opts)
    return fa2_launcher.launcher().forward(q, k, v, causal, scale, opts=opts)


def run_backward(do: Tensor, dlse: Tensor | None, q: Tensor, k: Tensor, v: Tensor, o: Tensor, lse: Tensor,
                 cu_q: Tensor | None, cu_k: Tensor | None, max_q: int, max_k: int, causal: bool, scale: float,
                 left: int, right: int, softcap: float, backend: str) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """dQ, dK, dV of a forward `backend` ran."""
    opts = options(left, right, softcap, cu_q, cu_k, max_q, max_k)
    q, k, v, do = tma_ready(q), tma_ready(k), tma_ready(v), tma_ready(do)
    dlse = None if dlse is None else dlse.contiguous()
    if backend == backends.FA3:
        from flashviz.ops import fa3

        return fa3.backward(q, k, v, o, lse, do, dlse, causal, scale, opts=None if opts is fa2_launcher.PLAIN else opts)
    return fa2_launcher.launcher().backward(q, k, v, o, lse, do, dlse, causal, scale, opts=opts)


@torch.library.custom_op("flashviz::attention_forward", mutates_args=())
def attention_forward(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Tensor | None, cu_seqlens_k: Tensor | None,
                      max_seqlen_q: int, max_seqlen_k: int, causal: bool, scale: float, left: int, right: int,
                      softcap: float, backend: str) -> tuple[Tensor, Tensor]:  # fmt: skip
    """O (q's shape and dtype) and L (float32: (B, Hq, Nq), or (Hq, total_q) for packed sequences)."""
    queries = max_seqlen_q if cu_seqlens_q is not None else q.shape[2]
    chosen = choose(backend, q, k, causal, scale, left, right, softcap, cu_seqlens_q is not None, queries)
    return run_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, scale, left, right,
                       softcap, chosen)  # fmt: skip


@attention_forward.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, scale, left, right, softcap, backend):
    varlen = cu_seqlens_q is not None
    checks.check_tensors(q, k, v, varlen=varlen)
    checks.check_softcap(q, scale, softcap)
    queries = max_seqlen_q if varlen else q.shape[2]
    choose(backend, q, k, causal, scale, left, right, softcap, varlen, queries)
    lse_shape = (q.shape[1], q.shape[0]) if varlen else tuple(q.shape[:3])
    return q.new_empty(q.shape), q.new_empty(lse_shape, dtype=torch.float32)


@torch.library.custom_op("flashviz::attention_backward", mutates_args=())
def attention_backward(do: Tensor, dlse: Tensor | None, q: Tensor, k: Tensor, v: Tensor, o: Tensor, lse: Tensor,
                       cu_seqlens_q: Tensor | None, cu_seqlens_k: Tensor | None, max_seqlen_q: int,
                       max_seqlen_k: int, causal: bool, scale: float, left: int, right: int, softcap: float,
                       backend: str) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """dQ, dK, dV (the shapes and dtypes of q, k, v) from dO and dL (None: L unused)."""
    queries = max_seqlen_q if cu_seqlens_q is not None else q.shape[2]
    chosen = choose(backend, q, k, causal, scale, left, right, softcap, cu_seqlens_q is not None, queries)
    return run_backward(do, dlse, q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal,
                        scale, left, right, softcap, chosen)  # fmt: skip


@attention_backward.register_fake
def _(do, dlse, q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal, scale, left, right,
      softcap, backend):  # fmt: skip
    return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)


def _setup(ctx, inputs, output) -> None:
    q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, left, right, softcap, backend = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse, cu_q, cu_k)
    ctx.launch = (max_q, max_k, causal, scale, left, right, softcap, backend)


def _backward(ctx, do, dlse):
    q, k, v, o, lse, cu_q, cu_k = ctx.saved_tensors
    max_q, max_k, causal, scale, left, right, softcap, backend = ctx.launch
    do = torch.zeros_like(o) if do is None else do
    dq, dk, dv = attention_backward(do, dlse, q, k, v, o, lse, cu_q, cu_k, max_q, max_k, causal, scale, left, right,
                                    softcap, backend)  # fmt: skip
    return dq, dk, dv, None, None, None, None, None, None, None, None, None, None


attention_forward.register_autograd(_backward, setup_context=_setup)


def call(q: Tensor, k: Tensor, v: Tensor, cu_q: Tensor | None, cu_k: Tensor | None, max_q: int, max_k: int,
         causal: bool, scale: float | None, left: int, right: int, softcap: float, backend: str,
         chosen: str | None = None) -> tuple[Tensor, Tensor]:  # fmt: skip
    """(O, L) of one call of the public functions, their arguments checked: through the operator where torch.compile
    traces it or a gradient may be asked for, else (`chosen` given: the backend the caller chose) straight to the
    kernels, as an inference or decode step wants (no dispatcher, no autograd)."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
    if chosen is None or grad or torch.compiler.is_compiling():
        return attention_forward(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, left, right, float(softcap),
                                 chosen or backend)  # fmt: skip
    return run_forward(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, left, right, float(softcap), chosen)
