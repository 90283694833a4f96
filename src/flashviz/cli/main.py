"""`flashviz`: open the walkthrough, write a trace, count HBM traffic, print the steps.

Every bad input ends with exit code 2 and one line naming the flag and what it accepts (bad values echoed cut to
~40 characters); a failed check (`gpu run` that disagrees, `gpu sanitize` or `gpu profile` that finds a fault)
or a stdout that cannot take the output (closed, full, a broken pipe) ends with exit code 1 and one line.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from flashviz.algos import REGISTRY, resolve
from flashviz.cli.gpu import group as gpu_group
from flashviz.cli.options import Bounded, FilePath, launch_options, own_defaults, take_launch
from flashviz.cli.output import (
    OutputError,
    flush_stdout,
    guarded_stdout,
    print_bytes,
    print_line,
    require_stdout,
    silence_stdout,
    to_stdout,
)
from flashviz.cli.ring import ring_option
from flashviz.cli.share import export, view
from flashviz.cli.tune import tune
from flashviz.cli.yourkernel import kernel_options, reject_kernel_options, run_kernel_trace
from flashviz.model.config import OPTIONS, Config, ConfigError, shown, with_seqlens
from flashviz.model.echo import cut
from flashviz.model.schema_errors import RecordError
from flashviz.model.units import human_bytes

if TYPE_CHECKING:
    from flashviz.algos.base import Algorithm
    from flashviz.tracing.trace import Trace


def optional_inputs() -> str:
    """The inputs beyond Q, K and V that some algorithm takes, as `--inputs` names them: `dO, for fa2-backward`."""
    extra = {a.name: [k for k in a.inputs if k not in ("Q", "K", "V")] for a in REGISTRY.values()}
    return "; ".join(f"{', '.join(names)}, for {name}" for name, names in extra.items() if names)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="flashviz")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Watch the FlashAttention-2 kernel run tile by tile. With no command: open the seed's example."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(serve)


@cli.command()
@launch_options("engine")
@click.option(
    "--inputs",
    "inputs_path",
    type=FilePath(),
    default=None,
    help=f".npz with float32 arrays Q, K, V (and optionally {optional_inputs()}; random when absent) of shape (N, D); "
    "N and D are taken from it",
)
@click.option(
    "-o",
    "--output",
    type=FilePath(),
    default=None,
    help="write the JSON here instead of stdout",
)
@click.option("--indent", is_flag=True, help="indent the JSON")
@click.option(
    "--plain",
    is_flag=True,
    help="write arrays as nested lists of numbers, inputs included (default: compact base64 typed arrays, deflated, "
    "the inputs drawn from --seed left out: readers draw them again; docs/trace-schema.md)",
)
@kernel_options
def trace(inputs_path, output, indent, plain, kernel, **options) -> None:
    """Run the engine and write one Trace as JSON (schema: docs/trace-schema.md); with --kernel, trace your own
    Triton kernel against float64 (docs/yourkernel.md)."""
    launch = take_launch(options, "engine")  # what is left: the options of --kernel
    if kernel is not None:
        ctx = click.get_current_context()
        set_ = [k for k in OPTIONS if ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE]
        if set_:
            raise ConfigError(set_[0], "is an option of the algorithms' launches, not of --kernel")
        return run_kernel_trace(kernel=kernel, **{k: launch[k] for k in ("n", "d", "causal", "seed", "scale")},
                                inputs_path=inputs_path, output=output, indent=indent, **options)  # fmt: skip
    reject_kernel_options()
    record = resolve(launch["algo"])  # the one lookup: the Algorithm goes down from here
    launch = own_defaults(click.get_current_context(), record, launch)
    if output is None:
        require_stdout()  # a closed stdout fails before the engine runs, not after
    trace_ = build_trace(record, launch, inputs_path)
    data = trace_.to_json(indent=indent, compact=not plain, file=not plain)
    if output is None:
        try:
            print_bytes(data, b"\n")  # not data + b"\n": a copy of a JSON of 100 MB or more
        except OutputError as exc:
            raise OutputError(f"{exc}; write the trace to a file with -o FILE") from None
    else:
        try:
            with output.open("wb") as f:
                f.write(data)
                f.write(b"\n")
        except OSError as exc:
            raise ConfigError("-o", f"cannot write {shown(str(output))}: {exc.strerror}") from None
        size = human_bytes(len(data) + 1)  # the file's bytes, its newline included
        click.echo(f"wrote {output} ({size}, {len(trace_.steps)} steps)", err=True)


def build_trace(record: Algorithm, launch: dict[str, Any], inputs_path: Path | None) -> Trace:
    """The trace of one launch (its fields, flashviz.model.fields), with --inputs' arrays (N and D are theirs)."""
    from flashviz.model.inputs import NAMES, load_npz, shaped_option
    from flashviz.tracing.build import trace_of

    inputs = None
    if inputs_path is not None:
        # Q, K, V must be in the file; the algorithm's other inputs (dO) are optional, drawn from --seed when absent
        optional = tuple(k for k in record.inputs if k not in NAMES)
        inputs = load_npz(inputs_path, NAMES, optional)
        shaped = shaped_option(launch)
        if shaped:
            raise ConfigError(
                "--inputs", f"takes arrays of one shape (N, D): not with --{shaped.replace('_', '-')}; drop one"
            )
        launch = {**launch, "n": inputs["Q"].shape[0], "d": inputs["Q"].shape[1]}
    return trace_of(record, Config.of(launch), inputs)


