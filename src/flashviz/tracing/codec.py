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
import re
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from flashviz.model.config import ConfigError
from flashviz.model.echo import cut, shown

# dtype name -> (NumPy dtype of the stored bytes, bytes per element)
DTYPES: dict[str, tuple[str, int]] = {
    "float32": ("<f4", 4),
    "float64": ("<f8", 8),
    "bfloat16": ("<u2", 2),
}
# the most elements one array may say it holds (a trace file is at most 512 MiB)
MAX_ELEMENTS = 2**28


def is_compact(x: Any) -> bool:
    return isinstance(x, dict) and "shape" in x and ("base64" in x or "ref" in x or "base85" in x)


def stored_bytes(x: dict[str, Any]) -> bytes:
    """The bytes of one stored array's values (little-endian, C order): its base64, or in a trace file its base85,
    undone, and its compression (flashviz.tracing.store) undone. The array must have passed `check_arrays`."""
    if "base85" in x:
        return unpacked(x)
    return base64.b64decode(x["base64"])


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
    """The values of one stored (not referenced) compact array, deflated or not (a trace file's:
    flashviz.tracing.store); bfloat16 comes back as float32."""
    kind, _ = DTYPES[x["dtype"]]
    raw = np.frombuffer(stored_bytes(x), dtype=kind)
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
    passed `check_arrays`. A trace file's drawn inputs are drawn again first (flashviz.tracing.store.restore: a
    ConfigError when one is not the file's)."""
    if is_packed(doc):
        restore(doc, "the trace", "trace")
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


def check_arrays(
    doc: dict[str, Any], where: str, flag: str, refs: bool = True, own: bool = True, inflate: bool = True
) -> None:
    """Every compact array of the document is whole: a known dtype, a shape of non-negative integers, as many bytes
    as the shape needs, a reference to an array before it (rows within it, the shape it says). One ConfigError
    naming the first array that is not. `refs=False` judges each array on its own (its references are not
    followed): what tracefile asks before the file's structure is checked, so that a missing `inputs` is named as
    such rather than as the reference into it. `inflate=False` leaves a trace file's deflated arrays deflated (their
    dtype, shape and encoding judged, not the length they inflate to): what a reader asks before it has held their
    shapes against the file's config (flashviz.tracing.file_arrays), so that a file cannot make it allocate what its
    config does not imply. `own=False` follows the references and inflates each deflated array, taking every stored
    array's dtype, shape and encoding as judged already (by a call with `refs=False, inflate=False`)."""
    shapes: dict[str, list[int]] = {}
    for path, group in _groups(doc):
        for key, v in group.items():
            if not isinstance(v, dict) or not {"dtype", "shape", "base64", "ref", "drawn"} & v.keys():
                continue  # a plain array (nested lists) or something else: the file's structure check judges it
            here = f"{path}/{key}"
            if not refs and "ref" in v:
                continue
            if "drawn" in v and path != "inputs":
                raise ConfigError(flag, f"{where}: array {here} is drawn, which only an input may be {SEE}")
            if not own and "ref" not in v:
                problem = _inflation_problem(v)
            else:
                problem = _problem(v, shapes, inflate)
            if problem is not None:
                raise ConfigError(flag, f"{where}: array {here} {problem} {SEE}")
            shapes[here] = v["shape"]


SEE = "(docs/trace-schema.md, compact arrays)"


def _inflation_problem(v: dict[str, Any]) -> str | None:
    """What is wrong with the bytes a deflated array inflates to (its dtype, shape and encoding judged already)."""
    if v.get("compression") != SHUFFLE_DEFLATE:
        return None
    return file_problem(v, math.prod(v["shape"]) * DTYPES[v["dtype"]][1])


def _problem(v: dict[str, Any], shapes: dict[str, list[int]], inflate: bool = True) -> str | None:
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
    if "drawn" in v or "base85" in v or "compression" in v:  # a trace file's (flashviz.tracing.store)
        return file_problem(v, math.prod(shape) * DTYPES[dtype][1], inflate)
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
    return cut(repr(x))


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


# ---- trace files (flashviz.tracing.store writes them): reading their arrays, and restoring a file ----

SHUFFLE_DEFLATE = "shuffle-deflate"
DIGEST = re.compile(r"[0-9a-f]{32}")


# base85 as Python's base64.b85encode writes it (RFC 1924's alphabet; each 4 bytes, big-endian, as 5 digits; the last
# group padded with zero bytes, whose digits are dropped), in NumPy: the standard library's runs in Python, 2 s a
# 10 MB file here
B85 = np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~", np.uint8)
B85_VALUE = np.full(256, 255, np.uint8)
B85_VALUE[B85] = np.arange(85, dtype=np.uint8)


