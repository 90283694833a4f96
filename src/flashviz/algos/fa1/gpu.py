"""fa1 on a GPU: one launch of `fa1<Br, Bc, D>`, one block per head running the whole loop."""

from __future__ import annotations

from flashviz.algos.launch import Kernel, KernelSpec, nd, rows

from .record import KERNEL

SPEC: KernelSpec = KernelSpec(
    "fa1",
    KERNEL,
    {"Q": nd, "K": nd, "V": nd, "O": nd, "l": rows, "m": rows},
    (
        Kernel(
            "fa1",
            lambda c: (c.br, c.bc, c.d),
            ("Q", "K", "V", "O", "l", "m"),
            lambda c: (("int", c.n), ("float", c.softmax_scale), ("int", int(c.causal))),
            lambda c, heads: (heads, 1, 1),  # one block per head
            min_threads=lambda c: c.br,
        ),
    ),
)
