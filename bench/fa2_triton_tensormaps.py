"""The tensormap instructions in fa2_fwd's PTX, compiled for sm_90 without a GPU (no device time spent).

Triton builds each tensor descriptor (`tl.make_tensor_descriptor`) on the device and publishes its 128-byte
tensormap to global scratch memory (`tensormap.cp_fenceproxy`): Nsight Compute counts those bytes in
`l1tex__t_bytes_pipe_lsu_mem_global_op_atom.sum` (bench/results/fa2-triton/2026-12-01-nvidia-h200/README.md).
This prints, for the profiled shape (D=64, Br=128, Bc=64, 8 warps, 5 stages), the count of each tensormap, TMA,
atomic and matrix instruction and the global scratch per program.

    PYTHONPATH=src python bench/fa2_triton_tensormaps.py
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, str(Path(__file__).parent))

PATTERNS = {
    "tensormap writes": r"tensormap\.cp_fenceproxy[\w.:]*",
    "tensormap fences": r"fence\.proxy\.tensormap[\w.:]*",
    "TMA copies": r"cp\.async\.bulk\.tensor[\w.:]*",
    "atomics": r"\b(?:atom|red)\.global[\w.:]*",
    "global stores": r"\bst\.global[\w.:]*",
    "matrix": r"wgmma\.mma_async[\w.]*",
}


def main() -> None:
    import triton
    from attention_compile_check import signature
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from flashviz.algos.fa2_triton import kernel as km

    k = km.fa2_fwd
    ptrs = {n: "*bf16" for n in ("Q", "K", "V", "O")} | {"L": "*fp32"}
    ce = {"D": 64, "Br": 128, "Bc": 64, "CAUSAL": False, "WARP_SPECIALIZE": False, "INPUT_PRECISION": "tf32"}
    sig = signature(k, ptrs, ce)
    div = [
        (i,)
        for i, n in enumerate(k.arg_names)
        if (n in ptrs or n == "Dv" or (n.startswith("s") and n != "scale")) and sig.get(n) != "constexpr"
    ]
    ck = triton.compile(
        ASTSource(k, sig, ce, {i: [["tt.divisibility", 16]] for i in div}),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": 8, "num_stages": 5},
    )
    ptx = ck.asm["ptx"]
    print(f"triton {triton.__version__}: global scratch {ck.metadata.global_scratch_size} B per program, "
          f"shared {ck.metadata.shared} B")  # fmt: skip
    for what, pattern in PATTERNS.items():
        print(f"{what}: {dict(Counter(re.findall(pattern, ptx))) or 'none'}")


if __name__ == "__main__":
    main()
