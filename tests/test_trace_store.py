"""Issue 17, item 20: trace files (flashviz.tracing.store, docs/trace-schema.md "Trace files"). `flashviz trace` leaves
out the inputs drawn from the seed (a digest of each kept) and stores its arrays in base85, shuffled and deflated; every
reader (`view`, `export --trace`, `flashviz.show(path)`) draws the inputs again, checks them bit for bit, and hands the
page the very document the server sends for that launch. A digest that differs, or an array that does not decode, is
one line naming it; inputs a user gave stay in the file."""

from __future__ import annotations

import base64
import subprocess
import sys
import zlib

import numpy as np
import orjson
import pytest

import flashviz
from flashviz.model.config import ConfigError
from flashviz.share.trace_files import check_trace_bytes, read_trace_file
from flashviz.tracing.codec import _groups, decode_doc


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True)


def fresh_seed() -> int:
    return int(np.random.default_rng().integers(0, 2**31))


LAUNCHES = [
    ("fa2", ["--n", "40", "--d", "8", "--br", "8", "--bc", "4"]),
    ("fa2", ["--n", "37", "--d", "5", "--br", "4", "--bc", "8", "--block", "3", "--causal"]),
    ("fa2-triton", ["--n", "64", "--d", "32", "--br", "32", "--bc", "16"]),  # bf16 inputs: drawn, then rounded
    ("fa2-backward", ["--n", "12", "--d", "4", "--br", "4", "--bc", "4"]),  # dO drawn after Q, K, V
    ("standard", ["--n", "10", "--d", "3", "--br", "4", "--bc", "4", "--causal"]),
]


@pytest.mark.parametrize(("algo", "flags"), LAUNCHES, ids=[f"{a}-{k}" for k, (a, _) in enumerate(LAUNCHES)])
def test_a_file_leaves_the_seeds_inputs_out_and_reads_back_as_the_servers_document(tmp_path, algo, flags):
    seed = fresh_seed()
    path = tmp_path / "t.json"
    done = run_cli("trace", "--algo", algo, *flags, "--seed", str(seed), "-o", str(path))
    assert done.returncode == 0, done.stderr
    written = orjson.loads(path.read_bytes())
    assert written["schema"] == "flashviz.trace/4"
    for name, v in written["inputs"].items():
        assert set(v) == {"dtype", "shape", "drawn"}, name  # no values: drawn again on reading
        assert v["drawn"]["seed"] == seed and len(v["drawn"]["blake2b"]) == 32
    stored = [v for _, g in _groups(written) for v in g.values() if isinstance(v, dict) and "base85" in v]
    assert stored and not any("base64" in v for _, g in _groups(written) for v in g.values() if isinstance(v, dict))
    assert any(v.get("compression") == "shuffle-deflate" for v in stored)
    _, data = read_trace_file(path)
    # what the page gets is what /api/trace (and flashviz.trace) makes for the same launch, key for key
    valued = [f for f in flags if f != "--causal"]
    kw = dict(zip(valued[::2], valued[1::2], strict=True))
    made = flashviz.trace(
        algo=algo,
        n=int(kw["--n"]),
        d=int(kw["--d"]),
        br=int(kw["--br"]),
        bc=int(kw["--bc"]),
        seed=seed,
        causal="--causal" in flags,
        block=int(kw["--block"]) if "--block" in kw else None,
    )
    assert orjson.loads(data) == orjson.loads(made.to_json(compact=True))
    for name in made.inputs:
        np.testing.assert_array_equal(decode_doc(orjson.loads(path.read_bytes()))["inputs"][name], made.inputs[name])


def test_inputs_a_user_gave_stay_in_the_file_and_only_the_drawn_one_is_left_out(tmp_path, rng):
    n, d = 9, 4
    arrays = {k: rng.standard_normal((n, d)).astype(np.float32) for k in "QKV"}
    np.savez(tmp_path / "in.npz", **arrays)
    path = tmp_path / "t.json"
    done = run_cli("trace", "--algo", "fa2-backward", "--inputs", str(tmp_path / "in.npz"), "-o", str(path))
    assert done.returncode == 0, done.stderr
    written = orjson.loads(path.read_bytes())
    assert {k for k, v in written["inputs"].items() if "drawn" in v} == {"dO"}  # Q, K, V are the user's
    doc = decode_doc(orjson.loads(path.read_bytes()))
    for k in "QKV":
        np.testing.assert_array_equal(doc["inputs"][k], arrays[k])


def test_the_file_is_smaller_than_the_document_it_reads_back_as(tmp_path):
    path = tmp_path / "t.json"
    assert run_cli("trace", "--n", "512", "--d", "32", "--br", "32", "--bc", "32", "-o", str(path)).returncode == 0
    _, data = read_trace_file(path)
    assert path.stat().st_size < 0.7 * len(data)


