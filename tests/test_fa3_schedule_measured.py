"""The measured schedule beside the modelled one (issue 20): schedule.py reads a record of the timestamped build
(bench/fa3_schedule_record.py's format) into bars on the model's time axis, with the per-piece disagreement."""

from __future__ import annotations

import json
import random

from flashviz.algos.fa3 import schedule
from flashviz.model.config import Config


def _program(rng: random.Random, tiles: int) -> tuple[dict, dict]:
    """A hand-made program of the record: each consumer's tiles with random gaps; the durations it was built from."""
    parts: dict = {}
    built: dict = {"S": [], "softmax": [], "PV": []}
    for part in ("consumer0", "consumer1"):
        t = rng.randint(5, 50)
        evs = [{"event": "block_start", "tile": None, "t_ns": 0}, {"event": "q_arrived", "tile": None, "t_ns": t}]
        for j in range(tiles):
            k_wait = t + rng.randint(1, 9)
            k_arrived = k_wait + rng.randint(1, 99)
            s_done = k_arrived + rng.randint(100, 400)
            soft = s_done + rng.randint(100, 400)
            evs += [
                {"event": e, "tile": j, "t_ns": v}
                for e, v in (("k_wait", k_wait), ("k_arrived", k_arrived), ("s_done", s_done), ("softmax_done", soft))
            ]
            built["S"].append(s_done - k_arrived)
            built["softmax"].append(soft - s_done)
            t = soft
            if j > 0:
                pv = soft + rng.randint(1, 50)
                evs.append({"event": "pv_done", "tile": j, "t_ns": pv})
                built["PV"].append(pv - k_arrived)
                t = pv
        parts[part] = evs
    parts["producer"] = [
        {"event": "block_start", "tile": None, "t_ns": 0},
        {"event": "q_issued", "tile": None, "t_ns": 3},
        {"event": "kv_wait", "tile": 0, "t_ns": 4},
        {"event": "kv_issued", "tile": 0, "t_ns": 9},
    ]
    return {"program": 0, "partitions": parts}, built


def _record(tmp_path, causal: bool, n: int = 4096):
    rng = random.Random(20 + causal + n)
    program, built = _program(rng, 4)
    rec = {
        "schema": "flashviz.fa3_schedule_measured/1",
        "date": "2026-12-02T22:00:00+00:00",
        "gpu": "NVIDIA H200, 1",
        "command": "python3 bench/fa3_schedule_record.py -o x.json",
        "clock": "%globaltimer",
        "runs": [
            {
                "shape": {"n": n, "d": 128, "br": 128, "bc": 128, "heads": 1, "batch": 1, "causal": causal},
                "check": {"ok": True},
                "time_us": {"plain": 1.0, "timestamped": 1.1},
                "programs": [program],
            }
        ],
    }
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(rec))
    return path, built


def test_measured_bars_and_their_disagreement_with_the_model(tmp_path):
    path, built = _record(tmp_path, causal=False)
    cfg = Config(algo="fa3", n=4096, d=128, br=128, bc=128)
    m = schedule.measured(cfg, path)
    assert m is not None and m["source"] == "measured" and m["shape_matches"] and m["note"] is None
    assert m["provenance"]["gpu"] == "NVIDIA H200, 1"
    bars = m["programs"][0]["bars"]
    assert {b["lane"] for b in bars} == {"producer", "wg0", "wg1"} and all(b["source"] == "measured" for b in bars)
    for what in ("S", "softmax", "PV"):
        got = sorted(b["end_ns"] - b["start_ns"] for b in bars if b["what"] == what)
        assert got == sorted(built[what])
    model_ns = schedule.durations(128, 128)
    by = {row["what"]: row for row in m["disagreement"]}
    for what, key in (("S", "scores"), ("softmax", "softmax"), ("PV", "pv")):
        mean = sum(built[what]) / len(built[what])
        assert by[what]["count"] == len(built[what])
        assert abs(by[what]["ratio"] - mean / model_ns[key]) < 1e-3 * max(1.0, mean / model_ns[key])


def test_another_shape_says_where_it_was_measured(tmp_path):
    path, _ = _record(tmp_path, causal=True)
    m = schedule.measured(Config(algo="fa3", n=1024, d=64, br=128, bc=128, causal=True), path)
    assert m is not None and not m["shape_matches"]
    assert "N=4096 D=128" in m["note"] and "N=1024 D=64" in m["note"]


def test_no_record_means_no_measured_lanes(tmp_path):
    cfg = Config(algo="fa3", n=4096, d=128, br=128, bc=128)
    assert schedule.measured(cfg, tmp_path / "absent.json") is None
    (tmp_path / "bad.json").write_text("{not json")
    assert schedule.measured(cfg, tmp_path / "bad.json") is None
    (tmp_path / "empty.json").write_text(json.dumps({"runs": []}))
    assert schedule.measured(cfg, tmp_path / "empty.json") is None
    assert schedule.tensor_pipe(tmp_path / "absent.json") is None
