"""Compile the fa3 forward (D=128, causal and not) for sm_90 on the CPU and write its PTX/TTGIR, to compare a tree's
build with another's (bench/results/fa3-view/2026-12-02/ptx-compare.md). Run with TRITON_INTERPRET unset.

    PYTHONPATH=<tree>/src python bench/fa3_ptx_compare.py OUTDIR [--ts-tiles 8]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from flashviz.ops import fa3 as fa3

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--ts-tiles", type=int, default=0)
args = ap.parse_args()
out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)
for causal in (False, True):
    kw = {"ts_tiles": args.ts_tiles} if args.ts_tiles else {}
    k = fa3.compile_sm90("fwd", 128, causal, **kw)
    (out / f"fwd_causal{causal}.ptx").write_text(k.asm["ptx"])
    (out / f"fwd_causal{causal}.ttgir").write_text(k.asm["ttgir"])
    print(out / f"fwd_causal{causal}.ptx", k.asm["ptx"].count("%globaltimer"), "globaltimer reads")
