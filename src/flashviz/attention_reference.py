"""Attention by plain torch ops, to judge flashviz.attention by: float64 (the truth) and the input dtype.

The tolerance for a fast kernel is the error of plain attention in the same low precision (scores, softmax
and P.V rounded to bf16/fp16 as torch computes them): a kernel within a small factor of that error computes
attention as well as the dtype allows. Used by tests/test_attention.py and bench/attention_bench.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

NAMES = ("O", "L", "dQ", "dK", "dV")
FACTOR = 2.0  # ours may be at most this many times plain low-precision attention's error ...
FLOOR = 1e-5  # ... plus this much (absolute): fp32 rounding where plain attention happens to be exact (N = 1)


def plain_attention(q, k, v, causal: bool, scale: float, do, dtype, dl=None):
    """O, L and the gradients of sum(O * do) (+ sum(L * dl)) by torch ops in `dtype` (float64: the reference)."""
    q, k, v = (t.detach().to(dtype).requires_grad_() for t in (q, k, v))
    s = (q @ k.transpose(-1, -2)) * scale  # (B, H, N, N)
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool, device=q.device).tril(), float("-inf"))
    p = torch.softmax(s, dim=-1)
    o = p @ v
    lse = torch.logsumexp(s.to(torch.float64 if dtype == torch.float64 else torch.float32), dim=-1)
    if dl is None:
        o.backward(do.to(dtype))
    else:
        torch.autograd.backward((o, lse), (do.to(dtype), dl.to(lse.dtype)))
    return {"O": o.detach(), "L": lse.detach(), "dQ": q.grad, "dK": k.grad, "dV": v.grad}


@dataclass
class Verdict:
    errors: dict  # name -> max |ours - reference|
    plain: dict  # name -> max |plain low-precision attention - reference|
    limits: dict  # name -> FACTOR * plain + FLOOR

    @property
    def ok(self) -> bool:
        return all(self.errors[n] <= self.limits[n] for n in self.errors)

    def failures(self) -> list[str]:
        return [
            f"{n}: error {self.errors[n]:.3g} > limit {self.limits[n]:.3g} (plain {self.plain[n]:.3g})"
            for n in self.errors
            if not self.errors[n] <= self.limits[n]  # NaN fails
        ]


def judge(ours: dict, q, k, v, causal: bool, scale: float, do, dl=None, partials: int = 1) -> Verdict:
    """Compare ours ({name: tensor} for any of NAMES) with float64 attention, against plain attention's error.

    Inputs are meant to be of unit scale (torch.randn), so that the absolute FLOOR stays tiny beside bf16 errors.
    `partials`: how many low-precision gradients ours sums (in fp32) into each element of dK and dV -- a ring of P
    ranks sums one per hop and chunk held, each rounded by the kernel like plain attention's single one -- so each
    one past the first adds up to half an ulp (2^-9 relative in bf16, 2^-12 in fp16) of the largest |dK|, |dV|."""
    ref = plain_attention(q, k, v, causal, scale, do, torch.float64, dl)
    half_ulp = 2.0**-9 if q.dtype == torch.bfloat16 else 2.0**-12
    low = plain_attention(q, k, v, causal, scale, do, q.dtype, dl)
    errors, plain, limits = {}, {}, {}
    for name, x in ours.items():
        r = ref[name]
        errors[name] = (x.to(torch.float64) - r).abs().max().item()
        plain[name] = (low[name].to(torch.float64) - r).abs().max().item()
        limits[name] = FACTOR * plain[name] + FLOOR
        if name in ("dK", "dV"):
            limits[name] += (partials - 1) * half_ulp * r.abs().max().item()
    return Verdict(errors, plain, limits)
