"""The Python API: `flashviz.trace(...)` returns the Trace `flashviz trace` writes, `flashviz.show(...)` the notebook
widget that draws it. Every bad argument is a ConfigError (a ValueError) naming it, with the CLI's one-line words."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from flashviz.model.config import Config, ConfigError, shown
from flashviz.share.launch_args import _integer, height_of, launch

from .algos import DEFAULT, resolve

if TYPE_CHECKING:
    from flashviz.share.widget import Viewer
    from flashviz.tracing.trace import Trace

    from .yourkernel.report import KernelTrace


@overload
def trace(
    algo: str = ...,
    n: int | None = ...,
    d: int | None = ...,
    br: int | None = ...,
    bc: int | None = ...,
    causal: bool = ...,
    seed: int = ...,
    scale: float | None = ...,
    inputs: dict[str, Any] | None = ...,
    block: int | None = ...,
    devices: int = ...,
    layout: str = ...,
    *,
    kernel: None = ...,
    group: int = ...,
    nk: int | None = ...,
    window: tuple[int, int] | str | None = ...,
    softcap: float = ...,
    seqlens: tuple[int, ...] | str | None = ...,
    seqlens_k: tuple[int, ...] | str | None = ...,
) -> Trace: ...
@overload
def trace(*, kernel: Any, **options: Any) -> KernelTrace: ...
def trace(
    algo: str = DEFAULT,
    n: int | None = None,
    d: int | None = None,
    br: int | None = None,
    bc: int | None = None,
    causal: bool = False,
    seed: int = 0,
    scale: float | None = None,
    inputs: dict[str, Any] | None = None,
    block: int | None = None,
    devices: int = Config.devices,
    layout: str = Config.layout,
    *,
    kernel: Any = None,
    group: Any = 1,
    nk: Any = None,
    window: Any = None,
    softcap: Any = 0.0,
    seqlens: Any = None,
    seqlens_k: Any = None,
    **options: Any,
) -> Trace | KernelTrace:
    """Run the engine on one launch and return its Trace (`trace.to_json()` is what `flashviz trace` writes).

    algo: one of flashviz's algorithms (`flashviz compare` lists them). n, d: sequence length N and head dimension D
    (taken from `inputs` when given). br, bc: rows of Q per block, columns of K/V per tile. n, d, br, bc left out (or
    None): the algorithm's own defaults where it has them (fa2-triton: N=128, D=32, Br=64, Bc=32), else the seed's
    example, N=8, D=4, Br=Bc=4 (flashviz.model.fields). causal: mask keys after the query row. seed: random inputs
    are drawn from it (those `inputs` lacks). scale: softmax scale (default 1/sqrt(D)). inputs: {"Q", "K", "V"} (and
    "dO" for the backward) as (N, D) NumPy arrays or torch tensors of floating point; float32 is what the engine
    computes in. block: record only this block's values (default: all when there are at most 8). devices, layout:
    ring attention's P devices (2..8) and how the sequence is laid out on them, "zigzag" or "contiguous" (algo="ring";
    the others ignore them).

    kernel: your own @triton.jit attention forward (or 'FILE.py:FUNCTION') instead of an algorithm: it runs under
    Triton's interpreter and a KernelTrace comes back (flashviz.yourkernel.trace_kernel: n, d, causal, seed, scale,
    inputs, and its own options grid, meta, bind, carry, heads, batch, dtype, budget).

    The options of real models (algorithms that run them: fa2-triton): group (q heads per K/V head: the trace runs
    one K/V head and its group), nk (keys, when not N), window=(left, right) (-1 unbounded), softcap (> 0: scores
    become softcap·tanh(s/softcap)), seqlens and seqlens_k (packed sequences' lengths; N is their sum)."""
    model_opts = {"group": group, "nk": nk, "window": window, "softcap": softcap, "seqlens": seqlens}
    model_opts["seqlens_k"] = seqlens_k
    if kernel is not None:
        from .yourkernel import trace_kernel

        plain = {"group": 1, "nk": None, "window": None, "softcap": 0.0, "seqlens": None, "seqlens_k": None}
        for name, value in model_opts.items():
            if value is not plain[name] and value != plain[name]:
                raise ConfigError(name, "is an option of the algorithms' launches, not of kernel=")

        tiles_and_block = (("br", br), ("bc", bc), ("block", block))
        for name, value, default in (("algo", algo, DEFAULT), *((k, v, None) for k, v in tiles_and_block)):
            if value != default:
                raise ConfigError(name, "is not used with kernel= (its tiles are meta={'BLOCK_M': ..., ...})")
        return trace_kernel(kernel, n=n, d=d, causal=causal, seed=seed, scale=scale, inputs=inputs, **options)
    if options:
        raise TypeError(f"flashviz.trace got {', '.join(options)}: options of kernel= only")
    from flashviz.model.inputs import NAMES, from_arrays, shaped_option
    from flashviz.tracing.build import trace_of

    arrays = None
    if inputs is not None:
        shaped = shaped_option(model_opts)
        if shaped:
            raise ConfigError("inputs", f"takes arrays of one shape (N, D): not with {shaped}; drop one")
        optional = tuple(k for k in _algorithm(algo).inputs if k not in NAMES)
        arrays = from_arrays(inputs, NAMES, optional)
        rows, cols = arrays["Q"].shape
        for name, given, found in (("n", n, rows), ("d", d, cols)):
            if given is not None and _integer(given) != found:
                raise ConfigError(name, f"must match the inputs' {name.upper()}={found} (got {shown(given)})")
        n, d = rows, cols
    launched = {"algo": algo, "n": n, "d": d, "br": br, "bc": bc, "seed": seed, "scale": scale, "causal": causal}
    algorithm, cfg = launch({**launched, "block": block, "devices": devices, "layout": layout, **model_opts})
    return trace_of(algorithm, cfg, arrays)


def show(trace_or_kwargs: Any = None, /, height: int = 760, **kwargs: Any) -> Viewer:
    """The viewer in a notebook (JupyterLab, Notebook 7, VS Code, marimo): `flashviz.show(n=16, d=8)`.

    Takes a Trace (`flashviz.trace(...)`), a dict of `flashviz.trace`'s arguments, a trace file's path (checked as
    `flashviz view` checks it), or those arguments as keywords. With `kernel=attn_fwd` (your own @triton.jit forward,
    and flashviz.trace's kernel options: meta, bind, carry, ...), the widget draws your kernel held to float64 tile
    by tile (docs/yourkernel.md); a KernelTrace is shown as it is. Editing the launch in the widget recomputes it
    here, in Python, through the widget's model: no server (your kernel runs again). `height`: the widget's height
    in CSS pixels (the page scrolls inside). Needs anywidget: pip install 'flashviz[notebook]'."""
    from flashviz.share.widget import Viewer

    height = height_of(height)  # before any launch is computed
    if trace_or_kwargs is None or isinstance(trace_or_kwargs, dict):
        if trace_or_kwargs is not None and kwargs:
            raise TypeError("flashviz.show takes a dict of arguments or keywords, not both")
        arguments = kwargs if trace_or_kwargs is None else dict(trace_or_kwargs)
        made = trace(**arguments)
        if arguments.get("kernel") is not None:  # a user's kernel: an edit in the widget runs it again, here
            return Viewer.of_kernel(made, arguments, height=height)
    elif isinstance(trace_or_kwargs, (str, Path)):
        from flashviz.share.trace_files import read_trace_file

        doc, data = read_trace_file(trace_or_kwargs, flag="trace file")
        return Viewer.of_document(doc, data, height=height)
    else:
        from flashviz.tracing.trace import Trace

        from .yourkernel.report import KernelTrace

        if isinstance(trace_or_kwargs, KernelTrace):
            if kwargs:
                raise TypeError("flashviz.show takes a KernelTrace or keywords, not both")
            return Viewer.of_kernel(trace_or_kwargs, None, height=height)
        if not isinstance(trace_or_kwargs, Trace):
            raise ConfigError(
                "trace_or_kwargs",
                f"must be a Trace, a dict of flashviz.trace's arguments or a trace file's path "
                f"(got {shown(type(trace_or_kwargs).__name__)})",
            )
        if kwargs:
            raise TypeError("flashviz.show takes a Trace or keywords, not both")
        made = trace_or_kwargs
    return Viewer.of_trace(made, height=height)


def _algorithm(name: str):
    """The one lookup of the API's front door: the Algorithm goes down from here."""
    return resolve(name)
