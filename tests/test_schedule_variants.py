"""The ablation's schedules and fa2-triton's one-lane baseline (algos/fa3/schedule.py, the trace's
`schedule.variants` and `schedule.baseline`): closed forms on a hand-computed tile, the model's rules on any
launch with each feature off, and the rungs' TFLOP/s read from the recorded benchmark run."""

from __future__ import annotations

import json
import os
from itertools import pairwise
from pathlib import Path

import pytest

from flashviz.algos.fa3 import schedule
from flashviz.model.config import Config
from flashviz.tracing.build import make_trace
from helpers import every_block

ROOT = Path(__file__).resolve().parents[1]


def cfg_of(n: int, d: int = 64, causal: bool = False) -> Config:
    return Config(algo="fa3", n=n, d=d, br=128, bc=128, causal=causal, seed=int.from_bytes(os.urandom(4), "little"))


@pytest.fixture
def hand_rates(monkeypatch):
    """Rates chosen (as in test_fa3_schedule.py) so that a warpgroup's S = P·V = 2 ns, its softmax 3 ns, a Q half
    1 ns, Kj or Vj 2 ns, an O half 1 ns at D=64, Bc=128."""
    params = {k: dict(v) for k, v in schedule.PARAMS.items()}
    params["bf16_matmul_tflops"]["value"] = 2 * 64 * 128 * 64 / 2 * 132 / 1e3
    params["exp_tflops"]["value"] = (64 * 128 + 64) / 3 * 132 / 1e3
    params["copy_tb_s"]["value"] = 2 * 64 * 64 / 1 * 132 / 1e3
    monkeypatch.setattr(schedule, "PARAMS", params)


def spans(b):
    return {(x["lane"], x["what"]): (x["start_ns"], x["end_ns"]) for x in b["bars"]}


def check(got, want):
    assert set(got) == set(want)
    for key, (start, end) in want.items():
        assert got[key] == (pytest.approx(start), pytest.approx(end)), key


def test_the_baseline_of_one_tile_by_hand(hand_rates):
    """One lane: Q [0,2], K [2,4], V [4,6], S [6,10] (both halves), softmax [10,16], P·V [16,20], O [20,22]."""
    cfg = Config(algo="fa3", n=100, d=64, br=128, bc=128)
    b = schedule.baseline(cfg, 0)
    assert {x["lane"] for x in b["bars"]} == {"one program"}
    check(spans(b), {
        ("one program", "Q"): (0, 2), ("one program", "K"): (2, 4), ("one program", "V"): (4, 6),
        ("one program", "S"): (6, 10), ("one program", "softmax"): (10, 16), ("one program", "PV"): (16, 20),
        ("one program", "O"): (20, 22),
    })  # fmt: skip
    assert b["end_ns"] == pytest.approx(22) == schedule.model(cfg, (0,))["serial"][0]["end_ns"]
    assert b["tensor_busy"] == pytest.approx(8 / 22)


def test_warp_specialization_alone_one_tile_by_hand(hand_rates):
    """No ping-pong, no overlap: the warpgroups meet at every piece. TMA Q halves [0,1], [1,2], K0 [2,4], V0 [4,6];
    S wg0 [4,6], wg1 [6,8]; both softmaxes after both S: wg0 [8,11], wg1 [11,14]; both P·V after both softmaxes:
    wg0 [14,16], wg1 [16,18]; O wg0 [16,17], wg1 [18,19]. End 19 ns (the full model's is 15)."""
    cfg = Config(algo="fa3", n=100, d=64, br=128, bc=128)
    b = schedule.block(cfg, 0, pingpong=False, overlap=False)
    check(spans(b), {
        ("producer", "Q half 0"): (0, 1), ("producer", "Q half 1"): (1, 2), ("producer", "K"): (2, 4),
        ("producer", "V"): (4, 6), ("wg0", "S"): (4, 6), ("wg1", "S"): (6, 8), ("wg0", "softmax"): (8, 11),
        ("wg1", "softmax"): (11, 14), ("wg0", "PV"): (14, 16), ("wg1", "PV"): (16, 18), ("wg0", "O"): (16, 17),
        ("wg1", "O"): (18, 19),
    })  # fmt: skip
    assert b["end_ns"] == pytest.approx(19) and b["tensor_busy"] == pytest.approx(8 / 19)


