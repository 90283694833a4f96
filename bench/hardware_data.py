"""The GPU facts the page's hardware view reads, copied from the recorded H200 runs into the package.

    PYTHONPATH=src python bench/hardware_data.py [--check]

Reads bench/results/parallelism/<date>-<gpu>.json (bench/parallelism_bench.py: the teaching kernels timed and
profiled by Nsight Compute, and the matmul / FMA / exp rates) and registers-<date>-<gpu>.json
(bench/registers_bench.py: registers per thread of every kernel at a grid of tiles, and the device's limits), and
writes src/flashviz/data/hardware/<date>-<gpu>.json (`flashviz.hardware/1`): what flashviz.hardware needs, nothing
measured anew. `--check` only says whether the shipped file is what this writes (tests/test_hardware.py runs it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "parallelism"
STEM = "2026-12-01-nvidia-h200"
OUT = ROOT / "src" / "flashviz" / "data" / "hardware" / f"{STEM}.json"


def row(x: dict) -> dict:
    """One timed and profiled launch, with the ncu metrics under the names the page shows."""
    m = x.get("ncu", {})
    elapsed = m.get("sm__cycles_elapsed.avg") or 0
    return {
        "algo": x["algo"],
        "n": x["n"],
        "d": x["d"],
        "br": x["br"],
        "bc": x["bc"],
        "heads": x["heads"],
        "blocks": x["blocks"],
        "threads": x["threads"],
        "smem_bytes": x["smem_bytes"],
        "registers": x["registers"],
        "ms": x["ms"],
        "tflops": x["tflops"],
        "ncu": {
            "waves": m.get("launch__waves_per_multiprocessor"),
            "limits": {
                "warps": m.get("launch__occupancy_limit_warps"),
                "registers": m.get("launch__occupancy_limit_registers"),
                "smem": m.get("launch__occupancy_limit_shared_mem"),
                "blocks": m.get("launch__occupancy_limit_blocks"),
            },
            "theoretical_occupancy_pct": m.get("sm__maximum_warps_per_active_cycle_pct"),
            "achieved_occupancy_pct": m.get("sm__warps_active.avg.pct_of_peak_sustained_active"),
            "sm_utilisation_pct": x.get("sm_utilisation_pct"),
            "least_busy_sm_pct": 100 * m["sm__cycles_active.min"] / elapsed if elapsed else None,
            "duration_ms": m["gpu__time_duration.sum"] / 1e6 if "gpu__time_duration.sum" in m else None,
        },
    }


def build() -> dict:
    par = json.loads((RESULTS / f"{STEM}.json").read_text())
    regs = json.loads((RESULTS / f"registers-{STEM}.json").read_text())
    dev = regs["device"]
    return {
        "schema": "flashviz.hardware/1",
        "device": {
            "name": dev["name"],
            "compute_capability": dev["compute_capability"],
            "properties": dev["properties"],  # cudaGetDeviceProperties on the H200
            "driver": dev["driver"],
            "runtime": dev["runtime"],
        },
        "registers": {
            "date": regs["date"],
            "command": regs["command"],
            "source": f"bench/results/parallelism/registers-{STEM}.json",
            "nvrtc": regs["nvrtc"],
            "options": regs["options"],
            "kernels": {
                name: {
                    "file": k["file"],
                    "by_args": {",".join(map(str, r["template_args"])): r["registers"] for r in k["instances"]},
                }
                for name, k in regs["kernels"].items()
            },
        },
        "parallelism": {
            "date": par["date"],
            "command": par["command"],
            "source": f"bench/results/parallelism/{STEM}.md",
            "gpu": par["device"]["name"],
            "sms": par["device"]["multiprocessors"],
            "ncu_metrics": par["ncu_metrics"],
            "rows": [row(x) for x in par["rows"]],
            "rates": par["rates"],
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only say whether the shipped file is what this writes")
    args = ap.parse_args()
    text = json.dumps(build(), indent=1, sort_keys=False) + "\n"
    if args.check:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} differs from the recorded runs: run PYTHONPATH=src python {__file__}")
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
