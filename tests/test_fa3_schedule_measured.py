"""The measured schedule beside the modelled one (issue 20): the recorded H200 run shipped in flashviz/data/schedule/
(bench/fa3_schedule_install.py from bench/results), its schema checked when loaded (a broken file is one line naming
the file and the key), its events read into measured bars on the model's time axis, the per-piece disagreement, the
tensor pipe, and the fa3 trace carrying them. The chain recorder -> installer -> loader is run on hand-made raw
timestamps laid out as kernel.py writes them."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from flashviz.algos.fa3 import measured, schedule
from flashviz.algos.fa3.run_schema import check
from flashviz.model.config import Config
from flashviz.model.schema_errors import RecordError

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench/results/fa3-view/2026-12-02/schedule-run"
OPS = {"load_q", "load_kv", "first_tile", "scores", "online_softmax", "last_pv", "write_back"}  # fa3's steps


def bench(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def shipped() -> dict:
    doc = measured.load()
    assert doc is not None, "no recorded schedule run ships in flashviz/data/schedule/"
    return doc


def test_the_shipped_run_is_the_recorded_one():
    """The package's file is what the installer writes from bench/results (nothing edited by hand), and it carries
    its date, GPU and command as the other data files do."""
    out = subprocess.run([sys.executable, str(ROOT / "bench/fa3_schedule_install.py"), "--check"],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    doc = measured.load()
    assert (doc["date"], doc["gpu"], doc["command"]) == ("2026-12-02", "NVIDIA H200", "bash bench/fa3_schedule_gpu.sh")
    assert doc["file"] == "flashviz/data/schedule/2026-12-02-nvidia-h200.json"
    # the same events as the bench's record, under the trace's lane names
    rec = json.loads((RESULTS / "fa3_schedule_measured.json").read_text())
    for run, raw in zip(doc["timestamps"]["runs"], rec["runs"], strict=True):
        for p, q in zip(run["programs"], raw["programs"], strict=True):
            for lane, part in (("wg0", "consumer0"), ("wg1", "consumer1"), ("producer", "producer")):
                assert [(e["event"], e["j"], e["t_ns"]) for e in p["lanes"][lane]] == [
                    (e["event"], e["tile"], e["t_ns"]) for e in q["partitions"][part]
                ]
    pipe = json.loads((RESULTS / "tensor_pipe.json").read_text())
    got = {(r["algo"], r["causal"]): r["metrics"]["tensor_active_pct"] for r in doc["tensor_pipe"]["runs"]}
    assert got == {
        (r["config"]["algo"], r["config"]["causal"]): r["kernels"][0]["metrics"]["tensor_active_pct"]
        for r in pipe["runs"]
    }


def broken(doc: dict, how: str) -> tuple[dict | str, str]:
    """A copy of the shipped document broken one way, and what the error must name."""
    d = copy.deepcopy(doc)
    d.pop("file")
    ts = d["timestamps"]
    lane = ts["runs"][0]["programs"][1]["lanes"]["wg0"]
    if how == "t_ns a string":
        lane[3]["t_ns"] = "soon"
        return d, "timestamps.runs[0].programs[1].lanes.wg0[3].t_ns: "
    if how == "an unknown event":
        lane[4]["event"] = "kv_issued"
        return d, "timestamps.runs[0].programs[1].lanes.wg0[4].event: must be one of block_start"
    if how == "out of time order":
        lane[5]["t_ns"] = lane[4]["t_ns"] - 1
        return d, "timestamps.runs[0].programs[1].lanes.wg0[5].t_ns: the events of a lane are in time order"
    if how == "a tile past the block":
        lane[-2]["j"] = 32
        return d, "timestamps.runs[0].programs[1].lanes.wg0[160].j: block 1 visits tiles 0..31 (got 32)"
    if how == "a tile on a block's event":
        lane[0]["j"] = 0
        return d, "timestamps.runs[0].programs[1].lanes.wg0[0].j: block_start has j null"
    if how == "a missing key":
        del ts["runs"][1]["shape"]["causal"]
        return d, "timestamps.runs[1].shape.causal: missing"
    if how == "an unknown key":
        ts["runs"][0]["check"]["okay"] = True
        return d, "timestamps.runs[0].check.okay: "
    if how == "a percentage past 100":
        d["tensor_pipe"]["runs"][1]["metrics"]["tensor_active_pct"] = 173.3
        return d, "tensor_pipe.runs[1].metrics.tensor_active_pct: must be a percentage in 0..100 (got 173.3)"
    if how == "another schema":
        d["schema"] = "flashviz.profile/1"
        return d, "schema must be 'flashviz.schedule_run/1' (got 'flashviz.profile/1')"
    if how == "no runs":
        ts["runs"] = []
        return d, "timestamps.runs: "
    if how == "not JSON":
        return json.dumps(d)[:-40], "not JSON ("
    raise AssertionError(how)


HOW = ["t_ns a string", "an unknown event", "out of time order", "a tile past the block", "a tile on a block's event",
       "a missing key", "an unknown key", "a percentage past 100", "another schema", "no runs", "not JSON"]  # fmt: skip


@pytest.mark.parametrize("how", HOW)
def test_a_broken_file_is_one_line_naming_the_file_and_the_key(shipped, tmp_path, how):
    doc, says = broken(shipped, how)
    path = tmp_path / "run.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    with pytest.raises(RecordError) as err:
        measured.load(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert says in message, message


def test_the_cli_says_a_broken_shipped_run_in_one_line(shipped, tmp_path):
    """The package with its shipped run broken (a copy of src/flashviz whose data/schedule/ holds a bad file):
    `flashviz trace --algo fa3` exits 2 with one line naming the file and the key, and no traceback."""
    pkg = tmp_path / "flashviz"
    pkg.mkdir()
    src = ROOT / "src" / "flashviz"
    for entry in src.iterdir():
        if entry.name != "data":
            (pkg / entry.name).symlink_to(entry)
    (pkg / "data").mkdir()
    for entry in (src / "data").iterdir():
        if entry.name != "schedule":
            (pkg / "data" / entry.name).symlink_to(entry)
    (pkg / "data" / "schedule").mkdir()
    doc, says = broken(shipped, "out of time order")
    (pkg / "data" / "schedule" / "2026-12-02-nvidia-h200.json").write_text(json.dumps(doc))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-m", "flashviz", "trace", "--algo", "fa3", "-o", str(tmp_path / "t.json")],
                         capture_output=True, text=True, env=env, cwd=tmp_path)  # fmt: skip
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert lines[0].startswith("flashviz: error: flashviz/data/schedule/2026-12-02-nvidia-h200.json: ")
    assert says in lines[0]
    assert not (tmp_path / "t.json").exists()


def raw_slots(rng: random.Random, tiles: int, programs: int, t0: int) -> tuple[list[int], dict]:
    """Raw int64 slots as kernel.py lays them out (per program, per lane wg0, wg1, producer: ts_slots = 3 + 5 per tile;
    a consumer's slot 2 + 5j + 0..4: K wait, K arrived, S done, softmax done, P·V done; the producer's 2 + 5j + 0..1:
    K/V slot wait, issued), with random gaps; and the durations they were built from, per program and lane."""
    n = 3 + 5 * tiles
    raw: list[int] = []
    built: dict = {}
    for p in range(programs):
        for lane in ("wg0", "wg1", "producer"):
            slots = [0] * n
            t = t0 + rng.randint(0, 50)
            slots[0] = t
            t += rng.randint(1, 300)
            slots[1] = t
            got: dict = {"wait K": [], "S": [], "softmax": [], "PV": [], "KV": []}
            for j in range(tiles):
                base = 2 + 5 * j
                if lane == "producer":
                    a = t + rng.randint(1, 9)
                    b = a + rng.randint(1, 2000)
                    slots[base], slots[base + 1] = a, b
                    got["KV"].append(b - a)
                    t = b
                    continue
                times = [t + rng.randint(1, 9)]
                for lo, hi in ((1, 99), (100, 900), (100, 1200)):
                    times.append(times[-1] + rng.randint(lo, hi))
                slots[base : base + 4] = times
                got["wait K"].append(times[1] - times[0])
                got["S"].append(times[2] - times[1])
                got["softmax"].append(times[3] - times[2])
                t = times[3]
                if j > 0:
                    t += rng.randint(0, 80)
                    slots[base + 4] = t
                    got["PV"].append(t - times[3])
            slots[-1] = t + rng.randint(1, 500)
            raw += slots
            built[p, lane] = got
    return raw, built


def test_recorder_installer_and_loader_read_the_kernels_slots_into_bars(shipped, tmp_path):
    """Raw slots -> bench/fa3_schedule_record.events (the /2 record's lanes) -> the installer -> the package's check
    -> measured.bars: each measured bar is the span the slots were built with, under its step."""
    rng = random.Random()
    tiles = rng.randint(2, 6)
    raw, built = raw_slots(rng, tiles, 2, 1_700_000_000_000_000_000)
    rec = bench("fa3_schedule_record")
    programs = rec.events(raw, tiles, 2)
    assert [set(p["lanes"]) for p in programs] == [{"wg0", "wg1", "producer"}] * 2
    record = {
        "schema": "flashviz.fa3_schedule_measured/2", "date": "2026-12-02T22:00:00+00:00", "gpu": "NVIDIA H200",
        "driver": "1", "command": "python3 bench/fa3_schedule_record.py -o x.json", "clock": "%globaltimer",
        "events": {"wg0": [], "wg1": [], "producer": [], "note": "hand-made"},
        "runs": [{"shape": {"n": 128 * tiles, "d": 128, "br": 128, "bc": 128, "heads": 1, "batch": 1,
                            "causal": False},
                  "config": "hand-made", "check": shipped["timestamps"]["runs"][0]["check"],
                  "time_us": {"plain": 1.0, "timestamped": 1.1}, "programs": programs}],
    }  # fmt: skip
    (tmp_path / "fa3_schedule_measured.json").write_text(json.dumps(record))
    (tmp_path / "tensor_pipe.json").write_text((RESULTS / "tensor_pipe.json").read_text())
    (tmp_path / "machine.txt").write_text((RESULTS / "machine.txt").read_text())
    inst = bench("fa3_schedule_install")
    name, doc = inst.build(tmp_path)
    assert name == "2026-12-02-nvidia-h200.json"
    (tmp_path / name).write_text(inst.dumps(doc))
    loaded = measured.load(tmp_path / name)
    for p in loaded["timestamps"]["runs"][0]["programs"]:
        bars = measured.bars(p["lanes"])
        assert {b["step"] for b in bars} <= OPS and all(b["source"] == "measured" for b in bars)
        for lane in ("wg0", "wg1", "producer"):
            want = built[p["program"], lane]
            for what, spans in want.items():
                got = [b["end_ns"] - b["start_ns"] for b in bars if b["lane"] == lane and b["what"] == what]
                assert got == spans, (lane, what)
        pv = [b for b in bars if b["what"] == "PV"]
        assert [(b["j"], b["step_j"]) for b in pv if b["lane"] == "wg0"] == [(j - 1, j) for j in range(1, tiles)]
        tail = [b for b in bars if b["what"] == "PV, O"]
        assert [(b["lane"], b["j"], b["step"]) for b in tail] == [("wg0", tiles - 1, "last_pv"),
                                                                 ("wg1", tiles - 1, "last_pv")]  # fmt: skip


def test_the_disagreement_is_the_measured_mean_over_the_models_same_piece():
    rng = random.Random()
    model = [{"lane": "wg0", "what": "softmax", "piece": "softmax", "j": j, "start_ns": 0.0, "end_ns": 0.0,
              "source": "modelled"} for j in range(3)]  # fmt: skip
    s_model = []
    for j in range(3):
        a = rng.uniform(0, 1000)
        s = rng.uniform(100, 400)
        s_model.append(s)
        model.append({"lane": "wg0", "what": "S", "piece": "S", "j": j, "start_ns": a, "end_ns": a + s,
                      "source": "modelled"})  # fmt: skip
    # tile 0's P·V ends 30 ns after tile 1's softmax; tile 1's before tile 2's: exposed 30 and 0
    model[1].update(start_ns=100.0, end_ns=200.0)
    model[2].update(start_ns=300.0, end_ns=400.0)
    model += [{"lane": "wg0", "what": "PV", "piece": "PV", "j": 0, "start_ns": 150.0, "end_ns": 230.0,
               "source": "modelled"},
              {"lane": "wg0", "what": "PV", "piece": "PV", "j": 1, "start_ns": 250.0, "end_ns": 390.0,
               "source": "modelled"}]  # fmt: skip
    s_meas = [rng.randint(100, 900) for _ in range(5)]
    pv_meas = [rng.randint(1, 90) for _ in range(4)]
    meas = [{"lane": "wg1", "what": "S", "piece": "S", "j": 0, "start_ns": 0, "end_ns": x, "source": "measured"}
            for x in s_meas]  # fmt: skip
    meas += [{"lane": "wg1", "what": "PV", "piece": "PV", "j": 0, "start_ns": 5, "end_ns": 5 + x,
              "source": "measured"} for x in pv_meas]  # fmt: skip
    blocks = [{"measured_ns": 900.0, "modelled_ns": 1200.0, "bars": model + meas}]
    rows = {r["piece"]: r for r in measured.disagreement(blocks)}
    assert set(rows) == {"S", "PV", "block"}  # only pieces measured
    s = rows["S"]
    assert s["count"] == 5 and s["measured_ns"] == pytest.approx(sum(s_meas) / 5, abs=0.05)
    assert s["modelled_ns"] == pytest.approx(sum(s_model) / 3, abs=0.05)
    assert s["ratio"] == pytest.approx((sum(s_meas) / 5) / (sum(s_model) / 3), rel=2e-3)
    assert rows["PV"]["modelled_ns"] == pytest.approx(15.0) and rows["PV"]["count"] == 4
    assert rows["block"]["ratio"] == pytest.approx(0.75)


def test_the_fa3_trace_carries_the_measured_lanes_beside_the_model(shipped):
    """At the recorded shape the trace's measured block is the run's program for its block, drawn with the model's
    bars of the same block; at another shape the nearest run, said in `note`."""
    cfg = Config(algo="fa3", n=4096, d=128, br=128, bc=128)
    parts = measured.beside(cfg, (0,))
    m = parts["measured"]
    assert m["shape_matches"] and m["note"] is None and m["programs"] == 4
    assert (m["date"], m["gpu"], m["command"]) == ("2026-12-02", "NVIDIA H200", "bash bench/fa3_schedule_gpu.sh")
    (b,) = m["blocks"]
    assert (b["i"], b["program"], b["tiles"]) == (0, 0, 32)
    model = schedule.block(cfg, 0)
    assert [x for x in b["bars"] if x["source"] == "modelled"] == [{**x, "source": "modelled"} for x in model["bars"]]
    mine = [x for x in b["bars"] if x["source"] == "measured"]
    # per consumer lane: wait Q, 32 x (wait K, S, softmax), 31 P·V, the tail; the producer: Q and 32 x KV
    assert sum(x["lane"] == "wg0" for x in mine) == 1 + 32 * 3 + 31 + 1
    assert sum(x["lane"] == "producer" for x in mine) == 1 + 32
    assert b["end_ns"] == max(b["measured_ns"], b["modelled_ns"]) and b["modelled_ns"] == model["end_ns"]
    assert max(x["end_ns"] for x in mine) == b["measured_ns"]
    rows = {r["piece"]: r for r in m["disagreement"]}
    assert rows["softmax"]["modelled_ns"] == pytest.approx(schedule.durations(128, 128)["softmax"], abs=0.05)
    assert rows["block"]["count"] == 4
    assert {x["lane"] for x in m["lane_rows"]} == {"producer", "wg0", "wg1"} and len(m["lane_rows"]) == 6
    # causal at another N and D: the causal run, said where it was measured; block Tr - 1 - program
    other = measured.beside(Config(algo="fa3", n=300, d=64, br=128, bc=128, causal=True), (0, 1, 2))["measured"]
    assert not other["shape_matches"] and other["shape"]["causal"]
    assert other["note"] == "measured at N=4096 D=128 Bc=128 causal, not at this trace's N=300 D=64 Bc=128 causal"
    assert [(x["i"], x["program"]) for x in other["blocks"]] == [(31, 0)]


def test_the_tensor_pipe_rows_name_their_metrics(shipped):
    tp = measured.beside(Config(algo="fa3", n=300, d=128, br=128, bc=128), (0,))["tensor_pipe"]
    assert tp["metrics"]["tensor_active_pct"] == "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
    assert tp["metrics"]["issue_active_pct"] == "sm__inst_issued.avg.pct_of_peak_sustained_active"
    assert tp["shown"] == ["tensor_active_pct", "issue_active_pct"]
    by = {(r["algo"], r["causal"]): r for r in tp["rows"]}
    assert set(by) == {("fa2-triton", False), ("fa3", False), ("fa3", True)}
    for r in tp["rows"]:
        stalls = sorted((v for k, v in r["metrics"].items() if k.startswith("stall_")), reverse=True)
        assert [s["per_issue"] for s in r["top_stalls"]] == stalls[:3]
    assert by["fa3", False]["metrics"]["tensor_active_pct"] > by["fa2-triton", False]["metrics"]["tensor_active_pct"]


def test_without_a_shipped_run_there_are_no_measured_lanes(monkeypatch):
    monkeypatch.setattr(measured, "shipped", list)
    cfg = Config(algo="fa3", n=300, d=128, br=128, bc=128)
    assert measured.beside(cfg, (0,)) == {"measured": None, "tensor_pipe": None}
    check_doc = measured.load(None)
    assert check_doc is None
    with pytest.raises(RecordError, match="must hold a JSON object"):
        check([], "x.json")
