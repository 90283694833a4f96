"""`torchrun --standalone --nproc-per-node P -m flashviz.ring_demo` (or `python -m flashviz.ring_demo --processes P`,
which starts the P processes itself): flashviz.ring_attention checked on P processes.

Every rank draws the same random Q, K, V, dO (from --seed), takes its shard (ring_shard), runs ring_attention
forward and backward, and counts the bytes it sends (flashviz.ops.ring_counter). Rank 0 gathers the shards and prints
a table per rank (times, bytes sent against the closed form of flashviz.hardware.ring_model, FLOPs) and the error of the
ring against one-device flashviz.attention and against float64. NCCL on GPUs (one per rank), gloo and Triton's
interpreter on CPUs. Exit code 0 when the ring is within attention_reference's tolerance of float64 and its bytes
are the closed form's, 1 when not, 2 on a bad flag (one line; under torchrun, torchrun adds its own report of the
failed processes after it).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import click

from flashviz.cli.options import Bounded, OneOf
from flashviz.model.config import ConfigError
from flashviz.model.ring_layout import LAYOUTS, chunk_count, chunks

DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
HEAD_DIMS = ("32", "64", "96", "128", "256")
PER_RANK = 64  # default tokens per rank: small enough for the interpreter on a CPU


@dataclass
class RankRun:
    rank: int
    chunks: tuple[int, ...]
    forward_s: float
    backward_s: float
    sent_forward: int
    sent_backward: int


def check_length(n: int | None, world: int, layout: str) -> int:
    """N (default: PER_RANK per rank), or --seq-len's one-line error when the layout can't cut it evenly."""
    n = PER_RANK * world if n is None else n
    parts = chunk_count(world, layout)
    if n % parts:
        raise ConfigError(
            "--seq-len",
            f"must be a multiple of {parts} ({layout} on {world} process{'es' if world > 1 else ''} cuts N into "
            f"{parts} equal chunks; ragged shards are refused); got {n}",
        )
    return n


def _setup(rank: int | None = None, world: int | None = None, rendezvous: str | None = None):
    """(rank, world, device, backend) after init_process_group: spawned by --processes, through a rendezvous file;
    under torchrun, from its environment; otherwise one process (P = 1)."""
    import torch

    cuda = torch.cuda.is_available()
    if not cuda:
        os.environ.setdefault("TRITON_INTERPRET", "1")  # before Triton is first imported
    import torch.distributed as dist

    backend = "nccl" if cuda else "gloo"
    if rendezvous is not None:
        assert rank is not None and world is not None
        if cuda:
            torch.cuda.set_device(rank % torch.cuda.device_count())
        dist.init_process_group(backend, init_method=f"file://{rendezvous}", rank=rank, world_size=world)
    elif "RANK" in os.environ:
        if cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend)
    else:
        if cuda:
            torch.cuda.set_device(0)
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    return dist.get_rank(), dist.get_world_size(), device, backend


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run(n, d, heads, batch, causal, layout, dtype_name, seed, *, rank=None, world=None, rendezvous=None) -> int:
    """One rank's part; rank 0 prints the tables. Returns the exit code (rank 0: 1 when the check failed)."""
    import torch
    import torch.distributed as dist

    rank, world, device, backend = _setup(rank, world, rendezvous)
    from flashviz.hardware.ring_model import model
    from flashviz.ops.reference import judge, plain_attention
    from flashviz.ops.ring import ring_attention, ring_shard, ring_unshard
    from flashviz.ops.ring_counter import counting_sends

    n = check_length(n, world, layout)  # the same verdict on every rank
    dtype = getattr(torch, DTYPES[dtype_name])
    g = torch.Generator().manual_seed(seed)
    whole = [torch.randn(batch, heads, n, d, generator=g).to(dtype) for _ in range(4)]  # Q, K, V, dO
    shards = [ring_shard(t, rank, world, layout).to(device) for t in whole]

    def once() -> tuple[dict, RankRun]:
        q, k, v = (t.clone().requires_grad_() for t in shards[:3])
        with counting_sends() as sent:
            _sync(device)
            t0 = time.perf_counter()
            o, lse = ring_attention(q, k, v, causal=causal, layout=layout, return_lse=True)
            _sync(device)
            t1 = time.perf_counter()
            forward_bytes = sent.sent
            o.backward(shards[3])
            _sync(device)
            t2 = time.perf_counter()
        outs = {"O": o.detach(), "L": lse.detach(), "dQ": q.grad, "dK": k.grad, "dV": v.grad}
        mine = RankRun(rank, chunks(rank, world, layout), t1 - t0, t2 - t1, forward_bytes, sent.sent - forward_bytes)
        return outs, mine

    if device.type == "cuda":
        once()  # the kernels' autotuning and NCCL's connections, not timed
    outs, mine = once()
    runs: list = [None] * world
    dist.all_gather_object(runs, mine)
    whole_outs = {}
    for name, t in outs.items():
        pieces = [torch.empty_like(t) for _ in range(world)]
        dist.all_gather(pieces, t.contiguous())
        whole_outs[name] = ring_unshard([p.cpu() for p in pieces], layout)
    ok = True
    if rank == 0:
        doc = model(n, d, world, causal, layout, batch, heads, whole[0].element_size())
        ok = _report(whole, whole_outs, runs, doc, device, backend, causal, judge, plain_attention)
    dist.barrier()
    dist.destroy_process_group()
    return 0 if ok else 1


