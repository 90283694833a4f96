"""The checks of flashviz.attention's arguments (and attention_varlen's, ring_attention's): what the kernels take, or a
ValueError of one line naming the argument and what is accepted. Also `plain` (NumPy scalars as Python values) and
`shown` (a value as a message quotes it). Needs torch.
"""

from __future__ import annotations

import itertools
import math
import os

import torch

from flashviz.algos.fa2_triton.launcher import _LOG2E, launcher
from flashviz.model.echo import ECHO_MAX, cut

SUPPORTED_D = (32, 64, 96, 128, 256)
SUPPORTED_DTYPES = (torch.bfloat16, torch.float16)
WINDOW_MAX = 1 << 28  # window sides above this are refused (the kernels pass an unbounded side as 2**30)


def interpreting() -> bool:
    """TRITON_INTERPRET=1: the kernels run on the CPU, in NumPy. Triton reads it when it is first imported (and
    when a kernel is decorated), so it must be set before that; it is read here again at every call."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "on")


def _cut(value: object, limit: int = ECHO_MAX) -> str:
    return cut(str(value), limit)


def plain(value):
    """NumPy's scalars as the Python values they hold (np.True_ is True, np.float32(0.5) is 0.5), as flashviz.trace
    takes them; anything else as given, for check_inputs to judge."""
    import numpy as np

    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value


def shown(value: object) -> str:
    """A value as a message quotes it: its repr, cut."""
    return _cut(repr(value))


def _shape(t) -> str:
    return _cut(tuple(t.shape))


def check_inputs(q, k, v, causal, scale, window=(-1, -1), softcap=0.0, varlen: bool = False) -> tuple[int, int]:
    """Raise ValueError, one line naming the argument and what is accepted, for anything the kernels can't take.
    Returns the window as two ints (left, right), -1 meaning unbounded."""
    check_tensors(q, k, v, varlen=varlen)
    left, right = check_arguments(causal, scale, window, softcap)
    check_softcap(q, scale, softcap)
    return left, right


def check_tensors(q, k, v, varlen: bool = False) -> None:
    """q, k, v as the kernels take them (shapes, head counts, D, dtype, layout, device): ValueError, one line."""
    layout = "(total, H, D)" if varlen else "(B, H, N, D)"
    dims = 3 if varlen else 4
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor of shape {layout}; got {_cut(type(t).__name__)}")
        if t.dim() != dims:
            raise ValueError(f"{name} must be a {dims}-d tensor {layout}; got {t.dim()}-d shape {_shape(t)}")
    if k.shape != v.shape:
        raise ValueError(f"k and v must have the same shape; got k {_shape(k)}, v {_shape(v)}")
    if varlen:
        (Nq, Hq, D), (Nk, Hkv, Dk) = q.shape, k.shape
        if min(Nq, Nk, Hq, Hkv) < 1:
            raise ValueError(f"total rows and H must be at least 1; got q {_shape(q)}, k {_shape(k)}")
    else:
        (B, Hq, Nq, D), (Bk, Hkv, Nk, Dk) = q.shape, k.shape
        if Bk != B:
            raise ValueError(f"q and k must have one batch size B; got q {_shape(q)}, k {_shape(k)}")
        if min(B, Hq, Nq, Hkv, Nk) < 1:
            raise ValueError(f"B, H and N must be at least 1; got q {_shape(q)}, k {_shape(k)}")
    if Dk != D:
        raise ValueError(f"q, k and v must have one head dimension D; got q {_shape(q)}, k {_shape(k)}")
    if Hq % Hkv:
        raise ValueError(
            f"q's heads must be a multiple of k's and v's (grouped-query attention); got Hq = {Hq}, Hkv = {Hkv}"
        )
    if D not in SUPPORTED_D:
        raise ValueError(f"head dimension D must be one of {', '.join(map(str, SUPPORTED_D))}; got {D}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype not in SUPPORTED_DTYPES:
            raise ValueError(f"{name} must be bfloat16 or float16; got {_cut(t.dtype)}")
        if t.stride(-1) != 1:
            raise ValueError(f"{name} must have a contiguous last dimension (stride 1); got stride {t.stride(-1)}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k and v must have one dtype (bfloat16 or float16); got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k and v must be on one device; got {q.device}, {k.device}, {v.device}")
    if q.device.type not in ("cuda", "cpu"):
        raise ValueError(
            f"q, k and v must be CUDA tensors (CPU tensors under TRITON_INTERPRET=1), holding their values; got "
            f"{_cut(q.device)}"
        )
    if q.device.type != "cuda":
        if not interpreting():
            raise ValueError(
                f"q, k and v must be CUDA tensors (CPU tensors only under TRITON_INTERPRET=1); got {_cut(q.device)}"
            )
        if not launcher().interpret:
            raise ValueError(
                "CPU tensors need Triton's interpreter: set TRITON_INTERPRET=1 before Triton is first imported "
                f"(it was imported without it); got {_cut(q.device)}"
            )


def check_arguments(causal, scale, window, softcap) -> tuple[int, int]:
    """The scalar arguments (causal, scale, window, softcap): ValueError, one line; the window as (left, right)."""
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be True or False; got {_cut(repr(causal))}")
    if scale is not None and (
        isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale)
    ):
        raise ValueError(f"scale must be None (1/sqrt(D)) or a finite number; got {_cut(repr(scale))}")
    if (
        not isinstance(window, (tuple, list))
        or len(window) != 2
        or not all(isinstance(w, int) and not isinstance(w, bool) for w in window)
    ):
        raise ValueError(f"window must be a pair of ints (left, right), -1 for unbounded; got {_cut(repr(window))}")
    if min(window) < -1 or max(window) > WINDOW_MAX:
        raise ValueError(f"window values must be -1 (unbounded) or 0 .. {WINDOW_MAX}; got {_cut(tuple(window))}")
    if isinstance(softcap, bool) or not isinstance(softcap, (int, float)) or not math.isfinite(softcap) or softcap < 0:
        raise ValueError(f"softcap must be a finite number >= 0 (0: no soft-capping); got {_cut(repr(softcap))}")
    return int(window[0]), int(window[1])


def check_softcap(q, scale, softcap) -> None:
    """A softcap the kernels compute right at q's default scale (1/sqrt(D)) or the one given (`softcap_range`)."""
    if softcap > 0:
        _check_softcap_range(float(softcap), 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale))