@cli.command()
@launch_options("count")
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
def count(as_json, **options) -> None:
    """HBM reads and writes per tensor from the closed-form traffic model (no engine run); with the options of real
    models, per K/V head."""
    record = resolve(options["algo"])
    launch = own_defaults(click.get_current_context(), record, take_launch(options, "count"))
    algo, n, d, br, bc, causal = (launch[k] for k in ("algo", "n", "d", "br", "bc", "causal"))
    cfg = Config.of(launch)
    cfg.check_options(record.options, algo, "count")
    record.check_launch(cfg)  # tiles its kernel runs
    model = record.traffic_of(cfg)
    options = {k: getattr(cfg, k) for k in OPTIONS}
    size = {name: record.bytes_of(name) for name in model}  # bytes per element: 4 (fp32), 2 (bf16)
    totals = {
        "read": sum(t["read"] for t in model.values()),
        "written": sum(t["written"] for t in model.values()),
    }
    total_bytes = {
        "read": sum(t["read"] * size[name] for name, t in model.items()),
        "written": sum(t["written"] * size[name] for name, t in model.items()),
    }
    if as_json:
        import json

        doc = {
            "config": {
                "algo": algo,
                "n": n,
                "d": d,
                "br": br,
                "bc": bc,
                "causal": causal,
                "tr": cfg.tr,
                "tc": cfg.tc,
                **{k: list(v) if isinstance(v, tuple) else v for k, v in options.items()},
            },
            "bytes_per_element": record.element_bytes,
            "dtype": record.dtype,
            "tensors": {
                name: {
                    **t,
                    "read_bytes": t["read"] * size[name],
                    "written_bytes": t["written"] * size[name],
                }
                for name, t in model.items()
            },
            "total": {
                **totals,
                "read_bytes": total_bytes["read"],
                "written_bytes": total_bytes["written"],
            },
        }
        print_line(json.dumps(doc, indent=2))  # the stdlib's ints have no 64-bit limit; counts near N = 2^31 do
        return
    from rich.console import Console
    from rich.table import Table

    extra = "".join(f", {k}={','.join(map(str, v)) if isinstance(v, tuple) else v}" for k, v in options.items()
                    if v != getattr(Config(), k))  # fmt: skip
    per = " per K/V head" if cfg.group > 1 else ""
    table = Table(title=f"{algo}: HBM traffic{per}, N={n} D={d} Br={br} Bc={bc} (Tr={cfg.tr}, Tc={cfg.tc}){extra}")
    for col in ("tensor", "read (elements)", "written (elements)", "read", "written"):
        table.add_column(col, justify="left" if col == "tensor" else "right")
    in_bytes = {name: {k: t[k] * size[name] for k in ("read", "written")} for name, t in model.items()}
    for name, t in [*model.items(), ("total", totals)]:
        b = in_bytes.get(name, total_bytes)
        table.add_row(
            name,
            f"{t['read']:,}",
            f"{t['written']:,}",
            human_bytes(b["read"]),
            human_bytes(b["written"]),
            end_section=name == list(model)[-1],
        )
    with to_stdout() as out:
        Console(file=out).print(table)


