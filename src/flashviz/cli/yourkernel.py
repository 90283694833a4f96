"""`flashviz trace --kernel FILE.py:FUNCTION`: the options `trace` takes for a user's kernel, and the command's body.

It prints the verdict (correct, the first divergence, or the fault), the carries of the block that matters and the
traffic table; `-o FILE` writes the whole document as JSON. Exit code 0 when the kernel is right, 1 when it diverges
or faults (a failed check), 2 for bad input (a signature flashviz cannot fill is one line naming the parameter).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from flashviz.cli.options import Bounded, OneOf

F = TypeVar("F", bound=Callable[..., Any])
DTYPES = ("float16", "bfloat16", "float32")  # run.DTYPES (tests hold them equal)
KERNEL_ONLY = ("grid", "meta", "bind", "carry", "heads", "batch", "dtype", "budget")
NOT_WITH_KERNEL = {
    "algo": "the kernel is the algorithm",
    "br": "the kernel's tiles are --meta BLOCK_M=...",
    "bc": "the kernel's tiles are --meta BLOCK_N=...",
    "block": "every block is recorded",
}


def kernel_options(f: F) -> F:
    options = [
        click.option(
            "--kernel",
            default=None,
            metavar="FILE.py:FUNCTION",
            help="trace your own @triton.jit attention forward under Triton's interpreter (docs/yourkernel.md); "
            "N, D default to 64, 16",
        ),
        click.option(
            "--grid", default=None, metavar="X,Y[,Z]", help="with --kernel: the grid [default: cdiv(N, BLOCK_M), Z*H]"
        ),
        click.option(
            "--meta",
            default=None,
            metavar="NAME=VALUE,...",
            help="with --kernel: values of parameters flashviz does not fill, such as BLOCK_M=16,BLOCK_N=16",
        ),
        click.option(
            "--bind",
            default=None,
            metavar="ROLE=PARAM,...",
            help="with --kernel: roles of parameters "
            "named outside the conventions, such as Q=query,N=seq_len,stride_qm=row_q",
        ),
        click.option(
            "--carry",
            default=None,
            metavar="M,L,ACC",
            help="with --kernel: the names of the running "
            "max, sum and accumulator [default: common spellings such as m_i,l_i,acc]",
        ),
        click.option("--heads", type=Bounded(1, 64), default=1, show_default=True, help="with --kernel: heads H"),
        click.option("--batch", type=Bounded(1, 64), default=1, show_default=True, help="with --kernel: batch Z"),
        click.option(
            "--dtype",
            type=OneOf(DTYPES),
            default="float16",
            show_default=True,
            help="with --kernel: Q, K, V and O (L is float32)",
        ),
        click.option(
            "--budget",
            type=Bounded(1, 2**20),
            default=4096,
            show_default=True,
            help="with --kernel: loop iterations per program before the run is stopped",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _given(name: str) -> bool:
    from click.core import ParameterSource

    source = click.get_current_context().get_parameter_source(name)
    return source not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)


def reject_kernel_options() -> None:
    """Without --kernel, the kernel's options are an error naming the first one given."""
    from flashviz.model.config import ConfigError

    for name in KERNEL_ONLY:
        if _given(name):
            raise ConfigError(f"--{name}", "is only used with --kernel FILE.py:FUNCTION")


def run_kernel_trace(
    *,
    kernel: str,
    n: int,
    d: int,
    causal: bool,
    seed: int,
    scale: float | None,
    inputs_path: Path | None,
    output: Path | None,
    indent: bool,
    grid: str | None,
    meta: str | None,
    bind: str | None,
    carry: str | None,
    heads: int,
    batch: int,
    dtype: str,
    budget: int,
) -> None:
    from flashviz.cli.output import require_stdout, to_stdout
    from flashviz.model.config import ConfigError, shown
    from flashviz.yourkernel import trace_kernel

    for name, why in NOT_WITH_KERNEL.items():
        if _given(name):
            raise ConfigError(f"--{name}", f"is not used with --kernel ({why})")
    require_stdout()
    inputs = None
    if inputs_path is not None:
        from flashviz.model.inputs import NAMES, load_npz

        inputs = load_npz(inputs_path, NAMES)
        if heads != 1 or batch != 1:
            raise ConfigError("--inputs", "holds one head's (N, D) arrays: use it with --heads 1 --batch 1")
    trace = trace_kernel(
        kernel,
        n=None if inputs is not None or not _given("n") else n,
        d=None if inputs is not None or not _given("d") else d,
        batch=batch,
        heads=heads,
        dtype=dtype,
        causal=causal,
        scale=scale,
        seed=seed,
        inputs=inputs,
        grid=grid,
        meta=meta,
        bind=bind,
        carry=carry,
        budget=budget,
    )
    from rich.console import Console

    from flashviz.yourkernel.report import render

    with to_stdout() as out:
        console = Console(file=out, width=None if getattr(out, "isatty", lambda: False)() else 132)
        verdict, *tables = render(trace)
        console.print(verdict, soft_wrap=True)  # the verdict is one line, however long
        console.print(*tables)
    if output is not None:
        data = trace.to_json(indent=indent)
        try:
            output.write_bytes(data + b"\n")
        except OSError as exc:
            raise ConfigError("-o", f"cannot write {shown(str(output))}: {exc.strerror}") from None
        click.echo(f"wrote {output} ({len(data) / 1e3:.1f} kB)", err=True)
    if trace.verdict == "fault":
        click.echo(f"flashviz: error: kernel: {trace.message}", err=True)
    if not trace.ok:
        click.get_current_context().exit(1)
