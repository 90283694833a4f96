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


def visible(nq: int, nk: int, causal: bool, window=(-1, -1), device=None):
    """(nq, nk) bool: query row r sees key column c when -left <= c - (r + nk - nq) <= right (-1: unbounded side;
    causal: right = 0), the bottom-right alignment of FlashAttention-2."""
    left, right = window
    if causal:
        right = 0 if right < 0 else min(right, 0)
    d = torch.arange(nk, device=device)[None, :] - (torch.arange(nq, device=device)[:, None] + nk - nq)
    ok = torch.ones(nq, nk, dtype=torch.bool, device=device)
    if right >= 0:
        ok &= d <= right
    if left >= 0:
        ok &= d >= -left
    return ok


def _dense(q, k, v, causal, scale, dtype, window, softcap):
    """O, L of (B, Hq, Nq, D) q against (B, Hkv, Nk, D) k, v in `dtype`; rows that see no key: O = 0, L = -inf."""
    group = q.shape[1] // k.shape[1]
    if group > 1:
        k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    s = (q @ k.transpose(-1, -2)) * scale  # (B, H, Nq, Nk)
    if softcap:  # in at least fp32: fp16 holds neither a cap past 65504 nor s / softcap below 6e-8
        wide = s.to(torch.promote_types(s.dtype, torch.float32))
        s = (softcap * torch.tanh(wide / softcap)).to(s.dtype)
    ok = visible(q.shape[-2], k.shape[-2], causal, window, q.device)
    empty = ~ok.any(-1)  # (Nq,)
    s = s.masked_fill(~ok, float("-inf"))
    s = s.masked_fill(empty[:, None], 0.0)  # no NaN from a row of -inf; masked to 0 below
    p = torch.softmax(s, dim=-1).masked_fill(empty[:, None], 0.0)
    o = p @ v
    lse = torch.logsumexp(s.to(torch.float64 if dtype == torch.float64 else torch.float32), dim=-1)
    return o, lse.masked_fill(empty, float("-inf"))


def plain_attention(q, k, v, causal: bool, scale: float, do, dtype, dl=None, window=(-1, -1), softcap=0.0,
                    cu_q=None, cu_k=None):  # fmt: skip
    """O, L and the gradients of sum(O * do) (+ sum(L * dl)) by torch ops in `dtype` (float64: the reference).

    q (B, Hq, Nq, D), k and v (B, Hkv, Nk, D), Hq a multiple of Hkv; or, with cu_q and cu_k (cumulative lengths),
    packed (total, H, D) tensors with L (Hq, total_q). window, softcap: as flashviz.attention takes them."""
    q, k, v = (t.detach().to(dtype).requires_grad_() for t in (q, k, v))
    if cu_q is None:
        o, lse = _dense(q, k, v, causal, scale, dtype, window, softcap)
    else:
        bq, bk = [int(x) for x in cu_q], [int(x) for x in cu_k]
        outs, lses = [], []
        for b in range(len(bq) - 1):
            qb, kb, vb = (
                t.transpose(0, 1)[None] for t in (q[bq[b] : bq[b + 1]], k[bk[b] : bk[b + 1]], v[bk[b] : bk[b + 1]])
            )
            ob, lb = _dense(qb, kb, vb, causal, scale, dtype, window, softcap)
            outs.append(ob[0].transpose(0, 1))
            lses.append(lb[0])
        o, lse = torch.cat(outs, 0), torch.cat(lses, -1)
    free = torch.isfinite(lse)
    if dl is None:
        o.backward(do.to(dtype))
    else:
        torch.autograd.backward((o, lse), (do.to(dtype), torch.where(free, dl.to(lse.dtype), 0.0)))
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


def _distance(x, r) -> float:
    """max |x - r|, where equal infinities (L of a row that sees no key) are no distance."""
    x = x.to(torch.float64)
    same = (x == r) | (torch.isnan(x) & torch.isnan(r))
    d = torch.where(same, 0.0, (x - r).abs())
    return d.max().item() if d.numel() else 0.0


def judge(ours: dict, q, k, v, causal: bool, scale: float, do, dl=None, partials: int = 1, **options) -> Verdict:
    """Compare ours ({name: tensor} for any of NAMES) with float64 attention, against plain attention's error.
    options: plain_attention's window, softcap, cu_q, cu_k.

    Inputs are meant to be of unit scale (torch.randn), so that the absolute FLOOR stays tiny beside bf16 errors.
    `partials`: how many low-precision gradients ours sums (in fp32) into each element of dK and dV -- a ring of P
    ranks sums one per hop and chunk held, each rounded by the kernel like plain attention's single one -- so each
    one past the first adds up to half an ulp (2^-9 relative in bf16, 2^-12 in fp16) of the largest |dK|, |dV|.
    A tensor of ours stored in bf16 or fp16 is allowed one more such rounding of its largest value: a small launch's
    max error lands on one element, and where plain attention's largest elements happen to round exactly and ours do
    not, that last rounding alone can pass twice plain's error."""
    ref = plain_attention(q, k, v, causal, scale, do, torch.float64, dl, **options)
    low = plain_attention(q, k, v, causal, scale, do, q.dtype, dl, **options)
    half_ulp = 2.0**-9 if q.dtype == torch.bfloat16 else 2.0**-12
    errors, plain, limits = {}, {}, {}
    for name, x in ours.items():
        r = ref[name]
        errors[name] = _distance(x, r)
        plain[name] = _distance(low[name], r)
        limits[name] = FACTOR * plain[name] + FLOOR
        largest = r.abs().max().item() if r.numel() else 0.0
        if x.dtype in (torch.bfloat16, torch.float16):
            limits[name] += half_ulp * largest
        if name in ("dK", "dV"):
            limits[name] += (partials - 1) * half_ulp * largest
    return Verdict(errors, plain, limits)