@pytest.fixture
def written(tmp_path) -> tuple:
    path = tmp_path / "t.json"
    done = run_cli("trace", "--n", "16", "--d", "4", "--seed", str(fresh_seed()), "-o", str(path))
    assert done.returncode == 0, done.stderr
    return path, orjson.loads(path.read_bytes())


def one_line(done: subprocess.CompletedProcess) -> str:
    err = done.stderr.decode().strip()
    assert done.returncode == 2 and "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    return err


def test_a_drawn_input_that_is_not_the_files_is_refused_in_one_line_by_every_reader(tmp_path, written):
    path, doc = written
    digest = doc["inputs"]["K"]["drawn"]["blake2b"]
    doc["inputs"]["K"]["drawn"]["blake2b"] = ("0" if digest[0] != "0" else "1") + digest[1:]
    path.write_bytes(orjson.dumps(doc))
    says = "inputs/K drawn again from seed"
    assert says in one_line(run_cli("view", str(path), "--no-browser"))
    assert says in one_line(run_cli("export", str(tmp_path / "p.html"), "--trace", str(path)))
    assert not (tmp_path / "p.html").exists()
    with pytest.raises(ConfigError, match=says) as got:
        flashviz.show(str(path))  # the notebook's reader (no widget is made)
    assert "\n" not in str(got.value)


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("seed", "inputs/Q was drawn from seed"),
        ("digest", "has drawn.blake2b that is not 32 hex digits"),
        ("drawn-and-stored", "is drawn and stored at once"),
        ("drawn-output", "array outputs/O is drawn, which only an input may be"),
        ("base85", "holds base85 that does not decode"),
        ("stream", "holds bytes that do not inflate"),
        ("bomb", "inflates to"),
        ("compression", "has compression 'lzma'"),
        ("length", "holds 3 bytes; its shape and dtype need"),
    ],
)
def test_a_broken_file_array_is_one_line_naming_it(tmp_path, written, how, says):
    path, doc = written
    q, o = doc["inputs"]["Q"], doc["outputs"]["O"]
    if how == "seed":
        q["drawn"]["seed"] += 1
    elif how == "digest":
        q["drawn"]["blake2b"] = "xyz"
    elif how == "drawn-and-stored":
        q["base85"] = o["base85"]
    elif how == "drawn-output":
        doc["outputs"]["O"] = {"dtype": "float32", "shape": o["shape"], "drawn": q["drawn"]}
    elif how == "base85":
        o["base85"] = '"~~~~'[1:]
    elif how == "stream":
        o.update(base85=base64.b85encode(b"not a zlib stream").decode(), compression="shuffle-deflate")
    elif how == "bomb":  # 1 GB of zeros in a few kB, for an array of 16 x 4 floats: at most 257 bytes are inflated
        o.update(base85=base64.b85encode(zlib.compress(bytes(2**30), 9)).decode(), compression="shuffle-deflate")
    elif how == "compression":
        o["compression"] = "lzma"
    elif how == "length":
        doc["outputs"]["O"] = {"dtype": "float32", "shape": o["shape"], "base85": base64.b85encode(b"abc").decode()}
    path.write_bytes(orjson.dumps(doc))
    line = one_line(run_cli("export", str(tmp_path / "p.html"), "--trace", str(path)))
    assert says in line and line.startswith("flashviz: error: --trace:"), line


def test_a_document_without_file_parts_is_read_as_it_is(written):
    """What /api/trace sends is a /4 document too: a reader takes it as it is (nothing to draw or inflate)."""
    t = flashviz.trace("fa2", 16, 4, 4, 4, seed=2)
    body = t.to_json(compact=True)
    assert orjson.loads(orjson.dumps(check_trace_bytes(body, "t.json", "--trace"))) == orjson.loads(body)


def test_base85_is_the_standard_librarys():
    """trace_store's NumPy base85 writes and reads what Python's base64.b85encode/b85decode do (the documented
    decoder uses those), at every length and for bytes that fill a group to its top."""
    from flashviz.tracing.store import b85decode, b85encode  # (trace_codec's, re-exported)

    rng = np.random.default_rng()
    for n in [*range(0, 24), 1000, 4097, 65539]:
        data = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
        text = b85encode(data)
        assert text == base64.b85encode(data).decode()
        assert b85decode(text) == data
    assert b85encode(b"\xff" * 9) == base64.b85encode(b"\xff" * 9).decode()
    for bad in ("~~~~~", 'ab"c', "ab cd", "|NsC1~"):  # a group past 2^32 - 1, characters outside the alphabet
        with pytest.raises(ValueError):
            base64.b85decode(bad)
        with pytest.raises(ValueError):
            b85decode(bad)
