"""Issue 11, item 2: the matmul and non-matmul FLOPs each algorithm's engine counts while it runs equal its closed
form (algos/<name>/flops.py), over ragged shapes, causal and not; and the trace carries both."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flashviz.algos import ALGOS, get
from flashviz.engine.flops import KINDS, NON_MATMUL, Flops
from flashviz.model.config import Config
from flashviz.model.inputs import random_inputs
from flashviz.tracing.build import make_trace
from flashviz.tracing.flops import closed_form


def counted(algo: str, n: int, d: int, br: int, bc: int, causal: bool, seed: int) -> dict[str, int]:
    a = get(algo)
    cfg = a.validated(Config(algo=algo, n=n, d=d, br=br, bc=bc, causal=causal))
    return a.engine.execute(cfg, random_inputs(n, d, seed, a.inputs)).flops_counted()


COUNTED = tuple(a for a in ALGOS if closed_form(get(a)) is not None)
# fa2-triton's and fa3's kernels take only their own tiles (`allowed`: fa2-triton powers of two >= 16, D in
# tiles.SUPPORTED_D; fa3 Br = Bc = 128, D 64 or 128): tested on those below
# ring's launch ties N, Br and Bc to its devices (Br = Bc = N/P): tests/test_ring_algo.py draws its own launches
ANY_SHAPE = tuple(a for a in COUNTED if get(a).allowed is None and a != "ring")
# a small launch each algorithm accepts (fa3's N ragged: its last tile masked)
SMALL = (
    {a: dict(n=19, d=4, br=4, bc=8) for a in ANY_SHAPE}
    | {"fa2-triton": dict(n=77, d=32, br=32, bc=16)}
    | {"fa3": dict(n=300, d=64, br=128, bc=128)}
    | {"ring": dict(n=24, d=4, br=6, bc=6)}
)


def test_every_algorithm_has_a_closed_form():
    """Every algorithm counts its FLOPs: a trace's `flops.model` is never null (the page would show 0, or nothing)."""
    assert set(COUNTED) == set(ALGOS)


@settings(max_examples=40, deadline=None)
@given(
    algo=st.sampled_from(ANY_SHAPE),
    n=st.integers(1, 70),
    d=st.integers(1, 12),
    br=st.sampled_from([1, 3, 4, 8, 16, 32]),
    bc=st.sampled_from([1, 2, 4, 8, 16, 32]),
    causal=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_closed_form_equals_the_engine_counters(algo, n, d, br, bc, causal, seed):
    causal = causal and get(algo).causal
    want = get(algo).flops.count(n=n, d=d, br=br, bc=bc, causal=causal)
    assert counted(algo, n, d, br, bc, causal, seed) == want
    assert set(want) == set(KINDS)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 300),
    d=st.sampled_from([32, 64, 96]),
    br=st.sampled_from([16, 32, 64, 128]),
    bc=st.sampled_from([16, 32, 64, 128]),
    causal=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_fa2_triton_closed_form_equals_the_engine_counters(n, d, br, bc, causal, seed):
    """Over the tiles kernel.py accepts (tiles.check): ragged N, D = 96 run 128 wide, causal with Br a multiple of
    Bc; and the engine's stages are the kernel's: a NO_MASK tile is wholly inside every real row's band, a masked
    one is not, and a tile the block skips holds no key any of its rows sees (judged from the mask itself)."""
    from flashviz.algos.fa2_triton import flops as fa2_triton_flops
    from flashviz.algos.fa2_triton import loops

    if causal and br % bc:
        br, bc = bc, br  # the kernel's causal rule: Br a multiple of Bc
    want = fa2_triton_flops.count(n=n, d=d, br=br, bc=bc, causal=causal)
    assert counted("fa2-triton", n, d, br, bc, causal, seed) == want
    cfg = Config(algo="fa2-triton", n=n, d=d, br=br, bc=bc, causal=causal)
    for i in range(cfg.tr):
        rows = np.arange(i * br, min(n, (i + 1) * br))[:, None]
        for j in range(cfg.tc):
            cols = np.arange(j * bc, min(n, (j + 1) * bc))[None, :]
            seen = (cols <= rows) if causal else np.ones((rows.size, cols.size), bool)
            stage = loops.stage_of(cfg, i, j)
            if stage is None:
                assert not seen.any(), (i, j)
            elif stage == "NO_MASK":
                assert seen.all() and (j + 1) * bc <= n, (i, j)
            else:
                assert stage == "MASK_BAND" and (not seen.all() or (j + 1) * bc > n), (i, j, stage)


def test_fa2_triton_counts_what_the_kernel_computes_by_hand():
    """N=256, D=64, Br=128, Bc=64, not causal: 2 blocks x 4 tiles; exp2 is one exp, the scale one mul per score."""
    br, bc, d, pairs, tr = 128, 64, 64, 8, 2
    c = counted("fa2-triton", 256, d, br, bc, False, 3)
    assert c["matmul"] == pairs * 2 * (2 * br * bc * d) == 16_777_216
    assert c["exp"] == pairs * (br * bc + br)
    assert c["div"] == tr * br * d and c["log"] == tr * br
    assert counted("fa2-triton", 256, 96, br, bc, False, 3)["matmul"] == pairs * 4 * br * bc * 128  # 96 runs 128 wide


@pytest.mark.parametrize("causal", [False, True])
def test_fa2_divides_once_per_row_and_fa1_on_every_visit(causal):
    # the FA2 paper's point (3): fa1 divides Oi by li on every (j, i) visit, fa2 once at write-back
    n, d, br, bc = 256, 16, 32, 32
    fa1 = counted("fa1", n, d, br, bc, causal, 1)
    fa2 = counted("fa2", n, d, br, bc, causal, 1)
    assert fa2["div"] == n * d  # Tr blocks of Br rows, N = Tr·Br here
    assert fa1["div"] > fa2["div"] * 2
    assert fa1["matmul"] == fa2["matmul"]  # the same tile products
    assert sum(fa1[k] for k in NON_MATMUL) > sum(fa2[k] for k in NON_MATMUL)


def test_the_counter_counts_what_it_computes():
    rng = np.random.default_rng()
    a, b = rng.standard_normal((3, 5)), rng.standard_normal((5, 2))
    fl = Flops()
    np.testing.assert_array_equal(fl.matmul(a, b), a @ b)
    np.testing.assert_array_equal(fl.exp(fl.sub(a, 1.0)), np.exp(a - 1.0))
    assert fl.rowmax(a).shape == (3,)
    assert dict(fl.take()) == {"matmul": 2 * 3 * 2 * 5, "add": 15, "exp": 15, "max": 15}
    assert not fl.take()
    with pytest.raises(ValueError, match="unknown FLOP kind"):
        fl.count("sqrt", 1)


@pytest.mark.parametrize("algo", COUNTED)
def test_the_trace_carries_counted_model_and_the_measured_anchor(algo):
    causal = get(algo).causal
    t = make_trace(Config(algo=algo, causal=causal, **SMALL[algo]))
    f = t.flops
    assert f["matches"] and f["counted"] == f["model"]
    assert f["matmul"] == f["counted"]["matmul"] > 0
    assert f["non_matmul"] == sum(f["counted"][k] for k in NON_MATMUL) > 0
    assert f["anchor"]["paper_ratio"] == 16
    assert 11 < f["anchor"]["measured_ratio"] < 13  # the ladder run (flashviz.hardware.peaks): 783.4 / 64.8 TFLOP/s
    assert t.phases[-1]["flops"] == f["counted"]  # the phases' cumulative counters end at the launch's
