"""Build a Trace: run the engine, check it against float64, hold its counters against the model."""

from __future__ import annotations

import numpy as np

from . import kernels, reference, traffic
from .config import Config
from .engine import fa2
from .inputs import random_qkv
from .trace import Trace

ROLES = {
    "Q": "input",
    "K": "input",
    "V": "input",
    "O": "output",
    "L": "output (log-sum-exp, for the backward pass)",
}


def make_trace(cfg: Config, inputs: dict[str, np.ndarray] | None = None) -> Trace:
    """Trace one launch of `cfg` on `inputs` (fresh random Q, K, V from cfg.seed when None)."""
    cfg = cfg.validated()
    qkv = inputs if inputs is not None else random_qkv(cfg.n, cfg.d, cfg.seed)
    run = fa2.execute(cfg, qkv["Q"], qkv["K"], qkv["V"])
    O = run.hbm.tensors["O"]  # (N, D)
    L = run.hbm.tensors["L"][:, 0]  # (N,)
    O_ref, L_ref = reference.attention(qkv["Q"], qkv["K"], qkv["V"], cfg.softmax_scale)
    hbm = run.hbm.counters()
    model = traffic.count(cfg.algo, cfg.n, cfg.d, cfg.br, cfg.bc)
    recorded = set(cfg.recorded_blocks())
    return Trace(
        config={
            "algo": cfg.algo,
            "n": cfg.n,
            "d": cfg.d,
            "br": cfg.br,
            "bc": cfg.bc,
            "scale": cfg.softmax_scale,
            "seed": cfg.seed if inputs is None else None,
            "inputs": "random" if inputs is None else "file",
            "tr": cfg.tr,
            "tc": cfg.tc,
            "dtype": "float32",
            "recorded_blocks": sorted(recorded),
        },
        kernel={"file": kernels.KERNEL_FILES[cfg.algo], "name": "fa2", "source": kernels.source(cfg.algo)},
        inputs={k: qkv[k] for k in ("Q", "K", "V")},
        outputs={"O": O, "L": L},
        reference=reference.check({"O": O, "L": L}, {"O": O_ref, "L": L_ref}),
        hbm=hbm,
        model={**model, "matches": hbm == model},
        sram=run.sram_footprint,
        tensors={
            name: {
                "shape": list(run.hbm.tensors[name].shape if name != "L" else (cfg.n,)),
                "dtype": "float32",
                "role": ROLES[name],
            }
            for name in fa2.TENSORS
        },
        blocks=[
            {"i": i, "rows": [i * cfg.br, min(cfg.n, (i + 1) * cfg.br)], "recorded": i in recorded}
            for i in range(cfg.tr)
        ],
        phases=run.phases(),
        steps=run.steps,
    )
