"""flashviz.attention's FlashAttention-2 backend beyond its operators: the ladder's fp32 rungs (`_forward_fp32`), the
kernels of `algos/fa2_triton/kernel.py` on float32 inputs through that folder's launcher (`launcher.py`), which also
runs every bf16/fp16 call of flashviz.attention (flashviz.ops.library). Needs torch and Triton (`flashviz[triton]`).
"""

from __future__ import annotations

import math

import torch

from flashviz.algos.fa2_triton.launch_tiles import Tiles
from flashviz.algos.fa2_triton.launcher import launcher
from flashviz.ops.checks import SUPPORTED_D, _cut
from flashviz.runtime.tma import tma_ready

FP32_PRECISIONS = ("ieee", "tf32")


def _forward_fp32(q, k, v, tiles: Tiles | None, precision: str, causal: bool = False, scale: float | None = None):
    """The ladder's private fp32 rungs (bench/ladder_bench.py), not part of `attention`'s API: fa2_fwd on float32
    q, k, v (B, H, N, D) with fixed tiles (on a GPU), tl.dot at `precision` -- "ieee" (CUDA cores, fp32 products)
    or "tf32" (tensor cores, operands cut to tf32). Returns (O float32, L). Forward only, no autograd."""
    if precision not in FP32_PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(FP32_PRECISIONS)}; got {_cut(repr(precision))}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
            raise ValueError(f"{name} must be a float32 torch.Tensor; got {_cut(getattr(t, 'dtype', type(t)))}")
    if q.dim() != 4 or not (q.shape == k.shape == v.shape) or q.shape[-1] not in SUPPORTED_D:
        raise ValueError(f"q, k, v must share one shape (B, H, N, D), D in {SUPPORTED_D}; got {_cut(tuple(q.shape))}")
    run = launcher()
    if tiles is None and not run.interpret:
        raise ValueError("tiles must be given on a GPU: the autotuner's candidates are bf16 tile sets")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    q, k, v = (tma_ready(t) for t in (q, k, v))
    return run.forward(q, k, v, causal, scale, tiles=tiles, precision=precision)
