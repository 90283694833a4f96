"""Ring attention has no single-kernel launch for `flashviz gpu`: on GPUs it is flashviz.ring_attention itself, P
processes over torch.distributed (NCCL), each running flashviz.attention's kernels on the blocks of its steps
(`torchrun --nproc-per-node P -m flashviz.ring_demo`). The registry's GPU runner lists it as having none."""

from __future__ import annotations

SPEC = None
