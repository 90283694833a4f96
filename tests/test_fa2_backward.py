"""FA2 backward: gradients against a float64 reference (itself checked by finite differences), HBM counters
against the closed form, the code of every step cut from fa2_backward.cu, dO through the CLI."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from flashviz.algos import get
from flashviz.algos.fa2 import engine as fa2
from flashviz.algos.fa2_backward import engine as fa2_backward
from flashviz.algos.fa2_backward import expect
from flashviz.algos.fa2_backward import traffic as model
from flashviz.cli.main import main
from flashviz.model import kernels, reference
from flashviz.model.config import Config, ConfigError
from flashviz.model.inputs import random_inputs
from flashviz.tracing.build import make_trace

ALGO = "fa2-backward"
GRADS = ("dQ", "dK", "dV")
# Max-norm relative error, max|x - ref| / max|ref|, allowed for float32 gradients on O(1) inputs; measured
# values are 1e-7 .. 1.1e-6 (see expect.TOLERANCE for why gradients get more room than O).
TOL = 1e-4
U = 2.0**-24  # float32 unit roundoff
A = get(ALGO)
KERNEL = kernels.path(A.kernel)


def draw(rng, n, d, qk_scale=1.0):
    x = {k: rng.standard_normal((n, d)).astype(np.float32) for k in ("Q", "K", "V", "dO")}
    x["Q"] *= np.float32(qk_scale)
    x["K"] *= np.float32(qk_scale)
    return x


def run(cfg, x):
    return fa2_backward.execute(cfg, x).hbm


def ref_of(cfg, x):
    return reference.attention_backward(x["Q"], x["K"], x["V"], x["dO"], cfg.softmax_scale, cfg.causal)


def rel(got, ref):
    return reference.errors(got, ref)["max_rel"]


CONFIGS = [
    (8, 4, 4, 4),  # the seed's example
    (10, 4, 4, 4),  # ragged N: short last block and tile
    (1, 1, 1, 1),  # the smallest launch
    (7, 3, 4, 2),  # ragged, Br != Bc
    (33, 5, 4, 16),  # Bc > Br
    (50, 16, 64, 64),  # Br and Bc larger than N
    (130, 64, 32, 16),  # ragged, realistic D
    (257, 64, 64, 64),  # one row past a multiple
]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("n,d,br,bc", CONFIGS)
def test_gradients_match_float64(rng, n, d, br, bc, causal):
    x = draw(rng, n, d)
    cfg = Config(algo=ALGO, n=n, d=d, br=br, bc=bc, causal=causal, record=())
    hbm, ref = run(cfg, x), ref_of(cfg, x)
    for name in GRADS:
        got = hbm.tensors[name]
        assert got.dtype == np.float32 and np.all(np.isfinite(got)), f"every element of {name} must be written"
        assert rel(got, ref[name]) <= TOL, (name, rel(got, ref[name]))
    assert rel(hbm.tensors["O"], ref["O"]) <= expect.TOLERANCE["O"]


@given(
    n=st.integers(1, 48),
    d=st.integers(1, 8),
    br=st.integers(1, 16),
    bc=st.integers(1, 16),
    causal=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    scale=st.one_of(st.none(), st.floats(0.05, 2.0)),
)
def test_any_config_counters_steps_and_gradients(n, d, br, bc, causal, seed, scale):
    """Per-element counters summed == the closed form, exactly, for ragged N, causal or not; the trace with
    every block recorded has model.steps() steps; the SRAM footprint is model.sram_bytes()."""
    cfg = Config(algo=ALGO, n=n, d=d, br=br, bc=bc, causal=causal, scale=scale)
    cfg = cfg.replace(record=tuple(range(cfg.tc)))
    x = draw(np.random.default_rng(seed), n, d)
    rec = fa2_backward.execute(cfg, x)
    assert rec.hbm.counters() == model.count(n, d, br, bc, causal)
    assert len(rec.steps) == model.steps(n, d, br, bc, causal)
    assert rec.sram_footprint["bytes"] == model.sram_bytes(n, d, br, bc)
    ref = ref_of(cfg, x)
    for name in GRADS:
        assert rel(rec.hbm.tensors[name], ref[name]) <= TOL, name


def test_reference_gradients_match_finite_differences():
    """The float64 reference itself: central differences of loss = sum(O * dO) on a tiny case."""
    rng = np.random.default_rng(7)
    n, d, scale, h = 5, 3, 0.7, 1e-6
    x = {k: rng.standard_normal((n, d)) for k in ("Q", "K", "V", "dO")}
    for causal in (False, True):
        grads = reference.attention_backward(x["Q"], x["K"], x["V"], x["dO"], scale, causal)

        def loss(Q, K, V, causal=causal):
            return float((reference.attention(Q, K, V, scale, causal)[0] * x["dO"]).sum())

        for wrt, grad in (("Q", "dQ"), ("K", "dK"), ("V", "dV")):
            fd = np.zeros((n, d))
            for idx in np.ndindex(n, d):
                plus, minus = ({k: x[k].copy() for k in "QKV"} for _ in range(2))
                plus[wrt][idx] += h
                minus[wrt][idx] -= h
                fd[idx] = (loss(plus["Q"], plus["K"], plus["V"]) - loss(minus["Q"], minus["K"], minus["V"])) / (2 * h)
            np.testing.assert_allclose(grads[grad], fd, rtol=1e-6, atol=1e-8, err_msg=f"{grad} causal={causal}")
        if causal:  # query 0 sees key 0 alone: its softmax is the constant 1, so Q[0] gets no gradient
            np.testing.assert_allclose(grads["dQ"][0], 0.0, atol=1e-15)


def test_large_logits_stay_within_tolerance(rng):
    """Q, K x10: scores of order 100 and |L| ~ 400. Pij = exp(Sij - Li) then carries ~|L| * 2^-24 of rounding."""
    n, d = 128, 32
    for causal in (False, True):
        x = draw(rng, n, d, qk_scale=10.0)
        cfg = Config(algo=ALGO, n=n, d=d, br=32, bc=16, causal=causal, record=())
        hbm, ref = run(cfg, x), ref_of(cfg, x)
        assert np.abs(ref["L"]).max() > 100, "the test must really produce large logits"
        for name in GRADS:
            assert rel(hbm.tensors[name], ref[name]) <= TOL, name


def test_huge_logits_dv_error_is_that_of_L(rng):
    """Q, K x30 (|L| ~ 4000): the float32 L is all the backward has, so Pij's error, and dV's, is ~|L|·2^-24."""
    n, d = 128, 32
    x = draw(rng, n, d, qk_scale=30.0)
    cfg = Config(algo=ALGO, n=n, d=d, br=32, bc=16, record=())
    hbm, ref = run(cfg, x), ref_of(cfg, x)
    assert np.all(np.isfinite(hbm.tensors["dV"]))
    assert rel(hbm.tensors["dV"], ref["dV"]) <= 4 * np.abs(ref["L"]).max() * U


@pytest.mark.parametrize("causal", [False, True])
def test_forward_o_and_l_are_the_forward_engines(causal):
    cfg = Config(algo=ALGO, n=11, d=3, br=4, bc=3, causal=causal, seed=5)
    t = make_trace(cfg)
    fwd = fa2.execute(cfg.replace(algo="fa2", record=()), t.inputs).hbm.tensors
    np.testing.assert_array_equal(t.outputs["O"], fwd["O"])
    np.testing.assert_array_equal(t.outputs["L"], fwd["L"][:, 0])
    assert set(t.outputs) == {"dQ", "dK", "dV", "O", "L"} and set(t.inputs) == {"Q", "K", "V", "dO"}
    assert set(t.reference) >= {"dQ", "dK", "dV", "O", "L"} and t.reference["ok"]
    assert t.model["matches"]
    assert list(t.tensors) == ["Q", "K", "V", "O", "L", "dO", "Delta", "dQ", "dK", "dV"]


@given(n=st.integers(1, 40), d=st.integers(1, 4), br=st.integers(1, 12), bc=st.integers(1, 12), causal=st.booleans())
def test_per_element_pattern(n, d, br, bc, causal):
    """K, V read once; dK, dV written once; O and dO read once by the preprocessing kernel; row r of Q, dO, L, D
    is read, and of dQ atomically added to, once per block j that visits it, the tiles j whose first column
    is <= the last row of r's block; dQ is written once more (zeroed)."""
    cfg = Config(n=n, d=d, br=br, bc=bc, causal=causal)
    hbm = run(cfg.replace(algo=ALGO, record=()), draw(np.random.default_rng(n), n, d))
    visits = np.array([cfg.tiles_of_block(r // br) for r in range(n)])[:, None]  # (N, 1) per row
    for name in ("K", "V", "O"):
        assert np.all(hbm.reads[name] == 1) and not hbm.writes[name].any()
    for name in ("dK", "dV", "Delta"):
        assert np.all(hbm.writes[name] == 1)
    assert not hbm.reads["dK"].any() and not hbm.reads["dV"].any()
    assert np.all(hbm.reads["dO"] == 1 + visits)
    for name in ("Q", "L", "Delta"):
        assert np.all(hbm.reads[name] == visits), name
    assert np.all(hbm.reads["dQ"] == visits) and np.all(hbm.writes["dQ"] == 1 + visits)
    assert not any(hbm.writes[t].any() for t in ("Q", "K", "V", "O", "L", "dO"))


def test_dq_is_the_sum_of_the_atomic_adds_shown():
    """The dq steps' carries hold each block j's share; their sum over j is dQ (the order of the adds the engine
    chose, j = 0, 1, ...)."""
    cfg = Config(algo=ALGO, n=10, d=3, br=4, bc=3, seed=2)
    t = make_trace(cfg)
    total = np.zeros((cfg.n, cfg.d), dtype=np.float32)
    for s in sorted((s for s in t.steps if s.op == "dq"), key=lambda s: s.j):
        (read, write) = s.transfers
        assert (read.tensor, read.kind, write.tensor, write.kind) == ("dQ", "read", "dQ", "write")
        r0, r1 = read.rows
        total[r0:r1] += s.carries["dQi_add"]
        np.testing.assert_array_equal(s.carries["dQi"], total[r0:r1])
    np.testing.assert_array_equal(total, t.outputs["dQ"])


def test_causal_block_visits_only_blocks_reaching_its_first_column():
    cfg = Config(algo=ALGO, n=23, d=2, br=4, bc=6, causal=True)
    t = make_trace(cfg.replace(record=tuple(range(cfg.tc))))
    for b in t.blocks:
        j = b["j"]
        visited = [
            int(re.search(r"// j = \d+, i = (\d+)", s.code)[1]) for s in t.steps if s.block == j and s.op == "load_q"
        ]
        assert visited == [i for i in range(cfg.tr) if min(cfg.n, (i + 1) * cfg.br) - 1 >= j * cfg.bc]
        assert visited[0] == b["first_i"]
    for s in (s for s in t.steps if s.op == "probs"):
        i = int(re.search(r"i = (\d+)", s.code)[1])
        rows = np.arange(i * cfg.br, (i + 1) * cfg.br)[:, None]
        cols = np.arange(s.j * cfg.bc, (s.j + 1) * cfg.bc)[None, :]
        dead = (cols > rows) | (rows >= cfg.n) | (cols >= cfg.n)
        assert np.all(s.sram["Pij"][dead] == 0) and np.all(s.sram["Pij"][~dead] > 0)
    assert t.reference["ok"] and t.model["matches"]
    full = model.count(cfg.n, cfg.d, cfg.br, cfg.bc)
    assert t.hbm["Q"]["read"] < full["Q"]["read"]


def test_every_step_code_is_its_region_with_indices_substituted():
    t = make_trace(Config(algo=ALGO, n=10, d=3, br=4, bc=3))
    source = KERNEL.read_text()
    assert t.kernel["source"] == source and t.kernel["file"] == "fa2_backward.cu"
    lines = source.splitlines()
    ops = set()
    for s in t.steps:
        ops.add(s.op)
        first, last = s.lines
        assert lines[first - 2].strip() == f"// step: {s.op}" and lines[last].strip() == "// end step"
        region = lines[first - 1 : last]
        indent = min(len(x) - len(x.lstrip()) for x in region if x.strip())
        header, *body = s.code.splitlines()
        if s.op in ("load_do_o", "write_delta"):  # the preprocessing kernel: block i
            assert header == f"// i = {s.block}" and s.j is None
            subs = {"i": s.block}
        elif s.op in ("load_kv", "write_back"):  # the main kernel's block j, outside the loop over i
            assert header == f"// j = {s.block}" and s.j == s.block
            subs = {"j": s.j}
        else:  # inside the loop over blocks i of Q
            m = re.fullmatch(rf"// j = {s.j}, i = (\d+)", header)
            assert m and s.j == s.block
            subs = {"j": s.j, "i": int(m[1])}
        expected = [x[indent:] for x in region]
        for name, value in subs.items():
            expected = [re.sub(rf"\b{name}\b", str(value), x) for x in expected]
        assert body == expected
        assert s.text, s.op
    assert ops == set(kernels.regions(A.kernel)) == set(A.words.LABELS)


def test_literal_indices_in_the_code():
    t = make_trace(Config(algo=ALGO))
    dq = next(s for s in t.steps if s.op == "dq" and s.block == 1 and "i = 0" in s.code)
    assert "atomicAdd(&dQ[(0*Br + r)*D + d], scale*acc);" in dq.code
    load_q = next(s for s in t.steps if s.op == "load_q" and s.block == 0 and "i = 1" in s.code)
    assert "Q[(1*Br + x/D)*D + x%D]" in load_q.code and "L[1*Br + r]" in load_q.code


def test_sram_bytes_is_the_kernels_macro():
    macro = re.search(r"#define fa2_bwd_smem_bytes\(Br, Bc, D\) (.+)", KERNEL.read_text())[1]
    for br, bc, d in ((4, 4, 4), (64, 64, 64), (16, 48, 128), (3, 5, 7)):
        assert eval(macro, {"Br": br, "Bc": bc, "D": d}) == model.sram_bytes(1000, d, br, bc)


def test_phases_preprocessing_first_then_totals():
    t = make_trace(Config(algo=ALGO, n=10, d=3, br=4, bc=3))
    after_pre = t.phases[1]["hbm"]
    assert after_pre["Delta"]["written"] == 10 and after_pre["dQ"]["written"] == 30
    assert after_pre["dO"]["read"] == after_pre["O"]["read"] == 30 and after_pre["K"]["read"] == 0
    assert t.phases[-1]["hbm"] == t.hbm
    for before, after in zip(t.phases, t.phases[1:], strict=False):
        for name, counts in before["hbm"].items():
            assert all(after["hbm"][name][k] >= v for k, v in counts.items())
    assert len(t.phases) == 2 + 1 + 6 * t.config["tr"] + 1


def test_block_flag_counts_tiles_of_kv():
    A.validated(Config(algo=ALGO, n=10, br=2, bc=5, record=(1,)))  # Tc = 2 blocks
    with pytest.raises(ConfigError, match=r"0\.\.1"):
        A.validated(Config(algo=ALGO, n=10, br=2, bc=5, record=(2,)))
    assert A.recorded_blocks(Config(algo=ALGO, n=64, br=4, bc=16)) == (0, 1, 2, 3)


def test_trace_cli_random_do_from_seed(capsysbinary):
    assert main(["trace", "--plain", "--algo", ALGO, "--n", "9", "--d", "3", "--bc", "2", "--seed", "4"]) == 0
    doc = json.loads(capsysbinary.readouterr().out)
    assert doc["config"]["algo"] == ALGO
    assert (doc["config"]["seed"], doc["config"]["inputs"]) == (4, "random")
    for name in (*GRADS, "O"):
        assert np.array(doc["outputs"][name]).shape == (9, 3)
    assert len(doc["outputs"]["L"]) == 9
    assert doc["reference"]["ok"] and all(doc["reference"][k]["ok"] for k in (*GRADS, "O", "L"))
    assert doc["model"]["matches"]
    x = random_inputs(9, 3, 4, ("Q", "K", "V", "dO"))
    np.testing.assert_array_equal(np.array(doc["inputs"]["dO"], dtype=np.float32), x["dO"])


def test_do_from_npz_round_trips(tmp_path, rng, capsysbinary):
    x = draw(rng, 12, 3)
    np.savez(tmp_path / "in.npz", **x)
    out = tmp_path / "t.json"
    assert (
        main(["trace", "--plain", "--algo", ALGO, "--inputs", str(tmp_path / "in.npz"), "--bc", "5", "-o", str(out)])
        == 0
    )
    doc = json.loads(out.read_text())
    assert (doc["config"]["inputs"], doc["config"]["seed"], doc["config"]["random_inputs"]) == ("file", None, [])
    for name in ("Q", "K", "V", "dO"):
        np.testing.assert_array_equal(np.array(doc["inputs"][name], dtype=np.float32), x[name])
    ref = reference.attention_backward(x["Q"], x["K"], x["V"], x["dO"], 1 / np.sqrt(3))
    for name in GRADS:
        assert rel(np.array(doc["outputs"][name]), ref[name]) <= TOL


def test_npz_without_do_draws_it_from_the_seed(tmp_path, rng, capsysbinary):
    x = draw(rng, 6, 2)
    del x["dO"]
    np.savez(tmp_path / "in.npz", **x)
    assert main(["trace", "--plain", "--algo", ALGO, "--inputs", str(tmp_path / "in.npz"), "--seed", "9"]) == 0
    doc = json.loads(capsysbinary.readouterr().out)
    assert (doc["config"]["seed"], doc["config"]["random_inputs"]) == (9, ["dO"])
    expected = random_inputs(6, 2, 9, ("Q", "K", "V", "dO"))["dO"]
    np.testing.assert_array_equal(np.array(doc["inputs"]["dO"], dtype=np.float32), expected)


def test_bad_do_is_one_line_naming_it(tmp_path, capsys):
    f32 = np.ones((4, 2), np.float32)
    cases = {
        "wrong shape": np.ones((4, 3), np.float32),
        "wrong rows": np.ones((5, 2), np.float32),
        "NaN": np.full((4, 2), np.nan, np.float32),
        "inf": np.full((4, 2), -np.inf, np.float32),
        "1-D": np.ones(4, np.float32),
        "integers": np.ones((4, 2), np.int32),
    }
    for label, dO in cases.items():
        path = tmp_path / f"{label}.npz"
        np.savez(path, Q=f32, K=f32, V=f32, dO=dO)
        assert main(["trace", "--algo", ALGO, "--inputs", str(path)]) == 2, label
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "dO" in err and "Traceback" not in err, (label, err)
        assert err.startswith("flashviz: error: dO: "), err


def test_count_cli_for_the_backward(capsys):
    assert main(["count", "--algo", ALGO, "--n", "4096", "--d", "64", "--br", "64", "--bc", "64", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tensors"]["dQ"]["read"] == 64 * 4096 * 64  # Tc = 64 atomic adds into every element
    assert doc["tensors"]["dQ"]["written"] == 65 * 4096 * 64  # and the zeros
    assert doc["tensors"]["dK"]["written"] == doc["tensors"]["K"]["read"] == 4096 * 64


# ---- memory of the float64 reference (issue 8, item 13) ----


def full_matrix_backward(Q, K, V, dO, scale, causal):
    """The textbook gradients with whole N x N matrices, written apart from reference.py to hold its bands to."""
    S = Q @ K.T * scale
    if causal:
        S[np.triu_indices(len(Q), k=1)] = -np.inf
    P = np.exp(S - S.max(1, keepdims=True))
    P /= P.sum(1, keepdims=True)
    O = P @ V
    dP = dO @ V.T
    dS = P * (dP - (dP * P).sum(1, keepdims=True))
    return {"O": O, "dQ": scale * dS @ K, "dK": scale * dS.T @ Q, "dV": P.T @ dO}


@pytest.mark.parametrize("causal", [False, True])
def test_reference_in_bands_is_the_full_matrix_math(rng, causal, monkeypatch):
    n, d = 300, 16
    Q, K, V, dO = (rng.standard_normal((n, d)) for _ in range(4))
    monkeypatch.setattr(reference, "BAND_BYTES", 8 * n * 7)  # bands of 7 rows, the last one short
    assert len(reference.bands(n, n)) == 43
    got = reference.attention_backward(Q, K, V, dO, 0.3, causal)
    want = full_matrix_backward(Q, K, V, dO, 0.3, causal)
    for name, w in want.items():
        np.testing.assert_allclose(got[name], w, rtol=0, atol=1e-12 * np.abs(w).max(), err_msg=name)


def test_reference_backward_never_holds_n_by_n(rng):
    """At N = 4096 one N x N float64 matrix is 128 MiB; the reference works in bands of at most 32 MiB."""
    import tracemalloc

    n, d = 4096, 4
    Q, K, V, dO = (rng.standard_normal((n, d)).astype(np.float32) for _ in range(4))
    tracemalloc.start()
    try:
        reference.attention_backward(Q, K, V, dO, 0.5, causal=True)
        reference.row_stats(Q, K, 0.5, causal=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 160 * 2**20, f"peak {peak / 2**20:.0f} MiB"
