"""Compact arrays in a Trace (docs/trace-schema.md, "Compact arrays"): each float array of `inputs`, `outputs` and
the steps' `sram`, `carries` and substeps' `values` as `{"dtype", "shape", "base64"}` (little-endian, C order), or,
where its values are already in the document, a reference to them (`{"dtype", "shape", "ref", "rows"?}`).

`bfloat16` is used only where it is lossless: a float32 array every element of which has its low 16 bits zero
(the values of a bf16 kernel, fa2-triton's Q, K, V, O and their tiles, and arrays of zeros). Every other float32
array is `float32`; a float64 array `float64`. Infinities and NaN are themselves (no null, no strings).

`encode_doc` turns a plain document (the arrays as NumPy arrays) into a compact one; `decode_doc` turns a compact
document back into NumPy arrays (float32 for bfloat16); `check_arrays` checks every compact array of a document
(dtype, shape, the length of its bytes, that each reference names an earlier array of that shape), one ConfigError
naming the array otherwise.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from flashviz.model.config import ConfigError

# dtype name -> (NumPy dtype of the stored bytes, bytes per element)
DTYPES: dict[str, tuple[str, int]] = {
    "float32": ("<f4", 4),
    "float64": ("<f8", 8),
    "bfloat16": ("<u2", 2),
}
# the most elements one array may say it holds (a trace file is at most 512 MiB)
MAX_ELEMENTS = 2**28


def is_compact(x: Any) -> bool:
    return isinstance(x, dict) and "shape" in x and ("base64" in x or "ref" in x)


def encode_array(a: np.ndarray) -> dict[str, Any]:
    """{"dtype", "shape", "base64"}: bfloat16 when that loses nothing, else the array's own float width."""
    shape = [int(s) for s in a.shape]
    if a.dtype == np.float64:
        data = np.ascontiguousarray(a, dtype="<f8").tobytes()
        return {"dtype": "float64", "shape": shape, "base64": base64.b64encode(data).decode("ascii")}
    f = np.ascontiguousarray(a, dtype="<f4")
    bits = f.view("<u4")
    if not (bits & 0xFFFF).any():
        data = (bits >> 16).astype("<u2").tobytes()
        return {"dtype": "bfloat16", "shape": shape, "base64": base64.b64encode(data).decode("ascii")}
    return {"dtype": "float32", "shape": shape, "base64": base64.b64encode(f.tobytes()).decode("ascii")}


def decode_array(x: dict[str, Any]) -> np.ndarray:
    """The values of one stored (not referenced) compact array; bfloat16 comes back as float32."""
    kind, _ = DTYPES[x["dtype"]]
    raw = np.frombuffer(base64.b64decode(x["base64"]), dtype=kind)
    if x["dtype"] == "bfloat16":
        raw = (raw.astype("<u4") << 16).view("<f4")
    return raw.reshape(x["shape"])


