"""The ring of flashviz.ops.ring in closed form: the bytes each rank sends at each step, forward and backward, the
compute each step hides them under, and the condition for full overlap. What `flashviz compare --ring P` prints.

Per rank, n = N/P tokens, per head (B*H heads scale bytes and FLOPs alike, so the overlap condition is the same):
- forward: P compute steps; at each of the first P-1 the rank sends the K/V shard it holds on (2*n*D elements,
  `element_bytes` each) while it computes on it: (P-1) * 2nD elements in all.
- backward: K/V go round again ((P-1) * 2nD elements) and a dK, dV buffer (2nD, fp32) follows each shard: it is
  sent at the start of steps 2..P-1 (under that step's compute) and once after the last step, unhidden, when it
  reaches its owner: (P-1) * 2nD fp32 elements.
- compute per step: the blocks of flashviz.model.ring_layout (4 FLOPs per visible (query, key) pair forward, 2.5 times
  that backward: S recomputed, dP, dV, dK, dQ); a step lasts as long as its busiest rank.
- full overlap: link bandwidth x compute time of the step >= the bytes sent at that step, at every step that sends
  (the backward's last hop aside). Compute time grows as n^2 and bytes as n, so it holds from some n on.

The rates are parameters. By default: the bf16 matmul rate recorded on the H200 (an upper bound on the attention
kernels' speed, so the compute times are lower bounds and an overlap found here holds a fortiori) and the H200's
NVLink bandwidth from NVIDIA's datasheet (a specification; issue 24 measures it).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from flashviz.model.echo import cut
from flashviz.model.ring_layout import block_flops, check_layout, chunk_count, chunks

if TYPE_CHECKING:
    from rich.table import Table

NVLINK_GB_S = 450.0  # H200 SXM: NVLink 4, 900 GB/s per GPU in both directions together, 450 GB/s each way
DKV_BYTES = 4  # dK and dV travel in fp32: each rank adds its share to the buffer before passing it on
BACKWARD_FACTOR = (5, 2)  # backward matmul FLOPs per forward FLOP, 5/2: five products (S again, dP, dV, dK, dQ)


def recorded_tflops() -> tuple[float, str]:
    """The bf16 tensor-core matmul rate recorded on the H200, and where it comes from."""
    from flashviz.hardware.peaks import peaks

    p = peaks()
    return p["bf16_matmul_tflops"], f"bf16 matmul measured on the {p['gpu']}, {p['date']} ({p['source']})"


def step_flops(world: int, layout: str, causal: bool, chunk_rows: int, d: int) -> list[int]:
    """Per step: the forward matmul FLOPs (per head) of the busiest rank, in closed form (no loop over ranks; the
    layout plan, flashviz.model.ring_layout, gives the same counts block by block -- tests/test_ring.py holds them
    equal).
    Without the mask every rank computes its whole shard against the one held. Zigzag, causal: at step 0 two
    diagonal chunks and one full block; later, two full blocks (an earlier shard: both Q chunks see its first chunk;
    a later shard: the late Q chunk sees both of its chunks). Contiguous, causal: the diagonal at step 0; later the
    ranks r >= s compute one full block and the others skip."""
    full, diagonal = block_flops("full", chunk_rows, d), block_flops("causal", chunk_rows, d)
    per = len(chunks(0, world, layout))
    if not causal:
        return [per * per * full] * world
    if layout == "zigzag":
        return [2 * diagonal + full] + [2 * full] * (world - 1)
    return [diagonal] + [full] * (world - 1)


def rank_flops(world: int, layout: str, causal: bool, chunk_rows: int, d: int) -> list[int]:
    """Each rank's forward matmul FLOPs over the whole ring, per head, in closed form."""
    steps = step_flops(world, layout, causal, chunk_rows, d)
    if not causal or layout == "zigzag":
        return [sum(steps)] * world  # every rank does the busiest rank's work at every step
    return [steps[0] + r * block_flops("full", chunk_rows, d) for r in range(world)]  # rank r: r earlier shards


