"""The warps of one block: which part of an op's tile each warp computes, as the kernel's loops say, and the two
ways the FlashAttention papers' kernels split a tile between warps, for contrast.

An algorithm's folder may declare, in `warps.py`, `WORK`: per op, how its threads share the op's tile (`Work`). The
teaching kernels use two loops: `for (x = tid; x < R*C; x += blockDim.x)` (`strided`: element x of the row-major
tile goes to thread x mod blockDim.x) and `if (tid < Br)` (`rows`: thread r owns row r, the other threads wait at the
next __syncthreads). Owner maps are warp numbers (-1: no thread), cut to the first `CUT` rows and columns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from flashviz.model.config import Config

CUT = 64  # rows and columns of an owner map the trace carries


@dataclass(frozen=True)
class Work:
    """How the threads of a block share one op's work, as its loop in the kernel file does."""

    buffer: str  # the SRAM buffer whose elements the op computes, e.g. "Sij"
    shape: Callable[[Config], tuple[int, int]]  # its (rows, cols)
    split: Literal["strided", "rows"]
    loop: str  # the loop's line in the kernel file, e.g. "for (int x = tid; x < Br*Bc; x += blockDim.x)"


def owners(work: Work, cfg: Config, threads: int, warp: int = 32) -> np.ndarray:
    """(rows, cols) warp number of each element of the op's tile (-1: no thread computes it)."""
    r, c = work.shape(cfg)
    if work.split == "strided":
        x = np.arange(r * c).reshape(r, c)  # (R, C) row-major element index
        return (x % threads) // warp
    rows = np.arange(r)[:, None] // warp  # (R, 1) thread r owns row r
    return np.where(np.arange(r)[:, None] < threads, rows, -1) + np.zeros((1, c), dtype=int)  # (R, C)


def cut(a: np.ndarray) -> list[list[int]]:
    return a[:CUT, :CUT].tolist()


def crossing(before: np.ndarray, after: np.ndarray) -> int:
    """Elements written by one warp and read by another: what must cross shared memory between two ops."""
    return int((before != after).sum())


def schemes(cfg: Config, warps: int) -> list[dict[str, Any]]:
    """The two splits of a (Br, Bc) tile of scores between the block's warps in the FlashAttention papers' kernels,
    with what each must exchange through shared memory per tile of K/V (float32 elements)."""
    br, bc, d = cfg.br, cfg.bc, cfg.d
    q_rows = -(-br // warps)
    k_cols = -(-bc // warps)
    by_rows = np.arange(br)[:, None] // q_rows + np.zeros((1, bc), dtype=int)  # (Br, Bc)
    by_cols = np.zeros((br, 1), dtype=int) + np.arange(bc)[None, :] // k_cols  # (Br, Bc)
    used_k = len(np.unique(by_cols))
    return [
        {
            "name": "split-Q",
            "paper": "FlashAttention-2 (section 3.3): each warp owns rows of Qi; all warps read all of Kj, Vj",
            "owners": cut(by_rows),
            "exchanged_elements": 0,
            "exchange": "nothing: a row's max, sum and P·Vj are all in the warp that owns the row; Kj and Vj are "
            "only read from shared memory",
        },
        {
            "name": "split-K",
            "paper": "FlashAttention-1's kernel, as FlashAttention-2 (section 3.3) describes it: each warp owns "
            "columns of Kj (and rows of Vj); all warps read all of Qi",
            "owners": cut(by_cols),
            "exchanged_elements": used_k * br * (d + 2),
            "exchange": f"each of {used_k} warps holds a partial max, sum and Br×D product P·Vj for every row: "
            f"{used_k}·Br·(D + 2) = {used_k * br * (d + 2):,} floats written to shared memory, synchronised, read "
            "back and combined, on every tile",
        },
    ]


def of_launch(cfg: Config, work: dict[str, Work] | None, threads: int, warp: int = 32) -> dict[str, Any] | None:
    """The trace's `hardware.warps`: per op of the declared work, its owner map, and between consecutive ops that
    share a buffer, the elements one warp wrote that another reads; and the papers' two splits."""
    if not work:
        return None
    n_warps = -(-threads // warp)
    ops: dict[str, Any] = {}
    maps = {op: owners(w, cfg, threads, warp) for op, w in work.items()}
    previous: tuple[str, np.ndarray] | None = None
    for op, w in work.items():
        m = maps[op]
        busy = sorted(int(x) for x in np.unique(m) if x >= 0)
        entry: dict[str, Any] = {
            "buffer": w.buffer,
            "shape": list(m.shape),
            "split": w.split,
            "loop": w.loop,
            "owners": cut(m),
            "cut": m.shape[0] > CUT or m.shape[1] > CUT,
            "busy_warps": len(busy),
            "idle_warps": n_warps - len(busy),
            "from": None,
            "crossing_elements": 0,
        }
        if previous is not None and previous[1].shape == m.shape and work[previous[0]].buffer == w.buffer:
            entry["from"] = previous[0]
            entry["crossing_elements"] = crossing(previous[1], m)
        ops[op] = entry
        previous = (op, m)
    return {"warps": n_warps, "threads": threads, "ops": ops, "schemes": schemes(cfg, n_warps)}


def from_tensor_cores(cfg: Config, tc: dict[str, Any], threads: int, warp: int = 32) -> dict[str, Any]:
    """`hardware.warps` of a kernel whose tile products run on the tensor cores: per dot of the trace's `tensor_cores`
    (its `owners`: the rows of the result each warp holds), the owner map of the result, and for a dot that reads
    the previous dot's result (P·V reads Sij), the elements of it held by another warp than the one that reads them."""
    n_warps = -(-threads // warp)
    ops: dict[str, Any] = {}
    previous: tuple[str, dict[str, Any], np.ndarray] | None = None
    for op, dot in tc["ops"].items():
        m, n = dot["m"], dot["n"]
        rows = np.full(m, -1)  # warp that holds each row of the result (the first, where rows are replicated)
        for o in reversed(dot["owners"]):
            for first, end in o["rows"]:
                rows[first:end] = o["warp"]
        owner = rows[:, None] + np.zeros((1, n), dtype=int)  # (m, n)
        busy = sorted({o["warp"] for o in dot["owners"]})
        ins = dot["instruction"]
        entry: dict[str, Any] = {
            "buffer": dot["c"],
            "shape": [m, n],
            "split": "tensor cores",
            "loop": f"{ins['text']}, issued by {ins['issued_by']}",
            "owners": cut(owner),
            "cut": m > CUT or n > CUT,
            "busy_warps": len(busy),
            "idle_warps": n_warps - len(busy),
            "from": None,
            "crossing_elements": 0,
        }
        if previous is not None and dot["a"] == previous[1]["c"]:
            # this dot's A operand is the previous result, read by the warps that hold this result's rows
            entry["from"] = previous[0]
            entry["from_buffer"] = dot["a"]  # the buffer that would cross: the previous result, read as this A
            entry["crossing_elements"] = crossing(previous[2], rows[:, None] + np.zeros_like(previous[2]))
        ops[op] = entry
        previous = (op, dot, owner)
    return {"warps": n_warps, "threads": threads, "ops": ops, "schemes": schemes(cfg, n_warps)}
