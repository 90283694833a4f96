"""The schema of a trace file's config and top-level structure (docs/trace-schema.md), in pydantic: what every view
reads before it draws (`flashviz view`, `flashviz export --trace`, `flashviz.show(path)`), each value's type and
range. `problem(doc)` answers the first thing wrong, in one line naming the field and what it accepts, or None.

Arrays (`inputs`, `outputs`) are "a nested list or a {dtype, shape, base64} object" here: their decoding and shapes
are checked where they are decoded. The parts a view reads deeper (a step's SRAM, a tensor's rule) stay open objects:
each is the page's to draw, and a wrong type inside one is its own (text-node) problem, not a crash."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationError

from flashviz.algos import ALGOS, get
from flashviz.model.config import LIMITS, SCALE_RANGE, Config, ConfigError, shown

if TYPE_CHECKING:
    from flashviz.algos.base import Algorithm

Open = dict[StrictStr, Any]  # an object whose members the view that draws it reads
Algo = Literal[ALGOS]  # type: ignore[valid-type]  # the registry's names, not a fixed list


def bounded(field: str) -> Any:
    lo, hi = LIMITS[field]
    return Annotated[StrictInt, Field(ge=lo, le=hi)]


class Model(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)


class TraceConfig(Model):
    algo: Algo
    n: bounded("n")  # type: ignore[valid-type]
    d: bounded("d")  # type: ignore[valid-type]
    br: bounded("br")  # type: ignore[valid-type]
    bc: bounded("bc")  # type: ignore[valid-type]
    causal: StrictBool
    scale: StrictFloat | StrictInt
    recorded_blocks: Annotated[list[Annotated[StrictInt, Field(ge=0)]], Field(min_length=1)]
    seed: bounded("seed") | None = None  # type: ignore[valid-type]
    inputs: Literal["random", "file"] = "random"
    tr: Annotated[StrictInt, Field(ge=1)] | None = None
    tc: Annotated[StrictInt, Field(ge=1)] | None = None
    dtype: StrictStr | None = None
    element_bytes: Annotated[StrictInt, Field(ge=1, le=8)] | None = None
    # the options of real models (absent: plain attention); their ranges are Config.check_options'
    group: StrictInt = 1
    nk: StrictInt | None = None
    window: Annotated[list[StrictInt], Field(min_length=2, max_length=2)] = [-1, -1]
    softcap: StrictFloat | StrictInt = 0.0
    seqlens: list[StrictInt] | None = None
    seqlens_k: list[StrictInt] | None = None


class EncodedArray(Model):
    """An array stored compactly (little-endian, C order): decoded and shape-checked where it is read."""

    dtype: StrictStr
    shape: list[Annotated[StrictInt, Field(ge=0)]]
    base64: StrictStr


class FileArray(Model):
    """An array as a trace file stores it (flashviz.tracing.store: base85, perhaps shuffled and deflated)."""

    dtype: StrictStr
    shape: list[Annotated[StrictInt, Field(ge=0)]]
    base85: StrictStr


class DrawnArray(Model):
    """A trace file's input drawn from its seed (flashviz.tracing.store): drawn again and checked where it is read."""

    dtype: StrictStr
    shape: list[Annotated[StrictInt, Field(ge=0)]]
    drawn: Open


Array = list[Any] | EncodedArray | FileArray
InputArray = list[Any] | EncodedArray | FileArray | DrawnArray


class Kernel(Model):
    file: StrictStr
    name: StrictStr
    source: StrictStr


class Picker(Model):
    kernels: Annotated[list[StrictStr], Field(min_length=1)]
    index: StrictStr
    label: StrictStr


class Picture(Model):
    sram_rows: list[list[StrictStr]]


class Step(Model):
    block: Annotated[StrictInt, Field(ge=0)]
    phase: Annotated[StrictInt, Field(ge=0)]
    op: StrictStr
    kernel: StrictStr
    indices: dict[StrictStr, StrictInt | None]
    transfers: list[Any]  # each one: trace_shape (the words the page says too)
    sram: Open
    lines: list[Any]
    j: StrictInt | None = None


class Block(Model):
    block: Annotated[StrictInt, Field(ge=0)]
    recorded: StrictBool


class TraceFile(Model):
    config: TraceConfig
    kernel: Kernel
    kernels: Annotated[dict[StrictStr, Open], Field(min_length=1)]
    picker: Picker
    tensors: Annotated[dict[StrictStr, Open], Field(min_length=1)]
    buffers: dict[StrictStr, Open]
    picture: Picture
    ops: Annotated[dict[StrictStr, Open], Field(min_length=1)]
    inputs: Annotated[dict[StrictStr, InputArray], Field(min_length=1)]
    outputs: Annotated[dict[StrictStr, Array], Field(min_length=1)]
    steps: Annotated[list[Step], Field(min_length=1)]
    blocks: Annotated[list[Block], Field(min_length=1)]
    phases: Annotated[list[Open], Field(min_length=1)]
    title: StrictStr | None = None
    tagline: StrictStr | None = None


