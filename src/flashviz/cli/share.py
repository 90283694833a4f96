"""`flashviz export` (one self-contained HTML file, or an animated GIF of the walkthrough) and `flashviz view` (a
trace file in the viewer). `flashviz.cli.main` registers both; the page is `flashviz.share.page`'s, the GIF
`flashviz.share.animate`'s,
trace files are checked by `flashviz.share.trace_files`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from flashviz.algos import ALGOS, DEFAULT
from flashviz.cli.options import Bounded, FilePath, launch_options
from flashviz.model import fields
from flashviz.model.config import ConfigError, shown
from flashviz.model.units import human_bytes

EXPORTED_BY = "flashviz export"


class AlgoList(click.ParamType):
    """--algo for export: one algorithm or several separated by commas (`fa1,fa2,standard`)."""

    name = "algos"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        names = tuple(dict.fromkeys(v.strip() for v in str(value).split(",")))
        bad = [v for v in names if v not in ALGOS]
        if bad or not names:
            self.fail(
                f"must be one or more of {', '.join(ALGOS)}, separated by commas (got {shown(value)})", param, ctx
            )
        return names


# the flags of one launch, which --trace files replace: --algo (as `algos`), the launch fields and --inputs
TRACE_FLAGS = ("algos", *(f.name for f in fields.at("engine") if f.name != "algo"), "inputs_path")


@click.command("export")
@click.argument("out", type=FilePath(), metavar="OUT")
@click.option("--algo", "algos", type=AlgoList(), default=DEFAULT, show_default=True, help="algorithm(s): fa1,fa2,...")
@launch_options("engine", skip=("algo",))
@click.option("--inputs", "inputs_path", type=FilePath(), default=None, help=".npz with Q, K, V (as `flashviz trace`)")
@click.option(
    "--trace",
    "trace_files",
    type=FilePath(),
    multiple=True,
    help="a trace file (`flashviz trace -o`) to hold instead of running the engine (repeatable)",
)
@click.option("--no-compare", is_flag=True, help="leave the comparison of the algorithms out (a smaller file)")
@click.option("--gif", "gif", is_flag=True, help="write an animated GIF of the walkthrough instead (OUT.gif)")
@click.option("--frames", type=Bounded(1, 2000), default=64, show_default=True, help="GIF: at most this many steps")
@click.option("--width", type=Bounded(320, 3840), default=900, show_default=True, help="GIF: page width, CSS px")
@click.option("--delay", type=Bounded(20, 60000), default=700, show_default=True, help="GIF: ms per frame")
@click.option("--browser", type=FilePath(), default=None, help="GIF: Chromium to run  [default: /usr/bin/chromium]")
@click.pass_context
def export(ctx: click.Context, out: Path, trace_files: tuple[Path, ...], no_compare: bool, gif: bool, **flags) -> None:
    """Write the viewer and its traces into one HTML file that works opened from disk (no network, no server).

    With --gif (or OUT.gif): an animated GIF of the walkthrough instead, one frame per step (the first --frames
    steps), each a screenshot of that same page in headless Chromium (needs pip install 'flashviz[animation]').
    No --mp4: no well-kept library writes MP4 without an ffmpeg binary; convert the GIF with ffmpeg if you need one."""
    gif = gif or out.suffix.lower() == ".gif"
    gif_flags = ("frames", "width", "delay", "browser")
    if not gif:
        given = [f for f in gif_flags if ctx.get_parameter_source(f) == click.core.ParameterSource.COMMANDLINE]
        if given:
            raise ConfigError(f"--{given[0]}", "shapes the GIF only: add --gif (or name OUT.gif)")
    frames, width, delay, browser = (flags.pop(f) for f in gif_flags)
    if trace_files:
        given = [f for f in TRACE_FLAGS if ctx.get_parameter_source(f) == click.core.ParameterSource.COMMANDLINE]
        if given:
            flag = "--" + given[0].replace("_path", "").replace("algos", "algo").replace("_", "-")
            raise ConfigError("--trace", f"holds its own launch: give either --trace files or {flag} and the others")
        held = [_trace_file(path) for path in trace_files]
    else:
        held = _run(ctx=ctx, **flags)
    if gif and len(held) > 1:
        raise ConfigError("--gif", f"animates one launch (got {len(held)}): give one --algo or one --trace")
    docs = documents(held, compare=not no_compare and not gif)
    if gif:
        from flashviz.share.animate import write_gif

        count, size = write_gif(docs, out, frames=frames, width=width, delay_ms=delay, browser=browser)
        click.echo(f"wrote {out} ({human_bytes(size)}, {count} frames of {width} px, {delay} ms each)", err=True)
        return
    from flashviz.share.page import NoBundle, standalone

    try:
        html = standalone(docs).encode()
    except NoBundle as exc:
        raise ConfigError("OUT", str(exc)) from None
    _write(out, html)
    click.echo(f"wrote {out} ({human_bytes(len(html))}: {size_line(docs)})", err=True)


def size_line(docs: Any) -> str:
    """What each part of the exported file weighs, each measured (`flashviz.share.page.sizes`): the viewer with its
    fonts,
    each trace (by algorithm and N), the comparison, the recorded ladder run, the index."""
    from flashviz.share.page import sizes

    size = dict(sizes(docs))
    traces = [size[f"trace {k}"] for k in range(len(docs.traces))]
    each = [f"{cfg['algo']} N={cfg['n']} {human_bytes(b)}" for (cfg, _), b in zip(docs.traces, traces, strict=True)]
    parts = [f"the viewer with its fonts {human_bytes(size['viewer'])}"]
    if len(traces) == 1:
        parts.append(f"1 trace ({each[0]})")
    else:
        parts.append(f"{len(traces)} traces {human_bytes(sum(traces))} ({', '.join(each)})")
    if docs.compares:
        parts.append(f"the comparison {human_bytes(sum(size[f'compare {k}'] for k in range(len(docs.compares))))}")
    if "ladder" in size:
        parts.append(f"the recorded ladder run {human_bytes(size['ladder'])}")
    parts.append(f"the index {human_bytes(size['index'])}")
    return ", ".join(parts)


def _run(algos: tuple[str, ...], inputs_path: Path | None, ctx: click.Context, **launch) -> list[tuple[dict, bytes]]:
    """Each algorithm's trace, as `flashviz trace` makes it (with --inputs, N and D are the arrays'; the fields not
    given on the command line, the algorithm's own defaults)."""
    from flashviz.algos import resolve
    from flashviz.api import trace
    from flashviz.cli.options import own_defaults
    from flashviz.model.inputs import NAMES, load_npz

    held = []
    for algo in algos:
        record = resolve(algo)
        own = own_defaults(ctx, record, launch)
        inputs = None
        if inputs_path is not None:
            inputs = load_npz(inputs_path, NAMES, tuple(k for k in record.inputs if k not in NAMES))
            own["n"] = own["d"] = None
        made = trace(algo, inputs=inputs, **own)
        held.append((made.config, made.to_json(compact=True)))
    return held