def _report(whole, ring_outs, runs, doc, device, backend, causal, judge, plain_attention) -> bool:
    import torch
    from rich.console import Console
    from rich.table import Table

    from flashviz.model.units import human_bytes
    from flashviz.ops.attention import attention

    c = doc["config"]
    P = c["world"]
    q, k, v, do = whole
    scale = c["d"] ** -0.5
    # one device: flashviz.attention on the whole sequence, on rank 0's device
    qd, kd, vd = (t.to(device).requires_grad_() for t in (q, k, v))
    o1, l1 = attention(q=qd, k=kd, v=vd, causal=causal, return_lse=True)
    o1.backward(do.to(device))
    one = {"O": o1.detach(), "L": l1.detach(), "dQ": qd.grad, "dK": kd.grad, "dV": vd.grad}
    one = {name: t.cpu() for name, t in one.items()}
    ref = plain_attention(q, k, v, causal, scale, do, torch.float64)
    per = 2 if c["layout"] == "zigzag" else 1  # chunks a rank holds
    verdict = judge(ring_outs, q, k, v, causal, scale, do, partials=P * per)  # bf16 partials per dK, dV

    console = Console(width=None if sys.stdout.isatty() else 132)
    ranks = Table(
        title=f"flashviz.ring_attention on {P} process{'es' if P > 1 else ''} ({backend}, {device.type}): "
        f"B={c['batch']} H={c['heads']} N={c['n']:,} D={c['d']}, {c['layout']}{', causal' if causal else ''}",
        caption="Bytes sent: counted by wrapping torch.distributed.batch_isend_irecv; model: "
        "flashviz.hardware.ring_model (K, V in the input dtype, dK, dV in fp32)."
        + (" Times on the CPU are Triton's interpreter, not a kernel's speed." if device.type == "cpu" else ""),
    )
    for col in ("rank", "Q chunks", "forward", "backward", "sent forward", "model", "sent backward", "model",
                "FLOPs forward"):  # fmt: skip
        ranks.add_column(col, justify="left" if col == "Q chunks" else "right")
    fwd_model, bwd_model = doc["forward"]["sent_bytes"], doc["backward"]["sent_bytes"]
    for r in runs:
        ranks.add_row(
            str(r.rank), ", ".join(map(str, r.chunks)), f"{r.forward_s * 1e3:.1f} ms", f"{r.backward_s * 1e3:.1f} ms",
            human_bytes(r.sent_forward, digits=2), human_bytes(fwd_model, digits=2),
            human_bytes(r.sent_backward, digits=2), human_bytes(bwd_model, digits=2), f"{doc['rank_flops'][r.rank]:,}",
        )  # fmt: skip
    errors = Table(title="Error (max |difference|), on the whole sequence")
    for col in ("", "ring vs one device", "ring vs float64", "one device vs float64", "limit (vs float64)"):
        errors.add_column(col, justify="right")
    for name, t in ring_outs.items():
        errors.add_row(
            name,
            f"{(t.double() - one[name].double()).abs().max().item():.3g}",
            f"{verdict.errors[name]:.3g}",
            f"{(one[name].double() - ref[name]).abs().max().item():.3g}",
            f"{verdict.limits[name]:.3g}",
        )
    console.print(ranks)
    console.print(errors)
    counted = all(r.sent_forward == fwd_model and r.sent_backward == bwd_model for r in runs)
    console.print(f"bytes sent {'equal' if counted else 'DIFFER FROM'} the closed form on every rank")
    if verdict.ok:
        console.print("check: passed (the ring within attention_reference's tolerance of float64)")
    else:
        console.print("check: FAILED: " + "; ".join(verdict.failures()))
    return verdict.ok and counted