def _step(index: int, sends: dict[str, int], flops: int, factor: tuple[int, int], tflops: float,
          link_gb_s: float) -> dict:  # fmt: skip
    busiest = flops * factor[0] // factor[1]  # exact: forward counts are multiples of 4
    sent = sum(sends.values())
    compute_s = busiest / (tflops * 1e12)
    transfer_s = sent / (link_gb_s * 1e9)
    return {
        "step": index,
        "sends": list(sends),  # the shards sent on at this step: "K,V" and/or "dK,dV"
        "sent_bytes": sent,
        "flops": busiest,
        "compute_s": compute_s,
        "transfer_s": transfer_s,
        "hidden": transfer_s <= compute_s,
    }


def _pass(steps: list[dict], tail: dict | None, shard: int) -> dict:
    """Totals of one pass: bytes per rank, time with each step's transfer overlapped, and the shard length from
    which every transfer (the tail aside) hides under its step's compute."""
    sending = [s for s in steps if s["sent_bytes"]]
    ratio = {s["step"]: s["transfer_s"] / s["compute_s"] if s["compute_s"] else math.inf for s in sending}
    tightest = max(ratio, key=lambda i: ratio[i], default=None)  # the step whose transfer is hardest to hide
    worst = ratio[tightest] if tightest is not None else 0.0
    time_s = sum(max(s["compute_s"], s["transfer_s"]) for s in steps) + (tail["transfer_s"] if tail else 0.0)
    return {
        "steps": steps,
        "tail": tail,
        "transfers": sum(len(s["sends"]) for s in steps) + (len(tail["sends"]) if tail else 0),  # shard hops
        "sent_bytes": sum(s["sent_bytes"] for s in steps) + (tail["sent_bytes"] if tail else 0),
        "flops": sum(s["flops"] for s in steps),
        "time_s": time_s,
        "hidden": all(s["hidden"] for s in sending),
        "tightest_step": tightest,
        "min_shard_for_overlap": math.ceil(shard * worst) if sending and math.isfinite(worst) else None,
    }


def model(
    n: int,
    d: int,
    world: int,
    causal: bool = False,
    layout: str = "zigzag",
    batch: int = 1,
    heads: int = 1,
    element_bytes: int = 2,
    tflops: float | None = None,
    link_gb_s: float = NVLINK_GB_S,
) -> dict[str, Any]:
    """The ring's traffic and time for a sequence of `n` tokens on `world` ranks (the document `compare --ring`
    prints and puts under "ring" in its JSON). Bytes are exact; times follow from the two rates."""
    layout = check_layout(layout)
    for name, x, lo in (("world", world, 1), ("n", n, 1), ("d", d, 1), ("batch", batch, 1), ("heads", heads, 1)):
        if isinstance(x, bool) or not isinstance(x, int) or x < lo:
            raise ValueError(f"{name} must be an integer >= {lo}; got {cut(str(x))!r}")
    parts = chunk_count(world, layout)
    if n % parts:
        raise ValueError(f"N must be a multiple of {parts} ({layout} on {world} ranks: {parts} equal chunks); got {n}")
    source = "given"
    if tflops is None:
        tflops, source = recorded_tflops()
    heads_total = batch * heads
    chunk = n // parts
    shard = chunk * len(chunks(0, world, layout))  # tokens per rank
    kv = 2 * heads_total * shard * d * element_bytes  # K and V shards
    dkv = 2 * heads_total * shard * d * DKV_BYTES
    flops = [f * heads_total for f in step_flops(world, layout, causal, chunk, d)]
    rates = (tflops, link_gb_s)
    forward = [_step(s, {"K,V": kv} if s < world - 1 else {}, flops[s], (1, 1), *rates) for s in range(world)]
    backward = [
        _step(s, {**({"K,V": kv} if s < world - 1 else {}), **({"dK,dV": dkv} if s >= 2 else {})}, flops[s],
              BACKWARD_FACTOR, *rates)
        for s in range(world)
    ]  # fmt: skip
    tail = _step(world, {"dK,dV": dkv}, 0, BACKWARD_FACTOR, *rates) if world > 1 else None
    one = block_flops("causal" if causal else "full", n, d) * heads_total
    one_backward = one * BACKWARD_FACTOR[0] // BACKWARD_FACTOR[1]
    return {
        "config": {
            "n": n,
            "d": d,
            "world": world,
            "causal": causal,
            "layout": layout,
            "batch": batch,
            "heads": heads,
            "element_bytes": element_bytes,
            "shard": shard,
            "chunk": chunk,
        },
        "rates": {
            "tflops": tflops,
            "tflops_source": source,
            "link_gb_s": link_gb_s,
            "link_source": "NVLink 4 on the H200 SXM, each way: NVIDIA's datasheet"
            if link_gb_s == NVLINK_GB_S
            else "given",
        },
        "shard_bytes": {"kv": kv, "dkv": dkv},
        "rank_flops": [f * heads_total for f in rank_flops(world, layout, causal, chunk, d)],
        "forward": _pass(forward, None, shard),
        "backward": _pass(backward, tail, shard),
        "one_device": {
            "flops_forward": one,
            "flops_backward": one_backward,
            "time_forward_s": one / (tflops * 1e12),
            "time_backward_s": one_backward / (tflops * 1e12),
        },
    }


