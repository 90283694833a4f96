"""When does which algorithm move fewer bytes? The terms that make up each forward algorithm's HBM traffic (how
many times it reads each tensor over), and a sweep of the tile shape Bc/Br at one N and D, from the closed forms
only (no engine run). Part of `flashviz compare` and /api/compare."""

from __future__ import annotations

import math
from typing import Any

from flashviz.algos import BASELINE, REGISTRY
from flashviz.model.config import Config

RATIOS = (1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8)  # Bc/Br at the sweep's points, Br held
TILE_RANGE = (1, 256)
# The tiles real FlashAttention-2 forward kernels pick: never a Bc wider than Br (flash-attention's CUDA kernels
# use kBlockM = 128 with kBlockN <= 128 at head dim <= 128; fa2_triton/launch_tiles.py's FWD_TILES, the Triton
# kernel flashviz ships, tries 64x64 to 256x64, every one Br >= Bc; tests/test_regimes.py holds it to that).
REAL_KERNELS = (
    "Real FlashAttention-2 forward kernels pick Br ≥ Bc (flash-attention: Br = 128 with Bc ≤ 128 at D ≤ 128; "
    "flashviz's Triton kernel tries 64×64 up to 256×64), where FA2's re-reads of K and V cost no more than FA1's "
    "re-reads of Q and its carries."
)


def forward() -> list[str]:
    return [name for name, a in REGISTRY.items() if a.direction == "forward" and a.rival]


def schedules() -> list[str]:
    """The forward algorithms the sweep sets side by side: those whose elements are as wide as the baseline's, so
    that only the schedule (which tensor is re-read how often) tells their bytes apart."""
    width = REGISTRY[BASELINE].element_bytes
    return [name for name in forward() if REGISTRY[name].element_bytes == width]


def left_out() -> str:
    """A sentence naming the forward algorithms the sweep leaves out (another element width), or ""."""
    width, kept = REGISTRY[BASELINE].element_bytes, set(schedules())
    out = [name for name in forward() if name not in kept]
    return " ".join(
        f"{name} ({REGISTRY[name].dtype}, {REGISTRY[name].element_bytes} bytes per element) is left out of the sweep: "
        f"its bytes differ from the others' by the element width, not the schedule ({BASELINE}'s are {width})."
        for name in out
    )


def total_bytes(name: str, n: int, d: int, br: int, bc: int, causal: bool) -> int:
    """Its HBM bytes, each tensor at its own width (`Algorithm.bytes_of`, as compare's `total.bytes` counts them)."""
    algo = REGISTRY[name]
    counts = algo.traffic.count(n=n, d=d, br=br, bc=bc, causal=causal)
    return sum((t["read"] + t["written"]) * algo.bytes_of(tensor) for tensor, t in counts.items())


def terms(name: str, n: int, d: int, br: int, bc: int, causal: bool) -> list[dict[str, Any]]:
    """Each tensor's share of the algorithm's traffic, largest first: elements read and written, and how many
    times over the whole tensor is read (`times`) and written (`rewrites`)."""
    algo = REGISTRY[name]
    counts = algo.traffic.count(n=n, d=d, br=br, bc=bc, causal=causal)
    spec = algo.gpu
    cfg = Config(algo=name, n=n, d=d, br=br, bc=bc, causal=causal)
    everything = sum(t["read"] + t["written"] for t in counts.values()) or 1
    out = []
    for tensor, t in counts.items():
        size = math.prod(spec.shapes[tensor](cfg)) if spec is not None and tensor in spec.shapes else None
        out.append(
            {
                "tensor": tensor,
                "read": t["read"],
                "written": t["written"],
                "share": (t["read"] + t["written"]) / everything,
                "times": t["read"] / size if size else None,
                "rewrites": t["written"] / size if size else None,
            }
        )
    return sorted(out, key=lambda x: -x["share"])


def sweep(n: int, d: int, br: int, bc: int, causal: bool) -> dict[str, Any]:
    """The bytes of each forward algorithm as wide as the baseline (`schedules`), and bytes ÷ the baseline's, at
    Bc = Br·r for r in RATIOS (Br held, Bc clipped to 1..256), and which moves fewest at each point; the current
    (Br, Bc) is a point too; `left_out` names the algorithms of another element width."""
    lo, hi = TILE_RANGE
    names = [name for name in schedules() if not causal or REGISTRY[name].causal]  # those that run the launch
    shapes = sorted({(br, min(hi, max(lo, round(br * r)))) for r in RATIOS} | {(br, bc)}, key=lambda s: s[1])
    points = []
    for b_r, b_c in shapes:
        by = {name: total_bytes(name, n, d, b_r, b_c, causal) for name in names}
        base = by.get(BASELINE)
        points.append(
            {
                "br": b_r,
                "bc": b_c,
                "bytes": by,
                f"vs_{BASELINE}": {k: (v / base if base else None) for k, v in by.items()},
                "fewest": min(by, key=lambda k: by[k]),
                "current": (b_r, b_c) == (br, bc),
            }
        )
    return {"n": n, "d": d, "causal": causal, "points": points, "real_kernels": REAL_KERNELS, "left_out": left_out()}
