"""Build a Trace: run the engine, check it against float64, hold its counters against the model, then assemble the
run with the algorithm's picture and words (`flashviz.tracing.assemble`)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos import resolve
from flashviz.engine.blas import one_thread
from flashviz.model import precision, reference
from flashviz.model.config import Config, ConfigError
from flashviz.model.inputs import random_inputs
from flashviz.tracing import assemble
from flashviz.tracing.trace import Trace

if TYPE_CHECKING:
    from flashviz.algos.base import Algorithm


def _expected(
    algo: Algorithm, cfg: Config, inputs: dict[str, np.ndarray]
) -> tuple[dict[str, np.ndarray], dict[str, float] | None]:
    """The algorithm's float64 expectation of its outputs, and the magnitudes some are judged against, on one BLAS
    thread (engine.blas): beside the engine, and beside another trace the server makes, a BLAS call on several threads
    may find them busy and run on fewer, and some of the backward's large products round their last bits otherwise
    then; on one thread they are always the same."""
    with one_thread():
        refs = algo.expect.expected(cfg, inputs)
        return refs, None if algo.magnitudes is None else algo.magnitudes(cfg, inputs)


def make_trace(cfg: Config, inputs: dict[str, np.ndarray] | None = None) -> Trace:
    """Trace one launch of `cfg` on `inputs`: its algorithm resolved from `cfg.algo` here, for callers that hold a
    Config and no Algorithm (tests, benches); a front door that resolved it already calls `trace_of`."""
    return trace_of(resolve(cfg.algo), cfg, inputs)


def trace_of(algo: Algorithm, cfg: Config, inputs: dict[str, np.ndarray] | None = None) -> Trace:
    """Trace one launch of `cfg` by `algo` on `inputs` (fresh random inputs from cfg.seed when None)."""
    return assemble.assemble(run_of(algo, cfg, inputs), algo.picture, algo.words)


def run_of(algo: Algorithm, cfg: Config, inputs: dict[str, np.ndarray] | None = None) -> assemble.Run:
    """Run one launch of `cfg` by `algo` on the engine and check it: its outputs against float64, its closed-form
    traffic beside it (what `assemble` makes a Trace of)."""
    cfg = algo.validated(cfg)
    given = inputs is not None
    inputs = dict(inputs) if inputs is not None else {}
    drawn = [k for k in algo.inputs if k not in inputs]  # e.g. dO when the .npz holds only Q, K, V
    rows = cfg.input_rows() if cfg.has_options else None  # Q of a group of q heads, K and V of Nk keys
    if drawn:
        fresh = random_inputs(cfg.n, cfg.d, cfg.seed, algo.inputs, rows)
        inputs.update({k: v for k, v in fresh.items() if k in drawn})
    if rows is not None:
        for name in algo.inputs:
            want = (rows.get(name, cfg.n), cfg.d)
            if tuple(np.shape(inputs[name])) != want:
                raise ConfigError(
                    "inputs", f"{name} must be {want[0]}×{want[1]} for this launch (got {np.shape(inputs[name])})"
                )
    # what HBM holds: a bf16 kernel's inputs are the bf16 roundings of what was drawn or given
    inputs = {k: precision.stored(v, algo.dtype) for k, v in inputs.items()}
    # the float64 expectation runs beside the engine, each on one BLAS thread (engine.blas): on two cores the check
    # takes little time of its own
    pool = ThreadPoolExecutor(1, thread_name_prefix="flashviz-reference")
    try:
        expecting = pool.submit(_expected, algo, cfg, inputs)
        rec = algo.engine.execute(cfg, inputs)
        refs, magnitudes = expecting.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # a cancelled run does not wait for the reference
    checked = reference.check(
        {k: rec.hbm.value(k) for k in refs},
        refs,
        algo.expect.TOLERANCE,
        algo.expect.LOG_DOMAIN,
        magnitudes,  # outputs judged against their terms' scale (None: against max |ref|)
    )
    model = algo.traffic_of(cfg)  # at the launch's options where the algorithm runs them
    return assemble.Run(algo, cfg, inputs, given, drawn, rec, checked, model)
