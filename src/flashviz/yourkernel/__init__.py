"""Your own kernel (issue 21): trace any Triton attention forward kernel under Triton's interpreter, bind it to Q, K, V,
O, L, hold its carries to float64 tile by tile, name its first divergence, and count its HBM trips.

    flashviz trace --kernel my_attn.py:attn_fwd --meta BLOCK_M=16,BLOCK_N=16
    flashviz.trace(kernel=attn_fwd, meta={"BLOCK_M": 16, "BLOCK_N": 16})

The parts, in the order a run goes through them: `load` (the file or function, under the interpreter), `bind` (the
signature filled by convention), `memory` (the tensors and their guard zones), `record` (the hooks on the
interpreter and the line tracer), `run` (one launch), `source` (what a line of the file is), `truth` (float64
online-softmax states), `carries` (each tile held to them), `verdict` (the first divergence and its cause), `traffic`
(bytes beside the FA2 model), `steps` (the run cut into the viewer's steps), `report` (the document and the terminal).
The kernel is the user's own code run in their own process; `flashviz serve` never runs it.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flashviz.model.config import LIMITS, ConfigError, shown

if TYPE_CHECKING:
    from .report import KernelTrace

DEFAULT_N, DEFAULT_D = 64, 16  # four blocks of 16 rows, tl.dot's smallest tile: seconds under the interpreter
MAX_HEADS = 64


def _int(name: str, value: Any, lo: int, hi: int) -> int:
    try:
        number = operator.index(value) if not isinstance(value, bool) else None
    except TypeError:
        number = None
    if number is None or not lo <= number <= hi:
        raise ConfigError(name, f"must be an integer in {lo}..{hi} (got {shown(value)})")
    return number


def _pairs(value: Any, flag: str) -> dict[str, str]:
    from .bind import parse_pairs

    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, str):
        return parse_pairs(value, flag)
    raise ConfigError(flag, f"must be a dict or NAME=VALUE,... (got {shown(type(value).__name__)})")


def trace_kernel(
    kernel: Any,
    *,
    n: int | None = None,
    d: int | None = None,
    batch: int = 1,
    heads: int = 1,
    dtype: str = "float16",
    causal: bool = False,
    scale: float | None = None,
    seed: int = 0,
    inputs: Mapping[str, Any] | None = None,
    grid: str | Sequence[int] | None = None,
    meta: str | Mapping[str, Any] | None = None,
    bind: str | Mapping[str, str] | None = None,
    carry: str | Sequence[str] | Mapping[str, str] | None = None,
    budget: int | None = None,
) -> KernelTrace:
    """Run a user's @triton.jit attention forward under Triton's interpreter and hold it to float64.

    kernel: the @triton.jit function (autotuned or not; decorated without the interpreter, it is read again from its
    file) or 'FILE.py:FUNCTION'. n, d: N and D (default 64, 16; taken from `inputs` when given). batch, heads: Z
    and H. dtype: of Q, K, V and O (float16, bfloat16, float32; L is float32). causal, scale (default 1/sqrt(D)),
    seed: the launch and its random inputs; inputs: {"Q", "K", "V"} as (N, D) arrays (one head). grid: (X, Y[, Z])
    (default (cdiv(N, BLOCK_M), Z·H)). meta: values of parameters flashviz does not fill ({"BLOCK_M": 16, ...}).
    bind: {role: parameter} for names outside the conventions ({"Q": "query", "N": "seq_len"}). carry: the
    running max, sum and accumulator's names (("m_i", "l_i", "acc") or {"m": ..., "l": ..., "acc": ...}).
    budget: loop iterations per program before the run stops (default 4096).

    Returns a KernelTrace: `.verdict` (correct, diverges, fault), `.message` (its one line), `.divergence`,
    `.fault`, `.traffic`, `.to_json()`. Bad arguments raise ConfigError (a ValueError) naming them."""
    from flashviz.model.inputs import NAMES, from_arrays

    from . import load, report, run
    from .bind import parse_grid

    arrays = None
    if inputs is not None:
        arrays = from_arrays(dict(inputs), NAMES)
        rows, cols = arrays["Q"].shape
        for name, given, found in (("n", n, rows), ("d", d, cols)):
            if given is not None and given != found:
                raise ConfigError(name, f"must match the inputs' {name.upper()}={found} (got {shown(given)})")
        n, d = rows, cols
        if batch != 1 or heads != 1:
            raise ConfigError("inputs", "are one head's (N, D) arrays: give them with batch=1 and heads=1")
    n = _int("n", DEFAULT_N if n is None else n, *LIMITS["n"])
    d = _int("d", DEFAULT_D if d is None else d, *LIMITS["d"])
    opts = run.Options(
        n=n,
        d=d,
        z=_int("batch", batch, 1, MAX_HEADS),
        h=_int("heads", heads, 1, MAX_HEADS),
        dtype=dtype,
        causal=bool(causal),
        scale=scale,
        seed=_int("seed", seed, *LIMITS["seed"]),
        budget=run.DEFAULT_BUDGET if budget is None else _int("budget", budget, 1, 2**20),
    )
    if not isinstance(causal, bool):
        raise ConfigError("causal", f"must be True or False (got {shown(causal)})")
    if scale is not None and (isinstance(scale, bool) or not isinstance(scale, (int, float))):
        raise ConfigError("scale", f"must be a number or None, 1/sqrt(D) (got {shown(scale)})")
    if isinstance(carry, (list, tuple)):
        carry = ",".join(map(str, carry))
    carry_roles = run.parse_carry(
        carry
        if isinstance(carry, str) or carry is None
        else ",".join(
            f"{role}={name}"
            for role, name in dict(carry).items()  # type: ignore[arg-type]
        )
    )
    found = load.from_object(kernel)
    done = run.run(
        found,
        opts,
        inputs=arrays,
        meta=_pairs(meta, "--meta"),
        renames=_pairs(bind, "--bind"),
        grid=parse_grid(grid),  # type: ignore[arg-type]
        carry=carry_roles,
    )
    return report.build(done)


__all__ = ["trace_kernel"]