@cli.command()
@launch_options("engine", help={"block": "the block to show, as --block of `flashviz trace`"})
def steps(**options) -> None:
    """Print a trace as a step table in the terminal."""
    from rich.console import Console

    from flashviz.cli.trace_table import render

    require_stdout()  # a closed stdout fails before the engine runs, not after
    record = resolve(options["algo"])
    tables = render(build_trace(record, own_defaults(click.get_current_context(), record, options), None))
    with to_stdout() as out:
        Console(file=out).print(*tables)


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on (127.0.0.1: this machine)")
@click.option("--port", type=Bounded(0, 65535), default=0, show_default=True, help="port; 0 picks a free one")
@click.option("--no-browser", is_flag=True, help="only print the URL; do not open a browser")
@click.option(
    "--profile",
    "profile_path",
    type=FilePath(),  # '' is refused here; a directory, FIFO or device where it is read (flashviz.model.regular_file)
    default=None,
    help="a profile JSON (`flashviz gpu profile -o FILE.json`) to show beside the walkthrough (served at /api/profile)",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="also answer requests for this host name (repeatable); loopback names and the --host address always are",
)
def serve(host, port, no_browser, profile_path, allow_hosts=()) -> None:
    """Serve the walkthrough page and /api/trace, and open it in the browser."""
    from flashviz.server.serve import run

    run(host, port, no_browser, profile_path, allow_hosts)


