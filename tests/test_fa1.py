"""FlashAttention-1 forward (K/V outer, Q inner; O, l, m carried through HBM): outputs against float64,
counters against the closed form, steps and shared memory against the model, code cut from fa1_forward.cu."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from flashviz.algos import get
from flashviz.algos.fa1 import engine as fa1
from flashviz.algos.fa1 import traffic as model
from flashviz.cli.main import main
from flashviz.model import kernels, reference
from flashviz.model.config import Config
from flashviz.tracing.build import make_trace
from helpers import every_block, qkv, region_lines

KERNEL = kernels.path(get("fa1").kernel)


def outputs(cfg, x):
    hbm = fa1.execute(cfg, x).hbm
    return hbm.tensors["O"], hbm.tensors["l"][:, 0], hbm.tensors["m"][:, 0], hbm


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    "n,d,br,bc",
    [
        (8, 4, 4, 4),  # the seed's example
        (10, 4, 4, 4),  # ragged N
        (1, 1, 1, 1),
        (7, 3, 4, 2),  # ragged, Br != Bc
        (37, 5, 8, 16),  # ragged, Bc > Br: causal rows wholly masked on a visited tile
        (33, 2, 3, 5),
        (100, 64, 16, 32),
        (50, 16, 64, 64),  # Br and Bc larger than N
    ],
)
def test_outputs_and_statistics_match_float64(rng, n, d, br, bc, causal):
    x = qkv(rng, n, d)
    cfg = Config(algo="fa1", n=n, d=d, br=br, bc=bc, causal=causal)
    O, l, m, _ = outputs(cfg, x)
    assert all(np.all(np.isfinite(a)) for a in (O, l, m)), "every output element must be written"
    O_ref, L_ref = reference.attention(x["Q"], x["K"], x["V"], cfg.softmax_scale, causal)
    m_ref, l_ref = reference.row_stats(x["Q"], x["K"], cfg.softmax_scale, causal)
    assert reference.errors(O, O_ref)["max_rel"] <= 1e-5
    assert reference.errors(m, m_ref)["max_rel"] <= 1e-6
    assert reference.errors(l, l_ref)["max_rel"] <= 1e-5
    # FA1's m and l are FA2's L in two parts
    np.testing.assert_allclose(m + np.log(l), L_ref, rtol=1e-6, atol=1e-6)
    if causal:
        np.testing.assert_allclose(O[0], x["V"][0], rtol=1e-6, atol=1e-6)  # row 0 sees only key 0


@given(
    n=st.integers(1, 60),
    d=st.integers(1, 12),
    br=st.integers(1, 20),
    bc=st.integers(1, 20),
    causal=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
    scale=st.one_of(st.none(), st.floats(0.01, 4.0)),
)
def test_any_config_matches_float64_and_the_closed_forms(n, d, br, bc, causal, seed, scale):
    cfg = every_block(Config(algo="fa1", n=n, d=d, br=br, bc=bc, seed=seed, scale=scale, causal=causal))
    t = make_trace(cfg)
    assert t.reference["ok"], t.reference
    assert t.hbm == model.count(n, d, br, bc, causal)
    assert len(t.steps) == model.steps(n, d, br, bc, causal)
    assert len(t.phases) == len(t.steps), "one block per head: a phase is a step of its program"
    assert t.sram["bytes"] == model.sram_bytes(n, d, br, bc)


@given(n=st.integers(1, 48), d=st.integers(1, 4), br=st.integers(1, 16), bc=st.integers(1, 16))
def test_per_element_pattern(n, d, br, bc):
    """K and V once; Q, and O, l, m read once per tile; O, l, m written once more (initialisation)."""
    cfg = Config(algo="fa1", n=n, d=d, br=br, bc=bc)
    _, _, _, hbm = outputs(cfg, qkv(np.random.default_rng(n), n, d))
    assert np.all(hbm.reads["K"] == 1) and np.all(hbm.reads["V"] == 1)
    assert np.all(hbm.reads["Q"] == cfg.tc)
    for name in ("O", "l", "m"):
        assert np.all(hbm.reads[name] == cfg.tc) and np.all(hbm.writes[name] == cfg.tc + 1)
    assert not any(hbm.writes[t].any() for t in "QKV")


def test_headline_counts_for_n4096():
    n, d, b = 4096, 64, 64
    tc = n // b
    c = model.count(n, d, b, b)
    assert c["K"]["read"] == c["V"]["read"] == n * d
    assert c["Q"]["read"] == c["O"]["read"] == tc * n * d
    assert c["O"]["written"] == (tc + 1) * n * d
    assert c["l"] == c["m"] == {"read": tc * n, "written": (tc + 1) * n}


def test_loop_order_is_kv_outer_q_inner():
    cfg = Config(algo="fa1", n=10, d=2, br=4, bc=4)
    t = make_trace(every_block(cfg))
    assert {s.block for s in t.steps} == {0}, "one CUDA block per head: blockIdx.x is 0 on every step"
    ops = [(s.op, s.indices.get("i"), s.j) for s in t.steps]
    assert ops[: cfg.tr] == [("init", i, None) for i in range(cfg.tr)]
    body = ops[cfg.tr :]
    expected = []
    for j in range(cfg.tc):
        expected.append(("load_kv", None, j))
        for i in range(cfg.tr):
            expected += [(op, i, j) for op in ("load_qi", "scores", "update", "write_back")]
    assert body == expected
    # the carries travel: what the visit with tile j wrote is what the visit with tile j+1 reads
    visits = [s for s in t.steps if s.indices.get("i") == 1 and s.op in ("load_qi", "write_back")]
    for wrote, read in zip(visits[1::2], visits[2::2], strict=False):
        np.testing.assert_array_equal(wrote.carries["mi"], read.carries["mi"])
        np.testing.assert_array_equal(wrote.carries["li"], read.carries["li"])


def test_causal_inner_loop_starts_at_the_diagonal():
    cfg = Config(algo="fa1", n=13, d=2, br=3, bc=5, causal=True)
    t = make_trace(every_block(cfg))
    for j in range(cfg.tc):
        visited = [s.indices["i"] for s in t.steps if s.op == "load_qi" and s.j == j]
        assert visited == list(range(j * cfg.bc // cfg.br, cfg.tr))
        # every block visited has a row at or below the tile's first column
        assert all(min(cfg.n, (i + 1) * cfg.br) - 1 >= j * cfg.bc for i in visited)
    assert t.model["matches"] and t.reference["ok"]


def test_update_carries_follow_fa1s_formula(rng):
    t = make_trace(Config(algo="fa1", n=16, d=8, br=4, bc=4, seed=int(rng.integers(2**31))))
    for s in (s for s in t.steps if s.op == "update"):
        c = s.carries
        np.testing.assert_allclose(c["alpha"], np.exp(c["m_old"] - c["mi"]), rtol=1e-6)
        np.testing.assert_allclose(c["beta"], np.exp(c["m_ij"] - c["mi"]), rtol=1e-6)
        np.testing.assert_allclose(c["li"], c["alpha"] * c["l_old"] + c["beta"] * c["l_ij"], rtol=1e-5)
        if s.j == 0:
            assert np.all(c["alpha"] == 0.0), "on the first tile nothing held is stale"
    assert all(v.dtype == np.float32 for v in s.carries.values())


def test_every_step_code_is_its_region_with_indices_substituted():
    t = make_trace(every_block(Config(algo="fa1", n=10, d=4, br=4, bc=3, causal=True)))
    source = KERNEL.read_text()
    assert t.kernel["source"] == source and t.kernel["file"] == "fa1_forward.cu"
    assert set(kernels.regions(get("fa1").kernel)) == set(get("fa1").words.LABELS)
    for step in t.steps:
        header, *body = step.code.splitlines()
        i = step.indices.get("i")  # the block of Q the one block visits; blockIdx.x is 0
        assert step.block == 0 and step.kernel == "fa1"
        if step.op == "init":
            assert header == f"// i = {i}" and step.indices == {"i": i}
        elif step.op == "load_kv":
            assert header == f"// j = {step.j}" and step.indices == {"j": step.j}
        else:
            assert header == f"// j = {step.j}, i = {i}" and list(step.indices) == ["j", "i"]  # the outer index first
        expected = region_lines(source, step.op)
        for name, value in (("i", i), ("j", step.j)):
            if value is not None:
                expected = [re.sub(rf"\b{name}\b", str(value), line) for line in expected]
        assert body == expected
        first, last = step.lines
        assert source.splitlines()[first - 2].strip() == f"// step: {step.op}"
        assert source.splitlines()[last].strip() == "// end step"


def test_steps_name_the_real_tensors_and_buffers():
    t = make_trace(every_block(Config(algo="fa1", n=8, d=4, br=4, bc=4)))
    assert set(t.tensors) == {"Q", "K", "V", "O", "l", "m"}
    assert t.tensors["l"]["shape"] == [8] and t.tensors["m"]["shape"] == [8]
    declared = set(t.sram["buffers"])
    assert declared == {"Qi", "Oi", "Kj", "Vj", "Sij", "mi", "li"}
    moved = {(s.op, x.tensor, x.kind) for s in t.steps for x in s.transfers}
    assert moved == {
        *(("init", name, "write") for name in "Olm"),
        ("load_kv", "K", "read"),
        ("load_kv", "V", "read"),
        *(("load_qi", name, "read") for name in "QOlm"),
        *(("write_back", name, "write") for name in "Olm"),
    }
    assert all(set(s.sram) <= declared and s.text for s in t.steps)


def test_only_recorded_blocks_keep_values_but_all_are_counted():
    cfg = Config(algo="fa1", n=40, d=2, br=4, bc=8)  # Tr = 10 > 8: only block 0 is recorded
    t = make_trace(cfg)
    assert {s.indices.get("i") for s in t.steps} == {0, None}  # block of Q 0, and the outer loop's load_kv
    assert [s.j for s in t.steps if s.op == "load_kv"] == list(range(cfg.tc))
    assert t.hbm == model.count(40, 2, 4, 8) and t.phases[-1]["hbm"] == t.hbm


def test_cli_trace_writes_outputs(capsysbinary):
    assert main(["trace", "--plain", "--algo", "fa1", "--n", "10", "--d", "3", "--br", "4", "--bc", "4"]) == 0
    doc = json.loads(capsysbinary.readouterr().out)
    assert doc["config"]["algo"] == "fa1" and doc["kernel"]["file"] == "fa1_forward.cu"
    assert set(doc["outputs"]) == {"O", "l", "m"}
    assert np.array(doc["outputs"]["O"]).shape == (10, 3) and len(doc["outputs"]["l"]) == 10
    assert doc["reference"]["ok"] and doc["model"]["matches"]
    assert {s["block"] for s in doc["steps"]} == {0}  # blockIdx.x: one block per head
    assert all("i" not in s["indices"] for s in doc["steps"] if s["op"] == "load_kv")  # the outer loop's


@pytest.mark.parametrize("n,d,br,bc", [(64, 16, 16, 16), (37, 8, 8, 4)])
def test_extreme_logits_stay_finite_and_exact(rng, n, d, br, bc):
    """Inputs x100 make scores of order 1e4: dividing by li every visit must neither overflow nor drift."""
    x = qkv(rng, n, d, scale=100.0)
    cfg = Config(algo="fa1", n=n, d=d, br=br, bc=bc)
    O, l, m, _ = outputs(cfg, x)
    assert all(np.all(np.isfinite(a)) for a in (O, l, m))
    O_ref, L_ref = reference.attention(x["Q"], x["K"], x["V"], cfg.softmax_scale)
    assert np.abs(L_ref).max() > 100, "the test must really produce extreme logits"
    S32 = (x["Q"] @ x["K"].T) * np.float32(cfg.softmax_scale)  # plain float32 attention: the error to judge by
    P32 = np.exp(S32 - S32.max(1, keepdims=True))
    O32 = (P32 @ x["V"]) / P32.sum(1, keepdims=True)
    assert reference.errors(O, O_ref)["max_rel"] <= 4 * reference.errors(O32, O_ref)["max_rel"] + 1e-6