def test_ping_pong_without_overlap_two_tiles_by_hand(hand_rates):
    """Ping-pong, no intra-warpgroup overlap, N=200 (two tiles, three stages: the producer loads K0 [2,4], V0 [4,6],
    K1 [6,8], V1 [8,10]). Tile 0 as the full model's: S wg0 [4,6], wg1 [6,8]; softmax wg0 [6,9], wg1 [9,12]; P·V
    wg0 [9,11], wg1 [12,14]. Tile 1: each warpgroup's S after its own P·V, in ping-pong order on the tensor cores:
    wg0 [14,16] (the tensor cores are wg1's until 14), wg1 [16,18]; softmax wg0 [16,19], wg1 [19,22]; P·V wg0
    [19,21], wg1 [22,24]; O wg0 [21,22], wg1 [24,25]."""
    cfg = Config(algo="fa3", n=200, d=64, br=128, bc=128)
    b = schedule.block(cfg, 0, pingpong=True, overlap=False)
    got = {(x["lane"], x["what"], x["j"]): (x["start_ns"], x["end_ns"]) for x in b["bars"]}
    want = {
        ("wg0", "S", 0): (4, 6), ("wg1", "S", 0): (6, 8), ("wg0", "softmax", 0): (6, 9), ("wg1", "softmax", 0): (9, 12),
        ("wg0", "PV", 0): (9, 11), ("wg1", "PV", 0): (12, 14), ("wg0", "S", 1): (14, 16), ("wg1", "S", 1): (16, 18),
        ("wg0", "softmax", 1): (16, 19), ("wg1", "softmax", 1): (19, 22), ("wg0", "PV", 1): (19, 21),
        ("wg1", "PV", 1): (22, 24), ("wg0", "O", None): (21, 22), ("wg1", "O", None): (24, 25),
        ("producer", "K", 1): (6, 8), ("producer", "V", 1): (8, 10),
    }  # fmt: skip
    for key, (start, end) in want.items():
        assert got[key] == (pytest.approx(start), pytest.approx(end)), key
    assert b["end_ns"] == pytest.approx(25)
    assert schedule.block(cfg, 0)["end_ns"] < 25  # the overlapped order hides tile 1's S under tile 0's softmax


@pytest.mark.parametrize(("n", "d", "causal"), [(1000, 64, False), (700, 128, True), (129, 64, True)])
@pytest.mark.parametrize(("pingpong", "overlap"), [(False, False), (True, False)])
def test_the_rules_hold_with_a_feature_off(n, d, causal, pingpong, overlap):
    cfg = cfg_of(n, d, causal)
    st = {64: 3, 128: 2}[d]
    for i in range(cfg.tr):
        b = schedule.block(cfg, i, pingpong, overlap)
        bars = b["bars"]
        for unit in ("tma", "tensor", "mufu"):  # one piece at a time on each unit
            sp = sorted((x["start_ns"], x["end_ns"]) for x in bars if x["unit"] == unit)
            assert all(e0 <= s1 + 1e-9 for (_, e0), (s1, _) in pairwise(sp)), unit
        at = {(x["lane"], x["what"], x["j"]): x for x in bars}
        tc = cfg.tiles_of_block(i)
        for j in range(tc):
            k, v = at["producer", "K", j], at["producer", "V", j]
            for w in ("wg0", "wg1"):
                s, soft, pv = at[w, "S", j], at[w, "softmax", j], at[w, "PV", j]
                assert s["start_ns"] >= k["end_ns"] and soft["start_ns"] >= s["end_ns"] - 1e-9
                assert pv["start_ns"] >= max(soft["end_ns"], v["end_ns"]) - 1e-9
                if j > 0:  # no overlap: tile j's S after this warpgroup's P·V of tile j - 1
                    assert s["start_ns"] >= at[w, "PV", j - 1]["end_ns"] - 1e-9
                if not pingpong:  # the warpgroups meet: a softmax after both S, a P·V after both softmaxes
                    assert soft["start_ns"] >= max(at[x, "S", j]["end_ns"] for x in ("wg0", "wg1")) - 1e-9
                    assert pv["start_ns"] >= max(at[x, "softmax", j]["end_ns"] for x in ("wg0", "wg1")) - 1e-9
            if j >= st:
                assert k["start_ns"] >= max(at[w, "S", j - st]["end_ns"] for w in ("wg0", "wg1")) - 1e-9
                assert v["start_ns"] >= max(at[w, "PV", j - st]["end_ns"] for w in ("wg0", "wg1")) - 1e-9
        assert 0 < b["tensor_busy"] <= 1