def _groups(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, the dict of arrays) in document order: inputs, outputs, then per step sram, carries, substeps."""
    for name in ("inputs", "outputs"):
        if isinstance(doc.get(name), dict):
            yield name, doc[name]
    steps = doc.get("steps")
    for k, s in enumerate(steps if isinstance(steps, list) else []):
        if not isinstance(s, dict):
            continue
        for name in ("sram", "carries"):
            if isinstance(s.get(name), dict):
                yield f"steps/{k}/{name}", s[name]
        subs = s.get("substeps")
        for q, sub in enumerate(subs if isinstance(subs, list) else []):
            if isinstance(sub, dict) and isinstance(sub.get("values"), dict):
                yield f"steps/{k}/substeps/{q}/values", sub["values"]


def _float_array(v: Any) -> bool:
    return isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.ndim >= 1


def encode_doc(doc: dict[str, Any], steps: list[Any] | None = None) -> dict[str, Any]:
    """Replace, in place, every float array of the document's array groups by its compact form. An array equal
    (bit for bit, same shape) to one earlier in the document becomes a reference to it; an SRAM buffer a step filled
    from rows [a, b) of an input tensor (its transfer, `steps[k].transfers`), and equal to them, a reference to
    those rows. `steps`: the Trace's Step objects, for their transfers (the document's steps hold plain dicts)."""
    seen: dict[bytes, str] = {}
    inputs = dict(doc.get("inputs") or {})  # before they are encoded: the tiles' references compare with them
    for path, group in _groups(doc):
        tiles = _tiles(inputs, path, steps)
        for key, v in list(group.items()):
            if not _float_array(v):
                continue
            here = f"{path}/{key}"
            tile = tiles.get(key)
            if tile is not None:
                tensor, a, b = tile
                whole = inputs.get(tensor)
                if (
                    isinstance(whole, np.ndarray)
                    and v.shape == (b - a, *whole.shape[1:])
                    and whole.dtype == v.dtype
                    and np.ascontiguousarray(whole[a:b]).tobytes() == np.ascontiguousarray(v).tobytes()
                ):
                    group[key] = {**_head(v), "ref": f"inputs/{tensor}", "rows": [a, b]}
                    continue
            digest = hashlib.blake2b(
                np.ascontiguousarray(v).tobytes() + repr((v.dtype.str, v.shape)).encode(), digest_size=16
            ).digest()
            if digest in seen:
                group[key] = {**_head(v), "ref": seen[digest]}
                continue
            seen[digest] = here
            group[key] = encode_array(v)
    return doc


def _head(v: np.ndarray) -> dict[str, Any]:
    return {"dtype": "float64" if v.dtype == np.float64 else "float32", "shape": [int(s) for s in v.shape]}


def _tiles(inputs: dict[str, Any], path: str, steps: list[Any] | None) -> dict[str, tuple[str, int, int]]:
    """buffer -> (input tensor, first row, end row) for the reads of step k whose whole columns fill one buffer."""
    parts = path.split("/")
    if steps is None or len(parts) != 3 or parts[2] != "sram":
        return {}
    out: dict[str, tuple[str, int, int]] = {}
    for t in steps[int(parts[1])].transfers:
        whole = inputs.get(t.tensor)
        if t.kind != "read" or len(t.buffers) != 1 or not isinstance(whole, np.ndarray):
            continue
        cols = whole.shape[1] if whole.ndim > 1 else 1
        if tuple(t.cols) == (0, cols):
            out[t.buffers[0]] = (t.tensor, int(t.rows[0]), int(t.rows[1]))
    return out


def decode_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """Replace, in place, every compact array by its values (NumPy; bfloat16 as float32). The document must have
    passed `check_arrays`."""
    done: dict[str, np.ndarray] = {}
    for path, group in _groups(doc):
        for key, v in list(group.items()):
            if is_compact(v):
                group[key] = done[f"{path}/{key}"] = _values(v, done)
    return doc


def _values(x: dict[str, Any], done: dict[str, np.ndarray]) -> np.ndarray:
    if "ref" not in x:
        return decode_array(x)
    a = done[x["ref"]]
    if "rows" in x:
        a = a[x["rows"][0] : x["rows"][1]]
    return a


def check_arrays(doc: dict[str, Any], where: str, flag: str, refs: bool = True) -> None:
    """Every compact array of the document is whole: a known dtype, a shape of non-negative integers, as many bytes
    as the shape needs, a reference to an array before it (rows within it, the shape it says). One ConfigError
    naming the first array that is not. `refs=False` judges each array on its own (its references are not
    followed): what tracefile asks before the file's structure is checked, so that a missing `inputs` is named as
    such rather than as the reference into it."""
    shapes: dict[str, list[int]] = {}
    for path, group in _groups(doc):
        for key, v in group.items():
            if not isinstance(v, dict) or not {"dtype", "shape", "base64", "ref"} & v.keys():
                continue  # a plain array (nested lists) or something else: the file's structure check judges it
            here = f"{path}/{key}"
            if not refs and "ref" in v:
                continue
            problem = _problem(v, shapes)
            if problem is not None:
                raise ConfigError(flag, f"{where}: array {here} {problem} (docs/trace-schema.md, compact arrays)")
            shapes[here] = v["shape"]


def _problem(v: dict[str, Any], shapes: dict[str, list[int]]) -> str | None:
    dtype, shape = v.get("dtype"), v.get("shape")
    if dtype not in DTYPES:
        return f"has dtype {_said(dtype)}; expected one of {', '.join(DTYPES)}"
    if (
        not isinstance(shape, list)
        or not shape
        or not all(type(s) is int and 0 <= s <= MAX_ELEMENTS for s in shape)
        or math.prod(shape) > MAX_ELEMENTS
    ):
        return f"has shape {_said(shape)}; expected a list of integers >= 0 ({MAX_ELEMENTS:,} elements at most)"
    if "ref" in v:
        ref, rows = v["ref"], v.get("rows")
        if not isinstance(ref, str) or ref not in shapes:
            return f"refers to {_said(ref)}, which is not an array before it"
        target = list(shapes[ref])
        if rows is not None:
            if (
                not isinstance(rows, list)
                or len(rows) != 2
                or not all(type(r) is int for r in rows)
                or not 0 <= rows[0] <= rows[1] <= target[0]
            ):
                return f"has rows {_said(rows)}; expected [first, end) within the {target[0]} rows of {ref}"
            target[0] = rows[1] - rows[0]
        if target != shape:
            return f"has shape {shape} but its reference {ref} holds {target}"
        return None
    text = v.get("base64")
    if not isinstance(text, str):
        return "has no base64 string"
    need = math.prod(shape) * DTYPES[dtype][1]
    try:
        have = len(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError):
        return "holds base64 that does not decode"
    if have != need:
        return f"holds {have:,} bytes; shape {shape} of {dtype} needs {need:,}"
    return None


def _said(x: Any) -> str:
    s = repr(x)
    return s if len(s) <= 40 else s[:39] + "…"


def honest(a: Any) -> Any:
    if not isinstance(a, np.ndarray) or a.dtype.kind != "f" or np.isfinite(a).all():
        return a
    nan, posinf = np.isnan(a), np.isposinf(a)
    if not (nan.any() or posinf.any()):
        return a  # only −∞: null, as documented
    out = a.astype(object)
    out[nan] = "NaN"
    out[posinf] = "Infinity"
    out[np.isneginf(a)] = None
    return out.tolist()


def to_plain(doc: dict[str, Any]) -> dict[str, Any]:
    """The document `--plain` writes for the same trace, as JSON reads it back: every compact array as nested lists
    (null for −∞; "NaN" and "Infinity" where the array holds them), in place. For readers that want lists."""
    import orjson

    decode_doc(doc)
    for _, group in _groups(doc):
        for key, v in list(group.items()):
            if isinstance(v, np.ndarray):
                group[key] = orjson.loads(orjson.dumps(honest(v), option=orjson.OPT_SERIALIZE_NUMPY))
    return doc


def resolver(doc: dict[str, Any]) -> Callable[[str], np.ndarray]:
    """path -> that compact array's values, decoding only it and what its references name (each once)."""
    index = {f"{path}/{key}": v for path, group in _groups(doc) for key, v in group.items() if is_compact(v)}
    done: dict[str, np.ndarray] = {}

    def values(path: str) -> np.ndarray:
        if path not in done:
            x = index[path]
            if "ref" in x:
                a = values(x["ref"])
                done[path] = a[x["rows"][0] : x["rows"][1]] if "rows" in x else a
            else:
                done[path] = decode_array(x)
        return done[path]

    return values


