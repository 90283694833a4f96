"""A trace file's arrays held against its config before any is inflated (docs/trace-schema.md, "Trace files"): each
input and output has the shape its config makes, as the tensors' table says it too, and the arrays a file stores hold
no more values than a trace of its config holds (Algorithm.trace_values), so that a small file cannot make a reader
allocate what its config does not imply (1.4 MB of deflated zeros said [16384, 16384] for N=16 and took 3.2 GB).
`arrays_problem` answers the first thing wrong in one line, or None; it runs on a document whose config and structure
passed flashviz.tracing.file_schema and whose arrays passed codec.check_arrays(refs=False, inflate=False)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from flashviz.model.echo import shown
from flashviz.tracing.codec import _groups, is_compact
from flashviz.tracing.file_schema import kind_of

if TYPE_CHECKING:
    from flashviz.algos.base import Algorithm
    from flashviz.model.config import Config

# the values a file's stored arrays may hold beyond what Algorithm.trace_values says a trace of its config holds
# (an estimate: the carries and substeps it leaves out stay well inside this), and at least FLOOR for the smallest
SLACK = 4
FLOOR = 4096
LEAVES = ("NaN", "Infinity")  # the strings a plain array holds where float32 has no JSON number (null is −∞)


def sizes(cfg: Config) -> dict[str, int]:
    """What each name of a tensor's `dims` stands for at this launch."""
    return {"N": cfg.n, "Nq": cfg.q_rows, "Nk": cfg.kv_n, "D": cfg.d, "1": 1}


def launch_words(cfg: Config) -> str:
    """The launch's sizes as a message names them: "config N=16, D=8" (and Nk, the group, where they are set)."""
    more = (f", Nk={cfg.kv_n}" if cfg.kv_n != cfg.n else "") + (f", group={cfg.group}" if cfg.group != 1 else "")
    return f"config N={cfg.n}, D={cfg.d}{more}"


def arrays_problem(doc: dict[str, Any], algo: Algorithm, cfg: Config) -> str | None:
    """The first input or output whose shape is not the one `cfg` makes, or the stored arrays' values past what a
    trace of `cfg` holds, in one line; None when every shape holds. Nothing is inflated."""
    size, said = sizes(cfg), launch_words(cfg)
    tensors = doc["tensors"]
    for part in ("inputs", "outputs"):
        names: tuple[str, ...] = getattr(algo, part)
        held = doc[part]
        if set(held) != set(names):
            got = ", ".join(k if k.isidentifier() else shown(k) for k in list(held)[:8])
            return f"{part} must hold {', '.join(names)}, the {part} of {algo.name} (got {got})"
        for name in names:
            tensor = tensors.get(name)
            if not isinstance(tensor, dict):
                return f"tensors must describe {name}, one of the {part} of {algo.name} (got {kind_of(tensor)})"
            dims = tensor.get("dims")
            if not isinstance(dims, list) or not dims or not all(isinstance(x, str) and x in size for x in dims):
                return f"tensors.{name}.dims must be a list of {', '.join(size)} (got {kind_of(dims)})"
            made = [size[x] for x in dims]
            if tensor.get("shape") != made:
                return f"tensors.{name}.shape is {kind_of(tensor.get('shape'))}; {said} makes it {made}"
            shape = shape_of(held[name])
            if shape is None:
                return f"{part}/{name} must be an array of numbers, a nested list of one shape (got a ragged list)"
            if shape != made:
                return f"{part}/{name} has shape {shape}; {said} makes it {made}"
    return _values_problem(doc, algo, cfg)


def _values_problem(doc: dict[str, Any], algo: Algorithm, cfg: Config) -> str | None:
    """The values the stored arrays say they hold (a reference or a drawn input stores none) against what a trace of
    `cfg` holds, with the recorded blocks the file says."""
    stored = [
        (f"{path}/{key}", v["shape"])
        for path, group in _groups(doc)
        for key, v in group.items()
        if is_compact(v) and "ref" not in v and "drawn" not in v
    ]
    total = sum(math.prod(shape) for _, shape in stored)
    recorded = tuple(sorted(set(doc["config"]["recorded_blocks"])))  # a block listed twice is recorded once
    expected = algo.trace_values(cfg, recorded)
    bound = max(SLACK * expected, FLOOR)
    if total <= bound:
        return None
    path, shape = max(stored, key=lambda x: math.prod(x[1]))
    return (
        f"its arrays hold {total:,} values, more than a trace of {launch_words(cfg)} holds (about {expected:,}; a "
        f"file of it may hold {bound:,}): {path} alone has shape {shape}"
    )


def shape_of(v: Any) -> list[int] | None:
    """A stored array's shape as it says it; a plain array's (nested lists of numbers, null, "NaN", "Infinity") as
    its lists make it, level by level (no recursion: a file may nest deeper than Python recurses), or None when they
    are ragged or hold anything else."""
    if isinstance(v, dict):
        return list(v["shape"])
    shape: list[int] = []
    level: list[Any] = [v]
    while level and all(isinstance(x, list) for x in level):
        width = len(level[0])
        if any(len(x) != width for x in level):
            return None
        shape.append(width)
        level = [y for x in level for y in x]
    if not shape:
        return None
    ok = all(x is None or x in LEAVES or (isinstance(x, (int, float)) and not isinstance(x, bool)) for x in level)
    return shape if ok else None
