"""Issue 17, item 20: compact arrays in traces (flashviz.tracing.codec, docs/trace-schema.md "Compact arrays"). A
compact
trace decodes value for value to the `--plain` one (fresh random inputs, through the CLI); bfloat16 only where it is
lossless; tiles read whole from an input are references to its rows; a broken compact array in a trace file is one
line naming it; a trace of the previous schema is refused in one line; /api/trace is gzipped when asked."""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import sys

import numpy as np
import orjson
import pytest
from fastapi.testclient import TestClient

from flashviz import server
from flashviz.model.config import Config, ConfigError
from flashviz.tracing import codec as trace_codec
from flashviz.tracing.build import make_trace
from flashviz.tracing.codec import check_arrays, decode_doc, encode_array, to_plain
from flashviz.tracing.trace import SCHEMA


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True)


def npz(tmp_path, rng, n: int, d: int, extra: dict | None = None) -> str:
    path = tmp_path / "in.npz"
    arrays = {k: rng.standard_normal((n, d)).astype(np.float32) for k in "QKV"}
    np.savez(path, **arrays, **(extra or {}))
    return str(path)


CASES = [
    ("fa2", 13, 5, 4, 3, False),
    ("fa2", 16, 8, 8, 4, True),
    ("fa1", 11, 4, 4, 4, False),
    ("standard", 10, 3, 4, 4, True),
    ("fa2-backward", 9, 4, 4, 4, False),
]


@pytest.mark.parametrize(("algo", "n", "d", "br", "bc", "causal"), CASES)
def test_a_compact_trace_decodes_value_for_value_to_the_plain_one(tmp_path, rng, algo, n, d, br, bc, causal):
    """Through the CLI, on fresh random inputs: `flashviz trace` (compact) and `flashviz trace --plain` of the same
    launch, every block recorded. The compact file decoded is the plain file, key for key and value for value."""
    extra = {"dO": rng.standard_normal((n, d)).astype(np.float32)} if algo == "fa2-backward" else None
    flags = ["--algo", algo, "--inputs", npz(tmp_path, rng, n, d, extra), "--br", str(br), "--bc", str(bc)]
    flags += ["--causal"] if causal else []  # at most 8 blocks: every block recorded
    compact, plain = run_cli("trace", *flags), run_cli("trace", *flags, "--plain")
    assert compact.returncode == 0 and plain.returncode == 0, (compact.stderr, plain.stderr)
    doc = orjson.loads(compact.stdout)
    assert doc["schema"] == SCHEMA == "flashviz.trace/4"
    assert isinstance(doc["inputs"]["Q"], dict) and doc["inputs"]["Q"]["dtype"] == "float32"
    assert isinstance(orjson.loads(plain.stdout)["inputs"]["Q"], list)
    check_arrays(doc, "t.json", "--trace")
    assert to_plain(doc) == orjson.loads(plain.stdout)


def test_a_row_with_no_finite_score_keeps_its_nan_and_infinities(rng):
    """NaN, +∞ and −∞ are themselves in a compact array, and decode to what --plain writes ("NaN", "Infinity",
    null)."""
    q = rng.standard_normal((8, 4)).astype(np.float32)
    q[2] = 1e30  # row 2 overflows: +∞ − ∞ makes NaN scores, as docs/trace-schema.md says
    k = rng.standard_normal((8, 4)).astype(np.float32)
    k[:] = np.abs(k) + 1e30
    v = rng.standard_normal((8, 4)).astype(np.float32)
    from flashviz.api import trace

    t = trace("fa2", inputs={"Q": q, "K": k, "V": v}, scale=-1.0)
    plain = orjson.loads(t.to_json())
    assert '"NaN"' in t.to_json().decode() and "null" in t.to_json().decode()
    assert to_plain(orjson.loads(t.to_json(compact=True))) == plain


def test_bfloat16_only_where_it_is_lossless(rng):
    x = rng.standard_normal((5, 7)).astype(np.float32)
    assert encode_array(x)["dtype"] == "float32"
    as_bf16 = (x.view(np.uint32) & 0xFFFF0000).view(np.float32)
    assert encode_array(as_bf16)["dtype"] == "bfloat16"
    assert len(base64.b64decode(encode_array(as_bf16)["base64"])) == 2 * x.size
    one_bit = as_bf16.copy()
    one_bit.view(np.uint32)[3, 4] |= 1  # one element that bf16 cannot hold
    assert encode_array(one_bit)["dtype"] == "float32"
    wide = rng.standard_normal(6)
    assert encode_array(wide)["dtype"] == "float64"
    for a in (x, as_bf16, one_bit, wide):
        back = trace_codec.decode_array(encode_array(a))
        assert back.dtype == (np.float64 if a.dtype == np.float64 else np.float32)
        np.testing.assert_array_equal(back, a)
        assert back.tobytes() == a.tobytes()


def test_the_two_line_numpy_decoder_of_the_docs_reads_an_array(rng):
    """docs/trace-schema.md gives a two-line decoder; it reads what the codec writes."""
    x = rng.standard_normal((3, 5)).astype(np.float32)
    a = encode_array(x)
    kind = {"float32": "<f4", "float64": "<f8", "bfloat16": "<u2"}[a["dtype"]]
    raw = np.frombuffer(base64.b64decode(a["base64"]), dtype=kind)
    values = ((raw.astype("<u4") << 16).view("<f4") if a["dtype"] == "bfloat16" else raw).reshape(a["shape"])
    np.testing.assert_array_equal(values, x)


