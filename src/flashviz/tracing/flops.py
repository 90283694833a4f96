"""The trace's `flops` key: the matmul and non-matmul FLOPs of one launch, as the engine counted them while it ran
(flashviz.engine.flops) and in closed form (the algorithm's `flops.py`), with the FlashAttention-2 paper's argument
for why the non-matmul ones matter and the ratio measured on the recorded H200 (docs/trace-schema.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flashviz.model.config import Config
from flashviz.model.flop_kinds import KINDS, total

if TYPE_CHECKING:
    from flashviz.algos.base import Algorithm, FlopCount

PAPER_RATIO = 16  # FlashAttention-2, section 3.1: A100 tensor cores 312 TFLOP/s fp16 matmul, 19.5 TFLOP/s fp32 other


def anchor() -> dict[str, Any]:
    """The measured rates behind the ratio: bf16 tensor-core matmul vs fp32 FMA on the CUDA cores, from the one run
    the page quotes (flashviz.hardware.peaks), and accurate expf from the run that measured it."""
    from flashviz.hardware.peaks import exp_rate, peaks

    p, e = peaks(), exp_rate()
    return {
        "paper_ratio": PAPER_RATIO,
        "paper": "FlashAttention-2 (Dao, 2023), section 3.1: an A100 does 312 TFLOP/s of FP16/BF16 matmul and "
        "19.5 TFLOP/s of non-matmul FP32, so each non-matmul FLOP costs about 16 matmul FLOPs",
        "gpu": p["gpu"],
        "date": p["date"],
        "source": p["source"],
        "command": p["command"],
        "matmul_tflops": round(p["bf16_matmul_tflops"], 1),
        "fma_tflops": round(p["fp32_fma_tflops"], 1),
        "exp_tflops": round(e["tflops"], 2),
        "measured_ratio": round(p["bf16_matmul_tflops"] / p["fp32_fma_tflops"], 1),
        "exp_ratio": round(e["matmul_over_exp"]),
        "exp_source": e["source"],  # the exp ratio is this run's own: its matmul against its expf
    }


def closed_form(algo: Algorithm) -> FlopCount | None:
    """The algorithm's `flops.py`, or None when its folder has none yet (its trace's `model` is then null)."""
    return algo.flops


TENSOR_CORES = ("bfloat16", "float16")  # an algorithm in these dtypes runs its tile products on the tensor cores
UNCOUNTED = (
    "This algorithm's FLOPs are not shown: it has no closed form (algos/<name>/flops.py) to check the engine's "
    "counters against."
)


def runs_on(algo: Algorithm) -> str:
    """One sentence on where the algorithm's kernel runs its FLOPs, for the ratio's reader."""
    if algo.dtype in TENSOR_CORES:
        return (
            "This kernel runs its two tile products on the tensor cores (bf16 in, fp32 out) and everything else in "
            "fp32 on the CUDA cores and the special-function units: the ratio is the one it pays."
        )
    return (
        "This kernel runs everything in fp32 on the CUDA cores, so the ratio describes real (tensor-core) kernels, "
        "not this one."
    )


def of_launch(algo: Algorithm, cfg: Config, counted: dict[str, int]) -> dict[str, Any]:
    """The trace's `flops`: `counted` (the engine's, by kind), `model` (the closed form), `matches`, the totals,
    the closed form's words per kind (`formulas`), where the kernel runs them (`runs_on`), and the `anchor` of the
    ratio. Every algorithm of the registry has a closed form (tests/test_flops.py holds it), so `model` is never
    null for a trace made today; should one lack it, `model` and `matches` are None and `uncounted` says why, and
    the page shows that sentence instead of the counts."""
    module = closed_form(algo)
    model = algo.flops_of(cfg)  # at the launch's options where the algorithm runs them
    t = total(counted)
    a = anchor()
    return {
        "kinds": list(KINDS),
        "counted": counted,
        "model": model,
        "matches": None if model is None else counted == model,
        **t,
        # the non-matmul FLOPs as the time of matmul FLOPs they cost, at the paper's ratio and at the measured one
        "non_matmul_as_matmul": {
            "paper": t["non_matmul"] * PAPER_RATIO,
            "measured": round(t["non_matmul"] * a["measured_ratio"]),
        },
        "formulas": {} if module is None else dict(module.FORMULAS),
        "runs_on": runs_on(algo),
        **({"uncounted": UNCOUNTED} if module is None else {}),
        "anchor": a,
    }
