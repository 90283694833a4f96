"""The README's "Why FA3 is faster" says what the recorded run and the model say: its TFLOP/s are the rows of
bench/results/attention's JSON it cites, its model times and busy shares are algos/fa3/schedule.py's at the launch it
names (D=128, N=16384, one block of 128 tiles), its durations are schedule.durations', and what it says of the
measured lanes and the tensor pipe is the shipped run's (the fa3 trace's schedule.measured and tensor_pipe)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flashviz.algos.fa3 import measured, schedule
from flashviz.model.config import Config

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RUN = ROOT / "bench/results/attention" / schedule.ATTENTION_RUN

pytestmark = pytest.mark.skipif(not README.is_file(), reason="no README beside this checkout")


def section() -> str:
    text = README.read_text()
    body = text.split("\n## Why FA3 is faster\n", 1)[1].split("\n## ", 1)[0]
    return " ".join(body.split())  # one line: sentences wrap


def tflops(provider: str, causal: bool) -> float:
    rows = json.loads(RUN.read_text())["rows"]
    (row,) = [x for x in rows if x["provider"] == provider and x["mode"] == "fwd" and x["d"] == 128
              and x["n"] == 16384 and x["causal"] == causal]  # fmt: skip
    return float(row["tflops"])


def test_it_sits_after_the_fast_attention_section_and_shows_the_screenshot():
    heads = re.findall(r"^## (.+)$", README.read_text(), flags=re.M)
    assert heads.index("Why FA3 is faster") == heads.index("Fast attention on a GPU: flashviz.attention") + 1
    assert "(docs/schedule.png)" in section() and (ROOT / "docs/schedule.png").is_file()
    assert f"bench/results/attention/{schedule.ATTENTION_RUN}" in section()


def test_its_measured_numbers_are_the_recorded_runs():
    text = section()
    fa3, fa2 = tflops("fa3", False), tflops("flashviz", False)
    fa3c, fa2c = tflops("fa3", True), tflops("flashviz", True)
    assert f"fa3 runs at {fa3:.1f} TFLOP/s against flashviz's fa2 at {fa2:.1f}: {fa3 / fa2:.2f}×" in text
    assert f"(causal: {fa3c:.1f} against {fa2c:.1f}, {fa3c / fa2c:.2f}×)" in text
    rungs = [tflops(f"fa3 {r}", False) for r in ("warp specialization", "+ ping-pong", "+ intra-warpgroup overlap")]
    causal = [tflops(f"fa3 {r}", True) for r in ("warp specialization", "+ ping-pong", "+ intra-warpgroup overlap")]
    assert (f"warp specialization alone {rungs[0]:.1f} TFLOP/s, with ping-pong {rungs[1]:.1f}, with intra-warpgroup "
            f"overlap {rungs[2]:.1f} (causal: {causal[0]:.1f}, {causal[1]:.1f}, {causal[2]:.1f})") in text  # fmt: skip
    assert "the measurement the reverse" in text and rungs[1] < rungs[0] < rungs[2]  # ping-pong alone measured slower


def test_its_model_numbers_are_the_models():
    text = section()
    cfg = Config(algo="fa3", n=16384, d=128, br=128, bc=128)
    base, full = schedule.baseline(cfg, 0), schedule.block(cfg, 0)
    assert base["tiles"] == 128
    said = (
        f"the one-lane order takes {base['end_ns'] / 1e3:.1f} µs with the tensor cores busy "
        f"{100 * base['tensor_busy']:.0f}% of it; the three lanes take {full['end_ns'] / 1e3:.1f} µs, busy "
        f"{100 * full['tensor_busy']:.0f}%: {base['end_ns'] / full['end_ns']:.2f}× in the model"
    )
    assert said in text
    rungs = [schedule.block(cfg, 0, pp, ov)["end_ns"] / 1e3 for _, pp, ov in schedule.RUNGS]
    assert f"The model puts the rungs at {rungs[0]:.1f}, {rungs[1]:.1f} and {rungs[2]:.1f} µs a block" in text
    assert f"({rungs[2] - rungs[1]:.1f} µs more)" in text and rungs[1] < rungs[0]
    t = schedule.durations(128, 128)
    assert f"{t['softmax']:.0f} ns of exponentials against {t['scores'] + t['pv']:.0f} ns of wgmma" in text
    assert f"{64 * 128 + 64} exponentials" in text
    assert t["load_kv"] * 2 > t["scores"] * 4  # "the model's loads make the producer the busiest lane at D=128"
    p = schedule.PARAMS
    assert f"bf16 matmul {p['bf16_matmul_tflops']['value']:.1f} TFLOP/s" in text
    assert f"accurate expf {p['exp_tflops']['value']:.2f} T/s, HBM copy {p['copy_tb_s']['value']:.2f} TB/s" in text


def test_what_it_says_of_the_measured_lanes_and_the_tensor_pipe_is_the_shipped_runs():
    text = section()
    parts = measured.beside(Config(algo="fa3", n=4096, d=128, br=128, bc=128), (0,))
    m, tp = parts["measured"], parts["tensor_pipe"]
    assert m["shape_matches"] and not m["shape"]["causal"]
    rows = {r["piece"]: r for r in m["disagreement"]}
    block, soft, s, pv = rows["block"], rows["softmax"], rows["S"], rows["PV"]

    def us(ns: float) -> str:
        return f"{ns / 1e3:.2f} µs"

    assert (f"a block takes {us(block['measured_ns'])} measured against {us(block['modelled_ns'])} modelled "
            f"({block['ratio']:.2f}×; the mean of the {block['count']} recorded blocks)") in text  # fmt: skip
    assert f"the producer waits {us(rows['KV']['measured_ns'])} a tile for a free slot" in text
    assert f"a consumer only {rows['wait']['measured_ns']:.0f} ns for Kj" in text
    assert (f"a tile's softmax takes {soft['measured_ns']:.0f} ns against the model's {soft['modelled_ns']:.0f} ns "
            f"({soft['ratio']:.2f}×") in text  # fmt: skip
    assert soft["measured_ns"] - soft["modelled_ns"] >= soft["modelled_ns"]  # "costs at least as much again"
    said = f"Sij {s['measured_ns']:.0f} ns from Kj's arrival against {s['modelled_ns']:.0f} ns ({s['ratio']:.2f}×"
    assert said in text
    assert f"shows for {pv['measured_ns']:.0f} ns after it (the model: not at all)" in text and pv["modelled_ns"] == 0
    by = {(r["algo"], r["causal"]): r for r in tp["rows"]}
    fa3, fa2, fa3c = by["fa3", False], by["fa2-triton", False], by["fa3", True]
    t = lambda r: r["metrics"]["tensor_active_pct"]  # noqa: E731
    i = lambda r: r["metrics"]["issue_active_pct"]  # noqa: E731
    assert (f"tensor pipe active {t(fa3):.1f}% of the SMs' active cycles against {t(fa2):.1f}% for fa2-triton's "
            f"`{fa2['kernel']}` ({t(fa3) / t(fa2):.2f}×; causal fa3 {t(fa3c):.1f}%)") in text  # fmt: skip
    assert f"({i(fa3):.1f}% of the issue slots against {i(fa2):.1f}%)" in text and i(fa3) < i(fa2)
    assert f"took {us(fa3['time_ns'])} and {us(fa2['time_ns'])} under ncu" in text
    assert tp["metrics"]["tensor_active_pct"] in text
    assert f"N={fa3['n']}, D={fa3['d']}, {fa3['heads']} heads" in text
