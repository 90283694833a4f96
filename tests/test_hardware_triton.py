"""Integration item 3: fa2-triton's hardware view. Its program on the H200 from what was recorded (threads from its
warps, shared memory and registers from the recorded builds, occupancy from flashviz.hardware's calculator), unknown
where not recorded, and its warps' rows taken from the trace's tensor_cores key."""

from __future__ import annotations

import pytest

from flashviz.algos.fa2_triton import resources, tiles
from flashviz.hardware import occupancy as occ
from flashviz.hardware.device import h200
from flashviz.model.config import Config
from flashviz.tracing.build import make_trace

ALGO = "fa2-triton"


def hardware_of(**kw):
    t = make_trace(Config(algo=ALGO, **kw))
    assert t.hardware is not None, "fa2-triton has a hardware view"
    return t, t.hardware, t.hardware["kernels"]["fa2_fwd"]


def test_a_recorded_launch_uses_its_recorded_registers_and_shared_memory():
    """N=1000, D=64, causal, 128x128: the autotuner's pick (8 warps, 3 stages), run on the H200 on 2026-12-01 with
    191 registers and 115,712 B of shared memory (run_n1000_d64_causal.json): one program per SM."""
    t, hw, k = hardware_of(n=1000, d=64, br=128, bc=128, causal=True)
    assert k["threads"] == 8 * 32 == t.tensor_cores["warps"] * 32
    assert k["registers"] == {"value": 191, "source": "measured", "note": k["registers"]["note"]}
    assert k["smem"]["value"] == k["smem_bytes"] == 115_712 and k["smem"]["source"] == "measured"
    assert k["occupancy"] == occ.occupancy(h200(), 256, 191, 115_712)
    assert k["occupancy"]["blocks_per_sm"] == 1
    assert k["program_of_block"] == "reversed"  # causal: program p runs block Tr - 1 - p
    tr = t.config["tr"]
    assert [launch["grid"] for launch in k["launches"]] == [[tr, h, 1] for h in hw["heads"]]
    assert k["grid_x"] == tr


def test_the_recorded_records_agree_with_the_recorded_runs():
    """Every RECORDED entry is what the JSON of its run says (registers, shared memory, warps, stages)."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    run = root / "bench/results/fa2-triton/2026-12-01-nvidia-h200"
    docs = [json.loads((run / f).read_text()) for f in
            ("profile_n4096_d64.json", "profile_n4096_d64_causal.json", "run_n1000_d64_causal.json")]  # fmt: skip
    for doc in docs:
        c, launch = doc["config"], doc["launch"]
        key = (c["d"], c["br"], c["bc"], launch["num_warps"], launch["num_stages"], c["causal"])
        assert resources.RECORDED[key][:2] == (launch["registers"], launch["smem_bytes"]), key
    ladder = json.loads((root / "src/flashviz/data/ladder/2026-12-01-nvidia-h200.json").read_text())
    for r in ladder["rungs"]:
        if r["name"].startswith("triton-bf16"):
            tl = r["tiles"]
            key = (ladder["shape"]["d"], tl["br"], tl["bc"], tl["warps"], tl["stages"], ladder["shape"]["causal"])
            assert resources.RECORDED[key][:2] == (r["registers"], r["sram_bytes_per_block"]), key


@pytest.mark.parametrize("key", sorted(resources.RECORDED))
def test_the_shared_memory_rule_is_every_recorded_build(key):
    d, br, bc, _, stages, _ = key
    assert resources.smem_rule(d, br, bc, stages) == resources.RECORDED[key][1]


def test_an_unrecorded_launch_says_its_registers_are_unknown():
    """N=256 with tiles by hand: 8 warps, 2 stages by flashviz's rule, never compiled on the H200: registers unknown
    (the register limit left out of occupancy), shared memory by the rule, each labelled so."""
    _, _, k = hardware_of(n=256, d=64, br=128, bc=64)
    assert k["registers"]["value"] is None and k["registers"]["source"] == "unknown"
    assert "not compiled on the H200" in k["registers"]["note"]
    assert k["smem"]["source"] == "rule" and k["smem_bytes"] == tiles.shared_bytes(64, 128, 64, 2) + 1024
    assert k["occupancy"]["limits"]["registers"] is None
    assert "registers" not in k["occupancy"]["limited_by"]
    assert k["program_of_block"] == "same"


@pytest.mark.parametrize("kw", [dict(n=300, d=64, br=128, bc=64), dict(n=100, d=32, br=64, bc=32, causal=True)])
def test_the_warps_are_the_tensor_cores_rows(kw):
    """hardware.warps maps each dot's result to the warps the trace's tensor_cores key gives its rows (no second
    derivation), and P·V reads Sij from the warps that computed it: nothing crosses shared memory."""
    t, hw, k = hardware_of(**kw)
    w = hw["warps"]
    assert w["warps"] == t.tensor_cores["warps"] and w["threads"] == k["threads"]
    for op, dot in t.tensor_cores["ops"].items():
        e = w["ops"][op]
        assert e["buffer"] == dot["c"] and e["shape"] == [dot["m"], dot["n"]]
        for o in dot["owners"]:
            for first, end in o["rows"]:
                for r in range(first, min(end, 64)):
                    assert set(e["owners"][r]) == {o["warp"]}, (op, r)
    pv = w["ops"]["online_softmax"]
    assert pv["from"] == "scores" and pv["from_buffer"] == "Sij" and pv["crossing_elements"] == 0
    assert [s["name"] for s in w["schemes"]] == ["split-Q", "split-K"]