def b85encode(data: bytes) -> str:
    """base64.b85encode(data).decode(), fast."""
    pad = -len(data) % 4
    words = np.frombuffer(data + bytes(pad), ">u4").astype(np.uint32)  # (groups,)
    digits = np.empty((words.size, 5), np.uint8)  # (groups, 5), the most significant first
    for k in range(4, -1, -1):
        words, digit = np.divmod(words, np.uint32(85))
        digits[:, k] = digit
    text = B85[digits].tobytes()
    return (text[: len(text) - pad] if pad else text).decode("ascii")


def b85decode(text: str) -> bytes:
    """base64.b85decode(text), fast; ValueError for a character outside the alphabet or a group past 2^32 - 1."""
    raw = text.encode("ascii")
    pad = -len(raw) % 5
    values = B85_VALUE[np.frombuffer(raw + b"~" * pad, np.uint8)]
    if (values == 255).any():
        raise ValueError("a character outside base85's alphabet")
    groups = values.reshape(-1, 5)
    words = groups[:, 0].astype(np.uint64)  # (groups,)
    for k in range(1, 5):
        words = words * np.uint64(85) + groups[:, k]
    if (words > 0xFFFFFFFF).any():
        raise ValueError("a base85 group past 2^32 - 1")
    out = words.astype(">u4").tobytes()
    return out[: len(out) - pad] if pad else out


def digest(a: np.ndarray) -> str:
    """The digest a drawn input carries: BLAKE2b (16 bytes, hex) of its values as little-endian float32, C order."""
    return hashlib.blake2b(np.ascontiguousarray(a, dtype="<f4").tobytes(), digest_size=16).hexdigest()


def shuffled(raw: bytes, width: int) -> bytes:
    """Byte 0 of every element, then byte 1 of every element, ... (elements of `width` bytes)."""
    return np.ascontiguousarray(np.frombuffer(raw, np.uint8).reshape(-1, width).T).tobytes()


def unshuffled(data: bytes, width: int) -> bytes:
    return np.ascontiguousarray(np.frombuffer(data, np.uint8).reshape(width, -1).T).tobytes()


def unpacked(v: dict[str, Any]) -> bytes:
    """The bytes of a file's stored array (base85 or base64, shuffled and deflated or not). It must have passed
    `file_problem` (trace_codec.check_arrays)."""
    data = b85decode(v["base85"]) if "base85" in v else base64.b64decode(v["base64"])
    if v.get("compression") == SHUFFLE_DEFLATE:
        width = DTYPES[v["dtype"]][1]
        need = int(np.prod(v["shape"])) * width
        data = unshuffled(_inflated(data, need) or b"", width)
    return data


def _inflated(data: bytes, need: int) -> bytes | None:
    """At most need + 1 bytes of the zlib stream `data` (a file cannot make this allocate more than its shape says);
    None when it is not one."""
    try:
        z = zlib.decompressobj()
        out = z.decompress(data, need + 1)
    except zlib.error:
        return None
    return out if z.eof or len(out) > need else None


def file_problem(v: dict[str, Any], need: int, inflate: bool = True) -> str | None:
    """What is wrong with an array only a trace file holds (drawn, base85, compressed), `need` the bytes its dtype and
    shape take; None when it is whole. `inflate=False`: a deflated array's stream is not inflated (its length is
    judged later, once its shape is known to be the config's)."""
    if "drawn" in v:
        return _drawn_problem(v)
    compression = v.get("compression")
    if compression not in (None, SHUFFLE_DEFLATE):
        return f"has compression {cut(str(compression))!r}; expected {SHUFFLE_DEFLATE} (or none)"
    if "base85" in v:
        if "base64" in v:
            return "holds both base64 and base85"
        if not isinstance(v["base85"], str):
            return "has a base85 that is not a string"
        try:
            data = b85decode(v["base85"])
        except (ValueError, UnicodeEncodeError):
            return "holds base85 that does not decode"
    else:
        if not isinstance(v.get("base64"), str):
            return "has no base64 or base85 string"
        try:
            data = base64.b64decode(v["base64"], validate=True)
        except (binascii.Error, ValueError):
            return "holds base64 that does not decode"
    if compression is None:
        return None if len(data) == need else f"holds {len(data):,} bytes; its shape and dtype need {need:,}"
    if not inflate:
        return None
    out = _inflated(data, need)
    if out is None:
        return "holds bytes that do not inflate (not a zlib stream)"
    if len(out) != need:
        return f"inflates to {len(out):,}{'+' if len(out) > need else ''} bytes; its shape and dtype need {need:,}"
    return None


