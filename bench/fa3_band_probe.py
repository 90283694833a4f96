"""Probe fa3's forward with Nq != Nk against fp32 torch attention at growing Nk, persistent and not, with no options
(None: what flashviz.attention passes for a cache with no window and no softcap) and with the options' defaults
(the path tests/test_fa3_options.py checks). The features run of 2026-12-05 saw fa3's O at Nq=2k Nk=16k and at
decode shapes differ from fa2's by 3.x at a constant 0.11 ms: option_flags compiled no band for opts=None (fixed
since; this probe confirmed it on a GPU before fa3's bound of 4096 keys for Nq != Nk was lifted).
Prints one line per case: shape, config, max |O_fa3 - O_torch|, fa3's time."""

import sys
from dataclasses import replace

import torch

sys.path.insert(0, "src")
from flashviz.algos.fa2_triton.launcher import Options
from flashviz.algos.fa3 import launcher as fa3

torch.manual_seed(0)
for nq, nk, hq, hkv, causal in [
    (300, 1000, 8, 2, True),
    (1, 8192, 8, 2, True),
    (1, 4096, 8, 2, True),
    (1, 4224, 8, 2, True),
    (128, 8192, 8, 2, True),
    (128, 8192, 8, 2, False),
    (2048, 16384, 32, 8, True),
    (1000, 5000, 8, 2, True),
    (16, 32768, 32, 8, True),
    (1, 131072, 32, 8, True),
    (128, 131072, 32, 8, True),
]:
    q = torch.randn(1, hq, nq, 128, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(1, hkv, nk, 128, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    kk, vv = (t.float().repeat_interleave(hq // hkv, dim=1) for t in (k, v))
    s = q.float() @ kk.transpose(-1, -2) * 128**-0.5
    if causal:  # bottom-right: query r sees keys <= r + nk - nq
        r = torch.arange(nq, device="cuda")[:, None] + (nk - nq)
        s = s.masked_fill(torch.arange(nk, device="cuda")[None, :] > r, float("-inf"))
    ref = torch.softmax(s, -1) @ vv
    del s, kk, vv
    for opts, persistent in ((None, True), (None, False), (Options(-1, -1, 0.0), True),
                             (Options(-1, -1, 0.0), False)):  # fmt: skip
        cfg = replace(fa3.forward_config(128, nk, causal), persistent=persistent)
        o, _ = fa3.forward(q, k, v, causal, 128**-0.5, config=cfg, opts=opts)
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        ev[0].record()
        fa3.forward(q, k, v, causal, 128**-0.5, config=cfg, opts=opts)
        ev[1].record()
        torch.cuda.synchronize()
        print(
            f"nq={nq:5d} nk={nk:6d} H={hq}x{hkv} causal={causal:d} persistent={persistent:d} "
            f"opts={'none' if opts is None else 'defaults'}: "
            f"max|diff| {(o.float() - ref.float()).abs().max().item():.3g}, {ev[0].elapsed_time(ev[1]):.3f} ms",
            flush=True,
        )
