"""The engine against the float64 reference: ragged N, tiny and large D, extreme logits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from flashviz.algos import get
from flashviz.algos.fa2 import engine as fa2
from flashviz.model import reference
from flashviz.model.config import Config
from flashviz.tracing.build import make_trace
from helpers import qkv


def run_engine(cfg, x):
    run = fa2.execute(cfg, x)
    return run.hbm.tensors["O"], run.hbm.tensors["L"][:, 0], run


def naive_f32(x, scale):
    """Plain float32 attention: the error of merely computing in float32, to judge the engine by."""
    S = (x["Q"] @ x["K"].T) * np.float32(scale)
    m = S.max(1, keepdims=True)
    P = np.exp(S - m)
    l = P.sum(1, keepdims=True)
    return (P @ x["V"]) / l, (m + np.log(l))[:, 0]


@pytest.mark.parametrize(
    "n,d,br,bc",
    [
        (8, 4, 4, 4),  # the seed's example
        (10, 4, 4, 4),  # ragged N: a short last block and a short last tile
        (1, 1, 1, 1),  # the smallest launch
        (7, 3, 4, 2),  # ragged, Br != Bc
        (33, 2, 8, 16),  # tiny D
        (100, 256, 16, 32),  # the largest D
        (257, 64, 64, 64),  # one row past a multiple
        (50, 16, 64, 64),  # Br and Bc larger than N
    ],
)
def test_outputs_match_float64(rng, n, d, br, bc):
    x = qkv(rng, n, d)
    cfg = Config(n=n, d=d, br=br, bc=bc)
    O, L, _ = run_engine(cfg, x)
    O_ref, L_ref = reference.attention(x["Q"], x["K"], x["V"], cfg.softmax_scale)
    assert np.all(np.isfinite(O)) and np.all(np.isfinite(L)), "every output element must be written"
    np.testing.assert_allclose(O, O_ref, rtol=0, atol=1e-5 * np.abs(O_ref).max())
    np.testing.assert_allclose(L, L_ref, rtol=1e-6, atol=1e-6)


@given(
    n=st.integers(1, 80),
    d=st.integers(1, 24),
    br=st.integers(1, 20),
    bc=st.integers(1, 20),
    seed=st.integers(0, 2**32 - 1),
    scale=st.one_of(st.none(), st.floats(0.01, 4.0)),
)
def test_any_config_matches_float64(n, d, br, bc, seed, scale):
    x = qkv(np.random.default_rng(seed), n, d)
    cfg = Config(n=n, d=d, br=br, bc=bc, scale=scale)
    O, L, _ = run_engine(cfg, x)
    O_ref, L_ref = reference.attention(x["Q"], x["K"], x["V"], cfg.softmax_scale)
    assert reference.errors(O, O_ref)["max_rel"] <= 1e-5
    assert reference.errors(L, L_ref)["max_abs"] <= 1e-5 * max(1.0, np.abs(L_ref).max())


@pytest.mark.parametrize("n,d,br,bc", [(64, 16, 16, 16), (37, 8, 8, 4), (128, 64, 32, 64)])
def test_extreme_logits_stay_finite_and_exact(rng, n, d, br, bc):
    """Inputs x100 make scores of order 1e4: the online softmax must not overflow, and the engine's
    error must stay within a small factor of plain float32 attention's (the cost of float32 scores)."""
    x = qkv(rng, n, d, scale=100.0)
    cfg = Config(n=n, d=d, br=br, bc=bc)
    O, L, _ = run_engine(cfg, x)
    assert np.all(np.isfinite(O)) and np.all(np.isfinite(L))
    O_ref, L_ref = reference.attention(x["Q"], x["K"], x["V"], cfg.softmax_scale)
    O_f32, L_f32 = naive_f32(x, cfg.softmax_scale)
    assert np.abs(L_ref).max() > 100, "the test must really produce extreme logits"
    for got, naive, ref in ((O, O_f32, O_ref), (L, L_f32, L_ref)):
        err, base = reference.errors(got, ref)["max_rel"], reference.errors(naive, ref)["max_rel"]
        assert err <= 4 * base + 1e-6, (err, base)


