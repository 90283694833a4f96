"""The file-size options of issue 17 item 20 (`flashviz trace` at N=4096 D=128 Br=Bc=64, target 10 MB), measured on
one trace: the compact file as written, gzipped; its stored arrays as raw bytes, deflated, byte-shuffled and deflated;
the same without the inputs drawn from the seed. Sizes only (no encoding is changed by this script).

    PYTHONPATH=src python bench/trace_file_options.py [--n 4096 --d 128 --br 64 --bc 64]
"""

from __future__ import annotations

import argparse
import base64
import gzip
import os
import platform
import time
import zlib

import numpy as np
import orjson

import flashviz
from flashviz.tracing.codec import DTYPES, _groups, is_compact


def shuffled(raw: bytes, width: int) -> bytes:
    return np.frombuffer(raw, np.uint8).reshape(-1, width).T.tobytes()


def main() -> None:
    ap = argparse.ArgumentParser()
    for name, default in (("n", 4096), ("d", 128), ("br", 64), ("bc", 64)):
        ap.add_argument(f"--{name}", type=int, default=default)
    a = ap.parse_args()
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}, fa2 N={a.n} D={a.d} Br={a.br} Bc={a.bc}"
    )
    body = flashviz.trace("fa2", a.n, a.d, a.br, a.bc, seed=0).to_json(compact=True)
    doc = orjson.loads(body)
    stored = {}
    for path, group in _groups(doc):
        for key, v in group.items():
            if is_compact(v) and "base64" in v:
                stored[f"{path}/{key}"] = (base64.b64decode(v["base64"]), DTYPES[v["dtype"]][1])
    for _, group in _groups(doc):
        for v in group.values():
            if is_compact(v) and "base64" in v:
                v["base64"] = ""
    rest = orjson.dumps(doc)  # the JSON around the stored arrays' bytes
    text, text_gz = len(rest), len(gzip.compress(rest, 6))
    seeded = [p for p in stored if p.startswith("inputs/")]

    def total(paths, how) -> int:
        return sum(len(how(*stored[p])) for p in paths)

    ident = lambda r, w: r  # noqa: E731
    deflate = lambda r, w: zlib.compress(r, 6)  # noqa: E731
    shuf = lambda r, w: zlib.compress(shuffled(r, w), 6)  # noqa: E731
    every = list(stored)
    no_inputs = [p for p in stored if p not in seeded]
    rows = [
        ("compact JSON file as written", len(body)),
        ("  the same gzipped (-o t.json.gz)", len(gzip.compress(body, 6))),
        ("arrays as raw bytes + the rest of the JSON", total(every, ident) + text),
        ("arrays deflated + the rest gzipped", total(every, deflate) + text_gz),
        ("arrays byte-shuffled and deflated + the rest gzipped", total(every, shuf) + text_gz),
        ("  without the seed's inputs (Q, K, V drawn again on read)", total(no_inputs, shuf) + text_gz),
        ("  without the seed's inputs, arrays deflated (no shuffle)", total(no_inputs, deflate) + text_gz),
    ]
    print(
        f"stored arrays: {len(stored)}; the JSON besides their bytes: {text / 1e6:.2f} MB, "
        f"{text_gz / 1e6:.2f} MB gzipped"
    )
    for p in [*seeded, "outputs/O"]:
        if p in stored:
            r, w = stored[p]
            print(
                f"  {p}: raw {len(r) / 1e6:.2f} MB, deflate {len(deflate(r, w)) / 1e6:.2f}, shuffled "
                f"{len(shuf(r, w)) / 1e6:.2f}"
            )
    print("| option | bytes |\n|---|---:|")
    for what, n in rows:
        print(f"| {what} | {n / 1e6:.2f} MB |")


if __name__ == "__main__":
    main()
