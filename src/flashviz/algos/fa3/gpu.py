"""fa3 on a GPU: kernel.py's `fa3_fwd` through `launcher.forward` with its config (`forward_config`) for the
trace's D and N (Bc = 128, its ring depth, ping-pong and overlap on; persistent up to N = 4096), on the engine's
inputs rounded to bf16 as the engine rounds them. Q, K, V and O move by host-side TMA descriptors, L by ordinary
stores: `paths` tells `flashviz gpu profile` which Nsight Compute counters see each. Gluon has no interpreter:
this runs on an sm_90 GPU only (`flashviz gpu run --algo fa3`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from flashviz.algos.launch import TritonKernel, TritonSpec, nd, rows
from flashviz.model.config import Config

from . import tiles

SMS = 132  # the H200's SMs: a persistent launch runs min(blocks, SMs) programs


def persistent(cfg: Config) -> bool:
    return cfg.n <= 4096  # launcher.forward_config (tests hold them equal)


def grid(cfg: Config, heads: int) -> tuple[int, int, int]:
    blocks = cfg.tr * heads
    return (min(blocks, SMS) if persistent(cfg) else blocks, 1, 1)


def launch(cfg: Config, inputs: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """fa3_fwd on every head of `inputs` ({Q, K, V}: (heads, N, D) float32): O (heads, N, D) and L (heads, N) as
    float32 NumPy, and the launch's facts (the second launch is timed: the first compiles)."""
    import torch

    from . import launcher

    why = launcher.unavailable()
    if why is not None:
        raise RuntimeError(f"fa3 cannot run here: {why}")
    heads = inputs["Q"].shape[0]
    q, k, v = (
        torch.from_numpy(np.ascontiguousarray(inputs[name], dtype=np.float32))
        .to("cuda")
        .to(torch.bfloat16)
        .reshape(1, heads, cfg.n, cfg.d)
        .contiguous()
        for name in ("Q", "K", "V")
    )
    config = launcher.forward_config(cfg.d, cfg.n, cfg.causal)
    o, lse = launcher.forward(q, k, v, cfg.causal, cfg.softmax_scale, config)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    o, lse = launcher.forward(q, k, v, cfg.causal, cfg.softmax_scale, config)
    end.record()
    end.synchronize()
    facts: dict[str, Any] = {
        "kernel": "fa3_fwd",
        "file": "kernel.py",
        "grid": list(grid(cfg, heads)),
        "block": [32 * 12, 1, 1],  # 12 warps: the two consumer warpgroups and the producer's (NOTES.md "fa3")
        "num_warps": 12,
        "num_stages": config.stages,
        "maxnreg": None,
        "source": "launcher.forward_config: " + config.name(),
        "interpreted": False,
        "smem_bytes": tiles.shared_bytes(cfg.d),
        "registers": -1,
        "local_bytes": -1,
        "mma": {},
        "time_ms": float(start.elapsed_time(end)),
    }
    out = {
        "O": o.float().reshape(heads, cfg.n, cfg.d).cpu().numpy(),
        "L": lse.float().reshape(heads, cfg.n).cpu().numpy(),
    }
    return out, facts


def resources(cfg: Config) -> dict[str, Any]:
    """What one program takes of an SM: 12 warps (three warpgroups: two consumers and the producer's), its tiles'
    shared memory by the rule the launcher's comment states, and the register cap of the launch (MAXNREG = 168 per
    thread at entry, moved by setmaxnreg to 240 per consumer thread, 24 per producer thread)."""
    what = f"fa3_fwd, Br={cfg.br}, Bc={cfg.bc}, D={cfg.d}, {tiles.stages(cfg.d)} stages"
    return {
        "template": what,
        "threads": 384,
        "num_warps": 12,
        "num_stages": tiles.stages(cfg.d),
        "warps_source": "rule",
        "smem": {
            "value": tiles.shared_bytes(cfg.d),
            "source": "rule",
            "note": "Qi's two halves, O's two staging halves and the ring's Kj, Vj in bf16 (mbarriers aside), as "
            "the launcher's comment records for the sm_90 build",
        },
        "registers": {
            "value": 168,
            "source": "assumed",
            "note": "the launch's maxnreg (kernel.py MAXNREG): 12 warps × 32 × 168 = 64,512 of the SM's 65,536",
        },
        "program_of_block": "reversed" if cfg.causal else "same",
    }


SPEC: TritonSpec = TritonSpec(
    "fa3",
    {"Q": nd, "K": nd, "V": nd, "O": nd, "L": rows},
    (TritonKernel("fa3_fwd", ("Q", "K", "V", "O", "L"), grid=grid),),
    launch,
    paths={"Q": "tma", "K": "tma", "V": "tma", "O": "tma", "L": "lsu"},
    reuse="mostly K and V, re-read by every block of Q",
    resources=resources,
)
