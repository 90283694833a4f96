"""fa2-splitkv (Flash-Decoding, issue 18): the engine against float64 on fresh random inputs, ragged N included;
--causal refused in one line; the HBM counters and FLOPs against the closed forms; the merge against
flashviz.model.merge; the trace through the CLI in a subprocess; `flashviz compare` listing it with the decoding
table."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flashviz.algos import get
from flashviz.algos.fa2_splitkv import engine
from flashviz.algos.fa2_splitkv.record import CHUNK, chunk, splits
from flashviz.model import reference
from flashviz.model.config import Config
from flashviz.model.merge import merge_all

ALGO = "fa2-splitkv"
A = get(ALGO)


def draw(rng: np.random.Generator, n: int, d: int) -> dict[str, np.ndarray]:
    return {k: rng.standard_normal((n, d)).astype(np.float32) for k in ("Q", "K", "V")}


def run(cfg: Config, x: dict[str, np.ndarray]):
    return engine.execute(A.validated(cfg), x)


CONFIGS = [
    (16, 4, 4, 4),  # its example: Tc = 4, S = 2
    (8, 4, 4, 4),  # Tc = 2, S = 1: the combine only copies
    (10, 4, 4, 4),  # ragged N: short last block and tile
    (1, 1, 1, 1),  # the smallest launch
    (7, 3, 4, 2),  # ragged, Br != Bc, S = 2 with a short last chunk
    (33, 5, 4, 3),  # Tc = 11, odd: S = 6, the last chunk one tile
    (130, 64, 32, 16),  # ragged, realistic D, S = 5
    (257, 16, 64, 8),  # Tc = 33, S = 17
]


@pytest.mark.parametrize("n,d,br,bc", CONFIGS)
def test_engine_matches_float64_on_fresh_inputs(n, d, br, bc):
    rng = np.random.default_rng(int.from_bytes(os.urandom(4), "little"))
    x = draw(rng, n, d)
    cfg = Config(algo=ALGO, n=n, d=d, br=br, bc=bc, record=())
    hbm = run(cfg, x).hbm.tensors
    want = A.expect.expected(cfg, {k: v.astype(np.float64) for k, v in x.items()})
    for name in ("O", "L"):
        got = hbm[name].reshape(want[name].shape)
        assert got.dtype == np.float32 and np.all(np.isfinite(got)), f"every element of {name} must be written"
    check = reference.check(
        {k: hbm[k].reshape(want[k].shape) for k in ("O", "L")}, want, A.expect.TOLERANCE, A.expect.LOG_DOMAIN
    )
    assert check["ok"], check


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 60), d=st.integers(1, 8), br=st.integers(1, 9), bc=st.integers(1, 9))
def test_counters_and_flops_equal_the_closed_forms(n, d, br, bc):
    cfg = Config(algo=ALGO, n=n, d=d, br=br, bc=bc, record=())
    rec = run(cfg, draw(np.random.default_rng(n * 1000 + d), n, d))
    got = {name: {"read": c["read"], "written": c["written"]} for name, c in rec.hbm.counters().items()}
    assert got == A.traffic.count(n, d, br, bc)
    assert rec.flops_counted() == A.flops.count(n, d, br, bc)


def test_partials_are_each_chunks_attention_and_merge_to_the_whole(rng):
    """Opart[s], Lpart[s] are float64 attention over chunk s's keys only; flashviz.model.merge of them is the whole."""
    n, d, br, bc = 23, 6, 4, 3
    x = draw(rng, n, d)
    cfg = Config(algo=ALGO, n=n, d=d, br=br, bc=bc, record=())
    hbm = run(cfg, x).hbm.tensors
    S = splits(n, bc)
    tc = -(-n // bc)
    assert S == -(-tc // CHUNK) == 4
    opart, lpart = hbm["Opart"].reshape(S, n, d), hbm["Lpart"].reshape(S, n)
    parts = []
    for s in range(S):
        j0, j1 = chunk(s, n, bc)
        keys = slice(j0 * bc, min(n, j1 * bc))
        o, lse = reference.attention(
            x["Q"].astype(np.float64), x["K"][keys].astype(np.float64), x["V"][keys].astype(np.float64),
            cfg.softmax_scale, False,
        )  # fmt: skip
        np.testing.assert_allclose(opart[s], o, rtol=0, atol=2e-6)
        np.testing.assert_allclose(lpart[s], lse, rtol=0, atol=2e-6)
        parts.append((o, lse))
    o, lse = merge_all(parts)
    np.testing.assert_allclose(hbm["O"], o, rtol=0, atol=2e-6)
    np.testing.assert_allclose(hbm["L"].reshape(n), lse, rtol=0, atol=2e-6)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True, env=env)


def test_causal_is_refused_in_one_line():
    r = cli("trace", "--algo", ALGO, "--causal", "-o", os.devnull)
    assert r.returncode != 0
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and "causal" in err[0] and ALGO in err[0] and "Traceback" not in r.stderr, r.stderr


def test_the_trace_through_the_cli(tmp_path):
    out = tmp_path / "t.json"
    r = cli("trace", "--algo", ALGO, "--n", "21", "--d", "3", "--br", "4", "--bc", "4", "--seed", "7", "-o", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert doc["config"]["algo"] == ALGO and doc["reference"]["ok"] and doc["model"]["matches"]
    assert doc["flops"]["matches"]
    ops = [s["op"] for s in doc["steps"]]
    S = splits(21, 4)  # Tc = 6: 3 chunks
    assert S == 3 and ops.count("write_partial") == S * 6 and ops.count("merge") == (S - 1) * 6
    kernels = {s["kernel"] for s in doc["steps"]}
    assert kernels == {"fa2_splitkv", "fa2_splitkv_combine"}
    # the split blocks of one block of Q run in lockstep: its steps are in phase order
    phases = [s["phase"] for s in doc["steps"] if s["indices"]["i"] == 0]
    assert phases == sorted(phases)
    # every step of the split kernel names its chunk s, and the tiles of chunk s are its own
    for s in doc["steps"]:
        if s["kernel"] == "fa2_splitkv" and s["j"] is not None:
            j0, j1 = chunk(s["indices"]["s"], 21, 4)
            assert j0 <= s["j"] < j1
            assert f"s = {s['indices']['s']}" in s["code"].split("\n", 1)[0]
    assert all(s["text"] for s in doc["steps"])  # every step has its sentence


def test_compare_lists_it_with_the_decoding_table():
    r = cli("compare", "--n", "1024", "--d", "64", "--br", "64", "--bc", "64", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    entry = doc["algorithms"][ALGO]
    assert entry["supported"] and entry["total"]["bytes"] > doc["algorithms"]["fa2"]["total"]["bytes"]
    table = doc["tables"][ALGO]
    assert table["nk"] == 16384 and table["sms"] == 132 and [r["nq"] for r in table["rows"]] == [1, 2, 4, 8, 16, 32, 64]
    S = splits(16384, 64)
    assert S == table["splits"] == 128
    for row in table["rows"]:
        nq, tr = row["nq"], -(-row["nq"] // 64)
        assert row["blocks"] == {"fa2": tr, ALGO: tr * S}
        # the partials both ways and Q's S - 1 extra reads, 4 bytes each
        assert row["extra_bytes"] == 4 * (2 * S * nq * (64 + 1) + (S - 1) * nq * 64)
    # at Nq = Nk the rectangular form is the square one the engine is held to
    assert A.traffic.rectangular(100, 100, 8, 4, 4) == A.traffic.count(100, 8, 4, 4)
    text = cli("compare", "--n", "1024", "--d", "64", "--br", "64", "--bc", "64")
    assert text.returncode == 0 and "split-KV for decoding" in text.stdout and "16,384" in text.stdout, text.stdout


def test_the_decoding_tables_fa2_count_is_fa2s_closed_form_at_nq_equal_nk():
    from flashviz.algos.fa2_splitkv.decoding import fa2_elements

    for n, d, br, bc in [(100, 8, 4, 4), (1000, 64, 64, 32), (7, 3, 2, 5)]:
        want = sum(t["read"] + t["written"] for t in get("fa2").traffic.count(n, d, br, bc).values())
        assert fa2_elements(n, n, d, br) == want