def test_engine_mirrors_float32_arithmetic(rng):
    """The carries are float32 like the kernel's registers and shared memory, not float64."""
    t = make_trace(Config(n=10, d=4, br=4, bc=4, seed=int(rng.integers(2**31))))
    step = next(s for s in t.steps if s.op == "online_softmax")
    assert all(v.dtype == np.float32 for v in step.carries.values())
    assert t.outputs["O"].dtype == np.float32


def test_every_block_runs_and_padding_is_never_stored():
    cfg = Config(n=10, d=3, br=4, bc=4)
    x = qkv(np.random.default_rng(1), 10, 3)
    _, _, run = run_engine(cfg, x)
    assert run.hbm.writes["O"].min() == 1 and run.hbm.writes["O"].max() == 1
    assert run.hbm.writes["L"].sum() == 10
    # the last block holds rows 8, 9 and two padding rows that no transfer touches
    assert run.hbm.tensors["O"].shape == (10, 3)


def test_rescale_factor_is_exp_of_the_max_rise(rng):
    t = make_trace(Config(n=16, d=8, br=4, bc=4, seed=int(rng.integers(2**31))))
    for s in (s for s in t.steps if s.op == "online_softmax"):
        c = s.carries
        expected = np.exp(c["m_old"] - c["mi"])
        np.testing.assert_allclose(c["alpha"], expected, rtol=1e-6)
        np.testing.assert_allclose(c["li"], c["alpha"] * c["l_old"] + c["rowsum"], rtol=1e-5)
        assert np.all(c["mi"] >= np.where(np.isneginf(c["m_old"]), -np.inf, c["m_old"]))
        if s.j == 0:
            assert np.all(c["alpha"] == 0.0), "on the first tile nothing held is stale"


@pytest.mark.parametrize("n,d,br,bc", [(8, 4, 4, 4), (10, 4, 4, 4), (37, 8, 8, 4), (33, 5, 4, 16), (64, 16, 16, 16)])
def test_causal_matches_float64(rng, n, d, br, bc):
    x = qkv(rng, n, d)
    cfg = Config(n=n, d=d, br=br, bc=bc, causal=True)
    O, L, _ = run_engine(cfg, x)
    O_ref, L_ref = reference.attention(x["Q"], x["K"], x["V"], cfg.softmax_scale, causal=True)
    assert np.all(np.isfinite(O)) and np.all(np.isfinite(L))
    assert reference.errors(O, O_ref)["max_rel"] <= 1e-5
    assert reference.errors(L, L_ref)["max_abs"] <= 1e-5 * max(1.0, np.abs(L_ref).max())
    # row 0 sees only key 0: its output is V[0] exactly up to rounding
    np.testing.assert_allclose(O[0], x["V"][0], rtol=1e-6, atol=1e-6)


def test_causal_block_reads_only_tiles_up_to_its_last_row():
    cfg = Config(n=10, d=2, br=4, bc=3, causal=True)
    t = make_trace(cfg.replace(record=(0, 1, 2)))
    for b in t.blocks:
        last_row = b["rows"][1] - 1
        tiles = [s.j for s in t.steps if s.block == b["i"] and s.op == "load_kv"]
        assert tiles == [j for j in range(cfg.tc) if j * cfg.bc <= last_row]
    assert t.model["matches"] and t.reference["ok"]


def test_self_check_judges_small_logits_by_their_absolute_rounding():
    """One row, one key, D=10: L is a single float32 score, -0.0148 for this seed, off by ~2.6e-8 absolute: 1.7e-6
    of its own magnitude, which judged against |L| alone failed the check. A real error in L must still fail it."""
    rng = np.random.default_rng(102)
    x = {k: rng.standard_normal((1, 10)).astype(np.float32) for k in "QKV"}
    cfg = Config(n=1, d=10, br=1, bc=1)
    t = make_trace(cfg, x)
    ref = get(cfg.algo).expect.expected(cfg, x)
    assert abs(t.outputs["L"][0]) < 0.02
    assert reference.errors(t.outputs["L"], ref["L"])["max_rel"] > 1e-6  # the case really is the tiny-L one
    assert t.reference["ok"] and t.reference["L"]["ok"]
    expect = get("fa2").expect
    bad = reference.check({"O": t.outputs["O"], "L": t.outputs["L"] + 1e-5}, ref, expect.TOLERANCE, expect.LOG_DOMAIN)
    assert not bad["ok"] and not bad["L"]["ok"]


