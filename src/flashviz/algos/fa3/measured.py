"""The measured schedule beside the modelled one (issue 20), from the recorded H200 run that ships with flashviz
(`flashviz/data/schedule/<date>-<gpu>.json`, `flashviz.schedule_run/1`: run_schema.py). The trace's
`schedule.measured` and `schedule.tensor_pipe` (docs/trace-schema.md) are made here; nothing is measured here.

The timestamped build reads %globaltimer at step boundaries of the first block of 4 programs, per lane. A measured
bar is the span between two of a lane's events, what the lane was doing then:
- a consumer warpgroup (`wg0`, `wg1`): `wait Q` (block start → Qi arrived), per tile j `wait K` (waiting on Kj's
  ready mbarrier), `S` (Kj arrived → Sij's wgmma done: issuing Sij, waiting for the other warpgroup's turn,
  issuing tile j−1's P·V, the product), `softmax` (Sij done → Pij, mi, li done), `PV` of tile j−1 (softmax done →
  its P·V done: the part of the product the softmax did not hide), and at the end `PV, O` (the last tile's
  softmax done → block end: its P·V and the store of Oi);
- the producer warp: `Q` (block start → both halves of Qi issued) and per tile `KV` (waiting for Kj's and Vj's ring
  slots → both loads issued; the copies themselves are not timed).
Each is drawn beside the cost model's bars of the same block at the measured shape (schedule.block), on one axis.
"""

from __future__ import annotations

import json
import warnings
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flashviz.model.config import Config
from flashviz.model.schema_errors import RecordError

from .schedule import LANES, block, durations

if TYPE_CHECKING:
    from importlib.abc import Traversable

DATA = "data/schedule"  # inside the package
MAX_FILE_BYTES = 8 * 2**20  # the recorded run is ~200 kB

# the pieces only measured bars have (the legend's words); the others are the model's (schedule.model's `pieces`)
PIECES = {
    "wait": "waits on an mbarrier (measured)",
    "KV": "the producer waits for Kj's, Vj's slots and issues both loads (measured)",
    "PV, O": "the last tile's P·V and the store of Oi (measured as one span)",
}
LANE_LABELS = {"producer": "producer warp", "wg0": "warpgroup 0", "wg1": "warpgroup 1"}  # short: beside "measured"


def shipped() -> list[Traversable]:
    """The recorded runs that ship with the package, oldest first (their names start with the date)."""
    folder = files("flashviz").joinpath(DATA)
    if not folder.is_dir():
        return []
    return sorted((f for f in folder.iterdir() if f.name.endswith(".json")), key=lambda f: f.name)


def load(path: Path | None = None) -> dict[str, Any] | None:
    """The newest shipped run (or the file at `path`) as parsed JSON, checked against flashviz.schedule_run/1; None
    when none ships. A file that is not one is a RecordError: one line naming the file and the key."""
    try:  # the schema's checker is pydantic's; the GPU machines' image has none: no measured lanes there
        from . import run_schema  # noqa: F401
    except ImportError as exc:
        warnings.warn(
            f"the recorded schedule run is not read ({exc}): fa3's trace carries no measured lanes", stacklevel=2
        )
        return None
    if path is not None:
        return _read(path, str(path))
    runs = shipped()
    return _shipped(runs[-1].name) if runs else None


@cache
def _shipped(name: str) -> dict[str, Any]:  # read once per process: every fa3 trace carries it
    return _read(files("flashviz").joinpath(DATA).joinpath(name), f"flashviz/{DATA}/{name}")


