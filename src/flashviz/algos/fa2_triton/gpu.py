"""fa2-triton on a GPU: kernel.py's `fa2_fwd` through `launcher.py` with the trace's tiles
(Br, Bc and the warps and stages `tiles.warps_and_stages` gives), on the engine's inputs rounded to bf16 as the
engine rounds them. Q, K, V and O move by tensor descriptors (TMA), L by ordinary stores: `paths` tells
`flashviz gpu profile` which Nsight Compute counters see each (bench/results/tma/README.md).

Under TRITON_INTERPRET=1 (set before Triton is first imported) the same launch runs the kernel on the CPU in
Triton's interpreter; that is how tests/test_fa2_triton.py holds the engine to the kernel without a GPU.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from flashviz.algos.launch import TritonKernel, TritonSpec, nd, rows
from flashviz.model.config import Config

from . import resources, tiles

MMA = re.compile(r"\b(wgmma\.mma_async\.[\w.]+|mma\.sync\.aligned\.[\w.]+)")


def mma_instructions(ptx: str) -> dict[str, int]:
    """The matrix instructions in a kernel's PTX, with how many times each appears in the code."""
    found: dict[str, int] = {}
    for m in MMA.finditer(ptx):
        found[m[1]] = found.get(m[1], 0) + 1
    return found


def launch(cfg: Config, inputs: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """fa2_fwd on every head of `inputs` ({Q, K, V}: (heads, N, D) float32): O (heads, N, D) and L (heads, N) as
    float32 NumPy, and the launch's facts (the second launch is timed: the first compiles)."""
    import torch

    from .launch_tiles import Tiles
    from .launcher import launcher

    run = launcher()
    device = "cpu" if run.interpret else "cuda"
    ws = tiles.warps_and_stages(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal)
    t = Tiles(cfg.br, cfg.bc, ws["num_warps"], ws["num_stages"], ws["maxnreg"])
    heads = inputs["Q"].shape[0]
    q, k, v = (
        torch.from_numpy(np.ascontiguousarray(inputs[name], dtype=np.float32))
        .to(device)
        .to(torch.bfloat16)  # round to nearest even: the engine's bf16
        .reshape(1, heads, cfg.n, cfg.d)
        for name in ("Q", "K", "V")
    )
    o, lse = run.forward(q, k, v, cfg.causal, cfg.softmax_scale, tiles=t)
    facts: dict[str, Any] = {
        "kernel": "fa2_fwd",
        "file": "kernel.py",
        "grid": [cfg.tr, heads, 1],
        "block": [32 * ws["num_warps"], 1, 1],
        **{key: ws[key] for key in ("num_warps", "num_stages", "maxnreg", "source")},
        "interpreted": run.interpret,
    }
    if not run.interpret:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        o, lse = run.forward(q, k, v, cfg.causal, cfg.softmax_scale, tiles=t)
        end.record()
        end.synchronize()
        compiled = run.compiled["fwd"]
        getattr(compiled, "_init_handles", lambda: None)()  # n_regs and n_spills are read when the binary loads
        facts.update(
            smem_bytes=int(compiled.metadata.shared),
            registers=int(getattr(compiled, "n_regs", -1)),
            local_bytes=int(getattr(compiled, "n_spills", -1)),
            mma=mma_instructions(compiled.asm.get("ptx", "")),
            time_ms=float(start.elapsed_time(end)),
        )
    else:
        facts.update(smem_bytes=0, registers=0, local_bytes=0, mma={}, time_ms=0.0)
    out = {
        "O": o.float().reshape(heads, cfg.n, cfg.d).cpu().numpy(),
        "L": lse.float().reshape(heads, cfg.n).cpu().numpy(),
    }
    return out, facts


def grid(cfg: Config, heads: int) -> tuple[int, int, int]:
    """fa2_fwd's grid for `heads` q heads (B·H): (Tr, heads), or with packed sequences (Tr of the longest sequence,
    sequences · heads): a program past its sequence's end returns at once (`launcher.py`)."""
    longest = max(nq for nq, _ in cfg.seqs)
    return -(-longest // cfg.br), len(cfg.seqs) * heads, 1


SPEC: TritonSpec = TritonSpec(
    "fa2-triton",
    {"Q": nd, "K": nd, "V": nd, "O": nd, "L": rows},
    (TritonKernel("fa2_fwd", ("Q", "K", "V", "O", "L"), descriptors=("Q", "K", "V", "O"), grid=grid),),
    launch,
    paths={"Q": "tma", "K": "tma", "V": "tma", "O": "tma", "L": "lsu"},
    reuse="mostly K and V, re-read by every block of Q",
    resources=resources.resources,
)
