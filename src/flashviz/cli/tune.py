"""`flashviz tune`: flashviz.attention tuned for a model's shapes before a job runs (on a CUDA GPU), so that the job's
first steps launch at once: one forward and backward at each length's bucket (flashviz.runtime.tuning), the choices kept
on disk for this GPU, this Triton and these kernels."""

from __future__ import annotations

import re

import click

from flashviz.cli.options import Bounded, Number, OneOf
from flashviz.model.config import ConfigError, shown

D_CHOICES = ("32", "64", "96", "128", "256")  # flashviz.ops.checks.SUPPORTED_D (the CLI imports no torch to read it)


@click.command()
@click.option("--lengths", required=True, help="the sequence lengths a job will run, comma-separated: 512,1000,4096")
@click.option("--d", "d", type=OneOf(D_CHOICES), default="128", show_default=True, help="head dimension D")
@click.option("--heads", type=Bounded(1, 256), default=16, show_default=True, help="q heads H")
@click.option("--kv-heads", type=Bounded(1, 256), default=None, help="K/V heads (GQA), a divisor of --heads [--heads]")
@click.option("--batch", type=Bounded(1, 256), default=1, show_default=True, help="batch B")
@click.option("--causal/--no-causal", default=True, show_default=True, help="causal attention")
@click.option("--dtype", type=OneOf(("bfloat16", "float16")), default="bfloat16", show_default=True)
@click.option("--window", default=None, help="LEFT,RIGHT: a sliding window, as flashviz.attention takes it")
@click.option("--softcap", type=Number(), default=0.0, show_default=True, help="soft-capping (0: none)")
@click.option("--forward-only", is_flag=True, help="tune the forward only (inference)")
def tune(lengths, d, heads, kv_heads, batch, causal, dtype, window, softcap, forward_only) -> None:
    """Tune flashviz.attention for these shapes on this GPU, keeping the choices on disk."""
    ns = _integers("--lengths", lengths, 1, 1 << 20, "512,1000,4096")
    win = _integers("--window", window, -1, 1 << 28, "16,0 (-1: unbounded)") if window else (-1, -1)
    if len(win) != 2:
        raise ConfigError(
            "--window", f"must be two integers LEFT,RIGHT, each -1 (unbounded) or more (got {shown(window)})"
        )
    try:
        import torch  # noqa: F401

        from flashviz.ops.attention import tune as run
    except ImportError as exc:
        raise CannotTune(f"flashviz tune needs torch and Triton: pip install 'flashviz[triton]' ({exc})") from None
    try:
        rows = run(ns, int(d), heads=heads, kv_heads=kv_heads, batch=batch, causal=causal, dtype=dtype,
                   window=(win[0], win[1]), softcap=softcap, backward=not forward_only)  # fmt: skip
    except ValueError as exc:
        raise CannotTune(str(exc)) from None
    from rich.table import Table

    from flashviz.cli.output import to_stdout
    from flashviz.cli.tables import console

    table = Table(title=f"flashviz.attention tuned: B={batch} H={heads} D={d} {dtype}, causal={causal}")
    for col in ("bucket N", "first call", "again"):
        table.add_column(col, justify="right")
    for row in rows:
        table.add_row(f"{row['n']:,}", f"{row['first_s']:.2f} s", f"{row['again_s'] * 1e3:.1f} ms")
    with to_stdout() as out:
        console(out, wide=100).print(table)


def _integers(flag: str, text: str, lo: int, hi: int, example: str) -> tuple[int, ...]:
    parts = [p.strip(" \t") for p in text.split(",")]
    if not all(re.fullmatch(r"[+-]?[0-9]{1,9}", p) for p in parts) or not all(lo <= int(p) <= hi for p in parts):
        raise ConfigError(flag, f"must be comma-separated integers in {lo}..{hi} such as {example} (got {shown(text)})")
    return tuple(int(p) for p in parts)


class CannotTune(click.ClickException):
    """Nothing tuned: no CUDA GPU, no torch and Triton, or shapes flashviz.attention refuses (its one line): exit
    code 2, as the gpu commands say it."""

    exit_code = 2