def _drawn_problem(v: dict[str, Any]) -> str | None:
    drawn = v.get("drawn")
    if "base64" in v or "base85" in v or "ref" in v:
        return "is drawn and stored at once (a drawn input holds no values)"
    if not isinstance(drawn, dict) or set(drawn) != {"seed", "blake2b"}:
        return 'has drawn that is not {"seed", "blake2b"}'
    if type(drawn["seed"]) is not int or drawn["seed"] < 0:
        return f"has drawn.seed {_json_said(drawn['seed'])}; expected an integer >= 0"
    if not isinstance(drawn["blake2b"], str) or not DIGEST.fullmatch(drawn["blake2b"]):
        return "has drawn.blake2b that is not 32 hex digits"
    if v.get("dtype") not in ("float32", "bfloat16"):
        return f"has dtype {cut(str(v.get('dtype')))!r}; a drawn input is float32 or bfloat16"
    return None


def _json_said(x: Any) -> str:
    """A JSON value as a message names it, its kind said where its text alone would mislead (the string "0")."""
    if x is None:
        return "null"
    if isinstance(x, bool):
        return f"{'true' if x else 'false'}, a boolean"
    if isinstance(x, str):
        return f"{shown(x)}, a string"
    if isinstance(x, (list, dict)):
        return "a list" if isinstance(x, list) else "an object"
    return shown(x)


def is_packed(doc: Any) -> bool:
    """Whether a document holds anything only a trace file holds (a drawn input, base85, compression)."""
    if not isinstance(doc, dict):
        return False
    keys = ("drawn", "base85", "compression")
    return any(isinstance(v, dict) and any(k in v for k in keys) for _, g in _groups(doc) for v in g.values())


def _option_rows(cfg: dict[str, Any], name: str, plain: int) -> int:
    """A config's `group` or `nk` (the options of real models) where it is an integer within its field's bounds
    (flashviz.model.fields), else `plain`: a drawn input of other rows then fails its digest, in one line."""
    from flashviz.model.fields import BY_NAME

    value = cfg.get(name)
    lo, hi = BY_NAME[name].bounds_at("engine")
    ok = isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi
    return value if ok else plain  # type: ignore[return-value]


def restore(doc: dict[str, Any], where: str, flag: str) -> None:
    """Make a file's document whole, in place: each drawn input drawn again from its seed and checked against its
    digest, each array stored as the server sends it (plain base64). The document must have passed
    trace_codec.check_arrays and, for drawn inputs, have a config with integers n, d, seed (tracefile's checks). One
    ConfigError naming the input otherwise."""
    from flashviz.model.inputs import random_inputs
    from flashviz.model.precision import stored

    held = doc.get("inputs")
    inputs: dict[str, Any] = held if isinstance(held, dict) else {}
    drawn = {k: v for k, v in inputs.items() if isinstance(v, dict) and "drawn" in v}
    if drawn:
        cfg = doc.get("config") or {}
        seed = cfg["seed"] if isinstance(cfg.get("seed"), int) else -1  # -1: no seed, so no drawn input is its
        for name, v in drawn.items():
            if v["drawn"]["seed"] != seed:
                said = f"inputs/{name} was drawn from seed {v['drawn']['seed']}, but config.seed is {cfg.get('seed')!r}"
                raise ConfigError(flag, f"{where}: {said}")
        # the rows of each input where the launch ran the options of real models (Config.input_rows: Q of a group
        # of q heads, K and V of Nk keys); a plain launch's are N
        heads, nk = _option_rows(cfg, "group", 1), _option_rows(cfg, "nk", cfg["n"])
        rows = {"Q": heads * cfg["n"], "K": nk, "V": nk, "dO": heads * cfg["n"]}
        again = random_inputs(cfg["n"], cfg["d"], seed, tuple(inputs), rows)  # the algorithm's inputs, in its order
        for name, v in drawn.items():
            a = stored(again[name], cfg.get("dtype") or "float32")
            if list(a.shape) != v["shape"]:
                raise ConfigError(flag, f"{where}: inputs/{name} has shape {v['shape']}, but N x D is {list(a.shape)}")
            if digest(a) != v["drawn"]["blake2b"]:
                raise ConfigError(
                    flag,
                    f"{where}: inputs/{name} drawn again from seed {seed} is not the one the file was made with (its "
                    "digest differs: this NumPy draws other numbers); write the trace again here, or with --plain, "
                    "which stores its inputs",
                )
            inputs[name] = encode_array(a)
    for _, group in _groups(doc):
        for key, v in group.items():
            if isinstance(v, dict) and ("base85" in v or "compression" in v):
                group[key] = encode_array(decode_array(v))
