"""Trace files (docs/trace-schema.md, "Trace files"): what `flashviz trace` writes is the compact document made smaller
three ways, and every reader (`flashviz view`, `flashviz export --trace`, `flashviz.show(path)`,
`trace_codec.decode_doc`) makes it whole again before anything draws it (`restore`):

- an input drawn from the trace's seed (`config.random_inputs`) is not stored: `{"dtype", "shape", "drawn": {"seed",
  "blake2b"}}` in its place, the digest of its values (little-endian float32, C order; BLAKE2b of 16 bytes, hex). A
  reader draws it again as the engine did (`inputs.random_inputs`, then the kernel's rounding, `precision.stored`) and
  refuses the file in one line if the digest differs (another NumPy may draw other numbers). Inputs a user gave
  (`--inputs x.npz`) are stored.
- a stored array's bytes are written in base85 (`"base85"`, RFC 1924's alphabet, Python's `base64.b85encode`: 5
  characters for 4 bytes where base64 takes 5⅓), and
- where it makes them smaller, byte-shuffled and deflated (`"compression": "shuffle-deflate"`: byte 0 of every element,
  then byte 1 of every element, ..., as one zlib stream, RFC 1950): random float32 values barely deflate, but their
  exponent bytes, side by side, do.

The server and the exported pages send whole documents (no drawn input, every array in plain base64): `restore` turns
a file into one. At N=4096, D=128, Br=Bc=64 the file is 9.8 MB where the whole document is 20.2 MB
(bench/results/trace-size.md).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import zlib
from typing import TYPE_CHECKING, Any

import numpy as np

from .config import ConfigError
from .trace_codec import DTYPES, _groups, decode_array, encode_array, is_compact

if TYPE_CHECKING:
    from .trace import Trace

LEVEL = 6  # zlib's default (1 is as small within 0.3% on float32, and barely faster)
DIGEST = re.compile(r"[0-9a-f]{32}")
SHUFFLE_DEFLATE = "shuffle-deflate"


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


def pack(doc: dict[str, Any], trace: Trace) -> dict[str, Any]:
    """The compact document `doc` of `trace` as a file holds it (in place): its drawn inputs left out with their
    digests, its stored arrays in base85, shuffled and deflated where that makes them smaller."""
    drawn = set(trace.config.get("random_inputs") or ()) if trace.config.get("seed") is not None else set()
    inputs = doc.get("inputs") or {}
    for name in list(inputs):
        v = inputs[name]
        if name in drawn and is_compact(v) and "base64" in v:
            inputs[name] = {
                "dtype": v["dtype"],
                "shape": v["shape"],
                "drawn": {"seed": trace.config["seed"], "blake2b": digest(trace.inputs[name])},
            }
    for _, group in _groups(doc):
        for key, v in group.items():
            if is_compact(v) and "base64" in v:
                group[key] = packed(v)
    return doc


def packed(v: dict[str, Any]) -> dict[str, Any]:
    """One stored array (base64) as a file stores it."""
    raw = base64.b64decode(v["base64"])
    head = {k: x for k, x in v.items() if k != "base64"}
    squeezed = zlib.compress(shuffled(raw, DTYPES[v["dtype"]][1]), LEVEL)
    if len(squeezed) < len(raw):
        return {**head, "base85": b85encode(squeezed), "compression": SHUFFLE_DEFLATE}
    return {**head, "base85": b85encode(raw)}


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


def file_problem(v: dict[str, Any], need: int) -> str | None:
    """What is wrong with an array only a trace file holds (drawn, base85, compressed), `need` the bytes its dtype and
    shape take; None when it is whole."""
    if "drawn" in v:
        return _drawn_problem(v)
    compression = v.get("compression")
    if compression not in (None, SHUFFLE_DEFLATE):
        return f"has compression {str(compression)[:40]!r}; expected {SHUFFLE_DEFLATE} (or none)"
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
        return f"has drawn.seed {str(drawn['seed'])[:40]!r}; expected an integer >= 0"
    if not isinstance(drawn["blake2b"], str) or not DIGEST.fullmatch(drawn["blake2b"]):
        return "has drawn.blake2b that is not 32 hex digits"
    if v.get("dtype") not in ("float32", "bfloat16"):
        return f"has dtype {str(v.get('dtype'))[:40]!r}; a drawn input is float32 or bfloat16"
    return None


def is_packed(doc: Any) -> bool:
    """Whether a document holds anything only a trace file holds (a drawn input, base85, compression)."""
    if not isinstance(doc, dict):
        return False
    keys = ("drawn", "base85", "compression")
    return any(isinstance(v, dict) and any(k in v for k in keys) for _, g in _groups(doc) for v in g.values())


def restore(doc: dict[str, Any], where: str, flag: str) -> None:
    """Make a file's document whole, in place: each drawn input drawn again from its seed and checked against its
    digest, each array stored as the server sends it (plain base64). The document must have passed
    trace_codec.check_arrays and, for drawn inputs, have a config with integers n, d, seed (tracefile's checks). One
    ConfigError naming the input otherwise."""
    from .inputs import random_inputs
    from .precision import stored

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
        again = random_inputs(cfg["n"], cfg["d"], seed, tuple(inputs))  # the algorithm's inputs, in its order
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