def step_arrays(doc: dict[str, Any], k: int) -> dict[str, Any]:
    """The arrays of step `k` of a compact document (one that passed `check_arrays`), each stored on its own (its
    references into earlier arrays followed, so the answer needs nothing else): `{"step", "sram", "carries",
    "substeps": [values or null, ...]}`, the holders a step has, as `/api/trace/arrays` answers them. Only the arrays
    step k names and those they refer to are decoded."""
    values = resolver(doc)

    def holder(path: str, group: Any) -> Any:
        if not isinstance(group, dict):
            return None
        return {key: encode_array(values(f"{path}/{key}")) if is_compact(v) else v for key, v in group.items()}

    step = doc["steps"][k]
    out: dict[str, Any] = {"step": k}
    for name in ("sram", "carries"):
        if name in step:
            out[name] = holder(f"steps/{k}/{name}", step[name])
    if isinstance(step.get("substeps"), list):
        out["substeps"] = [
            holder(f"steps/{k}/substeps/{q}/values", sub.get("values") if isinstance(sub, dict) else None)
            for q, sub in enumerate(step["substeps"])
        ]
    return out


def skeleton(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy of a compact document (one that passed `check_arrays`) whose steps' arrays are left out: each becomes
    `{"dtype", "shape", "on_demand": true, "min", "max"}` (over its finite values; null when it has none), for views
    that scale colours over steps they have not fetched. `inputs` and `outputs` stay whole; nothing in them refers
    to a step. What `/api/trace?arrays=on-demand` answers."""
    out = dict(doc)
    out["steps"] = [dict(s) if isinstance(s, dict) else s for s in doc.get("steps") or []]
    values = resolver(doc)

    def stub(path: str, v: dict[str, Any]) -> dict[str, Any]:
        a = values(path)
        finite = a[np.isfinite(a)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (None, None)
        return {"dtype": v["dtype"], "shape": v["shape"], "on_demand": True, "min": lo, "max": hi}

    for k, s in enumerate(out["steps"]):
        if not isinstance(s, dict):
            continue
        for name in ("sram", "carries"):
            if isinstance(s.get(name), dict):
                s[name] = {
                    key: stub(f"steps/{k}/{name}/{key}", v) if is_compact(v) else v for key, v in s[name].items()
                }
        if isinstance(s.get("substeps"), list):
            subs = []
            for q, sub in enumerate(s["substeps"]):
                if isinstance(sub, dict) and isinstance(sub.get("values"), dict):
                    here = f"steps/{k}/substeps/{q}/values"
                    vals = {key: stub(f"{here}/{key}", v) if is_compact(v) else v for key, v in sub["values"].items()}
                    sub = {**sub, "values": vals}
                subs.append(sub)
            s["substeps"] = subs
    return out
