"""fa3's modelled schedule (algos/fa3/schedule.py, the trace's `schedule`): its parameters are the recorded H200
runs' numbers, read back from the files it cites; its closed form on a hand-computed case; and on any launch the
model's own rules hold (no unit does two things at once, each piece after its inputs, the ring's slots reused only
once both warpgroups have released them)."""

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


def test_the_parameters_are_the_recorded_runs_numbers():
    p = schedule.PARAMS
    ladder = json.loads((ROOT / "bench/results/ladder/2026-12-01-nvidia-h200.json").read_text())
    par = json.loads((ROOT / "bench/results/parallelism/2026-12-01-nvidia-h200.json").read_text())
    assert p["bf16_matmul_tflops"]["value"] == ladder["peaks"]["bf16_matmul"]["tflops"]
    assert p["exp_tflops"]["value"] == par["rates"]["fp32_exp_tflops"]
    assert p["sms"]["value"] == par["device"]["multiprocessors"] == 132
    assert "copy 4.24 TB/s" in (ROOT / "bench/results/attention/NOTES.md").read_text()
    assert p["copy_tb_s"]["value"] == 4.24
    for name, param in p.items():  # every parameter names where it comes from, and that file exists
        source = param["source"]
        if source.startswith("bench/"):
            assert (ROOT / source.split(" ", 1)[0]).is_file(), name
        else:
            assert source.startswith("not measured"), name


def test_durations_are_work_over_the_sms_share_of_each_rate():
    t = schedule.durations(64, 128)
    per_sm_flops = 783.4315070696915e12 / 132 / 1e9  # FLOPs per ns
    assert t["scores"] == pytest.approx(2 * 64 * 128 * 64 / per_sm_flops) == pytest.approx(176.674, abs=1e-3)
    assert t["pv"] == t["scores"]
    assert t["softmax"] == pytest.approx((64 * 128 + 64) / (2.9438681590949365e12 / 132 / 1e9))
    assert t["load_kv"] == pytest.approx(2 * 128 * 64 / (4.24e12 / 132 / 1e9)) == pytest.approx(2 * t["load_q"])


def test_one_tile_by_hand(monkeypatch):
    """Rates chosen so that S = P·V = 2 ns, a warpgroup's softmax 3 ns, a Q half 1 ns, Kj or Vj 2 ns, O 1 ns (D=64,
    Bc=128). By hand: TMA Q halves [0,1], [1,2], K0 [2,4], V0 [4,6]; wg0 S0 [4,6], softmax [6,9]; wg1 S0 [6,8] (the
    tensor cores are wg0's until 6), softmax [9,12] (the exp units are wg0's until 9); wg0 P·V [9,11], O [11,12];
    wg1 P·V [12,14], O [14,15]. End 15 ns, the tensor cores busy 8 of them; one after another it is
    2·1 + (2·2 + 2·(2 + 3 + 2)) + 2·1 = 22 ns."""
    params = {k: dict(v) for k, v in schedule.PARAMS.items()}
    params["bf16_matmul_tflops"]["value"] = 2 * 64 * 128 * 64 / 2 * 132 / 1e3
    params["exp_tflops"]["value"] = (64 * 128 + 64) / 3 * 132 / 1e3
    params["copy_tb_s"]["value"] = 2 * 64 * 64 / 1 * 132 / 1e3
    monkeypatch.setattr(schedule, "PARAMS", params)
    cfg = Config(algo="fa3", n=100, d=64, br=128, bc=128)
    b = schedule.block(cfg, 0)
    got = {(x["lane"], x["what"]): (x["start_ns"], x["end_ns"]) for x in b["bars"]}
    want = {
        ("producer", "Q half 0"): (0, 1), ("producer", "Q half 1"): (1, 2), ("producer", "K"): (2, 4),
        ("producer", "V"): (4, 6), ("wg0", "S"): (4, 6), ("wg0", "softmax"): (6, 9), ("wg1", "S"): (6, 8),
        ("wg1", "softmax"): (9, 12), ("wg0", "PV"): (9, 11), ("wg0", "O"): (11, 12), ("wg1", "PV"): (12, 14),
        ("wg1", "O"): (14, 15),
    }  # fmt: skip
    assert set(got) == set(want)
    for key, (start, end) in want.items():
        assert got[key] == (pytest.approx(start), pytest.approx(end)), key
    assert b["end_ns"] == pytest.approx(15) and b["tensor_busy"] == pytest.approx(8 / 15)
    assert schedule.model(cfg, (0,))["serial"][0]["end_ns"] == pytest.approx(22)


@pytest.mark.parametrize(("n", "d", "causal"), [(1000, 64, False), (700, 128, True), (129, 64, True)])
def test_the_models_rules_hold_on_any_launch(n, d, causal):
    cfg = cfg_of(n, d, causal)
    st = {64: 3, 128: 2}[d]
    for i in range(cfg.tr):
        b = schedule.block(cfg, i)
        bars = b["bars"]
        for unit in ("tma", "tensor", "mufu"):  # one piece at a time on each unit
            spans = sorted((x["start_ns"], x["end_ns"]) for x in bars if x["unit"] == unit)
            assert all(e0 <= s1 + 1e-9 for (_, e0), (s1, _) in pairwise(spans)), unit
        at = {(x["lane"], x["what"], x["j"]): x for x in bars}
        tc = cfg.tiles_of_block(i)
        assert b["tiles"] == tc
        for j in range(tc):
            k, v = at["producer", "K", j], at["producer", "V", j]
            for w in ("wg0", "wg1"):
                s, soft, pv = at[w, "S", j], at[w, "softmax", j], at[w, "PV", j]
                assert s["start_ns"] >= k["end_ns"] and soft["start_ns"] >= s["end_ns"]
                assert pv["start_ns"] >= max(soft["end_ns"], v["end_ns"])
            if j >= st:  # slot j mod STAGES is reused once both warpgroups released tile j - STAGES
                assert k["start_ns"] >= max(at[w, "S", j - st]["end_ns"] for w in ("wg0", "wg1"))
                assert v["start_ns"] >= max(at[w, "PV", j - st]["end_ns"] for w in ("wg0", "wg1"))
        assert at["wg0", "S", 0]["start_ns"] <= at["wg1", "S", 0]["start_ns"]  # ping-pong: warpgroup 0 first
        assert 0 < b["tensor_busy"] <= 1


def test_the_trace_carries_the_model_for_its_recorded_blocks():
    cfg = every_block(cfg_of(300, 64, True))
    doc = json.loads(make_trace(cfg).to_json())
    s = doc["schedule"]
    assert s["source"] == "modelled" and s["lanes"] == ["producer", "wg0", "wg1"]
    assert [b["i"] for b in s["blocks"]] == doc["config"]["recorded_blocks"]
    ops = {st["op"] for st in doc["steps"]}
    assert {bar["step"] for b in s["blocks"] for bar in b["bars"]} == ops  # every bar is some step's work
    for b, serial in zip(s["blocks"], s["serial"], strict=True):
        assert b["end_ns"] < serial["end_ns"]  # overlapped beats one after another
    fa2 = json.loads(make_trace(cfg.replace(algo="fa2-triton")).to_json())
    assert fa2["schedule"] is None  # no warp-specialized kernel, no modelled lanes