def _trace_file(path: Path) -> tuple[dict, bytes]:
    from flashviz.share.trace_files import read_trace_file

    doc, data = read_trace_file(path, "--trace")
    return doc["config"], data


def documents(held: list[tuple[dict, bytes]], compare: bool, origin: str = EXPORTED_BY):
    """The page's documents: the traces, the comparison at each of their configs, the limits (their algorithms)."""
    import json

    from flashviz.reports.compare_api import compare_document, limits_document
    from flashviz.share.page import Documents

    algos = list(dict.fromkeys(cfg["algo"] for cfg, _ in held))
    docs = Documents(origin=origin, limits=limits_document(algos=algos, default=algos[0]), traces=held)
    if compare:
        keys = {(cfg["n"], cfg["d"], cfg["br"], cfg["bc"], bool(cfg["causal"])) for cfg, _ in held}
        for n, d, br, bc, causal in sorted(keys):
            doc = compare_document(n=n, d=d, br=br, bc=bc, causal=causal)
            data = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()
            docs.compares.append(({"n": n, "d": d, "br": br, "bc": bc, "causal": causal}, data))
    return docs


def _write(out: Path, data: bytes) -> None:
    try:
        with out.open("wb") as f:
            f.write(data)
    except OSError as exc:
        raise ConfigError("OUT", f"cannot write {shown(str(out))}: {exc.strerror}") from None


@click.command("view")
@click.argument("trace_file", type=FilePath(), metavar="TRACE.json")
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on (127.0.0.1: this machine)")
@click.option("--port", type=Bounded(0, 65535), default=0, show_default=True, help="port; 0 picks a free one")
@click.option("--no-browser", is_flag=True, help="only print the URL; do not open a browser")
def view(trace_file: Path, host: str, port: int, no_browser: bool) -> None:
    """Open a trace file (`flashviz trace -o t.json`) in the viewer: the page shows it as written (no engine run);
    other launches picked in the page are computed by the server, as `flashviz serve` does."""
    from flashviz.reports.compare_api import limits_document
    from flashviz.server.serve import run
    from flashviz.share.page import Documents
    from flashviz.share.trace_files import read_trace_file

    doc, data = read_trace_file(trace_file, "TRACE.json")
    held = [(doc["config"], data)]
    docs = Documents(origin="flashviz view", limits=limits_document(), traces=held, server=True, file=trace_file.name)
    run(host, port, no_browser, None, (), documents=docs.html(), serving=held_words(trace_file.name, doc))


def held_words(name: str, doc: dict[str, Any]) -> str:
    """What `flashviz view` says it serves: the file, its algorithm (the registry's title, not the file's text) and
    launch, and where the rows of its inputs and outputs are not in sequence order (a ring's layout), whose they are:
    "t.json, FlashAttention-2 forward (N=8, D=4, Br=4, Bc=4)"."""
    from flashviz.algos import resolve

    cfg = doc["config"]
    sizes = f"N={cfg['n']}, D={cfg['d']}, Br={cfg['br']}, Bc={cfg['bc']}" + (", causal" if cfg["causal"] else "")
    more = cfg.get("launch") if isinstance(cfg.get("launch"), dict) else {}
    if "layout" in more:
        names = [*doc["inputs"], *doc["outputs"]]
        listed = f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else names[0]
        sizes += f"; {listed} in the {more['layout']} layout's order (P = {more.get('devices')}), not the sequence's"
    return f"{shown(name)[1:-1]}, {resolve(cfg['algo']).title} ({sizes})"