def _read(source: Traversable | Path, name: str) -> dict[str, Any]:
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise RecordError(f"{name}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    if len(data) > MAX_FILE_BYTES:
        raise RecordError(f"{name}: {len(data)} bytes, more than a recorded run's {MAX_FILE_BYTES}")
    try:
        doc = json.loads(data)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{name}: not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except UnicodeDecodeError as exc:
        raise RecordError(f"{name}: not JSON (not UTF-8: {exc.reason})") from None
    except RecursionError:
        raise RecordError(f"{name}: not JSON (nested too deeply)") from None
    from .run_schema import check

    check(doc, name)
    return {**doc, "file": name}


def _pick(runs: list[dict[str, Any]], cfg: Config) -> tuple[dict[str, Any], bool]:
    """The run at cfg's shape, or the nearest (the same causal flag first); whether the shape matches."""
    want = {"n": cfg.n, "d": cfg.d, "bc": cfg.bc, "causal": cfg.causal}
    for r in runs:
        if all(r["shape"][k] == v for k, v in want.items()):
            return r, True
    same = [r for r in runs if r["shape"]["causal"] == cfg.causal] or runs
    return same[0], False


def bars(lanes: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One program's events -> its measured bars {lane, what, piece, j, start_ns, end_ns, step, step_j, source}:
    each bar names the trace step (op, j) whose work it is, as the model's bars do, so the page outlines both."""
    out: list[dict[str, Any]] = []

    def bar(lane: str, what: str, piece: str, j: int | None, start: int, end: int, step: str,
            step_j: int | None) -> None:  # fmt: skip
        out.append({"lane": lane, "what": what, "piece": piece, "j": j, "start_ns": start, "end_ns": end,
                    "step": step, "step_j": step_j, "source": "measured"})  # fmt: skip

    for lane in LANES:
        at: dict[int | None, dict[str, int]] = {}
        for e in lanes[lane]:
            at.setdefault(e["j"], {})[e["event"]] = e["t_ns"]
        head = at.get(None, {})
        tiles = sorted(j for j in at if j is not None)
        if lane == "producer":
            if "block_start" in head and "q_issued" in head:
                bar(lane, "Q", "Q", None, head["block_start"], head["q_issued"], "load_q", None)
            for j in tiles:
                t = at[j]
                if "kv_wait" in t and "kv_issued" in t:
                    bar(lane, "KV", "KV", j, t["kv_wait"], t["kv_issued"], "load_kv", j)
            continue
        if "block_start" in head and "q_arrived" in head:
            bar(lane, "wait Q", "wait", None, head["block_start"], head["q_arrived"], "load_q", None)
        for j in tiles:
            t = at[j]
            first = j == 0
            for what, piece, a, b, step in (
                ("wait K", "wait", "k_wait", "k_arrived", "load_kv"),
                ("S", "S", "k_arrived", "s_done", "first_tile" if first else "scores"),
                ("softmax", "softmax", "s_done", "softmax_done", "first_tile" if first else "online_softmax"),
            ):
                if a in t and b in t:
                    bar(lane, what, piece, j, t[a], t[b], step, j)
            if j > 0 and "softmax_done" in t and "pv_done" in t:  # tile j − 1's P·V, waited for after the softmax
                bar(lane, "PV", "PV", j - 1, t["softmax_done"], t["pv_done"], "online_softmax", j)
        if tiles and "softmax_done" in at[tiles[-1]] and "block_end" in head:
            last = tiles[-1]
            bar(lane, "PV, O", "PV, O", last, at[last]["softmax_done"], head["block_end"], "last_pv", last)
    return sorted(out, key=lambda x: (LANES.index(x["lane"]), x["start_ns"]))


def _exposed_pv(modelled: list[dict[str, Any]]) -> list[float]:
    """The model's counterpart of a measured `PV` bar: per warpgroup and tile j ≥ 1, how long tile j−1's P·V runs
    past tile j's softmax (0 when the softmax hides it)."""
    at = {(b["lane"], b["what"], b["j"]): b for b in modelled}
    out = []
    for (lane, what, j), soft in at.items():
        if what == "softmax" and j and (lane, "PV", j - 1) in at:
            out.append(max(0.0, at[lane, "PV", j - 1]["end_ns"] - soft["end_ns"]))
    return out


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


# the rows of `disagreement`: piece, its words, and whether the model has a counterpart
ROWS = (
    ("S", "Sij: from Kj's arrival to its wgmma done (with the wait for the other warpgroup's turn)"),
    ("softmax", "the softmax of a tile (the model counts its exponentials only)"),
    ("PV", "P·V of tile j−1 still running when tile j's softmax ends"),
    ("wait", "a consumer's wait for Kj"),
    ("KV", "the producer's wait for a free slot, then issuing Kj, Vj"),
    ("block", "one block of Q, start to end (its longest lane)"),
)


def disagreement(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per piece: the measured bars' mean duration against the model's same piece of the same blocks, and measured /
    modelled (null where the model has no such piece, or puts 0 ns on it)."""
    meas = [b for x in blocks for b in x["bars"] if b["source"] == "measured"]
    model = [b for x in blocks for b in x["bars"] if b["source"] == "modelled"]

    def span(bs: list[dict[str, Any]], **where: Any) -> list[float]:
        return [b["end_ns"] - b["start_ns"] for b in bs if all(b[k] == v for k, v in where.items())]

    measured_ns: dict[str, list[float]] = {
        "S": span(meas, piece="S"),
        "softmax": span(meas, piece="softmax"),
        "PV": span(meas, piece="PV"),
        "wait": span(meas, what="wait K"),
        "KV": span(meas, piece="KV"),
        "block": [x["measured_ns"] for x in blocks],
    }
    modelled_ns: dict[str, list[float]] = {
        "S": span(model, piece="S"),
        "softmax": span(model, piece="softmax"),
        "PV": [v for x in blocks for v in _exposed_pv([b for b in x["bars"] if b["source"] == "modelled"])],
        "block": [x["modelled_ns"] for x in blocks],
    }
    out = []
    for piece, words in ROWS:
        m, p = _mean(measured_ns[piece]), _mean(modelled_ns.get(piece, []))
        if m is None:
            continue
        out.append({
            "piece": piece, "what": words, "count": len(measured_ns[piece]), "measured_ns": round(m, 1),
            "modelled_ns": None if p is None else round(p, 1),
            "ratio": round(m / p, 3) if p else None,
        })  # fmt: skip
    return out


def schedule_measured(cfg: Config, recorded: tuple[int, ...], doc: dict[str, Any] | None) -> dict[str, Any] | None:
    """The trace's `schedule.measured`: the recorded run at cfg's shape (or the nearest), its blocks' measured bars
    beside the model's at that shape, and where they disagree; None when no run ships."""
    if doc is None:
        return None
    run, matches = _pick(doc["timestamps"]["runs"], cfg)
    shape = run["shape"]
    at = Config(algo=cfg.algo, n=shape["n"], d=shape["d"], br=shape["br"], bc=shape["bc"], causal=shape["causal"])
    from .run_schema import Shape, block_of

    typed = Shape.model_validate(shape)
    blocks = []
    for p in run["programs"]:
        i = block_of(p["program"], typed)
        model = block(at, i)
        measured = bars(p["lanes"])
        measured_ns = max(e["t_ns"] for lane in LANES for e in p["lanes"][lane])
        blocks.append({
            "i": i, "program": p["program"], "tiles": model["tiles"], "measured_ns": measured_ns,
            "modelled_ns": model["end_ns"], "end_ns": max(measured_ns, model["end_ns"]),
            "bars": [{**b, "source": "modelled"} for b in model["bars"]] + measured,
        })  # fmt: skip
    rows = disagreement(blocks)
    # the blocks drawn: those the trace records, when its shape is the run's; else the run's first
    shown = [b for b in blocks if matches and b["i"] in recorded] or blocks[:1]
    ts = doc["timestamps"]
    note = None
    if not matches:
        note = (f"measured at N={shape['n']} D={shape['d']} Bc={shape['bc']}{' causal' if shape['causal'] else ''},"
                f" not at this trace's N={cfg.n} D={cfg.d} Bc={cfg.bc}{' causal' if cfg.causal else ''}")  # fmt: skip
    return {
        "source": "measured",
        "date": doc["date"],
        "gpu": doc["gpu"],
        "driver": doc["driver"],
        "command": doc["command"],
        "recorded_at": ts["date"],
        "record_command": ts["command"],
        "clock": ts["clock"],
        "file": doc["file"],
        "results": doc["results"],
        "shape": shape,
        "shape_matches": matches,
        "note": note,
        "config": run["config"],
        "check": run["check"],
        "time_us": run["time_us"],
        "lane_rows": lane_rows(),
        "pieces": PIECES,
        "durations_ns": durations(shape["d"], shape["bc"]),
        "programs": len(blocks),
        "blocks": shown,
        "disagreement": rows,
    }


def beside(cfg: Config, recorded: tuple[int, ...]) -> dict[str, Any]:
    """The trace's `schedule.measured` and `schedule.tensor_pipe`, from the newest shipped run (both None without
    one), to sit beside schedule.model's keys."""
    doc = load()
    return {"measured": schedule_measured(cfg, recorded, doc), "tensor_pipe": tensor_pipe(doc)}


def lane_rows() -> list[dict[str, str]]:
    """The measured panel's rows: each lane modelled, then measured, the producer first as the model draws it."""
    return [
        {"lane": lane, "source": source, "label": f"{LANE_LABELS[lane]}, {source}"}
        for lane in ("producer", "wg0", "wg1")
        for source in ("modelled", "measured")
    ]


def tensor_pipe(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    """The trace's `schedule.tensor_pipe`: ncu's tensor pipe and issue stalls per kernel of the recorded run, each
    run's three largest stalls named; None when no run ships."""
    if doc is None:
        return None
    tp = doc["tensor_pipe"]
    rows = []
    for r in tp["runs"]:
        stalls = sorted(((v, k) for k, v in r["metrics"].items() if k.startswith("stall_")), reverse=True)
        rows.append({
            **{k: r[k] for k in ("algo", "kernel", "n", "d", "heads", "batch", "causal", "time_ns", "profile")},
            "metrics": r["metrics"],
            "top_stalls": [{"reason": k.removeprefix("stall_"), "per_issue": v} for v, k in stalls[:3]],
        })  # fmt: skip
    used = {k for r in tp["runs"] for k in r["metrics"]}
    return {
        "date": tp["date"],
        "gpu": doc["gpu"],
        "driver": doc["driver"],
        "ncu": tp["ncu"],
        "command": doc["command"],
        "file": doc["file"],
        "results": doc["results"],
        "metrics": {k: v for k, v in tp["metrics"].items() if k in used},
        "shown": ["tensor_active_pct", "issue_active_pct"],
        "rows": rows,
    }
