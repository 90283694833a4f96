"""The last part of bench/fa3_schedule_gpu.sh: the profiles' pipe blocks as one table, and tensor_pipe.json (the
record that src/flashviz/data/tensor_pipe.json is copied from, with its provenance) in the same folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(folder: str) -> int:
    d = Path(folder)
    machine = (d / "machine.txt").read_text().splitlines() if (d / "machine.txt").exists() else []
    runs = []
    for p in sorted(d.glob("profile_*.json")):
        doc = json.loads(p.read_text())
        pipe = doc.get("pipe", {})
        runs.append(
            {
                "file": p.name,
                "config": doc["config"],
                "time_ns": doc["measured"].get("time_ns"),
                "kernels": pipe.get("kernels", []),
                "asked": pipe.get("asked", {}),
                "not_listed": pipe.get("not_listed", []),
                "error": pipe.get("error"),
                "command": pipe.get("command", []),
            }
        )
    record = {"schema": "flashviz.tensor_pipe/1", "machine": machine, "runs": runs}
    (d / "tensor_pipe.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"{'run':36s} {'kernel':28s} {'tensor %':>9s} {'issue %':>8s}  top stalls (warps per issue)")
    for r in runs:
        if r["error"] or not r["kernels"]:
            print(f"{r['file']:36s} pipe metrics missing: {r['error']}")
        for k in r["kernels"]:
            m = k["metrics"]
            tensor = max((v for key, v in m.items() if key.startswith("tensor_")), default=float("nan"))
            stalls = sorted(((v, key[6:]) for key, v in m.items() if key.startswith("stall_")), reverse=True)[:3]
            top = ", ".join(f"{n} {v:.2f}" for v, n in stalls)
            issue = m.get("issue_active_pct", float("nan"))
            print(f"{r['file']:36s} {k['name'][:28]:28s} {tensor:9.1f} {issue:8.1f}  {top}")
    return 0 if runs else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
