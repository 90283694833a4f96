"""Compile the fa3 forward for sm_90 on the CPU and write its PTX/TTGIR, to compare a tree's build with another's
(bench/results/fa3-view/2026-12-02/ptx-compare.md, bench/results/fa3-options/ptx-compare.md). Run with
TRITON_INTERPRET unset; the compiling tree is the one on PYTHONPATH (this script only calls
fa3_launcher.compile_sm90, whose arguments the trees share).

    PYTHONPATH=<tree>/src python bench/fa3_ptx_compare.py OUTDIR [--ts-tiles 8]   # D=128, causal and not
    PYTHONPATH=<tree>/src python bench/fa3_ptx_compare.py OUTDIR --all            # + D=64, TS_TILES=8, GQA, rungs
    python bench/fa3_ptx_compare.py --diff DIR_A DIR_B                              # instructions that differ
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path


def code(ptx: str) -> list[str]:
    """PTX instructions only: no debug sections, source locations or labels of the line table (kernel.py's line
    numbers and the tree's path differ between trees)."""
    body = re.split(r"\n\s*\.section\s+\.debug", ptx)[0]
    return [ln for ln in body.splitlines() if not re.match(r"\s*(\.loc|\.file|\$L__(func|tmp))", ln)]


def diff(a: Path, b: Path) -> int:
    worst = 0
    for f in sorted(a.glob("*.ptx")):
        x, y = code(f.read_text()), code((b / f.name).read_text())
        lines = [ln for ln in difflib.unified_diff(x, y, lineterm="", n=0) if not ln.startswith(("---", "+++", "@@"))]
        print(f"{f.name}: {len(x)} lines compared, {len(lines)} differ")
        worst = max(worst, len(lines))
    return 1 if worst else 0


def builds(everything: bool, ts_tiles: int) -> list[tuple[str, dict]]:
    """(file stem, compile_sm90 keywords)."""
    out = [(f"fwd_causal{causal}", {"d": 128, "causal": causal}) for causal in (False, True)]
    if ts_tiles:
        out = [(stem, {**kw, "ts_tiles": ts_tiles}) for stem, kw in out]
    if everything:
        from flashviz.algos.fa3 import launcher as fa3

        out += [(f"fwd_d64_causal{c}", {"d": 64, "causal": c}) for c in (False, True)]
        out += [("fwd_causalFalse_ts8", {"d": 128, "causal": False, "ts_tiles": 8})]
        out += [("fwd_causalTrue_gqa4", {"d": 128, "causal": True, "group": 4})]
        for rung in ("warp specialization", "+ ping-pong"):
            stem = "fwd_causalTrue_" + re.sub(r"\W+", "_", rung).strip("_")
            out.append((stem, {"d": 128, "causal": True, "config": fa3.ablation_config(128, rung)}))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--ts-tiles", type=int, default=0)
    ap.add_argument("--all", action="store_true", help="the plain builds the options must leave unchanged")
    ap.add_argument("--diff", nargs=2, metavar=("A", "B"), help="compare two output folders")
    args = ap.parse_args()
    if args.diff:
        return diff(Path(args.diff[0]), Path(args.diff[1]))
    if not args.out:
        ap.error("OUTDIR is required (or --diff A B)")
    from flashviz.algos.fa3 import launcher as fa3

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for stem, kw in builds(args.all, args.ts_tiles):
        k = fa3.compile_sm90("fwd", kw.pop("d"), kw.pop("causal"), **kw)
        (out / f"{stem}.ptx").write_text(k.asm["ptx"])
        (out / f"{stem}.ttgir").write_text(k.asm["ttgir"])
        print(out / f"{stem}.ptx", k.asm["ptx"].count("%globaltimer"), "globaltimer reads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
