"""The memory model: HBM holding named tensors with per-element counters, SRAM with a byte budget."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from flashviz.engine.steps import Transfer
from flashviz.model.units import FLOAT_BYTES, SMEM_OPTIN_BYTES, SMEM_STATIC_BYTES


class HBM:
    """Global memory: named float32 tensors, each element with a read and a write counter. A vector (L, D) is held
    as an N x 1 matrix, so that every transfer is a rectangle; `shapes` keeps the shape it was put with."""

    def __init__(self) -> None:
        self.tensors: dict[str, np.ndarray] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        self.reads: dict[str, np.ndarray] = {}
        self.writes: dict[str, np.ndarray] = {}

    def put(self, name: str, array: np.ndarray) -> None:
        """Place a tensor in HBM (an input the host copied there, or an output buffer)."""
        array = np.asarray(array, dtype=np.float32)
        self.shapes[name] = array.shape
        if array.ndim == 1:
            array = array[:, None]
        self.tensors[name] = array
        self.reads[name] = np.zeros(array.shape, dtype=np.int32)
        self.writes[name] = np.zeros(array.shape, dtype=np.int32)

    def value(self, name: str) -> np.ndarray:
        """The tensor as it was put: a vector as a vector."""
        return self.tensors[name].reshape(self.shapes[name])

    def read(self, name: str, rows: slice, cols: slice = slice(None)) -> tuple[np.ndarray, Transfer]:
        t = self.tensors[name]
        self.reads[name][rows, cols] += 1
        return t[rows, cols].copy(), self._transfer(name, "read", rows, cols)

    def read_tiles(self, name: str, spans: list[tuple[int, int]], rows: int) -> tuple[np.ndarray, list[Transfer]]:
        """Rows [a, b) of each span, one read each (as `read` counts them), stacked as tiles of `rows` rows with the
        rows past b zero (what a tile of SRAM holds after the kernel's load): (len(spans), rows, cols), and the
        transfers, in order."""
        t = self.tensors[name]
        n_cols = t.shape[1]
        transfers = [Transfer(name, "read", (a, b), (0, n_cols)) for a, b in spans]
        if all(b - a == rows for a, b in spans[:-1]) and all(x[1] == y[0] for x, y in itertools.pairwise(spans)):
            # consecutive tiles of `rows` rows (the last may be short): one count, and the rows themselves (read-only)
            # when no tile is short, else one copy
            a, b = (spans[0][0], spans[-1][1]) if spans else (0, 0)
            self.reads[name][a:b] += 1
            if b - a == rows * len(spans):
                view = t[a:b].reshape(len(spans), rows, n_cols)
                view.flags.writeable = False
                return view, transfers
            out = np.zeros((len(spans), rows, n_cols), dtype=t.dtype)
            out.reshape(-1, n_cols)[: b - a] = t[a:b]
            return out, transfers
        out = np.zeros((len(spans), rows, n_cols), dtype=t.dtype)
        for q, (a, b) in enumerate(spans):
            self.reads[name][a:b] += 1
            out[q, : b - a] = t[a:b]
        return out, transfers

    def write(self, name: str, rows: slice, value: np.ndarray, cols: slice = slice(None)) -> Transfer:
        t = self.tensors[name]
        t[rows, cols] = value.reshape(t[rows, cols].shape)
        self.writes[name][rows, cols] += 1
        return self._transfer(name, "write", rows, cols)

    def _transfer(self, name: str, kind: Literal["read", "write"], rows: slice, cols: slice) -> Transfer:
        n_rows, n_cols = self.tensors[name].shape
        r = rows.indices(n_rows)
        c = cols.indices(n_cols)
        return Transfer(name, kind, (r[0], r[1]), (c[0], c[1]), width=n_cols)

    def counters(self) -> dict[str, dict[str, int]]:
        """Elements read and written per tensor, summed over every element's counters."""
        return {
            name: {"read": int(self.reads[name].sum()), "written": int(self.writes[name].sum())}
            for name in self.tensors
        }


@dataclass
class SRAM:
    """One block's shared memory: named buffers and the bytes they take, against a budget.

    The engine holds every buffer as float32; `itemsize` is what an element takes on the chip (2 for a bf16 tile),
    and a buffer a kernel keeps in registers (`where="registers"`: a Triton kernel's accumulators) is listed but
    takes no shared memory."""

    budget_bytes: int = SMEM_OPTIN_BYTES
    buffers: dict[str, np.ndarray] = field(default_factory=dict)
    itemsize: dict[str, int] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)

    def alloc(
        self, name: str, shape: tuple[int, ...], fill: float = 0.0, itemsize: int = FLOAT_BYTES, where: str = "shared"
    ) -> np.ndarray:
        self.buffers[name] = np.full(shape, fill, dtype=np.float32)
        self.itemsize[name] = itemsize
        self.where[name] = where
        return self.buffers[name]

    def size(self, name: str) -> int:
        return self.buffers[name].size * self.itemsize[name]

    @property
    def bytes(self) -> int:
        return sum(self.size(name) for name in self.buffers if self.where[name] == "shared")

    def footprint(self) -> dict[str, Any]:
        listed: dict[str, Any] = {}
        for name, b in self.buffers.items():
            listed[name] = {"shape": list(b.shape), "bytes": self.size(name)}
            if self.where[name] != "shared":
                listed[name]["in"] = self.where[name]
        return {
            "buffers": listed,
            "bytes": self.bytes,
            "static_limit_bytes": SMEM_STATIC_BYTES,
            "budget_bytes": self.budget_bytes,
            "fits": self.bytes <= self.budget_bytes,
            "needs_opt_in": self.bytes > SMEM_STATIC_BYTES,
        }
