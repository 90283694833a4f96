"""Standard attention on a GPU: three launches (scores, softmax, P V), each one block per block of Q and head."""

from __future__ import annotations

from flashviz.algos.launch import Kernel, KernelSpec, nd, tr_grid

from .record import KERNEL

SPEC: KernelSpec = KernelSpec(
    "standard",
    KERNEL,
    {"Q": nd, "K": nd, "V": nd, "S": lambda c: (c.n, c.n), "P": lambda c: (c.n, c.n), "O": nd},
    (
        Kernel(
            "standard_scores",
            lambda c: (c.br, c.bc, c.d),
            ("Q", "K", "S"),
            lambda c: (("int", c.n), ("float", c.softmax_scale), ("int", int(c.causal))),
            tr_grid,
        ),
        Kernel(
            "standard_softmax",
            lambda c: (c.br, c.bc),
            ("S", "P"),
            lambda c: (("int", c.n), ("int", int(c.causal))),
            tr_grid,
            smem_args=lambda c: (c.n,),  # one whole row of S
        ),
        Kernel(
            "standard_pv",
            lambda c: (c.br, c.bc, c.d),
            ("P", "V", "O"),
            lambda c: (("int", c.n), ("int", int(c.causal))),
            tr_grid,
        ),
    ),
)
