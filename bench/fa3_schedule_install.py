"""The recorded fa3 schedule run, copied from bench/results into the package, where the page reads it.

    PYTHONPATH=src python bench/fa3_schedule_install.py [--from FOLDER] [--check]

Reads what bench/fa3_schedule_gpu.sh wrote in FOLDER (default: the H200 run of 2026-12-02): machine.txt (date, GPU,
driver, ncu, command), fa3_schedule_measured.json (bench/fa3_schedule_record.py: the timestamped fa3 forward's
events) and tensor_pipe.json (bench/fa3_schedule_summary.py: ncu's tensor pipe and issue stalls of fa2-triton and
fa3), and writes src/flashviz/data/schedule/<date>-<gpu>.json (`flashviz.schedule_run/1`, docs/trace-schema.md "the
recorded schedule run"): the same numbers, nothing measured anew, under the names the trace uses. A record of
schema /1 (before the names were the trace's) has its partitions `consumer0`, `consumer1` renamed `wg0`, `wg1` and
its `tile` renamed `j`; nothing else changes. The file written is checked against the schema the package loads it
with. `--check` only says whether the shipped file is what this writes (tests/test_fa3_measured.py runs it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "bench" / "results" / "fa3-view" / "2026-12-02" / "schedule-run"
DATA = ROOT / "src" / "flashviz" / "data" / "schedule"
V1_LANES = {"consumer0": "wg0", "consumer1": "wg1", "producer": "producer"}


def machine(folder: Path) -> dict[str, str]:
    """machine.txt's lines (bench/fa3_schedule_gpu.sh): `date: …`, `GPU, driver` (nvidia-smi), ncu's version line,
    `command: …`."""
    lines = (folder / "machine.txt").read_text().splitlines()
    out: dict[str, str] = {}
    for line in lines:
        if line.startswith("date: "):
            out["date"] = line.removeprefix("date: ")
        elif line.startswith("command: "):
            out["command"] = line.removeprefix("command: ")
        elif line.startswith("Version "):
            out["ncu"] = line.removeprefix("Version ")
        elif ", " in line:
            out["gpu"], out["driver"] = line.split(", ", 1)
    missing = {"date", "command", "ncu", "gpu"} - set(out)
    if missing:
        raise SystemExit(f"{folder / 'machine.txt'}: no line for {', '.join(sorted(missing))}")
    return out


def lanes_of(program: dict, schema: str) -> dict[str, list[dict]]:
    if schema.endswith("/2"):
        return program["lanes"]
    return {
        V1_LANES[part]: [{"event": e["event"], "j": e["tile"], "t_ns": e["t_ns"]} for e in events]
        for part, events in program["partitions"].items()
    }


def timestamps(folder: Path) -> tuple[dict, dict[str, str]]:
    rec = json.loads((folder / "fa3_schedule_measured.json").read_text())
    schema = rec["schema"]
    if schema not in ("flashviz.fa3_schedule_measured/1", "flashviz.fa3_schedule_measured/2"):
        raise SystemExit(f"{folder / 'fa3_schedule_measured.json'}: schema {schema!r} is not a record this reads")
    if schema.endswith("/2"):
        events, gpu = rec["events"], {"gpu": rec["gpu"], "driver": rec["driver"]}
    else:
        slots = rec["slots"]
        events = {"wg0": slots["consumer"], "wg1": slots["consumer"], "producer": slots["producer"],
                  "note": slots["note"]}  # fmt: skip
        name, _, driver = rec["gpu"].partition(", ")
        gpu = {"gpu": name, "driver": driver}
    runs = [
        {
            "shape": r["shape"],
            "config": r["config"],
            "check": r["check"],
            "time_us": r["time_us"],
            "programs": [{"program": p["program"], "lanes": lanes_of(p, schema)} for p in r["programs"]],
        }
        for r in rec["runs"]
    ]
    out = {"date": rec["date"], "command": rec["command"], "clock": rec["clock"], "events": events, "runs": runs}
    return out, gpu


def tensor_pipe(folder: Path, ncu: str, date: str) -> dict:
    rec = json.loads((folder / "tensor_pipe.json").read_text())
    metrics: dict[str, str] = {}
    runs = []
    for r in rec["runs"]:
        metrics.update(r["asked"])
        c = r["config"]
        for k in r["kernels"]:
            runs.append({
                "algo": c["algo"], "kernel": k["name"], "n": c["n"], "d": c["d"], "br": c["br"], "bc": c["bc"],
                "heads": c["heads"], "batch": c["batch"], "causal": c["causal"], "time_ns": r["time_ns"],
                "metrics": k["metrics"], "not_listed": r["not_listed"], "profile": r["file"],
            })  # fmt: skip
    return {"date": date, "ncu": ncu, "metrics": metrics, "runs": runs}


def build(folder: Path) -> tuple[str, dict]:
    """(the file's name, its document)."""
    m = machine(folder)
    ts, gpu = timestamps(folder)
    if gpu["gpu"] != m["gpu"]:
        raise SystemExit(f"{folder}: the record's GPU {gpu['gpu']!r} is not machine.txt's {m['gpu']!r}")
    day = m["date"][:10]
    try:
        where = str(folder.resolve().relative_to(ROOT))
    except ValueError:
        where = str(folder)
    doc = {
        "schema": "flashviz.schedule_run/1",
        "date": day,
        "gpu": m["gpu"],
        "driver": m.get("driver", gpu["driver"]),
        "command": f"bash {m['command']}" if m["command"].endswith(".sh") else m["command"],
        "results": where,
        "install": "PYTHONPATH=src python bench/fa3_schedule_install.py",
        "timestamps": ts,
        "tensor_pipe": tensor_pipe(folder, m["ncu"], m["date"]),
    }
    name = f"{day}-{re.sub(r'[^a-z0-9]+', '-', m['gpu'].lower()).strip('-')}.json"
    return name, doc


def dumps(doc: dict) -> str:
    """indent=1, an event on one line (a record holds thousands)."""
    text = json.dumps(doc, indent=1, ensure_ascii=False)
    event = r'\{\s+"event": ("[a-z_]+"),\s+"j": (null|\d+),\s+"t_ns": (-?\d+)\s+\}'
    return re.sub(event, r'{"event": \1, "j": \2, "t_ns": \3}', text) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="folder", type=Path, default=FOLDER, help="what bench/fa3_schedule_gpu.sh wrote")
    ap.add_argument("--check", action="store_true", help="only say whether the shipped file is what this writes")
    args = ap.parse_args()
    from flashviz.algos.fa3.run_schema import check

    name, doc = build(args.folder)
    check(doc, name)  # the package's own check: a file it would refuse is not installed
    text = dumps(doc)
    out = DATA / name
    if args.check:
        if not out.is_file() or out.read_text() != text:
            print(f"{out.relative_to(ROOT)} differs from {args.folder}: run PYTHONPATH=src python {__file__}")
            return 1
        return 0
    DATA.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