# ---- rows with no finite score: Q, K of 1e30 overflow float32 (issue 8, item 10) ----
# What the kernels compute there (fa2_forward.cu, fa1_forward.cu, standard.cu, fa2_backward.cu): the row's max
# stays -inf, exp(-inf - -inf) = exp(NaN) = NaN, so li (lr), Oi, O and L are NaN; the backward's P = exp(S - L)
# is NaN on those rows, and so is every gradient they feed. The engine mirrors it; the float64 reference (where
# nothing overflows) has numbers, so the self-check fails on exactly those values.

ALGOS = ("fa2", "fa1", "standard", "fa2-backward")


def dead_rows_inputs(rng, n=8, d=4, dead=4):
    """Rows 0 .. dead-1 of Q and all of K are 1e30: those rows' scores overflow to +inf, times -1 to -inf."""
    x = qkv(rng, n, d)
    x["Q"][:dead] = 1e30
    x["K"][:] = 1e30
    x["dO"] = rng.standard_normal((n, d)).astype(np.float32)
    return x


@pytest.mark.parametrize("algo", ALGOS)
@pytest.mark.parametrize("scale", [-1.0, 1.0])  # every score -inf; every score +inf
def test_rows_with_no_finite_score_are_nan_as_in_the_kernel(rng, algo, scale):
    x = dead_rows_inputs(rng)
    cfg = Config(algo=algo, n=8, d=4, br=4, bc=4, scale=scale)
    trace = make_trace(cfg.replace(record=tuple(range(get(algo).blocks(cfg)))), x)
    O = trace.outputs["O"]
    assert np.isnan(O[:4]).all() and np.isfinite(O[4:]).all()
    ref = get(cfg.algo).expect.expected(cfg, x)
    np.testing.assert_allclose(O[4:], ref["O"][4:], rtol=0, atol=1e-5 * np.abs(ref["O"][4:]).max())
    assert not trace.reference["ok"] and trace.reference["O"]["nonfinite"] == 16
    if algo in ("fa2", "fa2-backward"):
        L = trace.outputs["L"]
        assert np.isnan(L[:4]).all() and np.isfinite(L[4:]).all()
    if algo == "fa2":
        online = [s for s in trace.steps if s.op == "online_softmax" and s.block == 0]
        for s in online:
            assert (s.carries["mi"] == (-np.inf if scale < 0 else np.inf)).all()  # fmaxf(-inf, -inf), or +inf
            assert np.isnan(s.carries["li"]).all() and np.isnan(s.sram["Oi"]).all()
            assert "NaN" in s.text and "nan" not in s.text
        live = [s for s in trace.steps if s.op == "online_softmax" and s.block == 1]
        assert all(np.isfinite(s.carries["li"]).all() for s in live)


@pytest.mark.parametrize("algo", ALGOS)
def test_the_issues_input_through_the_cli(tmp_path, rng, algo):
    """Q = K = 1e30, --scale -1: every score of every tile is -inf. A trace, not a traceback; no RuntimeWarning."""
    import json
    import subprocess
    import sys

    big = np.full((8, 4), 1e30, np.float32)
    np.savez(tmp_path / "in.npz", Q=big, K=big, V=rng.standard_normal((8, 4)).astype(np.float32))
    args = ["trace", "--plain", "--algo", algo, "--inputs", str(tmp_path / "in.npz"), "--scale", "-1"]
    out = subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True)
    assert out.returncode == 0 and out.stderr == "", out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["outputs"]["O"] == [["NaN"] * 4] * 8  # NaN is written as "NaN": null means -inf in a Trace
    assert doc["reference"]["ok"] is False and doc["reference"]["O"]["nonfinite"] == 32
    if algo == "fa2":
        assert doc["outputs"]["L"] == ["NaN"] * 8
        online = next(s for s in doc["steps"] if s["op"] == "online_softmax")
        assert online["carries"]["mi"] == [None] * 4  # -inf
        assert online["carries"]["li"] == ["NaN"] * 4 and online["carries"]["alpha"] == ["NaN"] * 4
        assert online["carries"]["l_old"] == [0.0] * 4
    assert all(s["text"] and "nan" not in s["text"] for s in doc["steps"])
