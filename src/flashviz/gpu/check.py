"""Checking a GPU's outputs, head by head: against the engine's (same float32 algorithm in the same loop order,
so the two differ by summation order and the last bit of expf only: max |gpu - engine| / max |engine| <= 1e-5; a
bf16 kernel states its own bound, `expect.ENGINE_TOLERANCE`)
and against the float64 reference (the tolerances every trace is held to, the algorithm's `expect.TOLERANCE`).
Outputs are poisoned with NaN before the launch, so an element the kernel never wrote fails both.

Head g (flattened b*H + h) draws its inputs from seed + g, so head 0 of any run is exactly what
`flashviz trace` with the same flags shows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from flashviz.model import reference
from flashviz.model.config import Config
from flashviz.model.inputs import random_inputs

from ..algos import get
from ..algos import gpu_spec as spec

ENGINE_TOLERANCE = 1e-5  # max |gpu - engine| / max |engine|, per output (gradients: their expect.TOLERANCE)


def engine_tolerance(algo_name: str, output: str) -> float:
    """How far the GPU may be from the engine on one output: the algorithm's own `expect.ENGINE_TOLERANCE` where it
    states one (a bf16 kernel: one bf16 step), else ENGINE_TOLERANCE, raised to its float64 tolerance for outputs
    that carry more rounding than O (fa2-backward's gradients: its expect.TOLERANCE says why)."""
    expect = get(algo_name).expect
    own = expect.ENGINE_TOLERANCE
    if output in own:
        return float(own[output])
    return max(ENGINE_TOLERANCE, expect.TOLERANCE.get(output, 0.0))


def head_inputs(cfg: Config, heads: int) -> dict[str, np.ndarray]:
    """Inputs of every head stacked (heads, N, D); head g draws from seed + g (head 0 = the engine's)."""
    algo = get(cfg.algo)
    per_head = [random_inputs(cfg.n, cfg.d, (cfg.seed + g) % 2**32, algo.inputs) for g in range(heads)]
    return {name: np.stack([h[name] for h in per_head]) for name in algo.inputs}


def engine_outputs(cfg: Config, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One head through the NumPy engine (no steps recorded), outputs in their per-head shapes."""
    algo = get(cfg.algo)
    rec = algo.engine.execute(cfg.replace(record=()), inputs)
    return {name: rec.hbm.tensors[name].reshape(spec(cfg.algo).shapes[name](cfg)) for name in algo.outputs}


def compare(
    cfg: Config, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray], seed: int | None = None
) -> dict[str, Any]:
    """Per head: GPU vs engine and GPU vs float64 for every output; `ok` when all are within tolerance.

    inputs (..., N, D) and outputs as `launch` returns them, in NumPy; `seed` (of head 0) is only reported."""
    algo = get(cfg.algo)
    lead = inputs[algo.inputs[0]].shape[:-2]
    flat_in = {k: v.reshape(-1, cfg.n, cfg.d) for k, v in inputs.items()}
    flat_out = {k: v.reshape(-1, *spec(cfg.algo).shapes[k](cfg)) for k, v in outputs.items()}
    heads: list[dict[str, Any]] = []
    for g in range(math.prod(lead)):
        one_in = {k: v[g] for k, v in flat_in.items()}
        got = {k: v[g] for k, v in flat_out.items()}
        engine = engine_outputs(cfg, one_in)
        vs_engine = {}
        for name in algo.outputs:
            e = reference.errors(got[name], engine[name].astype(np.float64))
            e["tolerance_rel"] = engine_tolerance(cfg.algo, name)
            e["nan"] = int(np.isnan(got[name]).sum())
            e["ok"] = bool(e["nan"] == 0 and e["max_rel"] <= e["tolerance_rel"])
            vs_engine[name] = e
        refs = algo.expect.expected(cfg, one_in)
        vs_ref = reference.check(
            {k: got[k] for k in refs},
            refs,
            algo.expect.TOLERANCE,
            algo.expect.LOG_DOMAIN,
            None if algo.magnitudes is None else algo.magnitudes(cfg, one_in),
        )
        heads.append(
            {
                "head": g,
                "seed": None if seed is None else (seed + g) % 2**32,
                "engine": vs_engine,
                "float64": vs_ref,
                "ok": all(e["ok"] for e in vs_engine.values()) and vs_ref["ok"],
            }
        )
    worst = {
        name: {
            "engine_max_rel": max(h["engine"][name]["max_rel"] for h in heads),
            "engine_tolerance": heads[0]["engine"][name]["tolerance_rel"],
            "float64_max_rel": max(
                (h["float64"][name]["max_rel"] for h in heads if name in h["float64"]), default=None
            ),
        }
        for name in algo.outputs
    }
    return {"heads": heads, "worst": worst, "ok": all(h["ok"] for h in heads)}
