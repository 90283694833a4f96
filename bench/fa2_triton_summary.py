"""Summarise bench/fa2_triton_gpu.sh's JSON files in OUT: summary.json and summary.md (the GPU against the engine
and float64 per run; per profile, each counter beside the model with its metric name).

    python bench/fa2_triton_summary.py OUT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def g(x: float | None, spec: str = ".3g") -> str:
    """A number for the table, or "—" where the run did not give it."""
    return "—" if x is None else format(x, spec)


def run_row(name: str, doc: dict) -> dict:
    cfg, launch, check = doc["config"], doc["launch"], doc.get("check", {})
    worst = check.get("worst", {})
    return {
        "file": name,
        "n": cfg["n"], "d": cfg["d"], "br": cfg["br"], "bc": cfg["bc"], "causal": cfg["causal"],
        "heads": launch.get("heads"),
        "num_warps": launch.get("num_warps"), "num_stages": launch.get("num_stages"),
        "mma": launch.get("mma"), "time_ms": launch.get("time_ms"),
        "O_vs_engine": worst.get("O", {}).get("engine_max_rel"),
        "O_engine_tolerance": worst.get("O", {}).get("engine_tolerance"),
        "L_vs_engine": worst.get("L", {}).get("engine_max_rel"),
        "O_vs_float64": worst.get("O", {}).get("float64_max_rel"),
        "L_vs_float64": worst.get("L", {}).get("float64_max_rel"),
        "ok": doc.get("ok"),
    }  # fmt: skip


def profile_rows(name: str, doc: dict) -> list[dict]:
    rows = []
    for path, kinds in doc["comparison"].get("paths", {}).items():
        for kind, v in kinds.items():
            rows.append({"file": name, "path": path, "kind": kind, **v})
    if "descriptors" in doc["comparison"]:  # the tensormaps of the kernel's tensor descriptors (no tensor's bytes)
        rows.append({"file": name, "path": "descriptors", "kind": "atom", **doc["comparison"]["descriptors"]})
    d = doc["measured"]
    rows.append({"file": name, "path": "dram", "kind": "load", "counter": "dram__bytes_read.sum",
                 "measured": d.get("dram_read_bytes"), "model": doc["model"]["unique_input_bytes"],
                 "note": "Q, K, V once (what L2 cannot catch)"})  # fmt: skip
    return rows


def read(p: Path) -> dict | None:
    """A JSON file a stage wrote, or None (said on stderr) when a cut-short stage left it unreadable."""
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError) as exc:
        print(f"{p.name}: not read ({exc})", file=sys.stderr)
        return None


def main(out: Path) -> None:
    runs = [run_row(p.name, doc) for p in sorted(out.glob("run_*.json")) if (doc := read(p))]
    profiles = {p.name: doc for p in sorted(out.glob("profile_*.json")) if (doc := read(p))}
    counters = [row for name, doc in profiles.items() for row in profile_rows(name, doc)]
    summary = {
        "runs": runs,
        "profiles": {
            name: {"config": d["config"], "ok": d["ok"], "summary": d["summary"]} for name, d in profiles.items()
        },
        "counters": counters,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    lines = [
        "# fa2-triton on the GPU",
        "",
        "## flashviz gpu run --algo fa2-triton (GPU against the engine and float64)",
        "",
    ]
    lines += [
        "| N | D | Br×Bc | causal | warps/stages | max rel O vs engine (tol) | L vs engine | O vs float64 "
        "| L vs float64 | ok |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r['n']} | {r['d']} | {r['br']}×{r['bc']} | {r['causal']} | {r['num_warps']}/{r['num_stages']} | "
            f"{g(r['O_vs_engine'])} ({g(r['O_engine_tolerance'])}) | {g(r['L_vs_engine'])} | "
            f"{g(r['O_vs_float64'])} | {g(r['L_vs_float64'])} | {r['ok']} |"
        )
    lines += ["", "## flashviz gpu profile --algo fa2-triton (Nsight Compute beside the model)", ""]
    lines += [
        "| profile | path | kind | counter | measured B | model B | measured/model | agrees |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in counters:
        ratio = c.get("measured_over_model")
        if ratio is None and c.get("model"):
            ratio = c["measured"] / c["model"]
        lines.append(
            f"| {c['file']} | {c['path']} | {c['kind']} | `{c['counter']}` | {g(c['measured'], ',.0f')} | "
            f"{g(c['model'], ',')} | {g(ratio, '.4f')} | {c.get('agrees', '')} |"
        )
    for name, d in profiles.items():
        lines += ["", f"### {name}", ""] + [f"- {s}" for s in d["summary"]]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