def _spawned(rank: int, world: int, rendezvous: str, args: tuple) -> None:
    code = run(*args, rank=rank, world=world, rendezvous=rendezvous)
    if code:
        sys.exit(code)


def spawn(world: int, args: tuple) -> int:
    """Run the check on `world` local processes (torch.multiprocessing); the exit code of the first that failed."""
    import tempfile

    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory(prefix="flashviz-ring-") as where:
        try:
            mp.spawn(_spawned, args=(world, os.path.join(where, "rendezvous"), args), nprocs=world, join=True)
        except mp.ProcessExitedException as exc:
            return exc.exit_code if exc.exit_code > 0 else 1
    return 0


# not --n and --d: torchrun's parser reads those, even after the module's name, as abbreviations of its own flags
@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--processes",
    type=Bounded(1, 64),
    default=None,
    metavar="P",
    help="start P local processes  [default: 1; under torchrun, leave it out: its processes are the ring]",
)
@click.option(
    "--seq-len",
    "n",
    type=Bounded(1, 2**24),
    default=None,
    help=f"whole sequence length N  [default: {PER_RANK} per process]",
)
@click.option("--head-dim", "d", type=OneOf(HEAD_DIMS), default="64", show_default=True, help="head dimension D")
@click.option("--heads", type=Bounded(1, 4096), default=2, show_default=True, help="heads H")
@click.option("--batch", type=Bounded(1, 4096), default=1, show_default=True, help="batch B")
@click.option("--causal", is_flag=True, help="causal attention")
@click.option("--layout", type=OneOf(LAYOUTS), default="zigzag", show_default=True, help="how the sequence is cut")
@click.option("--dtype", type=OneOf(tuple(DTYPES)), default="bf16", show_default=True, help="Q, K, V dtype")
@click.option("--seed", type=Bounded(0, 2**63 - 1), default=0, show_default=True, help="seed of Q, K, V, dO")
@click.pass_context  # fmt: skip
def demo(ctx, processes, n, d, heads, batch, causal, layout, dtype, seed) -> None:
    """Check flashviz.ring_attention on P processes: per-rank times, bytes sent against the closed form, the error
    against one-device attention and float64. Under torchrun on its processes, otherwise on --processes."""
    args = (n, int(d), heads, batch, causal, layout, dtype, seed)
    if "RANK" in os.environ:
        if processes is not None:
            raise ConfigError("--processes", "leave it out under torchrun: its --nproc-per-node processes are the ring")
        ctx.exit(run(*args))
    check_length(n, processes or 1, layout)  # before any process starts
    ctx.exit(run(*args) if processes in (None, 1) else spawn(processes, args))


def _say(line: str) -> None:
    if os.environ.get("RANK", "0") == "0":  # one line, not one per rank
        click.echo(line, err=True)


def main(argv: list[str] | None = None) -> int:
    from flashviz.cli.main import one_line

    try:
        code = demo.main(args=argv, prog_name="flashviz.ring_demo", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.UsageError as exc:
        _say(one_line(f"flashviz.ring_demo: error: {exc.format_message()}"))
        return 2
    except ConfigError as exc:
        _say(one_line(f"flashviz.ring_demo: error: {exc}"))
        return 2
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
