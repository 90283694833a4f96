"""Standard attention (three kernels, S and P in HBM): outputs against float64, counters against the closed
form, steps and shared memory against the model, code cut from standard.cu."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from flashviz.algos import get
from flashviz.algos.standard import engine as standard
from flashviz.algos.standard import traffic as model
from flashviz.cli.main import main
from flashviz.model import kernels, reference
from flashviz.model.config import Config, ConfigError
from flashviz.tracing.build import make_trace
from helpers import every_block, qkv, region_lines

KERNEL = kernels.path(get("standard").kernel)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    "n,d,br,bc",
    [
        (8, 4, 4, 4),  # the seed's example
        (10, 4, 4, 4),  # ragged N: a short last block and a short last tile
        (1, 1, 1, 1),  # the smallest launch
        (7, 3, 4, 2),  # ragged, Br != Bc
        (37, 5, 8, 16),  # ragged, Bc > Br
        (100, 64, 16, 32),
        (50, 16, 64, 64),  # Br and Bc larger than N
    ],
)
def test_outputs_match_float64(rng, n, d, br, bc, causal):
    x = qkv(rng, n, d)
    cfg = Config(algo="standard", n=n, d=d, br=br, bc=bc, causal=causal)
    hbm = standard.execute(cfg, x).hbm
    O_ref, _ = reference.attention(x["Q"], x["K"], x["V"], cfg.softmax_scale, causal)
    O = hbm.tensors["O"]
    assert np.all(np.isfinite(O)), "every output element must be written"
    assert reference.errors(O, O_ref)["max_rel"] <= 1e-5
    # P really is the softmax of S, row by row, on the columns the block uses
    S64 = (x["Q"].astype(np.float64) @ x["K"].T.astype(np.float64)) * cfg.softmax_scale
    if causal:
        S64[np.triu_indices(n, k=1)] = -np.inf
    P64 = np.exp(S64 - S64.max(1, keepdims=True))
    P64 /= P64.sum(1, keepdims=True)
    written = hbm.writes["P"] > 0
    np.testing.assert_allclose(hbm.tensors["P"][written], P64[written], rtol=0, atol=1e-6)
    assert np.all(np.isnan(hbm.tensors["P"][~written])), "entries no kernel wrote stay poisoned"


@given(
    n=st.integers(1, 60),
    d=st.integers(1, 12),
    br=st.integers(1, 20),
    bc=st.integers(1, 20),
    causal=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_config_matches_float64_and_the_closed_forms(n, d, br, bc, causal, seed):
    cfg = every_block(Config(algo="standard", n=n, d=d, br=br, bc=bc, seed=seed, causal=causal))
    t = make_trace(cfg)
    assert t.reference["ok"], t.reference
    assert t.hbm == model.count(n, d, br, bc, causal)
    assert len(t.steps) == model.steps(n, d, br, bc, causal)
    assert t.sram["bytes"] == model.sram_bytes(n, d, br, bc)
    assert {k: v["bytes"] for k, v in t.sram["kernels"].items()} == model.kernel_sram_bytes(n, d, br, bc)


@given(n=st.integers(1, 48), d=st.integers(1, 4), br=st.integers(1, 16), bc=st.integers(1, 16))
def test_per_element_pattern(n, d, br, bc):
    """Q once, K and V once per block of Q, every element of S and P written once and read once, O written once."""
    cfg = Config(algo="standard", n=n, d=d, br=br, bc=bc)
    rng = np.random.default_rng(n)
    hbm = standard.execute(cfg, qkv(rng, n, d)).hbm
    assert np.all(hbm.reads["Q"] == 1)
    assert np.all(hbm.reads["K"] == cfg.tr) and np.all(hbm.reads["V"] == cfg.tr)
    for name in "SP":
        assert np.all(hbm.writes[name] == 1) and np.all(hbm.reads[name] == 1)
    assert np.all(hbm.writes["O"] == 1) and not hbm.reads["O"].any()
    assert not any(hbm.writes[t].any() for t in "QKV")


def test_headline_counts_for_n4096():
    """The README's numbers: S and P cross HBM N² each way; K and V are streamed Tr times, as in FA2."""
    n, d, b = 4096, 64, 64
    c = model.count(n, d, b, b)
    assert c["S"] == c["P"] == {"read": n * n, "written": n * n}
    assert c["Q"]["read"] == n * d and c["O"]["written"] == n * d
    assert c["K"]["read"] == c["V"]["read"] == (n // b) * n * d
    assert model.sram_bytes(n, d, b, b) == 4 * 3 * b * d  # Qi, Kj, Sij: the largest kernel's
    assert model.kernel_sram_bytes(n, d, b, b)["standard_softmax"] == 4 * (n + 2)


def test_causal_skips_tiles_above_the_diagonal_and_counts_only_used_columns():
    cfg = every_block(Config(algo="standard", n=10, d=2, br=4, bc=3, causal=True))
    t = make_trace(cfg)
    for b in t.blocks:
        last_row = b["rows"][1] - 1
        tiles = [s.j for s in t.steps if s.block == b["i"] and s.op == "load_k"]
        assert tiles == [j for j in range(cfg.tc) if j * cfg.bc <= last_row]
        assert [s.j for s in t.steps if s.block == b["i"] and s.op == "load_pv"] == tiles
    full = model.count(10, 2, 4, 3)
    assert t.hbm["S"]["written"] < full["S"]["written"] and t.model["matches"] and t.reference["ok"]


def test_phases_follow_the_three_launches():
    cfg = Config(algo="standard", n=10, d=3, br=4, bc=4)
    t = make_trace(every_block(cfg))
    ops = [p["op"] for p in t.phases]
    p1 = 1 + 2 * cfg.tc
    assert ops[:p1] == ["load_q"] + ["load_k", "scores"] * cfg.tc
    assert ops[p1 : p1 + cfg.br] == ["softmax_row"] * cfg.br
    assert ops[p1 + cfg.br :] == ["load_pv", "accumulate"] * cfg.tc + ["write_o"]
    assert t.phases[-1]["hbm"] == t.hbm
    # kernel 1 finishes (all of S written) before kernel 2 reads any of it
    after_k1 = t.phases[p1 - 1]["hbm"]
    assert after_k1["S"] == {"read": 0, "written": 100} and after_k1["P"]["written"] == 0


def test_every_step_code_is_its_region_with_indices_substituted():
    t = make_trace(every_block(Config(algo="standard", n=10, d=4, br=4, bc=4, causal=True)))
    source = KERNEL.read_text()
    assert t.kernel["source"] == source and t.kernel["file"] == "standard.cu"
    assert set(kernels.regions(get("standard").kernel)) == set(get("standard").words.LABELS)
    for step in t.steps:
        header, *body = step.code.splitlines()
        indices = dict(re.findall(r"(\w) = (\d+)", header))
        if step.op == "softmax_row":
            assert list(indices) == ["i", "r"] and int(indices["i"]) == step.block and step.j is None
            assert step.transfers[0].rows == (int(indices["r"]), int(indices["r"]) + 1)
        elif step.j is None:
            assert header == f"// i = {step.block}"
        else:
            assert header == f"// i = {step.block}, j = {step.j}"
        expected = region_lines(source, step.op)
        for name, value in indices.items():
            expected = [re.sub(rf"\b{name}\b", value, line) for line in expected]
        assert body == expected
        first, last = step.lines
        assert source.splitlines()[first - 2].strip() == f"// step: {step.op}"
        assert source.splitlines()[last].strip() == "// end step"


def test_steps_name_the_real_tensors_and_buffers():
    t = make_trace(every_block(Config(algo="standard", n=8, d=4, br=4, bc=4)))
    assert set(t.tensors) == {"Q", "K", "V", "S", "P", "O"}
    assert t.tensors["S"]["shape"] == [8, 8] and t.tensors["P"]["shape"] == [8, 8]
    declared = {b for k in t.sram["kernels"].values() for b in k["buffers"]}
    assert declared == {"Qi", "Kj", "Sij", "Sr", "mr", "lr", "Pij", "Vj", "Oi"}
    moved = {(s.op, t_.tensor, t_.kind) for s in t.steps for t_ in s.transfers}
    assert moved == {
        ("load_q", "Q", "read"),
        ("load_k", "K", "read"),
        ("scores", "S", "write"),
        ("softmax_row", "S", "read"),
        ("softmax_row", "P", "write"),
        ("load_pv", "P", "read"),
        ("load_pv", "V", "read"),
        ("write_o", "O", "write"),
    }
    for s in t.steps:
        assert set(s.sram) <= declared and s.text
        # a step's SRAM buffers belong to the kernel that runs it
        kernel = {"softmax_row": "standard_softmax", "load_pv": "standard_pv", "accumulate": "standard_pv"}.get(
            s.op, "standard_pv" if s.op == "write_o" else "standard_scores"
        )
        assert set(s.sram) <= set(t.sram["kernels"][kernel]["buffers"])


def test_sram_macros_in_the_kernel_file_match_the_model():
    source = KERNEL.read_text()
    for name, args in (("standard_scores", (16, 8, 32)), ("standard_softmax", (100,)), ("standard_pv", (16, 8, 32))):
        m = re.search(rf"^#define {name}_smem_bytes\(([^)]*)\)\s+(\(.*\))\s*(//.*)?$", source, re.MULTILINE)
        assert m, name
        params = [p.strip() for p in m[1].split(",")]
        value = eval(m[2], {}, dict(zip(params, args, strict=True)))  # integer arithmetic only
        n, (br, bc, d) = 100, (16, 8, 32)
        assert value == model.kernel_sram_bytes(n, d, br, bc)[name]


def test_cli_trace_writes_outputs_o(capsysbinary):
    assert main(["trace", "--plain", "--algo", "standard", "--n", "10", "--d", "3", "--br", "4", "--bc", "4"]) == 0
    doc = json.loads(capsysbinary.readouterr().out)
    assert doc["config"]["algo"] == "standard" and doc["kernel"]["file"] == "standard.cu"
    assert set(doc["outputs"]) == {"O"} and np.array(doc["outputs"]["O"]).shape == (10, 3)
    assert doc["reference"]["ok"] and doc["model"]["matches"]
    assert doc["hbm"]["S"] == {"read": 100, "written": 100}


def test_engine_refuses_n_it_cannot_hold(capsys):
    with pytest.raises(ConfigError, match="n: must be at most 4096 for standard"):
        get("standard").validated(Config(algo="standard", n=4097))
    assert main(["trace", "--algo", "standard", "--n", "8192"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--n" in err and "standard" in err


def test_extreme_logits_stay_finite(rng):
    x = qkv(rng, 40, 8, scale=100.0)
    cfg = Config(algo="standard", n=40, d=8, br=8, bc=16)
    O = standard.execute(cfg, x).hbm.tensors["O"]
    O_ref, L_ref = reference.attention(x["Q"], x["K"], x["V"], cfg.softmax_scale)
    assert np.abs(L_ref).max() > 100 and np.all(np.isfinite(O))
    S32 = (x["Q"] @ x["K"].T) * np.float32(cfg.softmax_scale)
    P32 = np.exp(S32 - S32.max(1, keepdims=True))
    O32 = (P32 / P32.sum(1, keepdims=True)) @ x["V"]  # the same order of operations in float32
    assert reference.errors(O, O_ref)["max_rel"] <= 4 * reference.errors(O32, O_ref)["max_rel"] + 1e-6
