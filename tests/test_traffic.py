"""The engine's per-element HBM counters equal the closed-form traffic model, for many configs."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from flashviz.algos.fa2 import engine as fa2
from flashviz.algos.fa2 import traffic
from flashviz.model.config import Config
from flashviz.tracing.build import make_trace


@given(n=st.integers(1, 96), d=st.integers(1, 8), br=st.integers(1, 40), bc=st.integers(1, 40))
def test_counters_equal_model(n, d, br, bc):
    cfg = Config(n=n, d=d, br=br, bc=bc)
    rng = np.random.default_rng(n * 1000 + d)
    x = {k: rng.standard_normal((n, d), dtype=np.float32) for k in "QKV"}
    run = fa2.execute(cfg, x)
    assert run.hbm.counters() == traffic.count(n, d, br, bc)


@given(n=st.integers(1, 64), d=st.integers(1, 6), br=st.integers(1, 24), bc=st.integers(1, 24))
def test_per_element_pattern(n, d, br, bc):
    """Q once, K and V once per block of Q (Tr times), O and L written once and never read back."""
    cfg = Config(n=n, d=d, br=br, bc=bc)
    rng = np.random.default_rng(n)
    x = {k: rng.standard_normal((n, d), dtype=np.float32) for k in "QKV"}
    hbm = fa2.execute(cfg, x).hbm
    assert np.all(hbm.reads["Q"] == 1)
    assert np.all(hbm.reads["K"] == cfg.tr) and np.all(hbm.reads["V"] == cfg.tr)
    assert np.all(hbm.writes["O"] == 1) and np.all(hbm.writes["L"] == 1)
    assert not hbm.reads["O"].any() and not hbm.reads["L"].any()
    assert not any(hbm.writes[t].any() for t in "QKV")


def test_phase_counters_end_at_the_totals_and_never_fall():
    t = make_trace(Config(n=10, d=4, br=4, bc=3))
    last = t.phases[-1]["hbm"]
    assert {k: v for k, v in last.items()} == t.hbm
    for before, after in zip(t.phases, t.phases[1:], strict=False):
        for name in before["hbm"]:
            for kind in ("read", "written"):
                assert after["hbm"][name][kind] >= before["hbm"][name][kind]
    assert len(t.phases) == 2 + 3 * t.config["tc"]


def test_model_answers_for_a_million_rows_without_the_engine():
    m = traffic.count(n=1 << 20, d=128, br=64, bc=64)
    assert m["K"]["read"] == (1 << 20) // 64 * (1 << 20) * 128
    assert m["L"]["written"] == 1 << 20


@given(n=st.integers(1, 80), d=st.integers(1, 4), br=st.integers(1, 24), bc=st.integers(1, 24))
def test_causal_counters_equal_model(n, d, br, bc):
    cfg = Config(n=n, d=d, br=br, bc=bc, causal=True)
    rng = np.random.default_rng(n + 7)
    x = {k: rng.standard_normal((n, d), dtype=np.float32) for k in "QKV"}
    hbm = fa2.execute(cfg, x).hbm
    assert hbm.counters() == traffic.count(n, d, br, bc, causal=True)
    full = traffic.count(n, d, br, bc)
    assert hbm.counters()["K"]["read"] <= full["K"]["read"]