def _time(s: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def render(doc: dict[str, Any]) -> Table:
    """The model as a rich Table: one device beside the ring, forward and backward."""
    from rich.table import Table

    from flashviz.model.units import human_bytes

    c, r = doc["config"], doc["rates"]
    fwd, bwd, one = doc["forward"], doc["backward"], doc["one_device"]
    P = c["world"]
    table = Table(
        title=f"Ring attention on {P} rank{'s' if P > 1 else ''} ({c['layout']}{', causal' if c['causal'] else ''}): "
        f"N={c['n']:,} "
        f"D={c['d']}, {c['shard']:,} tokens per rank, per head, {c['element_bytes']}-byte K/V",
        caption=(
            f"Closed form (flashviz.hardware.ring_model). Rates: {r['tflops']:.4g} TFLOP/s ({r['tflops_source']}: an "
            f"upper bound on the kernels, so compute times are lower bounds), {r['link_gb_s']:.4g} GB/s "
            f"({r['link_source']}). A step lasts max(compute, transfer); a transfer is hidden when link bandwidth x "
            "the step's compute >= its bytes. Backward: dK, dV travel in fp32; their last hop, to the owner, is not "
            "hidden."
        ),
    )
    table.add_column("")
    table.add_column("one device", justify="right")
    table.add_column("ring: forward", justify="right")
    table.add_column("ring: backward", justify="right")
    tight = [None if p["tightest_step"] is None else p["steps"][p["tightest_step"]] for p in (fwd, bwd)]

    def at_tightest(key: str, text) -> list[str]:
        return ["—" if t is None else text(t[key]) for t in tight]

    def overlap(p: dict) -> str:
        return "—" if p["min_shard_for_overlap"] is None else f">= {p['min_shard_for_overlap']:,}"

    rows = [
        ("matmul FLOPs (per rank)", f"{one['flops_forward']:,}", f"{fwd['flops']:,}", f"{bwd['flops']:,}"),
        ("compute time", _time(one["time_forward_s"]), *(_time(sum(s["compute_s"] for s in p["steps"]))
                                                          for p in (fwd, bwd))),
        ("steps (shard transfers)", "1 (0)", f"{P} ({fwd['transfers']})", f"{P} ({bwd['transfers']})"),
        ("bytes sent per rank", "—", human_bytes(fwd["sent_bytes"], digits=1),
         human_bytes(bwd["sent_bytes"], digits=1)),
        ("tightest step: bytes sent", "—", *at_tightest("sent_bytes", lambda b: human_bytes(b, digits=1))),
        ("tightest step: compute", "—", *at_tightest("compute_s", _time)),
        ("tightest step: transfer", "—", *at_tightest("transfer_s", _time)),
        ("every transfer hidden", "—", *("yes" if p["hidden"] else "no" for p in (fwd, bwd))),
        ("tokens per rank for full overlap", "—", overlap(fwd), overlap(bwd)),
        ("time (overlapped)", _time(one["time_forward_s"]), _time(fwd["time_s"]), _time(bwd["time_s"])),
        ("speed-up over one device", "1×", f"{one['time_forward_s'] / fwd['time_s']:.2f}×",
         f"{one['time_backward_s'] / bwd['time_s']:.2f}×"),
    ]  # fmt: skip
    for row in rows:
        table.add_row(*row)
    return table
