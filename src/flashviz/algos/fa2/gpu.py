"""fa2 on a GPU: one launch of `fa2<Br, Bc, D>`, one block per block of Q and head, and the runs of memory its
loops move (for the 32-byte-sector model of `flashviz.gpu.sectors`)."""

from __future__ import annotations

import numpy as np

from flashviz.algos.launch import Kernel, KernelSpec, nd, rows, tr_grid
from flashviz.model.config import Config
from flashviz.model.kernels import KernelFile

from .record import KERNEL


def kernel(file_of: KernelFile | None = None) -> Kernel:
    """The forward kernel's launch (fa2-backward runs it too, for the O and L it needs: `file_of=` fa2's KernelFile)."""
    return Kernel(
        "fa2",
        lambda c: (c.br, c.bc, c.d),
        ("Q", "K", "V", "O", "L"),
        lambda c: (("int", c.n), ("float", c.softmax_scale), ("int", int(c.causal))),
        tr_grid,
        min_threads=lambda c: c.br,  # one thread per row of Qi for the softmax and P @ V
        file_of=file_of,
    )


def spans(cfg: Config) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per tensor, (first element, element count) of each contiguous run that one head's blocks move.

    Every loop of the kernel walks a tile's elements x = tid, tid + blockDim.x, ... with consecutive
    threads on consecutive elements, so one warp instruction covers 32 consecutive elements of a run,
    counted from the run's first element: the unit the 32-byte-sector model rounds.
    """
    n, d, br, bc = cfg.n, cfg.d, cfg.br, cfg.bc
    rows0 = np.arange(cfg.tr) * br
    q_rows = np.minimum(n, rows0 + br) - rows0  # rows of block i (the last may be short)
    tiles = [cfg.tiles_of_block(i) for i in range(cfg.tr)]
    j = np.concatenate([np.arange(t) for t in tiles])  # the tile of every (block, tile) pair
    kv_rows = np.minimum(n, (j + 1) * bc) - j * bc
    return {
        "Q": (rows0 * d, q_rows * d),
        "K": (j * bc * d, kv_rows * d),
        "V": (j * bc * d, kv_rows * d),
        "O": (rows0 * d, q_rows * d),
        "L": (rows0, q_rows),
    }


SPEC: KernelSpec = KernelSpec(
    "fa2",
    KERNEL,
    {"Q": nd, "K": nd, "V": nd, "O": nd, "L": rows},
    (kernel(),),
    spans=spans,
    reuse="mostly K and V, re-read by every block of Q",
)
