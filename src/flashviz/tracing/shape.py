"""What the page's views read in a trace, checked before any view draws it: the spec in data/trace_shape.json, walked
here and, with the same words, by the page (web/src/traceShape.ts). `trace_file_schema` checks the config's values and
the top-level structure first; this walks the parts it leaves open (a step's code and lines, a block's rows, a phase's
writes, the footprint, the flops and hardware sections, ...), so that a file a view cannot read is refused in one line
naming the field, never drawn into a page that throws (issue 17, the page fuzzer)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from flashviz.model.echo import cut
from flashviz.tracing.file_schema import kind_of

MAX_SAFE = 2**53 - 1
ATOMS = {
    "str": "a string",
    "int": "an integer",
    "num": "a finite number",
    "bool": "true or false",
    "obj": "an object",
    "list": "a list",
    "span": "[first, end): two integers",
    "rich": "Rich text (a list of runs: strings or objects)",
    "array": "an array: a nested list or a {dtype, shape, base64} object",
}


@cache
def spec() -> dict[str, Any]:
    return json.loads(resources.files("flashviz").joinpath("data/trace_shape.json").read_text())


def shape_problem(doc: dict[str, Any]) -> str | None:
    """The first part of `doc` a view cannot read, in one line ("steps[3].code must be a string (got nothing)"),
    or None."""
    s = spec()
    return _walk(doc, s["trace"], "", s["defs"])


def compare_problem(doc: Any) -> str | None:
    """The same for a comparison document (GET /api/compare's): what the page's compare view reads."""
    if not isinstance(doc, dict):
        return f"the comparison must be an object (got {kind_of(doc)})"
    s = spec()
    return _walk(doc, s["compare"], "", s["defs"])


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) <= MAX_SAFE


def _atom_ok(v: Any, atom: str) -> bool:
    if atom == "any":
        return True
    if atom == "str":
        return isinstance(v, str)
    if atom == "int":
        return _is_int(v)
    if atom == "num":
        return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")
    if atom == "bool":
        return isinstance(v, bool)
    if atom == "obj":
        return isinstance(v, dict)
    if atom == "list":
        return isinstance(v, list)
    if atom == "span":
        return isinstance(v, list) and len(v) == 2 and all(_is_int(x) for x in v)
    if atom == "rich":
        return isinstance(v, list) and all(isinstance(r, (str, dict)) for r in v)
    if atom == "array":
        return isinstance(v, list) or (isinstance(v, dict) and "dtype" in v and "shape" in v)
    raise ValueError(f"trace_shape.json: no atom {atom!r}")


def words(shape: Any, defs: dict[str, Any]) -> str:
    """What a shape accepts, in words."""
    if isinstance(shape, str):
        atom = shape.rstrip("?")
        text = ATOMS.get(atom, atom)
        return f"{text}, or null" if shape.endswith("?") else text
    if "ref" in shape:
        return words(defs[shape["ref"]], defs)
    if "either" in shape:
        return ", or ".join(words(x, defs) for x in shape["either"])
    null = ", or null" if shape.get("null") else ""
    if "keys" in shape:
        names = [k.rstrip("?") for k in shape["keys"] if not k.endswith("?")]
        return f"an object {{{', '.join(names)}}}{null}" if names else f"an object{null}"
    least = f" of at least {shape['min']}" if shape.get("min") else ""
    if "list" in shape:
        return f"a list{least} ({words(shape['list'], defs)} each){null}"
    return f"an object{least} (name → {words(shape['map'], defs)}){null}"


def _walk(v: Any, shape: Any, at: str, defs: dict[str, Any]) -> str | None:
    if isinstance(shape, dict) and "ref" in shape:
        return _walk(v, defs[shape["ref"]], at, defs)
    if isinstance(shape, str):
        if (v is None and shape.endswith("?")) or _atom_ok(v, shape.rstrip("?")):
            return None
        return f"{at} must be {words(shape, defs)} (got {kind_of(v)})"
    if v is None and shape.get("null"):
        return None
    if "either" in shape:
        wrongs = [_walk(v, x, at, defs) for x in shape["either"]]
        if all(wrongs):  # none fits: what the closest (the last, the fullest form) says
            return wrongs[-1]
        return None
    if "keys" in shape:
        if not isinstance(v, dict):
            return f"{at} must be {words(shape, defs)} (got {kind_of(v)})"
        for key, sub in shape["keys"].items():
            name = key.rstrip("?")
            here = f"{at}.{name}" if at else name
            if name not in v:
                if key.endswith("?"):
                    continue
                return f"{here} is missing (must be {words(sub, defs)})"
            wrong = _walk(v[name], sub, here, defs)
            if wrong:
                return wrong
        return None
    many = shape.get("list", shape.get("map"))
    if "list" in shape:
        if not isinstance(v, list) or len(v) < shape.get("min", 0):
            return f"{at} must be {words(shape, defs)} (got {kind_of(v)})"
        items = [(f"{at}[{k}]", x) for k, x in enumerate(v)]
    else:
        if not isinstance(v, dict) or len(v) < shape.get("min", 0):
            return f"{at} must be {words(shape, defs)} (got {kind_of(v)})"
        items = [(f"{at}.{_name(k)}", x) for k, x in v.items()]
    for here, x in items:
        wrong = _walk(x, many, here, defs)
        if wrong:
            return wrong
    return None


def _name(key: str) -> str:
    return cut(key)


def reference_problem(doc: dict[str, Any]) -> str | None:
    """The first reference between parts that points nowhere (a view would index by it), in one line, or None. Runs
    on a document `shape_problem` passed."""
    tensors, buffers = doc["tensors"], doc["buffers"]
    phases, veils, notes = len(doc["phases"]), len(doc["veils"]), len(doc["carries"]["notes"])

    def missing(at: str, name: str, part: str, names: dict[str, Any]) -> str | None:
        if name in names:
            return None
        return f"{at} names {kind_of(name)}, which is not in {part} ({', '.join(list(names)[:8])})"

    for r, row in enumerate(doc["picture"]["sram_rows"]):
        for c, name in enumerate(row):
            if wrong := missing(f"picture.sram_rows[{r}][{c}]", name, "buffers", buffers):
                return wrong
    for v, group in enumerate(doc["veils"]):
        for q, veil in enumerate(group):
            if wrong := missing(f"veils[{v}][{q}].tensor", veil["tensor"], "tensors", tensors):
                return wrong
    for p, phase in enumerate(doc["phases"]):
        for w, write in enumerate(phase["writes"]):
            if wrong := missing(f"phases[{p}].writes[{w}].tensor", write["tensor"], "tensors", tensors):
                return wrong
    for k, step in enumerate(doc["steps"]):
        at = f"steps[{k}]"
        if not step["phase"] < phases:
            return f"{at}.phase must be an index into phases, 0..{phases - 1} (got {step['phase']})"
        for key, count, part in (("veil", veils, "veils"), ("carries_note", notes, "carries.notes")):
            if step[key] is not None and not 0 <= step[key] < count:
                return f"{at}.{key} must be null or an index into {part}, 0..{count - 1} (got {step[key]})"
        for q, tr in enumerate(step["transfers"]):
            if wrong := missing(f"{at}.transfers[{q}].tensor", tr["tensor"], "tensors", tensors):
                return wrong
            for b, name in enumerate(tr["buffers"]):
                if wrong := missing(f"{at}.transfers[{q}].buffers[{b}]", name, "buffers", buffers):
                    return wrong
    return None
