"""The GPU's measured peaks, from one recorded run (issue 17 item 12): the page and the CLI quote one bf16 matmul rate
and one fp32 FMA rate, with the run that measured them named, wherever they appear (the FLOP ratio of the trace's
`flops` key and of `flashviz compare`, the ring model's compute time, the ladder's "of peak" column).

That run is the shipped ladder run (`flashviz ladder`: its rungs' shares of peak are against these peaks, measured in
the same run); without one, the parallelism run of `flashviz/data/hardware/` (bench/parallelism_bench.py). The rate
of accurate expf was measured in the parallelism run only: its ratio is that run's own, and named as such."""

from __future__ import annotations

from functools import cache
from itertools import pairwise
from typing import Any


@cache
def ladder_run() -> tuple[dict[str, Any], str] | None:
    """The shipped ladder run and its file's name, or None when none ships or it cannot be read (or, on a machine
    without pydantic, checked)."""
    try:
        from flashviz.hardware.ladder import LadderError, load, shipped
    except ImportError:
        return None
    try:
        return load(), shipped()[-1].name
    except LadderError:
        return None


@cache
def peaks() -> dict[str, Any]:
    """{"bf16_matmul_tflops", "fp32_fma_tflops", "gpu", "date", "source", "command"}: the run the page quotes."""
    run = ladder_run()
    doc = None if run is None else run[0]
    if run is not None and doc is not None and {"bf16_matmul", "fp32_ffma"} <= set(doc["peaks"]):
        return {
            "bf16_matmul_tflops": float(doc["peaks"]["bf16_matmul"]["tflops"]),
            "fp32_fma_tflops": float(doc["peaks"]["fp32_ffma"]["tflops"]),
            "gpu": doc["gpu"],
            "date": doc["date"],
            "source": f"the ladder run, bench/results/ladder/{run[1]}",
            "command": doc["command"],
        }
    from flashviz.hardware import recorded

    par = recorded.parallelism()
    return {
        "bf16_matmul_tflops": float(par["rates"]["bf16_matmul_tflops"]),
        "fp32_fma_tflops": float(par["rates"]["fp32_fma_tflops"]),
        "gpu": par["gpu"],
        "date": par["date"],
        "source": par["source"],
        "command": par["command"],
    }


def exp_rate() -> dict[str, Any]:
    """The accurate expf rate and its ratio to the bf16 matmul rate of the same run (the parallelism run)."""
    from flashviz.hardware import recorded

    par = recorded.parallelism()
    r = par["rates"]
    return {
        "tflops": float(r["fp32_exp_tflops"]),
        "matmul_over_exp": float(r["matmul_over_exp"]),
        "source": par["source"],
    }


def tensor_core_gains() -> dict[str, Any] | None:
    """What the ladder's run measured the tensor cores to buy, from its rungs (not written by hand): `alone`, the
    first rung that moved the same kernel, dtype and tiles from the CUDA cores onto the tensor cores, against the
    rung below it; `all`, the first rung (the seed's kernel as written) against the fastest of flashviz's own kernels
    (a kernel under algos/). Each {"from", "to", "times"}; with the run's gpu and date. None without a run."""
    run = ladder_run()
    if run is None:
        return None
    doc = run[0]
    rungs = doc["rungs"]

    def gain(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        return {"from": a["label"], "to": b["label"], "times": a["ms"] / b["ms"]}

    alone = next(
        (
            gain(a, b)
            for a, b in pairwise(rungs)
            if b["tensor_cores"] and not a["tensor_cores"] and a["dtype"] == b["dtype"] and a["tiles"] == b["tiles"]
        ),
        None,
    )
    own = [r for r in rungs if str(r.get("kernel", "")).startswith("algos/")]
    best = min(own, key=lambda r: r["ms"]) if own else None
    every = gain(rungs[0], best) if best is not None and best is not rungs[0] else None
    if alone is None and every is None:
        return None
    return {"alone": alone, "all": every, "gpu": doc["gpu"], "date": doc["date"]}


def tensor_core_words() -> str:
    """One sentence on what the tensor cores bought in the ladder's run, its numbers computed from the run."""
    g = tensor_core_gains()
    if g is None:
        return "How much faster that makes the same schedule, `flashviz ladder` shows when a recorded run ships."
    parts = []
    if g["alone"]:
        a = g["alone"]
        parts.append(
            f"moving the same kernel and tiles onto the tensor cores made it {a['times']:.1f}\u00d7 faster "
            f"({a['from']} \u2192 {a['to']})"
        )
    if g["all"]:
        e = g["all"]
        parts.append(
            f"all its rungs together: the fastest of flashviz's kernels ({e['to']}) runs {e['times']:.0f}\u00d7 "
            f"faster than the first ({e['from']})"
        )
    return f"In the ladder's run ({g['gpu']}, {g['date']}; flashviz ladder): " + "; ".join(parts) + "."
