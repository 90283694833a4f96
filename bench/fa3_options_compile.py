"""fa3's forward with each of issue 22's options compiled for sm_90 on the CPU (no GPU): registers, stack, spill
bytes (ptxas -v), local-memory accesses inside the tile loops (SASS: the innermost loops that issue HGMMA),
HGMMAs and shared memory, beside the plain build. The record: bench/results/fa3-options/compile.md.

    TRITON_INTERPRET=0 PYTHONPATH=src python bench/fa3_options_compile.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
os.environ["TRITON_INTERPRET"] = "0"

ALL_EXACT = {"band": True, "band_left": True, "varlen": True, "softcap": 1}
WINDOW_SOFTCAP = {"band": True, "band_left": True, "softcap": 1}
BUILDS = [  # (what, D, causal, GROUP, flags, ablation rung)
    ("plain", 128, True, 4, {}, None),
    ("plain", 128, False, 1, {}, None),
    ("plain", 64, True, 1, {}, None),
    ("cache (Nq != Nk)", 128, True, 4, {"band": True}, None),
    ("cache (Nq != Nk)", 64, True, 1, {"band": True}, None),
    ("window", 128, True, 4, {"band": True, "band_left": True}, None),
    ("two-sided band", 128, False, 1, {"band": True, "band_left": True}, None),
    ("band", 64, False, 1, {"band": True, "band_left": True}, None),
    ("softcap", 128, True, 4, {"softcap": 1}, None),
    ("softcap, fast tanh", 128, True, 4, {"softcap": 2}, None),
    ("softcap", 64, False, 1, {"softcap": 1}, None),
    ("cache + window + softcap", 128, True, 4, {"band": True, "band_left": True, "softcap": 1}, None),
    ("packed", 128, True, 4, {"band": True, "varlen": True}, None),
    ("packed", 128, False, 1, {"band": True, "varlen": True}, None),
    ("packed + window + softcap", 128, True, 4, ALL_EXACT, None),
    ("packed + band + fast tanh", 128, False, 4, {**ALL_EXACT, "softcap": 2}, None),
    ("packed + window + softcap", 64, True, 1, ALL_EXACT, None),
    ("window + softcap, no overlap", 128, True, 1, WINDOW_SOFTCAP, "warp specialization"),
]


def tile_loops(sass: str) -> list[tuple[int, int]]:
    """(HGMMAs, LDL/STL) of each innermost loop that issues HGMMA (the mbarrier retry loops after EXIT excluded)."""
    ins = [(int(m[1], 16), m[2]) for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", sass)]
    loops = []
    for addr, text in ins:
        target = re.search(r"\bBRA\b[^;]*?0x([0-9a-f]+)", text)
        if target and int(target[1], 16) < addr:
            loops.append((int(target[1], 16), addr))

    def count(lo: int, hi: int, pattern: str) -> int:
        return sum(1 for a, t in ins if lo <= a <= hi and re.search(pattern, t))

    mma = [(lo, hi) for lo, hi in loops if count(lo, hi, r"HGMMA") and not count(lo, hi, r"\bEXIT\b")]
    inner = [(lo, hi) for lo, hi in mma if not any(o != (lo, hi) and lo <= o[0] and o[1] <= hi for o in mma)]
    return [(count(lo, hi, r"HGMMA"), count(lo, hi, r"\b(LDL|STL)")) for lo, hi in inner]


def main() -> None:
    import triton

    from flashviz.algos.fa3 import launcher as fa3

    tools = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    print("| build | D | causal | GROUP | regs at entry | stack B | spill stores/loads B | tile loops: HGMMA, LDL+STL "
          "| HGMMA | smem KB |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for what, d, causal, group, flags, rung in BUILDS:
        cfg = fa3.ablation_config(d, rung) if rung else None
        k = fa3.compile_sm90("fwd", d, causal, config=cfg, group=group, flags=fa3.OptionFlags(**flags))
        with tempfile.TemporaryDirectory() as tmp:
            cubin, ptx = os.path.join(tmp, "k.cubin"), os.path.join(tmp, "k.ptx")
            with open(cubin, "wb") as fh:
                fh.write(k.asm["cubin"])
            with open(ptx, "w") as fh:
                fh.write(k.asm["ptx"])
            dump = os.path.join(tools, "cuobjdump")
            res = subprocess.run([dump, "--dump-resource-usage", cubin], capture_output=True, text=True).stdout
            sass = subprocess.run([dump, "--dump-sass", cubin], capture_output=True, text=True).stdout
            v = subprocess.run([os.path.join(tools, "ptxas"), "-arch=sm_90a", "-v", ptx, "-o", os.devnull],
                               capture_output=True, text=True).stderr  # fmt: skip
        spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", v)
        loops = ", ".join(f"{h}/{s}" for h, s in tile_loops(sass))
        name = what + (f" ({rung})" if rung else "")
        regs, stack = re.search(r"REG:(\d+)", res)[1], re.search(r"STACK:(\d+)", res)[1]
        hgmma, smem = len(re.findall(r"HGMMA", sass)), k.metadata.shared // 1024
        print(f"| {name} | {d} | {int(causal)} | {group} | {regs} | {stack} | {spill[1]}/{spill[2]} | {loops} | "
              f"{hgmma} | {smem} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
