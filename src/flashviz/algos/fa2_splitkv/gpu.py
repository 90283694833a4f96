"""fa2-splitkv on a GPU: the split kernel `fa2_splitkv<Br, Bc, D>` on grid (Tr, S, B*H), then the combine
`fa2_splitkv_combine<Br, D>` on grid (Tr, B*H); the partials Opart, Lpart live in HBM between them."""

from __future__ import annotations

from flashviz.algos.launch import Kernel, KernelSpec, nd, rows, tr_grid

from .record import KERNEL, splits

SPEC: KernelSpec = KernelSpec(
    "fa2-splitkv",
    KERNEL,
    {
        "Q": nd,
        "K": nd,
        "V": nd,
        "Opart": lambda c: (splits(c.n, c.bc), c.n, c.d),
        "Lpart": lambda c: (splits(c.n, c.bc), c.n),
        "O": nd,
        "L": rows,
    },
    (
        Kernel(
            "fa2_splitkv",
            lambda c: (c.br, c.bc, c.d),
            ("Q", "K", "V", "Opart", "Lpart"),
            lambda c: (("int", c.n), ("float", c.softmax_scale)),
            lambda c, heads: (c.tr, splits(c.n, c.bc), heads),
            min_threads=lambda c: c.br,  # one thread per row of Qi for the softmax and P @ V
        ),
        Kernel(
            "fa2_splitkv_combine",
            lambda c: (c.br, c.d),
            ("Opart", "Lpart", "O", "L"),
            lambda c: (("int", c.n), ("int", splits(c.n, c.bc))),
            tr_grid,
            min_threads=lambda c: c.br,
        ),
    ),
    reuse="mostly K and V, re-read by every block of Q",
)