def test_the_rungs_tflops_are_the_recorded_runs():
    shipped = ROOT / "src/flashviz/data/attention" / schedule.ATTENTION_RUN
    bench = ROOT / "bench/results/attention" / schedule.ATTENTION_RUN
    assert shipped.read_bytes() == bench.read_bytes()  # the shipped copy is the recorded file
    rows = json.loads(bench.read_text())["rows"]
    for d in (64, 128):
        for causal in (False, True):
            got = schedule.measured_tflops(d, causal)
            for rung, provider in [("warp specialization", "fa3 warp specialization"),
                                   ("+ ping-pong", "fa3 + ping-pong"),
                                   ("+ intra-warpgroup overlap", "fa3 + intra-warpgroup overlap")]:  # fmt: skip
                (row,) = [x for x in rows if x["provider"] == provider and x["mode"] == "fwd" and x["d"] == d
                          and x["n"] == 16384 and x["causal"] == causal]  # fmt: skip
                assert got["tflops"][rung] == row["tflops"]
    assert schedule.measured_tflops(96, False)["tflops"] == dict.fromkeys(got["tflops"])  # no D=96 rows: None


def test_the_trace_carries_the_variants_and_the_baseline():
    cfg = every_block(cfg_of(300, 64, True))
    doc = json.loads(make_trace(cfg).to_json())
    s = doc["schedule"]
    names = [v["name"] for v in s["variants"]]
    assert names == ["warp specialization", "+ ping-pong", "+ intra-warpgroup overlap"] and s["variant"] == names[-1]
    assert s["variants"][-1]["blocks"] == s["blocks"]  # the full model is the last rung
    for v in s["variants"]:
        assert [b["i"] for b in v["blocks"]] == doc["config"]["recorded_blocks"]
        assert v["tflops"] == schedule.measured_tflops(64, True)["tflops"][v["name"]]
    base = s["baseline"]
    assert base["algo"] == "fa2-triton" and base["lanes"] == ["one program"]
    for b, serial in zip(base["blocks"], s["serial"], strict=True):
        assert b["end_ns"] == pytest.approx(serial["end_ns"])
        assert [x["j"] for x in b["bars"] if x["what"] == "S"] == list(range(b["tiles"]))


def test_every_bar_names_a_step_of_its_block_that_the_page_can_follow():
    """The page highlights the bars whose (`step`, `step_j`) are the current step's (op, j): every bar of the model,
    of each rung and of the baseline names a step of its block, and every step of a block has some bar."""
    cfg = every_block(cfg_of(700, 64, False))
    doc = json.loads(make_trace(cfg).to_json())
    s = doc["schedule"]
    steps = {(st["block"], st["op"], st["j"]) for st in doc["steps"]}
    groups = [s["blocks"], s["baseline"]["blocks"]] + [v["blocks"] for v in s["variants"]]
    for blocks in groups:
        for b in blocks:
            named = {(b["i"], bar["step"], bar["step_j"]) for bar in b["bars"]}
            assert named <= steps
            assert named == {x for x in steps if x[0] == b["i"]}
            assert all(bar["piece"] in s["pieces"] for bar in b["bars"])