# What a field accepts, in words (the message names it; pydantic's own words for the rest)
ACCEPTS = {
    **{f"config.{k}": f"an integer in {lo}..{hi}" for k, (lo, hi) in LIMITS.items()},
    "config.algo": f"one of {', '.join(ALGOS)}",
    "config.causal": "true or false",
    "config.scale": f"a finite number with {SCALE_RANGE[0]:g} <= |scale| <= {SCALE_RANGE[1]:g}",
    "config.recorded_blocks": "a list of at least one block number (integers from 0)",
    "config.inputs": '"random" or "file"',
    "config.tr": "an integer, at least 1",
    "config.tc": "an integer, at least 1",
    "config.group": "an integer",
    "config.nk": "an integer, or null",
    "config.window": "a list of two integers [left, right]",
    "config.softcap": "a number",
    "config.seqlens": "a list of integers, or null",
    "config.seqlens_k": "a list of integers, or null",
    "steps": "a list of at least one step (an object each)",
    "blocks": "a list of at least one block (an object each)",
    "phases": "a list of at least one phase (an object each)",
    "picture": "an object {sram_rows: [[buffer, ...], ...]}",
    "picker": "an object {kernels, index, label, ...}",
    "kernel": "an object {file, name, source}",
    "inputs": "an object of arrays (nested lists, {dtype, shape, base64}, {dtype, shape, base85} or {dtype, shape, "
    "drawn} objects)",
    "outputs": "an object of arrays (nested lists, {dtype, shape, base64} or {dtype, shape, base85} objects)",
}
for _k in ("kernels", "tensors", "ops"):
    ACCEPTS[_k] = "an object of at least one entry (name → object)"
for _k in ("kernels", "tensors", "ops", "buffers"):
    ACCEPTS[f"{_k}.*"] = "an object"
for _k in ("inputs", "outputs"):
    ACCEPTS[f"{_k}.*"] = "an array: a nested list of numbers or a {dtype, shape, base64} object"
ACCEPTS["steps[]"] = "an object (a step: block, phase, op, kernel, indices, transfers, sram, lines)"
ACCEPTS["blocks[]"] = "an object (a block: block, recorded, ...)"
ACCEPTS["phases[]"] = "an object (a phase)"
ACCEPTS["buffers"] = "an object (name → object)"
ACCEPTS["config.seed"] += ", or null"
ACCEPTS["config.recorded_blocks[]"] = "a block number (an integer from 0)"