FLT_MIN, FLT_MAX = 2.0**-126, float.fromhex("0x1.fffffep+127")  # the least normal and the largest finite fp32


def softcap_range(scale: float) -> tuple[float, float]:
    """The caps the kernels compute right at this scale: they multiply the scores by scale / softcap and the tanh by
    softcap * log2(e) in fp32, so scale / softcap must be a finite normal fp32 (or 0, at scale 0) and softcap * log2(e)
    finite."""
    top = FLT_MAX / _LOG2E
    if scale == 0:
        return FLT_MIN, top
    return abs(scale) / FLT_MAX, min(top, abs(scale) / FLT_MIN)


def _check_softcap_range(softcap: float, scale: float) -> None:
    lo, hi = softcap_range(scale)
    if not lo <= softcap <= hi:
        raise ValueError(
            f"softcap must be 0 (no soft-capping) or {lo:.3g} .. {hi:.3g} at scale {scale:.3g} (scale / softcap "
            f"must be a normal fp32; a cap far above the scores caps nothing: pass 0); got {softcap:g}"
        )


def check_varlen(q, k, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k) -> tuple[int, int]:
    """The packed sequences' lengths: int32 cumulative lengths from 0 to the tensors' rows, increasing, one batch,
    and maxima that bound every sequence (checked on the host: one small copy from the GPU). Returns the maxima the
    kernels run with: a maximum past its tensor's total rows bounds nothing more than the total does (the grid is
    sized by it), so it is taken as the total."""
    for name, cu, t in (("cu_seqlens_q", cu_seqlens_q, q), ("cu_seqlens_k", cu_seqlens_k, k)):
        if not isinstance(cu, torch.Tensor) or cu.dtype != torch.int32 or cu.dim() != 1 or cu.numel() < 2:
            got = f"{cu.dtype} {_shape(cu)}" if isinstance(cu, torch.Tensor) else type(cu).__name__
            raise ValueError(f"{name} must be a 1-d int32 tensor of B + 1 >= 2 offsets; got {_cut(got)}")
        if cu.device != t.device:
            raise ValueError(f"{name} must be on q's device {t.device}; got {_cut(cu.device)}")
    if cu_seqlens_q.numel() != cu_seqlens_k.numel():
        raise ValueError(
            f"cu_seqlens_q and cu_seqlens_k must hold one batch (B + 1 offsets each); got {cu_seqlens_q.numel()} "
            f"and {cu_seqlens_k.numel()}"
        )
    for name, cu, t, mx, mname in (
        ("cu_seqlens_q", cu_seqlens_q, q, max_seqlen_q, "max_seqlen_q"),
        ("cu_seqlens_k", cu_seqlens_k, k, max_seqlen_k, "max_seqlen_k"),
    ):
        host = cu.tolist()
        if host[0] != 0:
            raise ValueError(f"{name} must start at 0; got {host[0]}")
        if any(b <= a for a, b in itertools.pairwise(host)):
            raise ValueError(f"{name} must be strictly increasing (every sequence at least 1 row); got {_cut(host)}")
        if host[-1] != t.shape[0]:
            raise ValueError(f"{name} must end at the total rows of its tensor ({t.shape[0]}); got {host[-1]}")
        if isinstance(mx, bool) or not isinstance(mx, int) or mx < 1:
            raise ValueError(f"{mname} must be an int >= 1; got {_cut(repr(mx))}")
        longest = max(b - a for a, b in itertools.pairwise(host))
        if mx < longest:
            raise ValueError(f"{mname} must be at least the longest sequence ({longest}); got {mx}")
    return min(max_seqlen_q, q.shape[0]), min(max_seqlen_k, k.shape[0])
