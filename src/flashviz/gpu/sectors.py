"""What the traffic model predicts a profiler measures for a launch of H heads: the model's bytes, and the same
after rounding each warp's access out to whole 32-byte sectors (L1 counts sectors, so a warp that stores 16
bytes of L is counted as 32). The two are equal whenever every contiguous run the kernel moves starts and ends on
a 32-byte boundary; an algorithm's GPU spec lists those runs (`KernelSpec.spans`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from flashviz.algos.launch import TritonSpec
from flashviz.model.config import Config

from ..algos import get
from ..algos import gpu_spec as spec

BYTES = 4  # float32: the element size the 32-byte-sector model of warp accesses is written for
SECTOR = 32  # bytes
WARP = 32  # threads, one element each


def sector_bytes(first: np.ndarray, count: np.ndarray, head_stride: int, heads: int) -> int:
    """Bytes L1 counts when each warp's access to a run is rounded out to whole 32-byte sectors.

    A run of `count` float32 elements starting at element `first` (of head 0; head g adds
    g * head_stride) is moved 32 elements per warp instruction from its first element. Allocations
    start on a 256-byte boundary, so only the element offset modulo 8 (one sector) matters.
    """
    per_sector = SECTOR // BYTES
    first, count = np.asarray(first, dtype=np.int64), np.asarray(count, dtype=np.int64)
    residues = np.bincount((np.arange(heads, dtype=np.int64) * head_stride) % per_sector, minlength=per_sector)
    total = 0
    for r, n_heads in enumerate(residues):
        if n_heads == 0:
            continue
        e0 = first + r
        full, rem = count // WARP, count % WARP
        # a full warp (128 bytes) touches 4 sectors when it starts on a sector boundary, else 5
        sectors = full * np.where(e0 % per_sector == 0, 4, 5)
        a = e0 + WARP * full
        sectors = sectors + np.where(rem > 0, (a + rem - 1) // per_sector - a // per_sector + 1, 0)
        total += int(n_heads) * int(sectors.sum())
    return total * SECTOR


def model(cfg: Config, heads: int) -> dict[str, Any]:
    """The traffic model for a launch of `heads` heads, in elements and bytes (each tensor at its own element size:
    4 for fp32, 2 for bf16), plus the sector-rounded bytes (where the spec lists the runs its loops move; else the
    sector model is the model), and per path (`spec.paths`: "lsu" ordinary loads and stores, "tma" tensor
    descriptors) the bytes each path moves, which different counters see; for a Triton kernel that builds tensor
    descriptors on the device, `descriptors`: the 128-byte tensormaps its programs write (not tensor traffic)."""
    s = spec(cfg.algo)
    algo = get(s.algo)
    per_head = algo.traffic.count(cfg.n, cfg.d, cfg.br, cfg.bc, causal=cfg.causal)
    tensors = {
        name: {
            "read_elements": t["read"] * heads,
            "written_elements": t["written"] * heads,
            "read_bytes": t["read"] * heads * algo.bytes_of(name),
            "written_bytes": t["written"] * heads * algo.bytes_of(name),
            "element_bytes": algo.bytes_of(name),
        }
        for name, t in per_head.items()
    }
    load = sum(t["read_bytes"] for t in tensors.values())
    store = sum(t["written_bytes"] for t in tensors.values())
    out = {"tensors": tensors, "load_bytes": load, "store_bytes": store}
    if s.spans is not None:
        spans = s.spans(cfg)
        sectors = {name: sector_bytes(*spans[name], int(np.prod(s.shapes[name](cfg))), heads) for name in spans}
        out["sector_bytes"] = sectors
        out["sector_load_bytes"] = sum(sectors[name] for name in algo.inputs)
        out["sector_store_bytes"] = sum(sectors[name] for name in algo.outputs)
    else:
        out["sector_load_bytes"], out["sector_store_bytes"] = load, store
    paths = s.paths or {}
    by_path: dict[str, dict[str, int]] = {}
    for name, t in tensors.items():
        at = by_path.setdefault(paths.get(name, "lsu"), {"load_bytes": 0, "store_bytes": 0})
        at["load_bytes"] += t["read_bytes"]
        at["store_bytes"] += t["written_bytes"]
    out["paths"] = by_path
    if isinstance(s, TritonSpec) and (descriptors := s.descriptors(cfg, heads)):
        out["descriptors"] = descriptors  # the tensormaps of a Triton kernel's tensor descriptors: no tensor's bytes
    out["unique_input_bytes"] = sum(
        heads * int(np.prod(s.shapes[name](cfg))) * algo.bytes_of(name) for name in algo.inputs
    )
    if algo.reread:
        out["reread"] = algo.reread  # what the loads the caches serve mostly are, in the algorithm's words
    out["unique_output_bytes"] = sum(
        heads * int(np.prod(s.shapes[name](cfg))) * algo.bytes_of(name) for name in algo.outputs
    )
    return out
