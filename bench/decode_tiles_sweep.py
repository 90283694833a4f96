"""The split-KV forward's S and tiles swept on decode shapes (Hq=32, Hkv=8, D=128, bf16, causal bottom-right),
each timed from a CUDA graph's replay (the kernels alone: bench/decode_probe.py showed that eager timing at these
sizes measures the host) and its O compared with the heuristic's. B = 1 (8 programs before the split) and B = 4
(32). Tiles: the split kernel's (Br, Bc, warps, stages); S: the number of chunks of the keys.
--confirm: the heuristic's S against fixed S (0: fa2_fwd unsplit, one K/V read per q head) at B = 1 to 16, the
split kernel's own tiles only (the check of the memory-bound heuristic, after the sweep that chose it).

  PYTHONPATH=src python bench/decode_tiles_sweep.py --out "$OUT/decode-tiles" [--budget-s 150] [--confirm]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SPLITS = (None, 4, 6, 8, 12, 16, 24)  # None: the heuristic
TILES = ((128, 4, 3), (64, 4, 4), (64, 4, 6), (128, 8, 3), (64, 8, 6))  # (Bc, warps, stages); Br from the rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget-s", type=float, default=150.0)
    ap.add_argument("--confirm", action="store_true")
    args = ap.parse_args()
    shapes = [(1, 1, 8192), (1, 1, 32768), (1, 1, 131072), (1, 16, 8192), (1, 16, 131072),
              (4, 1, 8192), (4, 1, 32768), (4, 16, 32768)]  # fmt: skip
    tile_sets, splits = TILES, SPLITS
    if args.confirm:
        shapes = [(b, nq, nk) for b in (1, 2, 4, 8, 16) for nq in (1, 16) for nk in (8192, 32768)]
        shapes.append((1, 1, 131072))
        tile_sets, splits = TILES[:1], (None, 0, 1, 2, 4, 8, 16)
    from decode_probe import graph_ms
    from triton.testing import do_bench

    from flashviz.algos.fa2_triton import launcher as ta
    from flashviz.algos.fa2_triton.launch_tiles import Tiles
    from flashviz.algos.fa2_triton.split_kv import split_plan, split_tiles

    t0 = time.time()
    run = ta.launcher()
    rows = []
    for b, nq, nk in shapes:
        if time.time() - t0 > args.budget_s:
            break
        torch.manual_seed(b * 1000 + nq * 7 + nk)
        q = torch.randn(b, 32, nq, 128, dtype=torch.bfloat16, device="cuda")
        k, v = (torch.randn(b, 8, nk, 128, dtype=torch.bfloat16, device="cuda") for _ in range(2))
        ref, _ = run.forward(q, k, v, True, 128**-0.5)
        base = split_tiles(nq * 4, 128)
        for bc, warps, stages in tile_sets:
            tiles = Tiles(base.Br, bc, warps, stages)
            for s in splits:
                if time.time() - t0 > args.budget_s:
                    break
                row = {"B": b, "nq": nq, "nk": nk, "Bc": bc, "warps": warps, "stages": stages,
                       "splits": "heuristic" if s is None else s}  # fmt: skip
                try:
                    if s is None and tiles != base:
                        continue

                    def fn(q=q, k=k, v=v, tiles=tiles, s=s):
                        if s is None:
                            return run.forward(q, k, v, True, 128**-0.5)
                        if s == 0:  # fa2_fwd, autotuned (tiles of its own)
                            return run.forward(q, k, v, True, 128**-0.5, splits=0)
                        return run.forward(q, k, v, True, 128**-0.5, tiles=tiles, splits=s)

                    o, _ = fn()
                    row["max_diff"] = (o.float() - ref.float()).abs().max().item()
                    row["graph_us"] = graph_ms(fn, do_bench) * 1e3
                    plan = split_plan(b, 8, 4, nq, nk, True, -1, -1, base.Br, bc, ta._sm_count(0), s or None)
                    row["S"] = 0 if s == 0 else plan.S
                except Exception as e:  # recorded, not hidden (a tile set over shared memory, say)
                    row["error"] = f"{type(e).__name__}: {str(e)[:160]}"
                rows.append(row)
                print(json.dumps(row), flush=True)
    os.makedirs(args.out, exist_ok=True)
    doc = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "gpu": torch.cuda.get_device_name(),
           "command": " ".join(sys.argv), "rows": rows}  # fmt: skip
    with open(os.path.join(args.out, "decode-tiles.json"), "w") as f:
        json.dump(doc, f, indent=1)
    best: dict = {}
    for r in rows:
        if "graph_us" in r:
            key = (r["B"], r["nq"], r["nk"])
            if key not in best or r["graph_us"] < best[key]["graph_us"]:
                best[key] = r
    heur = {(r["B"], r["nq"], r["nk"]): r for r in rows if r["splits"] == "heuristic" and "graph_us" in r}
    print(f"{'B':>2s} {'Nq':>3s} {'Nk':>7s} {'heuristic us':>12s} {'S':>3s}  {'best us':>8s} (Bc, warps, stages, S)")
    for key, r in best.items():
        h = heur.get(key, {})
        print(f"{key[0]:2d} {key[1]:3d} {key[2]:7d} {h.get('graph_us', float('nan')):12.1f} {h.get('S', 0):3d}  "
              f"{r['graph_us']:8.1f} ({r['Bc']}, {r['warps']}, {r['stages']}, {r['S']})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
