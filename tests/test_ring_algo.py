"""The `ring` algorithm (issue 23, the viewer's part): the engine runs flashviz.ring_attention's loop over P simulated
devices. Held here, on fresh random inputs, P = 2..4, both layouts, causal and not: its merged output against
float64 attention over the whole sequence (computed here, in sequence order); against the NumPy simulation
(flashviz.engine.ring_sim) device by device and step by step; each merge against flashviz.model.merge's rule; its HBM
counters,
steps and FLOPs against the closed forms and the bytes each device sent against flashviz.hardware.ring_model; the
trace's
`devices` against the layout plan; the code each step shows cut from flashviz/ops/ring.py; and the CLI's flags."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flashviz.algos import get
from flashviz.engine.ring_sim import simulate
from flashviz.hardware.ring_model import model as ring_model
from flashviz.model import kernels
from flashviz.model.config import Config, ConfigError
from flashviz.model.merge import merge
from flashviz.model.ring_layout import blocks, owner
from flashviz.reports.compare import compare
from flashviz.tracing.build import make_trace

RING = get("ring")


def seq_order(n: int, world: int, layout: str) -> np.ndarray:
    """Sequence position of each laid-out row, built here from the layout's definition (not from the package)."""
    parts = 2 * world if layout == "zigzag" else world
    c = n // parts
    out = []
    for r in range(world):
        for k in (r, 2 * world - 1 - r) if layout == "zigzag" else (r,):
            out.extend(range(k * c, (k + 1) * c))
    return np.array(out)


def float64_attention(Q, K, V, scale, causal):
    S = (Q.astype(np.float64) @ K.astype(np.float64).T) * scale  # (N, N)
    if causal:
        S[np.triu_indices_from(S, k=1)] = -np.inf
    m = S.max(axis=1, keepdims=True)
    P = np.exp(S - m)
    l = P.sum(axis=1, keepdims=True)
    return (P @ V.astype(np.float64)) / l, (m + np.log(l))[:, 0]