def problem(doc: dict[str, Any]) -> str | None:
    """The first thing wrong with a trace document's config or structure, in one line, or None."""
    if not isinstance(doc.get("config"), dict):
        keys = ", ".join(k for k, f in TraceConfig.model_fields.items() if f.is_required())
        return f"config must be an object of {keys}, ... (got {kind_of(doc.get('config'))})"
    try:
        TraceConfig.model_validate(doc["config"])  # first: a bad config is named before any part that follows it
    except ValidationError as exc:
        return _say(exc, doc, ("config",))
    try:
        t = TraceFile.model_validate(doc)
    except ValidationError as exc:
        return _say(exc, doc)
    c = t.config
    if not math.isfinite(c.scale) or not SCALE_RANGE[0] <= abs(c.scale) <= SCALE_RANGE[1]:
        return f"config.scale must be {ACCEPTS['config.scale']} (got {shown(c.scale)})"
    algo = get(c.algo)  # one of the registry's names (TraceConfig.algo)
    if c.nk is not None and c.nk != c.n and c.seqlens is None and "nk" not in algo.options:
        return f"config.n ({c.n}) and config.nk ({c.nk}) must be equal: {c.algo} runs Nk = N"
    launch = _launch(c, doc["config"])
    try:  # the launch's own rules, as `flashviz trace` applied them when it wrote the file
        algo.validated(launch)
    except ConfigError as exc:
        return f"config.{exc.field} {exc.message}"
    blocks = algo.blocks(launch)
    if len(t.blocks) != blocks:
        given = len(t.blocks)
        return f"blocks must list the launch's {blocks} blocks ({algo.block_size(launch)}, N={c.n}; got {given})"
    tr = -(-c.n // c.br)
    if c.tr is not None and c.tr != tr:
        return f"config.tr must be ceil(N/Br) = {tr} (got {c.tr})"
    tc = launch.tc
    if c.tc is not None and c.tc != tc:
        return f"config.tc must be ceil(Nk/Bc) = {tc} (got {c.tc})"
    picks = len(t.blocks)
    bad = [b for b in c.recorded_blocks if b >= picks]
    if bad:
        return f"config.recorded_blocks must name blocks in 0..{picks - 1}, the blocks of this trace (got {bad[0]})"
    for name in t.picker.kernels:
        if name not in t.kernels:
            return f"picker.kernels names {shown(name)}, which is not in kernels ({', '.join(t.kernels)})"
    for k, s in enumerate(t.steps):
        if s.op not in t.ops:
            return f"steps[{k}].op {shown(s.op)} is not in ops ({', '.join(list(t.ops)[:8])})"
        if s.kernel not in t.kernels:
            return f"steps[{k}].kernel {shown(s.kernel)} is not in kernels ({', '.join(t.kernels)})"
    return None


def _launch(c: TraceConfig, given: dict[str, Any]) -> Config:
    """The Config a trace's config describes (`given`: the config as the file holds it, for its `launch`)."""
    more = given.get("launch")  # the launch beyond N, D, Br, Bc: the ring's devices and layout
    ring = {k: more[k] for k in ("devices", "layout") if k in more} if isinstance(more, dict) else {}
    return Config(
        algo=c.algo,
        n=c.n,
        d=c.d,
        br=c.br,
        bc=c.bc,
        scale=c.scale,
        causal=c.causal,
        group=c.group,
        nk=None if c.nk == c.n or c.seqlens is not None else c.nk,
        window=(c.window[0], c.window[1]),
        softcap=float(c.softcap),
        seqlens=None if c.seqlens is None else tuple(c.seqlens),
        seqlens_k=None if c.seqlens_k is None else tuple(c.seqlens_k),
        **ring,
    )


def launch_of(doc: dict[str, Any]) -> tuple[Algorithm, Config]:
    """The Algorithm and the checked Config of a trace document that `problem` passed."""
    c = TraceConfig.model_validate(doc["config"])
    algo = get(c.algo)
    return algo, algo.validated(_launch(c, doc["config"]))


def _say(exc: ValidationError, doc: dict[str, Any], within: tuple[str, ...] = ()) -> str:
    err = exc.errors(include_url=False)[0]
    path = _path(doc, [*within, *err["loc"]], missing=err["type"] == "missing")
    where = "".join(p if p.startswith("[") else f".{p}" for p in path).lstrip(".") or "the trace"
    accepts = ACCEPTS.get(_pattern(path))
    if err["type"] == "missing":
        return f"{where} is missing" + (f" (must be {accepts})" if accepts else "")
    return f"{where} must be {accepts or _words(err['msg'])} (got {_value(doc, path)})"


def _path(doc: Any, loc: list[Any], missing: bool) -> list[str]:
    """The part of pydantic's `loc` that is a path into `doc` (keys, and indices as "[k]"); union members and
    constrained types name themselves in `loc` and are left out. A missing key ends the path."""
    out: list[str] = []
    here = doc
    for k, p in enumerate(loc):
        if isinstance(here, dict) and isinstance(p, str) and p in here:
            out.append(p)
            here = here[p]
        elif isinstance(here, list) and isinstance(p, int) and 0 <= p < len(here):
            out.append(f"[{p}]")
            here = here[p]
        else:
            if missing and k == len(loc) - 1 and isinstance(p, str):
                out.append(p)
            break
    return out


def _pattern(path: list[str]) -> str:
    """The ACCEPTS key of a path: `steps[3].op` → `steps[].op`, `inputs.Q` → `inputs.*`."""
    key = "".join(p if p.startswith("[") else f".{p}" for p in path).lstrip(".")
    key = re.sub(r"\[\d+\]", "[]", key)
    return re.sub(r"^(inputs|outputs|tensors|buffers|kernels|ops)\.[^.\[]+$", r"\1.*", key)


def _value(doc: Any, path: list[Any]) -> str:
    here = doc
    for p in path:
        key: Any = int(p[1:-1]) if isinstance(p, str) and p.startswith("[") else p
        try:
            here = here[key]
        except (KeyError, IndexError, TypeError):
            return "nothing"
    return kind_of(here)


def kind_of(value: Any) -> str:
    """A value as a message shows it: short values as JSON writes them, long ones by their type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return shown(value)
    if isinstance(value, list):
        return f"a list of {len(value)}" if len(value) > 3 else shown(value)
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _words(msg: str) -> str:
    """pydantic's "Input should be a valid integer" as the rest of "must be ...": "a valid integer"."""
    for lead in ("Input should be ", "Value should be ", "Input should have "):
        if msg.startswith(lead):
            return msg[len(lead) :]
    return msg[0].lower() + msg[1:]
