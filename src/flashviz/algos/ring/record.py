"""What every part of the folder may know of ring attention's record: its name, its kernel file (flashviz/ops/ring.py,
whose `_forward` loop is the code each step shows: the function flashviz.ring_attention runs on every rank), and the
launch rules of its own: P devices (Config.devices), each keeping one block of Q (Br = N/P rows) and holding one K/V
shard at a time (Bc = N/P), laid out zigzag or contiguous (Config.layout, flashviz.model.ring_layout)."""

from __future__ import annotations

from flashviz.model.kernels import KernelFile
from flashviz.model.tiling import count

NAME = "ring"
# the ring loop of flashviz.ring_attention: its `# step:` regions lie in `_forward` only (the backward is not traced)
KERNEL = KernelFile(__package__ or __name__, "ring.py", functions=("_forward",), lies_in="flashviz.ops")
KERNEL_NAME = "ring_attention"  # what the picture calls its one "kernel": the loop every device runs
LAYOUT = "zigzag"  # the closed forms' layout when none is given (Config.layout's default)


def world(n: int, br: int) -> int:
    """P, the devices, from a launch's N and Br: Tr, the blocks of Q (each device keeps one block of Br = N/P rows)."""
    return count(n, br)


def calls_per_step(layout: str, causal: bool) -> int:
    """The most attention calls a device makes at one step (ring_layout.calls): two chunk x chunk calls at the later
    steps of a causal zigzag ring, else one (its shard against the one held, or nothing when every block is
    skipped)."""
    return 2 if causal and layout == "zigzag" else 1


def call_sizes(world: int, layout: str, causal: bool, shard: int) -> list[tuple[int, int]]:
    """(rows, count) of the attention calls of the whole ring, in closed form: every call is square (its rows of Q
    against as many keys). The engine runs ring_layout.calls; tests hold the two equal."""
    if not causal:
        return [(shard, world * world)]  # every device, every step: its shard against the one held
    if layout == "zigzag":
        # step 0: the device's own shard, one causal call; each later step: two full chunk x chunk calls
        return [(shard, world), (shard // 2, 2 * world * (world - 1))]
    # contiguous: step 0 one causal call each; at step s the P - s devices r >= s one full call, the others skip
    return [(shard, world + world * (world - 1) // 2)]
