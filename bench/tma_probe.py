"""One launch of flashviz.attention's forward kernel (bf16, fixed tiles 128x64, 4 warps, 3 stages) for ncu."""

import torch

from flashviz.algos.fa2_triton.launch_tiles import Tiles
from flashviz.algos.fa2_triton.launcher import launcher

B, H, N, D = 1, 8, 4096, 64
torch.manual_seed(0)
q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
o, lse = launcher().forward(q, k, v, False, D**-0.5, tiles=Tiles(128, 64, 4, 3))
torch.cuda.synchronize()
print("launched; max |o| =", float(o.float().abs().max()), "finite:", bool(torch.isfinite(o.float()).all()))
