"""Bytes a process sends and receives through torch.distributed's point-to-point batches, counted by wrapping
`torch.distributed.batch_isend_irecv` (which flashviz.ops.ring calls for every transfer): what ring_demo prints and
what the tests hold the closed-form model (flashviz.hardware.ring_model) to."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch.distributed as dist


@dataclass
class Batch:
    sent: int  # bytes this process sent in one batch_isend_irecv call
    received: int  # bytes it posted receives for


@dataclass
class SendCounter:
    batches: list[Batch] = field(default_factory=list)

    @property
    def sent(self) -> int:
        return sum(b.sent for b in self.batches)

    @property
    def received(self) -> int:
        return sum(b.received for b in self.batches)

    def reset(self) -> None:
        self.batches.clear()


@contextmanager
def counting_sends() -> Iterator[SendCounter]:
    """Within the block, every batch_isend_irecv call of this process is recorded (its ops' tensor bytes)."""
    counter = SendCounter()
    real = dist.batch_isend_irecv

    def counted(ops):
        size = {dist.isend: 0, dist.irecv: 0}
        for op in ops:
            size[op.op] += op.tensor.numel() * op.tensor.element_size()
        counter.batches.append(Batch(size[dist.isend], size[dist.irecv]))
        return real(ops)

    dist.batch_isend_irecv = counted
    try:
        yield counter
    finally:
        dist.batch_isend_irecv = real
