"""Ring attention, one head, in closed form. HBM (the devices' memories together, the sequence in the layout's order):
each device reads its Q shard once, and holds every K/V shard once, its own first, the others as they arrive, so K
and V are read P = Tr times in all; O and L are written once. Neither the layout nor the mask changes that: a shard
is received and passed on even where every block of it is skipped. The link (flashviz.hardware.ring_model, the model
`flashviz compare --ring` prints): each device sends the shard it holds at every step but the last, (P − 1) · 2 · N/P ·
D elements of fp32 K and V. `steps` depends on the layout (the calls each step makes), which the trace passes."""

from __future__ import annotations

from typing import Any

from flashviz.algos.picture import Rule, times
from flashviz.hardware.ring_model import model
from flashviz.model.units import FLOAT_BYTES

from .record import LAYOUT, call_sizes, world


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, dict[str, int]]:
    p = world(n, br)
    return {
        "Q": {"read": n * d, "written": 0},
        "K": {"read": p * n * d, "written": 0},
        "V": {"read": p * n * d, "written": 0},
        "O": {"read": 0, "written": n * d},
        "L": {"read": 0, "written": n},
    }


def sram_bytes(n: int, d: int, br: int, bc: int) -> int:
    """A device's working set (in its own memory, not a kernel's shared memory): its Q shard, the K and V shard held,
    a call's partial Ob and the carries Oi (N/P x D each), Lb and Li (N/P)."""
    return FLOAT_BYTES * (5 * br * d + 2 * br)


def steps(n: int, d: int, br: int, bc: int, causal: bool = False, layout: str = LAYOUT) -> int:
    """Steps of the whole ring: per device init, per ring step send and wait, finish; two per attention call
    (attend, merge)."""
    p = world(n, br)
    calls = sum(k for _, k in call_sizes(p, layout, causal, br))
    return p * (2 + 2 * p) + 2 * calls


def rules(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, Rule]:
    p = world(n, br)
    kv = Rule(
        times(p, "held once by each device: its own first, then each as it arrives round the ring"),
        f"Tr\u00b7N\u00b7D = {p}\u00b7{n}\u00b7{d}",
        read="Tr*N*D",
    )
    return {
        "Q": Rule("read once: each device its own shard, kept", f"N\u00b7D = {n}\u00b7{d}", read="N*D"),
        "K": kv,
        "V": kv,
        "O": Rule("written once, each device its own rows", f"N\u00b7D = {n}\u00b7{d}", written="N*D"),
        "L": Rule("written once, each device its own rows", f"N = {n}", written="N"),
    }


def link(n: int, d: int, world_: int, layout: str, causal: bool) -> dict[str, Any]:
    """The ring's link in closed form, from flashviz.hardware.ring_model (fp32 K/V, one head): bytes each device
    sends per
    step and in all, and the shard's bytes."""
    doc = model(n, d, world_, causal=causal, layout=layout, element_bytes=FLOAT_BYTES, tflops=1.0)
    fwd = doc["forward"]
    return {
        "shard_bytes": doc["shard_bytes"]["kv"],
        "per_step": [s["sent_bytes"] for s in fwd["steps"]],
        "sent_bytes": [fwd["sent_bytes"]] * world_,  # every device sends alike
        "source": f"flashviz.hardware.ring_model.model(n={n}, d={d}, world={world_}, layout={layout!r}, "
        "element_bytes=4)",
    }
