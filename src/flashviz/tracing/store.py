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
a file into one. Reading a file is flashviz.tracing.codec's (`restore`, `file_problem`, base85 and the shuffle): this
module writes one (`pack`). At N=4096, D=128, Br=Bc=64 the file is 9.8 MB where the whole document is 20.2 MB
(bench/results/trace-size.md).
"""

from __future__ import annotations

import base64
import zlib
from typing import Any

import numpy as np

from flashviz.tracing.codec import (
    DTYPES,
    SHUFFLE_DEFLATE,
    _groups,
    b85decode,
    b85encode,
    digest,
    is_compact,
    is_packed,
    restore,
    shuffled,
)

LEVEL = 6  # zlib's default (1 is as small within 0.3% on float32, and barely faster)


def pack(doc: dict[str, Any], config: dict[str, Any], inputs: dict[str, np.ndarray]) -> dict[str, Any]:
    """The compact document `doc` of a Trace (its `config`, its `inputs` as arrays) as a file holds it (in place): its
    drawn inputs left out with their digests, its stored arrays in base85, shuffled and deflated where that makes them
    smaller."""
    drawn = set(config.get("random_inputs") or ()) if config.get("seed") is not None else set()
    held = doc.get("inputs") or {}
    for name in list(held):
        v = held[name]
        if name in drawn and is_compact(v) and "base64" in v:
            held[name] = {
                "dtype": v["dtype"],
                "shape": v["shape"],
                "drawn": {"seed": config["seed"], "blake2b": digest(inputs[name])},
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


__all__ = ["b85decode", "b85encode", "digest", "is_packed", "pack", "packed", "restore"]
