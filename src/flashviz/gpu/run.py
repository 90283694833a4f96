"""`flashviz gpu run`: launch an algorithm's kernels on the engine's inputs, B x H heads at once, and check them
against the engine and float64 (`check`); the report."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from flashviz.model.config import Config, ConfigError

from ..algos import get
from . import check as checking
from . import device
from . import launch as launching


def run(
    cfg: Config,
    heads: int = 1,
    batch: int = 1,
    inputs: dict[str, np.ndarray] | None = None,
    threads: int | None = None,
    check: bool = True,
) -> dict[str, Any]:
    """`flashviz gpu run`: launch batch x heads heads at once on the engine's inputs; check when asked."""
    cfg = get(cfg.algo).validated(cfg)
    device.require_gpu()
    if inputs is not None:
        if heads * batch != 1:
            raise ConfigError("--inputs", "holds one head (N, D); use it with --heads 1 --batch 1")
        inputs = {k: v[None, None] for k, v in inputs.items()}
        seed = None
    else:
        inputs = {k: v.reshape(batch, heads, cfg.n, cfg.d) for k, v in checking.head_inputs(cfg, batch * heads).items()}
        seed = cfg.seed
    t0 = time.perf_counter()
    outputs, facts = launching.launch(cfg, inputs, threads)
    report: dict[str, Any] = {
        "config": {**config_dict(cfg), "seed": seed, "heads": heads, "batch": batch},
        "launch": facts,
        "device": device.device_info(),
        "wall_s": {"launch": time.perf_counter() - t0},
    }
    if check:
        t0 = time.perf_counter()
        report["check"] = checking.compare(cfg, inputs, outputs, seed)
        report["wall_s"]["check"] = time.perf_counter() - t0
        report["ok"] = report["check"]["ok"]
    else:
        nan = {k: int(np.isnan(v).sum()) for k, v in outputs.items()}
        report["unwritten_or_nan"] = nan
        report["ok"] = not any(nan.values())
    return report


def config_dict(cfg: Config) -> dict[str, Any]:
    return {
        "algo": cfg.algo,
        "n": cfg.n,
        "d": cfg.d,
        "br": cfg.br,
        "bc": cfg.bc,
        "causal": cfg.causal,
        "scale": cfg.softmax_scale,
        "seed": cfg.seed,
        "tr": cfg.tr,
        "tc": cfg.tc,
    }
