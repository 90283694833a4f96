"""Ring attention on one GPU: the ring's machinery at P = 1 against flashviz.attention, and the local kernels of
each step of a P-rank ring timed one by one, beside the closed-form model (flashviz.hardware.ring_model) that
`flashviz compare --ring P` prints.

What one GPU can measure of a ring (issue 23; the runs across GPUs are issue 24):
- P = 1: ring_attention on a one-process NCCL group against flashviz.attention on the same whole sequence, forward
  and forward+backward: the cost of the ring's own work (cutting the shard into calls, the log-sum-exp merge,
  the fp32 accumulators), since no byte travels.
- P = 2, 4, 8: for each step, the exact attention calls the busiest rank makes (flashviz.model.ring_layout.calls on the
  shapes a rank of that ring holds), forward and backward, timed by CUDA events; the step's measured compute time
  against the model's (a lower bound: the model uses the recorded matmul rate) and against the time the step's
  transfer takes at NVLink's datasheet rate, so "hidden" is judged with measured compute.

Timing follows the device's METHOD.md: CUDA events, warm-up, medians, inputs cycled over enough copies to exceed
L2. Writes ring-steps.json and ring-steps.md under --out.

    python bench/ring_steps_bench.py --out bench/results/ring
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

L2_BYTES = 50 * 2**20  # the H200's L2 cache (50 MiB): inputs are cycled over copies that together exceed it twice


def _median_ms(torch, fn, warmup: int, reps: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _copies(torch, shape, count: int, device, requires_grad: bool = False):
    return [torch.randn(shape, dtype=torch.bfloat16, device=device).requires_grad_(requires_grad) for _ in range(count)]


def _cycle(items):
    state = {"i": 0}

    def get():
        state["i"] = (state["i"] + 1) % len(items)
        return items[state["i"]]

    return get


def one_device_vs_ring(torch, args, n: int, causal: bool) -> dict:
    """P = 1: flashviz.attention and ring_attention (group of one) on the same whole sequence."""
    import flashviz
    from flashviz.ops.ring import ring_attention

    shape = (args.batch, args.heads, n, args.head_dim)
    per = 4 * shape[0] * shape[1] * shape[2] * shape[3] * 2  # q, k, v, do bytes
    count = max(2, -(-2 * L2_BYTES // per))
    sets = [tuple(_copies(torch, shape, 1, "cuda", requires_grad=(i < 3))[0] for i in range(4)) for _ in range(count)]
    nxt = _cycle(sets)
    out = {}
    for name, fn in (
        ("attention", lambda q, k, v: flashviz.attention(q, k, v, causal=causal)),
        ("ring P=1", lambda q, k, v: ring_attention(q, k, v, causal=causal, layout="zigzag")),
    ):

        def fwd(fn=fn):
            q, k, v, _ = nxt()
            with torch.no_grad():
                fn(q, k, v)

        def fwd_bwd(fn=fn):
            q, k, v, do = nxt()
            fn(q, k, v).backward(do)

        f = _median_ms(torch, fwd, args.warmup, args.reps)
        fb = _median_ms(torch, fwd_bwd, args.warmup, args.reps)
        out[name] = {"forward_ms": f, "backward_ms": fb - f}
    # the ring on one rank computes exactly attention: check it once on fresh inputs
    q, k, v, _ = sets[0]
    a = flashviz.attention(q, k, v, causal=causal)
    r = ring_attention(q, k, v, causal=causal, layout="zigzag")
    out["max_abs_diff_O"] = (a.float() - r.float()).abs().max().item()
    return out


def step_kernels(torch, args, n: int, world: int, causal: bool) -> list[dict]:
    """Per step of a `world`-rank zigzag ring on a sequence of n: the busiest rank's calls, timed."""
    from flashviz.model.ring_layout import blocks, calls, chunks
    from flashviz.ops import ring as ring_mod

    per = len(chunks(0, world, "zigzag"))
    shard = n // world
    c = shard // per
    shape = (args.batch, args.heads, shard, args.head_dim)
    bytes_one = 6 * shape[0] * shape[1] * shape[2] * shape[3] * 2  # q, k, v, o, do + slack
    count = max(2, -(-2 * L2_BYTES // bytes_one))
    sets = []
    for _ in range(count):
        q, k, v, do = _copies(torch, shape, 4, "cuda")
        sets.append((q, k, v, do))
    steps = []
    scale = args.head_dim**-0.5
    for step in range(world):
        best = None
        seen: dict[tuple, float] = {}
        for rank in range(world):
            plan = tuple(calls(blocks(rank, step, world, "zigzag", causal), per))
            if plan in seen:
                continue
            nxt = _cycle(sets)

            def fwd(plan=plan, nxt=nxt):
                q, k, v, _ = nxt()
                for call in plan:
                    rows, cols = slice(call.q0 * c, call.q1 * c), slice(call.k0 * c, call.k1 * c)
                    ring_mod._local_forward(q[:, :, rows], k[:, :, cols], v[:, :, cols], call.causal, scale)

            prepared = []
            for q, k, v, do in sets:  # each call's O and L, made once, for the backward timing
                outs = []
                for call in plan:
                    rows, cols = slice(call.q0 * c, call.q1 * c), slice(call.k0 * c, call.k1 * c)
                    o, lse = ring_mod._local_forward(q[:, :, rows], k[:, :, cols], v[:, :, cols], call.causal, scale)
                    outs.append((rows, cols, o.contiguous(), lse.contiguous()))
                prepared.append((q, k, v, do, outs, plan))
            nxt_b = _cycle(prepared)

            def bwd(nxt_b=nxt_b):
                q, k, v, do, outs, plan = nxt_b()
                for call, (rows, cols, o, lse) in zip(plan, outs, strict=True):
                    ring_mod._local_backward(q[:, :, rows].contiguous(), k[:, :, cols].contiguous(),
                                             v[:, :, cols].contiguous(), o, lse, do[:, :, rows].contiguous(),
                                             None, call.causal, scale)  # fmt: skip

            f = _median_ms(torch, fwd, args.warmup, args.reps)
            b = _median_ms(torch, bwd, args.warmup, args.reps)
            seen[plan] = f
            entry = {"rank": rank, "calls": len(plan), "forward_ms": f, "backward_ms": b}
            if best is None or f + b > best["forward_ms"] + best["backward_ms"]:
                best = entry
            del prepared
        assert best is not None
        steps.append({"step": step, **best})
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seq-lens", default="16384,65536")
    parser.add_argument("--worlds", default="2,4,8")
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()

    import torch
    import torch.distributed as dist

    if not torch.cuda.is_available():
        print("ring_steps_bench needs a CUDA GPU", file=sys.stderr)
        return 2
    from flashviz.hardware.ring_model import model

    rendezvous = tempfile.mkdtemp()
    dist.init_process_group("nccl", init_method=f"file://{rendezvous}/r", rank=0, world_size=1)
    torch.cuda.set_device(0)
    results = {
        "date": datetime.date.today().isoformat(),
        "machine": torch.cuda.get_device_name(0),
        "command": "python " + " ".join(sys.argv),
        "versions": {"torch": torch.__version__, "triton": __import__("triton").__version__},
        "shape": {"batch": args.batch, "heads": args.heads, "head_dim": args.head_dim, "dtype": "bf16"},
        "runs": [],
    }
    for n in (int(x) for x in args.seq_lens.split(",")):
        for causal in (False, True):
            run = {"n": n, "causal": causal, "p1": one_device_vs_ring(torch, args, n, causal), "worlds": []}
            for world in (int(x) for x in args.worlds.split(",")):
                m = model(n, args.head_dim, world, causal=causal, layout="zigzag", batch=args.batch, heads=args.heads)
                steps = step_kernels(torch, args, n, world, causal)
                for s, fs, bs in zip(steps, m["forward"]["steps"], m["backward"]["steps"], strict=True):
                    s["model_forward_ms"] = fs["compute_s"] * 1e3
                    s["model_backward_ms"] = bs["compute_s"] * 1e3
                    s["transfer_forward_ms"] = fs["transfer_s"] * 1e3
                    s["transfer_backward_ms"] = bs["transfer_s"] * 1e3
                    s["hidden_forward"] = fs["transfer_s"] * 1e3 <= s["forward_ms"]
                    s["hidden_backward"] = bs["transfer_s"] * 1e3 <= s["backward_ms"]
                run["worlds"].append({"world": world, "steps": steps, "link_gb_s": m["rates"]["link_gb_s"]})
                timing = ", ".join(f"step {s['step']} {s['forward_ms']:.3f}/{s['backward_ms']:.3f} ms" for s in steps)
                print(f"N={n} causal={causal} P={world}: {timing}", flush=True)
            results["runs"].append(run)
            p1 = run["p1"]
            a, r = p1["attention"], p1["ring P=1"]
            print(
                f"N={n} causal={causal} P=1: attention {a['forward_ms']:.3f}/{a['backward_ms']:.3f} ms, ring "
                f"{r['forward_ms']:.3f}/{r['backward_ms']:.3f} ms, |O diff| {p1['max_abs_diff_O']:.3g}"
            )
    dist.destroy_process_group()
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = f"{results['date']}-{results['machine'].replace(' ', '-').lower()}"
    (args.out / f"{stamp}-ring-steps.json").write_text(json.dumps(results, indent=1))
    (args.out / f"{stamp}-ring-steps.md").write_text(render(results))
    print(render(results))
    return 0


def render(results: dict) -> str:
    sh = results["shape"]
    lines = [
        f"# Ring attention on one GPU: {results['machine']}, {results['date']}",
        "",
        f"Command: `{results['command']}`; versions {results['versions']}; B={sh['batch']} H={sh['heads']} "
        f"D={sh['head_dim']} bf16; CUDA events, medians. Forward / backward in ms.",
        "",
        "## P = 1: the ring's machinery against flashviz.attention (no byte travels)",
        "",
        "| N | causal | flashviz.attention | ring_attention P=1 | ring / attention (fwd, bwd) | max abs O diff |",
        "|---|---|---|---|---|---|",
    ]
    for run in results["runs"]:
        a, r = run["p1"]["attention"], run["p1"]["ring P=1"]
        lines.append(
            f"| {run['n']} | {'yes' if run['causal'] else 'no'} | {a['forward_ms']:.3f} / {a['backward_ms']:.3f} | "
            f"{r['forward_ms']:.3f} / {r['backward_ms']:.3f} | {r['forward_ms'] / a['forward_ms']:.2f}, "
            f"{r['backward_ms'] / a['backward_ms']:.2f} | {run['p1']['max_abs_diff_O']:.3g} |"
        )
    lines += [
        "",
        "## P > 1: each step's local kernels on the busiest rank, measured, beside the model",
        "",
        "Model compute: the closed form at the recorded matmul rate (a lower bound). Transfer: the step's bytes at "
        "NVLink's datasheet rate (450 GB/s each way). Hidden: transfer ≤ measured compute.",
        "",
        "| N | causal | P | step | calls | measured fwd / bwd | model fwd / bwd | transfer fwd / bwd | hidden |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in results["runs"]:
        for w in run["worlds"]:
            for s in w["steps"]:
                hid = ("yes" if s["hidden_forward"] else "no") + " / " + ("yes" if s["hidden_backward"] else "no")
                lines.append(
                    f"| {run['n']} | {'yes' if run['causal'] else 'no'} | {w['world']} | {s['step']} | {s['calls']} | "
                    f"{s['forward_ms']:.3f} / {s['backward_ms']:.3f} | {s['model_forward_ms']:.3f} / "
                    f"{s['model_backward_ms']:.3f} | {s['transfer_forward_ms']:.3f} / "
                    f"{s['transfer_backward_ms']:.3f} | {hid} |"
                )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