@cli.command()
@launch_options(
    "count", skip=("algo",), help={"causal": "causal attention (an algorithm without a causal variant is left out)"}
)
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of a table")
@ring_option
def compare(n, d, br, bc, causal, as_json, ring, **flags) -> None:
    """Every algorithm side by side: HBM reads and writes per tensor and in total, bytes, SRAM per block, steps
    and FLOPs (matmul, non-matmul), and a sweep of Bc/Br, from the closed-form models (no engine run). With the
    options of real models (--group, --nk, --window, --softcap, --seqlens) the algorithms that run them are counted
    per K/V head, and a table says what each option saves."""
    from flashviz.cli.ring import RING_KEY, render_ring, ring_doc
    from flashviz.reports.compare import compare as compare_models
    from flashviz.reports.compare import render, render_regimes, render_savings, render_tables

    ctx = click.get_current_context()
    given = with_seqlens({"n": n, **flags}, ctx.get_parameter_source("n") == click.core.ParameterSource.COMMANDLINE)
    n = given.pop("n")
    options = {k: v for k, v in given.items() if v != getattr(Config(), k)}
    if options and ring is not None:
        raise ConfigError("--ring", "counts one head of plain attention: not with the options of real models")
    if options:
        Config(n=n, d=d, br=br, bc=bc, causal=causal, **options).check_options(
            frozenset(options) | {"seqlens"}, "compare", "count"
        )
    doc = compare_models(n, d, br, bc, causal, **options)
    if ring is not None:  # issue 23: the ring of flashviz.ring_attention in closed form, beside one device
        doc[RING_KEY] = ring_doc(n, d, ring, causal)
    if as_json:
        import json  # not orjson: at N near 2^31, standard attention's byte counts pass 2^64

        print_line(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    from flashviz.cli.tables import console, print_fitted

    with to_stdout() as out:
        # a column per algorithm: wider than a terminal's default 80 when written to a file or a pipe with no
        # COLUMNS; narrower than the table, it is cut into tables of fewer algorithms each (issue 17 item 17)
        con = console(out, wide=132)
        regimes = [] if options else [render_regimes(doc)]  # the sweep of Bc/Br is plain attention's
        print_fitted(con, render(doc), *render_savings(doc), *regimes, *render_tables(doc))
        if ring is not None:
            print_fitted(con, render_ring(doc[RING_KEY]))


@cli.command()
@click.option(
    "--from",
    "source",
    type=FilePath(),
    default=None,
    help="a ladder JSON (bench/ladder_bench.py writes one) instead of the run that ships with flashviz",
)
@click.option("--json", "as_json", is_flag=True, help="print the recorded run's JSON instead of a table")
def ladder(source, as_json) -> None:
    """From the seed's kernel to tensor cores: one recorded GPU run, rung by rung (shown, never measured here)."""
    from flashviz.hardware.ladder import load
    from flashviz.hardware.ladder_schema import LadderError
    from flashviz.reports.ladder_table import render

    try:
        doc = load(source)
    except LadderError as exc:
        if source is not None:
            raise ConfigError("--from", str(exc)) from None
        raise NoLadder(str(exc)) from None
    if as_json:
        import json

        print_line(json.dumps(doc, indent=1, ensure_ascii=False))
        return
    from flashviz.cli.tables import console, print_fitted

    with to_stdout() as out:
        # a pipe or a file with no COLUMNS: wide enough for the table's eleven columns; a narrower terminal gets the
        # columns in several tables, each with the rung's number and name (issue 17 item 17)
        print_fitted(console(out, wide=150), *render(doc), keep=2)


class NoLadder(click.ClickException):
    """No run to show (none shipped, or the shipped one unreadable): exit code 2, like bad input."""

    exit_code = 2


cli.add_command(gpu_group())  # imports no GPU library
cli.add_command(export)  # flashviz export OUT.html | --gif OUT.gif
cli.add_command(view)  # flashviz view TRACE.json
cli.add_command(tune)  # flashviz tune --lengths 512,4096 (a CUDA GPU)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return its exit code: 0 done, 1 a failed check or an unwritable stdout, 2 bad input."""
    try:
        # standalone_mode=False: click returns the code a command passed to ctx.exit() (gpu run: 1 when the
        # kernel disagrees) instead of exiting, and a command's return value (None) when it ends normally
        with guarded_stdout():  # a write to a closed or full stdout raises OutputError, wherever it happens
            code = cli.main(args=argv, prog_name="flashviz", standalone_mode=False)
            flush_stdout()  # output still in the buffer fails here, not at exit
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort:
        click.echo("flashviz: aborted", err=True)
        return 130
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "flashviz"
        click.echo(one_line(f"{where}: error: {exc.format_message()}"), err=True)
        return 2
    except click.ClickException as exc:
        click.echo(one_line(f"flashviz: error: {exc.format_message()}"), err=True)
        return exc.exit_code
    except ConfigError as exc:
        flag = exc.field if exc.field.startswith("-") or not exc.field.islower() else f"--{exc.field}"  # Q, dO: arrays
        flag = flag.replace("_", "-") if flag.startswith("--") else flag  # seqlens_k: --seqlens-k
        click.echo(one_line(f"flashviz: error: {flag}: {exc.message}"), err=True)
        return 2
    except OutputError as exc:
        silence_stdout()
        click.echo(one_line(f"flashviz: error: stdout: {exc}"), err=True)
        return 1
    except RecordError as exc:  # a recorded run shipped in flashviz/data/ that is not what its schema says
        click.echo(one_line(f"flashviz: error: {exc}"), err=True)
        return 2
    return code if isinstance(code, int) and not isinstance(code, bool) else 0


def one_line(text: str) -> str:
    """An error as one line: control characters escaped, each run of more than 60 non-blank characters cut to
    40 (bad values that click echoes itself: an unknown option, an extra argument), at most 400 in all."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    text = re.sub(r"\S{61,}", lambda m: cut(m[0]), text)
    return cut(text, 400)


if __name__ == "__main__":
    sys.exit(main())