def launch(world: int, layout: str, causal: bool, chunk: int, d: int, seed: int):
    parts = 2 * world if layout == "zigzag" else world
    n = parts * chunk
    cfg = Config(algo="ring", n=n, d=d, br=n // world, bc=n // world, devices=world, layout=layout, causal=causal)
    rng = np.random.default_rng(seed)
    seq = {k: rng.standard_normal((n, d)).astype(np.float32) for k in "QKV"}  # in sequence order
    pos = seq_order(n, world, layout)
    laid = {k: v[pos] for k, v in seq.items()}  # what the devices hold, device after device
    return cfg, seq, pos, make_trace(cfg, laid)


LAUNCHES = st.tuples(
    st.integers(2, 4), st.sampled_from(["zigzag", "contiguous"]), st.booleans(), st.integers(1, 3), st.integers(1, 5)
)


@settings(max_examples=30, deadline=None)
@given(launch_=LAUNCHES, seed=st.integers(0, 2**32 - 1))
def test_the_merged_result_is_float64_attention(launch_, seed):
    world, layout, causal, chunk, d = launch_
    cfg, seq, pos, t = launch(world, layout, causal, chunk, d, seed)
    O, L = float64_attention(seq["Q"], seq["K"], seq["V"], cfg.softmax_scale, causal)
    got_O, got_L = np.empty_like(O), np.empty_like(L)
    got_O[pos], got_L[pos] = t.outputs["O"], t.outputs["L"]  # back to sequence order
    assert np.max(np.abs(got_O - O)) <= 1e-5 * max(1.0, np.max(np.abs(O)))
    assert np.max(np.abs(got_L - L)) <= 1e-5 * max(1.0, np.max(np.abs(L)))
    assert t.reference["ok"], t.reference  # the trace's own check says the same


@settings(max_examples=25, deadline=None)
@given(launch_=LAUNCHES, seed=st.integers(0, 2**32 - 1))
def test_each_device_step_by_step_is_the_simulations_and_each_merge_the_rule(launch_, seed):
    world, layout, causal, chunk, d = launch_
    _, seq, pos, t = launch(world, layout, causal, chunk, d, seed)
    sim = simulate(seq["Q"], seq["K"], seq["V"], world, causal, layout)
    dev = t.devices
    assert dev is not None
    # the whole result: the simulation merges block by block, the ring's loop call by call (fp32 rounding apart)
    O = np.empty_like(sim.O)
    O[pos] = t.outputs["O"]
    np.testing.assert_allclose(O, sim.O, rtol=0, atol=2e-6 * max(1.0, float(np.abs(sim.O).max())))
    for s, step in enumerate(sim.steps):
        for r, ds in enumerate(step.devices):
            assert dev["steps"][s]["holds"][r]["owner"] == ds.holds == owner(r, s, world)
            assert [(w["q"], w["k"], w["kind"]) for w in dev["steps"][s]["work"][r]] == [
                (w.q_chunk, w.k_chunk, w.kind) for w in ds.work
            ]
            # the carries after step s: the last snapshot at or before the step's last phase
            last = dev["steps"][s]["phases"][1]
            snap = [c for c in dev["carries"][r] if c["phase"] <= last][-1]
            finite = np.isfinite(ds.L)
            np.testing.assert_array_equal(np.isfinite(snap["L"]), finite)
            np.testing.assert_allclose(
                snap["L"][finite], ds.L[finite], rtol=0, atol=2e-6 * max(1, np.abs(ds.L[finite]).max(initial=0))
            )
            np.testing.assert_allclose(
                snap["O"], ds.O, rtol=0, atol=2e-6 * max(1.0, float(np.abs(ds.O).max(initial=0)))
            )
        sent = {(x.src, x.dst, x.owner) for x in step.transfers}
        assert {(x["from"], x["to"], x["owner"]) for x in dev["steps"][s]["transfers"]} == sent
    # every merge step: the carries after it are flashviz.model.merge of the carries before it and the call's partial
    before: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    partial: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for st_ in t.steps:
        r = st_.block
        if st_.op == "init":
            before[r] = (st_.sram["Oi"], st_.sram["Li"])
        elif st_.op == "attend":
            partial[r] = (st_.sram["Ob"], st_.sram["Lb"])
        elif st_.op == "merge":
            o, l = merge(*before[r], *partial[r])
            np.testing.assert_array_equal(st_.sram["Oi"], o)
            np.testing.assert_array_equal(st_.sram["Li"], l)
            before[r] = (st_.sram["Oi"], st_.sram["Li"])


@pytest.mark.parametrize("world", [2, 3, 4])
@pytest.mark.parametrize("layout", ["zigzag", "contiguous"])
@pytest.mark.parametrize("causal", [False, True])
def test_counters_steps_flops_and_link_are_the_closed_forms(world, layout, causal):
    cfg, _, _, t = launch(world, layout, causal, 2, 3, int.from_bytes(os.urandom(4), "little"))
    assert t.hbm == RING.traffic.count(cfg.n, cfg.d, cfg.br, cfg.bc, causal) and t.model["matches"]
    assert len(t.steps) == RING.traffic.steps(cfg.n, cfg.d, cfg.br, cfg.bc, causal, layout)  # every device recorded
    assert t.flops["matches"] and t.flops["counted"] == RING.flops.count(cfg.n, cfg.d, cfg.br, cfg.bc, causal, layout)
    fwd = ring_model(cfg.n, cfg.d, world, causal=causal, layout=layout, element_bytes=4, tflops=1.0)["forward"]
    assert t.devices["sent_bytes"] == [fwd["sent_bytes"]] * world == t.devices["link"]["sent_bytes"]
    assert fwd["sent_bytes"] == (world - 1) * 2 * (cfg.n // world) * cfg.d * 4
    assert t.sram["bytes"] == RING.traffic.sram_bytes(cfg.n, cfg.d, cfg.br, cfg.bc)


def test_causal_shards_skipped_and_the_zigzag_balance():
    """Contiguous, causal: device r computes on its own and the r earlier shards and skips the rest; zigzag: every
    device computes the same number of visible pairs (flashviz.model.ring_layout's plan, as the trace lists it)."""
    for layout in ("contiguous", "zigzag"):
        _, _, _, t = launch(4, layout, True, 2, 2, 7)
        steps = t.devices["steps"]
        for r in range(4):
            skipped = [s for s in range(4) if all(w["kind"] == "skip" for w in steps[s]["work"][r])]
            if layout == "contiguous":
                assert skipped == list(range(r + 1, 4)), r  # the later shards, wholly above the diagonal
                assert [w["kind"] for w in steps[0]["work"][r]] == ["causal"]
            else:
                assert skipped == []
        kinds = [[w["kind"] for s in steps for w in s["work"][r]] for r in range(4)]
        if layout == "zigzag":
            assert all(k.count("full") == kinds[0].count("full") and k.count("causal") == 2 for k in kinds)
        # the trace's tile map says the same per (device, shard) pair
        for r in range(4):
            for s in range(4):
                j = owner(r, s, 4)
                ks = {b.kind for b in blocks(r, s, 4, layout, True)}
                want = "f" if ks == {"full"} else "s" if ks == {"skip"} else "m"
                assert t.tiling["pairs"][r][j] == want


def test_the_code_each_step_shows_is_cut_from_ring_py():
    """The steps' regions lie in flashviz/ops/ring.py's `_forward` (what ring_attention runs), with `step`
    substituted."""
    from pathlib import Path

    import flashviz.ops.ring as ring_module

    source = Path(ring_module.__file__).read_text()
    regions = kernels.regions(RING.kernel)
    assert set(regions) == {"init", "send", "attend", "merge", "wait", "finish"}
    lines = source.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("def _forward("))
    end = next(k for k in range(start + 1, len(lines)) if lines[k].startswith("def "))
    for r in regions.values():
        assert start < r.first <= r.last < end
    _, _, _, t = launch(2, "zigzag", False, 1, 2, 3)
    send = next(s for s in t.steps if s.op == "send" and s.indices.get("step") == 1)
    assert send.code.splitlines()[0] == "# i = 0, step = 1, j = 1"  # j: whose shard device 0 holds
    assert "last = 1 == ring.world - 1" in send.code
    assert t.kernel["file"] == "ring.py" and "def _forward(" in t.kernel["source"]


def test_launch_rules_are_one_line_errors():
    with pytest.raises(ConfigError, match=r"^br: must be N/P = 16/4 = 4 for ring"):
        RING.validated(Config(algo="ring", n=16, br=8, bc=8))
    with pytest.raises(ConfigError, match=r"^n: must be a multiple of 8 for ring on 4 devices"):
        RING.validated(Config(algo="ring", n=12, br=3, bc=3))
    RING.validated(Config(algo="ring", n=12, br=3, bc=3, layout="contiguous"))  # 4 chunks of 3
    with pytest.raises(ConfigError, match=r"^devices: must be an integer in 2\.\.8 \(got 9\)"):
        RING.validated(Config(algo="ring", n=18, br=2, bc=2, devices=9))
    with pytest.raises(ConfigError, match=r"^layout: must be one of zigzag, contiguous \(got 'ragged'\)"):
        RING.validated(Config(algo="ring", n=16, layout="ragged"))


def test_compare_leaves_the_ring_out():
    """Not a rival of the single-GPU forwards: `flashviz compare` lists the others (its model is `--ring P`)."""
    doc = compare(64, 8, 16, 16)
    assert "ring" not in doc["algorithms"] and "fa2" in doc["algorithms"]
    assert all("ring" not in p["bytes"] and "fa2" in p["bytes"] for p in doc["regimes"]["points"])
    assert "ring" not in doc["tables"]


def flashviz(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True, timeout=600)


def test_cli_traces_the_ring_with_its_flags(tmp_path):
    out = tmp_path / "ring.json"
    run = flashviz("trace", "--algo", "ring", "--n", "12", "--br", "4", "--bc", "4", "--devices", "3", "--layout",
                   "contiguous", "--causal", "-o", str(out))  # fmt: skip
    assert run.returncode == 0, run.stderr
    doc = json.loads(out.read_text())
    assert doc["config"]["launch"] == {"devices": 3, "layout": "contiguous"}
    assert doc["devices"]["count"] == 3 and doc["devices"]["layout"] == "contiguous"
    assert doc["reference"]["ok"]
    # the file opens again (its launch read back from config.launch)
    from flashviz.tracing.file_schema import problem

    assert problem(doc) is None
    bad = flashviz("trace", "--algo", "ring", "--devices", "9")
    assert bad.returncode != 0 and "--devices" in bad.stderr and "2..8" in bad.stderr
    mismatch = flashviz("trace", "--algo", "ring", "--n", "16", "--devices", "2")
    assert mismatch.returncode != 0
    assert mismatch.stderr.strip().splitlines()[-1].endswith("(got 4); set br = bc = 8, or devices = 4"), (
        mismatch.stderr
    )
    assert "Traceback" not in mismatch.stderr


# ---- the ring's limits are what the doors accept, and every refusal names a launch that runs ----

_FIXES = (
    (
        re.compile(r"devices = (\d+) \(br = bc = (\d+)\)"),
        lambda m: {"devices": int(m[1]), "br": int(m[2]), "bc": int(m[2])},
    ),
    (re.compile(r"set br = bc = (\d+)"), lambda m: {"br": int(m[1]), "bc": int(m[1])}),
    (re.compile(r"use n <= (\d+)"), lambda m: {"n": int(m[1])}),
    (re.compile(r"must be at most (\d+) for ring"), lambda m: {"n": int(m[1])}),
    (re.compile(r"must be a multiple of (\d+)"), lambda m: {"n": int(m[1])}),
    (re.compile(r"record one block \(block=0\)"), lambda m: {"record": (0,)}),
)


def _follow(check, cfg: Config, hops: int = 4) -> Config:
    """Apply what each refusal says until `check` accepts the launch; fail where a message names nothing that runs."""
    for _ in range(hops):
        try:
            return check(cfg)
        except ConfigError as exc:
            text = str(exc)
            fix = next((f(m) for pattern, f in _FIXES if (m := pattern.search(text))), None)
            assert fix is not None, f"the refusal names no launch that runs: {text}"
            cfg = cfg.replace(**fix)
    raise AssertionError(f"still refused after following {hops} messages: {cfg}")


@settings(max_examples=150, deadline=None, database=None)
@given(
    n=st.integers(1, 4096),
    devices=st.integers(2, 8),
    layout=st.sampled_from(["zigzag", "contiguous"]),
    br=st.integers(1, 256),
    api=st.booleans(),
)
def test_every_ring_refusal_names_a_launch_that_runs(n, devices, layout, br, api):
    cfg = Config(algo="ring", n=n, d=4, br=br, bc=br, devices=devices, layout=layout, record=(0,))
    check = RING.api_validated if api else RING.validated
    fixed = _follow(check, cfg)
    assert fixed.n <= RING.max_n


def test_the_ring_limit_is_the_longest_launch_the_api_runs():
    """/api/limits' N for ring is what /api/trace takes (devices and layout are API fields): at the limit one launch
    runs, and one row more is refused naming the limit."""
    from fastapi.testclient import TestClient

    from flashviz import server

    client = TestClient(server.create_app())
    ring = next(a for a in client.get("/api/limits").json()["algos"] if a["name"] == "ring")
    top = ring["max_n"]
    assert top == 2048
    shard = top // 8
    ok = client.get(f"/api/trace?algo=ring&n={top}&d=4&devices=8&br={shard}&bc={shard}&block=0")
    assert ok.status_code == 200, ok.text
    over = client.get(f"/api/trace?algo=ring&n={top + 16}&d=4&devices=8&br=258&bc=258")
    assert over.status_code == 422 and over.json()["field"] in ("n", "br"), over.text
    said = client.get("/api/trace?algo=ring&n=4096&d=64").json()
    assert said["field"] == "n" and f"at most {top}" in said["detail"], said
    named = client.get("/api/trace?algo=ring&n=2048&d=4").json()["detail"]
    assert named.endswith("use devices = 8 (br = bc = 256)"), named
    moved = client.get("/api/trace?algo=ring&n=48&d=8&devices=6&br=8&bc=8&layout=contiguous&causal=true")
    assert moved.status_code == 200 and moved.json()["devices"]["count"] == 6, moved.text


@pytest.mark.parametrize(("field", "value"), [("devices", 6), ("layout", "contiguous")])
def test_a_ring_field_on_another_algorithm_is_refused(field, value):
    with pytest.raises(ConfigError, match=rf"^{field}: fa2 does not take it \(--algo ring only\); leave it at"):
        get("fa2").validated(Config(algo="fa2", **{field: value}))
