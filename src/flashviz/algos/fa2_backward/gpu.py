"""fa2-backward on a GPU: the forward (for O and L), the preprocessing kernel, then the main kernel, one block
per tile of K/V and head. The model counts the last two: the forward's traffic is fa2's."""

from __future__ import annotations

from flashviz.algos.launch import Kernel, KernelSpec, nd, rows, tr_grid

from ..fa2 import gpu as forward
from ..fa2.record import KERNEL as FORWARD
from .record import KERNEL

SPEC: KernelSpec = KernelSpec(
    "fa2-backward",
    KERNEL,
    {
        **{name: nd for name in ("Q", "K", "V", "dO", "O", "dQ", "dK", "dV")},
        "L": rows,
        "Delta": rows,  # rowsum(dO * O), the FA2 paper's D (D is the head dimension here)
    },
    (
        forward.kernel(file_of=FORWARD),  # O and L from the forward kernel itself, as the engine takes them from its
        Kernel(
            "fa2_bwd_preprocess",
            lambda c: (c.br, c.d),
            ("O", "dO", "Delta", "dQ"),
            lambda c: (("int", c.n),),
            tr_grid,
            min_threads=lambda c: c.br,
        ),
        Kernel(
            "fa2_bwd",
            lambda c: (c.br, c.bc, c.d),
            ("Q", "K", "V", "dO", "L", "Delta", "dQ", "dK", "dV"),
            lambda c: (("int", c.n), ("float", c.softmax_scale), ("int", int(c.causal))),
            lambda c, heads: (c.tc, heads, 1),
        ),
    ),
    counted=("fa2_bwd_preprocess", "fa2_bwd"),  # the forward's traffic is fa2's model, not this one's
)