def test_tiles_read_whole_from_an_input_refer_to_its_rows_and_repeats_to_the_first(rng):
    t = make_trace(Config(n=12, d=4, br=4, bc=4, seed=int(rng.integers(1 << 30)), record=(0, 1, 2)))
    doc = orjson.loads(t.to_json(compact=True))
    load_kv = next(s for s in doc["steps"] if s["op"] == "load_kv" and s["j"] == 1)
    assert load_kv["sram"]["Kj"] == {"dtype": "float32", "shape": [4, 4], "ref": "inputs/K", "rows": [4, 8]}
    assert load_kv["sram"]["Vj"]["ref"] == "inputs/V"
    refs = [v["ref"] for _, g in trace_codec._groups(doc) for v in g.values() if isinstance(v, dict) and "ref" in v]
    assert any(r.startswith("steps/") for r in refs)  # e.g. carries mi, the same values as the step's SRAM mi
    decode_doc(doc)
    np.testing.assert_array_equal(load_kv["sram"]["Kj"], t.inputs["K"][4:8])


def good_doc() -> dict:
    return orjson.loads(make_trace(Config(n=8)).to_json(compact=True))


BROKEN = {
    "dtype": (lambda d: d["inputs"]["Q"].update(dtype="int7"), "has dtype 'int7'; expected one of float32"),
    "shape": (lambda d: d["inputs"]["Q"].update(shape=[8, -4]), "has shape [8, -4]; expected a list of integers"),
    "bytes": (lambda d: d["inputs"]["Q"].update(shape=[8, 5]), "holds 128 bytes; shape [8, 5] of float32 needs 160"),
    "base64": (lambda d: d["inputs"]["Q"].update(base64="@@@@"), "holds base64 that does not decode"),
    "ref": (lambda d: d["steps"][1]["sram"]["Kj"].update(ref="inputs/X"), "refers to 'inputs/X', which is not an"),
    "rows": (lambda d: d["steps"][1]["sram"]["Kj"].update(rows=[6, 10]), "has rows [6, 10]; expected [first, end)"),
}


@pytest.mark.parametrize("how", list(BROKEN))
def test_a_broken_compact_array_in_a_trace_file_is_one_line_naming_it(tmp_path, how):
    doc = good_doc()
    assert doc["steps"][1]["sram"]["Kj"]["ref"] == "inputs/K"
    change, words = BROKEN[how]
    change(doc)
    with pytest.raises(ConfigError, match="array "):
        check_arrays(doc, "t.json", "TRACE.json")
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps(doc))
    for command in (["view", str(path), "--no-browser"], ["export", str(tmp_path / "p.html"), "--trace", str(path)]):
        done = run_cli(*command)
        err = done.stderr.decode()
        assert done.returncode == 2 and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1 and words in err, err
        assert "steps/1/sram/Kj" in err or "inputs/Q" in err


def test_a_trace_of_the_previous_schema_is_refused_in_one_line(tmp_path):
    doc = orjson.loads(make_trace(Config(n=8)).to_json())
    doc["schema"] = "flashviz.trace/3"  # the version before trace files left drawn inputs out (issue 17)
    path = tmp_path / "old.json"
    path.write_bytes(orjson.dumps(doc))
    done = run_cli("export", str(tmp_path / "p.html"), "--trace", str(path))
    err = done.stderr.decode().strip()
    assert done.returncode == 2 and len(err.splitlines()) == 1, err
    assert "schema 'flashviz.trace/3'; this flashviz reads flashviz.trace/4 only" in err


def test_a_plain_trace_file_is_still_one_export_accepts(tmp_path):
    path = tmp_path / "plain.json"
    assert run_cli("trace", "--plain", "--n", "12", "-o", str(path)).returncode == 0
    assert isinstance(json.loads(path.read_text())["inputs"]["Q"], list)
    done = run_cli("export", str(tmp_path / "p.html"), "--trace", str(path))
    assert done.returncode == 0, done.stderr


def test_api_trace_is_gzipped_when_the_client_accepts_it():
    c = TestClient(server.create_app())
    packed = c.get("/api/trace?n=64&d=16", headers={"Accept-Encoding": "gzip"})
    assert packed.headers["content-encoding"] == "gzip" and "Accept-Encoding" in packed.headers["vary"]
    wire = int(packed.headers["content-length"])
    plain = c.get("/api/trace?n=64&d=16", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert packed.content == plain.content  # httpx undoes the gzip
    assert wire < len(plain.content) / 2
    refused = c.get("/api/trace?n=64&d=16", headers={"Accept-Encoding": "gzip;q=0, br"})
    assert "content-encoding" not in refused.headers


def test_the_gzipped_answer_is_a_gzip_member_of_the_same_bytes():
    from flashviz.server.gate import gzipped

    body = make_trace(Config(n=64, d=16)).to_json(compact=True)
    assert gzip.decompress(gzipped(body)) == body
    big = body * 40  # past GZIP_HUFFMAN_BYTES: Huffman coding only
    assert len(big) > server.gate.GZIP_HUFFMAN_BYTES and gzip.decompress(gzipped(big)) == big
