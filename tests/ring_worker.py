"""One process of a ring test (tests/test_ring.py spawns P of them with torch.multiprocessing): it joins a gloo
group, runs each case of the plan on its shard of the inputs the test wrote, and saves what it got -- outputs,
gradients, bytes counted per batch, FLOPs of each local call, or the error it raised -- for the test to judge.
Kept out of the test module so that a spawned child imports only this (and Triton under its interpreter)."""

from __future__ import annotations

import os
from pathlib import Path


def run(rank: int, world: int, where: str) -> None:
    os.environ["TRITON_INTERPRET"] = "1"  # before Triton is first imported
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    here = Path(where)
    dist.init_process_group("gloo", init_method=f"file://{here / 'rendezvous'}", rank=rank, world_size=world)
    from flashviz.ops import ring
    from flashviz.ops.ring_counter import counting_sends

    calls: list[tuple[int, int, int, bool]] = []  # (query rows, key rows, D, causal) of each local forward
    real_forward = ring._local_forward

    def counted_forward(q, k, v, causal, scale):
        calls.append((q.shape[2], k.shape[2], q.shape[3], causal))
        return real_forward(q, k, v, causal, scale)

    ring._local_forward = counted_forward
    plan = torch.load(here / "plan.pt")
    results = {}
    for case in plan["cases"]:
        name, inputs = case["name"], plan["inputs"][case["inputs"]]
        members = case.get("group")
        group = None
        if members is not None:  # every rank creates every group, in the same order
            groups = [dist.new_group(m) for m in members]
            group = next((g for g, m in zip(groups, members, strict=True) if rank in m), None)
        grank = dist.get_rank(group) if group is not None else rank
        gworld = dist.get_world_size(group) if group is not None else world
        shards = {k: ring.ring_shard(t, grank, gworld, case["layout"]) for k, t in inputs.items()}
        for k, t in case.get("override", {}).get(rank, {}).items():
            shards[k] = t
        q, k, v = (shards[x].clone().requires_grad_() for x in ("q", "k", "v"))
        calls.clear()
        try:
            with counting_sends() as sent:
                o, lse = ring.ring_attention(q, k, v, group=group, causal=case["causal"], layout=case["layout"],
                                             return_lse=True)  # fmt: skip
                forward_batches = [b.sent for b in sent.batches]
                sent.reset()
                grads = [shards["do"]] + ([shards["dl"]] if "dl" in shards else [])
                torch.autograd.backward([o, lse][: len(grads)], grads)
                backward_batches = [b.sent for b in sent.batches]
        except ValueError as exc:
            results[name] = {"error": str(exc)}
            continue
        results[name] = {
            "rank": grank,
            "world": gworld,
            "out": {"O": o.detach(), "L": lse.detach(), "dQ": q.grad, "dK": k.grad, "dV": v.grad},
            "forward_batches": forward_batches,
            "backward_batches": backward_batches,
            "calls": list(calls),
        }
    torch.save(results, here / f"rank{rank}.pt")
    dist.barrier()
    dist.destroy_process_group()
