"""`flashviz gpu run | profile | sanitize`: the kernel on a real GPU, its counters, its sanitizer runs.

This module imports no GPU library: CuPy is imported when a command runs, and without it (or without
a CUDA device) the command prints one line naming the extra to install and exits with code 2.
`flashviz.cli.main` registers it on the root group; both take their shared flags from `flashviz.cli.options`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from flashviz.algos import resolve
from flashviz.cli.options import Bounded, FilePath, OneOf, launch_options, own_defaults
from flashviz.cli.output import print_line
from flashviz.model.config import Config, ConfigError, shown
from flashviz.model.fields import MAX_HEADS

if TYPE_CHECKING:
    import numpy as np


def build(launch: dict[str, Any], inputs_path: Path | None) -> tuple[Config, dict[str, np.ndarray] | None]:
    """The validated Config (its fields not given on the command line the algorithm's own defaults) and the inputs
    from --inputs (None for random ones)."""
    record = resolve(launch["algo"])
    launch = own_defaults(click.get_current_context(), record, launch)
    inputs = None
    if inputs_path is not None:
        from flashviz.model.inputs import load_npz

        inputs = load_npz(inputs_path)
        launch = {**launch, "n": inputs["Q"].shape[0], "d": inputs["Q"].shape[1]}
    heads, batch = launch["heads"], launch["batch"]
    if heads * batch > MAX_HEADS:
        raise ConfigError("heads", f"batch*heads must be at most {MAX_HEADS} (got {batch}*{heads})")
    return record.validated(Config.of(launch)), inputs


def write_json(doc: dict[str, Any], output: Path | None) -> None:
    def default(x):
        if hasattr(x, "item"):  # NumPy scalars
            return x.item()
        raise TypeError(f"not JSON: {type(x).__name__}")

    text = json.dumps(doc, indent=1, default=default)
    if output is None:
        print_line(text)
        return
    try:
        output.write_text(text + "\n")
    except OSError as exc:
        raise ConfigError("-o", f"cannot write {shown(str(output))}: {exc.strerror}") from None
    click.echo(f"wrote {output}", err=True)


def describe_run(report: dict[str, Any]) -> list[str]:
    c, launch, dev = report["config"], report["launch"], report["device"]
    lines = [f"{dev['name']} (sm_{dev['compute_capability'].replace('.', '')}), {launch['time_ms']:.3f} ms:"]
    for k in launch.get("launches", [launch]):
        lines.append(
            f"  {k['kernel']} from {k['file']}, grid {tuple(k['grid'])}, block {k['block'][0]}, "
            f"{k['smem_bytes']:,} B shared memory, {k['registers']} registers"
        )
    lines.append(
        f"{c['algo']}: N={c['n']} D={c['d']} Br={c['br']} Bc={c['bc']}{' causal' if c['causal'] else ''}, "
        f"{c['batch']} x {c['heads']} heads, seed {c['seed']}"
    )
    if "check" in report:
        for name, w in report["check"]["worst"].items():
            f64 = "" if w["float64_max_rel"] is None else f", vs float64 {w['float64_max_rel']:.2e}"
            lines.append(f"{name}: max rel err vs engine {w['engine_max_rel']:.2e} (<= {w['engine_tolerance']:g}){f64}")
        lines.append("agrees with the engine and float64" if report["ok"] else "DISAGREES")
    else:
        lines.append("every output written" if report["ok"] else f"unwritten or NaN: {report['unwritten_or_nan']}")
    return lines


def group() -> click.Group:
    """Build the `gpu` group (`flashviz.cli.main` adds it to the root group)."""

    def gpu_options(f):
        """The launch fields at "gpu" (flashviz.model.fields: those of `flashviz trace` but --block, and --heads,
        --batch), --inputs and --threads."""
        options = [
            launch_options("gpu", help={"seed": "random inputs are drawn from this seed; head g draws from seed + g"}),
            click.option(
                "--inputs",
                "inputs_path",
                type=FilePath(),
                default=None,
                help=".npz with float32 Q, K, V of shape (N, D) for one head; N and D are taken from it",
            ),
            click.option(
                "--threads",
                type=Bounded(1, 1024),
                default=None,
                help="blockDim.x  [default: Br in whole warps, >= 128]",
            ),
        ]
        for option in reversed(options):
            f = option(f)
        return f

    output_option = click.option(
        "-o",
        "--output",
        type=FilePath(),
        default=None,
        help="write the JSON report here",
    )

    @click.group("gpu")
    def gpu() -> None:
        """Run the kernels on a CUDA GPU (pip install 'flashviz[gpu]'): check, profile, sanitize."""

    @gpu.command("run")
    @gpu_options
    @click.option("--check/--no-check", default=True, show_default=True, help="compare with the engine and float64")
    @click.option("--json", "as_json", is_flag=True, help="print the JSON report")
    @output_option
    @click.option("--quiet", is_flag=True, help="print nothing; the exit code says whether it passed")
    @click.pass_context
    def run_cmd(ctx, inputs_path, threads, check, as_json, output, quiet, **launch):
        """Launch the kernel on the engine's inputs, B x H heads at once, and compare (exit 1 if it disagrees)."""
        from flashviz.gpu.run import run

        cfg, inputs = build(launch, inputs_path)
        report = run(cfg, launch["heads"], launch["batch"], inputs, threads, check)
        if as_json or output is not None:
            write_json(report, output)
        elif not quiet:
            for line in describe_run(report):
                print_line(line)
        if not report["ok"]:
            ctx.exit(1)

    @gpu.command("profile")
    @gpu_options
    @output_option
    @click.option("--ncu", default="ncu", show_default=True, help="the Nsight Compute command line")
    @click.pass_context
    def profile_cmd(ctx, inputs_path, threads, output, ncu, **launch):
        """Measure global and DRAM bytes with Nsight Compute beside the model's (docs/profile-schema.md)."""
        from flashviz.gpu.device import require_gpu
        from flashviz.gpu.profile import profile

        cfg, _ = build(launch, inputs_path)
        heads, batch = launch["heads"], launch["batch"]
        require_gpu()
        try:
            doc = profile(cfg, heads, batch, threads, str(inputs_path) if inputs_path else None, ncu)
        except RuntimeError as exc:  # ncu ran but measured nothing (no permission for the counters, say)
            raise ConfigError("--ncu", " ".join(str(exc).split())) from None
        if output is not None:
            write_json(doc, output)
        for k in doc["kernels"]:
            print_line(f"{k['name']} grid {k['grid']} block {k['block']}{'' if k['counted'] else ' (not counted)'}")
        for line in doc["summary"]:
            print_line(f"  {line}")
        if not doc["ok"]:
            ctx.exit(1)

    @gpu.command("sanitize")
    @gpu_options
    @output_option
    @click.option(
        "--tool",
        "tools",
        type=OneOf(("memcheck", "racecheck", "synccheck", "initcheck")),
        multiple=True,
        help="one tool (repeatable)  [default: all four]",
    )
    @click.option("--sanitizer", default="compute-sanitizer", show_default=True, help="the compute-sanitizer command")
    @click.option(
        "--check/--no-check", default=True, show_default=True, help="the run under the tool checks its output"
    )
    @click.pass_context
    def sanitize_cmd(ctx, inputs_path, threads, output, tools, sanitizer, check, **launch):
        """Run the kernel under compute-sanitizer: memcheck, racecheck, synccheck, initcheck (exit 1 if any fails)."""
        from flashviz.gpu.device import require_gpu
        from flashviz.gpu.sanitize import TOOLS, sanitize

        cfg, _ = build(launch, inputs_path)
        require_gpu()
        doc = sanitize(
            cfg,
            launch["heads"],
            launch["batch"],
            threads,
            str(inputs_path) if inputs_path else None,
            tools or TOOLS,
            sanitizer,
            check,
        )
        if output is not None:
            write_json(doc, output)
        for r in doc["runs"]:
            state = "clean" if r["ok"] else "FAILED"
            print_line(f"{r['tool']:10s} {state}: {'; '.join(r['summary']) or 'no summary'} (exit {r['returncode']})")
        if not doc["ok"]:
            ctx.exit(1)

    return gpu
