"""Build a Trace: run the engine, check it against float64, hold its counters against the model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flashviz.algos import picture, resolve
from flashviz.model import kernels, precision, reference
from flashviz.model.config import Config, ConfigError
from flashviz.model.inputs import random_inputs
from flashviz.model.units import FLOAT_BYTES
from flashviz.tracing import assemble
from flashviz.tracing import flops as flop_view
from flashviz.tracing import hardware as hardware_view
from flashviz.tracing.trace import Trace

if TYPE_CHECKING:
    from flashviz.algos.base import Algorithm


def make_trace(cfg: Config, inputs: dict[str, np.ndarray] | None = None) -> Trace:
    """Trace one launch of `cfg` on `inputs`: its algorithm resolved from `cfg.algo` here, for callers that hold a
    Config and no Algorithm (tests, benches); a front door that resolved it already calls `trace_of`."""
    return trace_of(resolve(cfg.algo), cfg, inputs)


def trace_of(algo: Algorithm, cfg: Config, inputs: dict[str, np.ndarray] | None = None) -> Trace:
    """Trace one launch of `cfg` by `algo` on `inputs` (fresh random inputs from cfg.seed when None)."""
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
    rec = algo.engine.execute(cfg, inputs)
    hbm = rec.hbm
    outputs = {name: hbm.value(name) for name in algo.outputs}
    refs = algo.expect.expected(cfg, inputs)
    counters = hbm.counters()
    model = algo.traffic_of(cfg)
    recorded = set(algo.recorded_blocks(cfg))
    shapes = {name: [int(s) for s in hbm.shapes[name]] for name in hbm.tensors}
    module = algo.picture
    texts = module.picture(cfg)
    pic = assemble.assemble(cfg, module, texts, rec.steps, tuple(hbm.tensors))
    main = next(k for k in module.KERNELS if k.name == module.PICKER.kernels[0])  # the picker's kernel
    blocks = []
    along = "keys" if module.PICKER.letter == "j" else "rows"
    for k, b in enumerate(algo.engine.trace_blocks(cfg, recorded)):
        its_phases = rec.block_phases.get(k, 0)
        blocks.append(
            {
                "block": 0 if main.letter is None else k,  # blockIdx.x: 0 where one block per head visits them all
                **b,
                "phases": its_phases,
                "idle": assemble.idle_ranges(rec.pick_phases.get(k, []), its_phases - 1),
                "label": b.get("label") or f"{k} \u00b7 {along} {picture.rows_text(*b['rows'])}",
            }
        )
    phases = rec.phases(tuple(hbm.tensors))
    assemble.fill_writes(module, phases)
    drawn_as = pic.pop("tensors")
    tensors = {
        name: {
            "shape": shapes[name],
            "dtype": "float32" if algo.bytes_of(name) == FLOAT_BYTES else algo.dtype,
            "element_bytes": algo.bytes_of(name),
            "role": algo.tensors[name],
            **drawn_as[name],
        }
        for name in hbm.tensors
    }
    assert rec.sram_footprint is not None, "every engine declares its SRAM"
    held_to: dict[str, Any] = {**model, "matches": counters == model}
    checked = reference.check(
        {k: outputs[k] for k in refs},
        refs,
        algo.expect.TOLERANCE,
        algo.expect.LOG_DOMAIN,
        None if algo.magnitudes is None else algo.magnitudes(cfg, inputs),  # outputs judged against their terms' scale
    )
    return Trace(
        config={
            "algo": cfg.algo,
            "n": cfg.n,
            "d": cfg.d,
            "br": cfg.br,
            "bc": cfg.bc,
            "scale": cfg.softmax_scale,
            "seed": cfg.seed if drawn else None,
            "causal": cfg.causal,
            "inputs": "file" if given else "random",
            "random_inputs": drawn,
            "tr": cfg.tr,
            "tc": cfg.tc,
            "dtype": algo.dtype,
            "element_bytes": algo.element_bytes,
            "recorded_blocks": sorted(recorded),
            # the options of real models (docs/trace-schema.md: plain attention has group 1, nk = n, no window)
            "group": cfg.group,
            "nk": cfg.kv_n,
            "window": list(cfg.window),
            "softcap": cfg.softcap,
            "seqlens": None if cfg.seqlens is None else list(cfg.seqlens),
            "seqlens_k": None if cfg.seqlens_k is None else list(cfg.seqlens_k),
            **({} if texts.launch is None else {"launch": dict(texts.launch)}),
        },
        kernel={"file": algo.kernel_file, "name": algo.kernel_name, "source": kernels.source(algo.kernel)},
        idea=algo.idea.to_dict(),
        inputs={k: inputs[k] for k in algo.inputs},
        outputs=outputs,
        reference={**checked, "headline": list(texts.headline), "against": texts.against},
        hbm=counters,
        model=held_to,
        flops=flop_view.of_launch(algo, cfg, rec.flops_counted()),
        hardware=hardware_view.of_launch(algo, cfg, None if texts.tensor_cores is None else dict(texts.tensor_cores)),
        sram=rec.sram_footprint,
        tensors=tensors,
        blocks=blocks,  # the picks (docs/trace-schema.md): blockIdx.x of the picker's kernel, or fa1's blocks of Q
        phases=phases,
        steps=rec.steps,
        title=algo.title,
        tagline=texts.tagline,
        # a run over several devices: the closed form's part (texts) and the run's (the engine's counters, carries)
        devices=None if rec.devices is None else {**(texts.devices or {}), **rec.devices},
        **pic,
    )
