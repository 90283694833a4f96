"""One run of a user's kernel: flashviz's inputs in the launch's dtype, the signature bound, every program run under
the interpreter with the recorder's hooks in place, and what the kernel left in O and L.

Inputs are fresh random standard-normal Q, K, V drawn from the seed in the order Q, K, V (for one head the same
numbers as `flashviz trace --seed`), or the user's (N, D) arrays, rounded to the dtype; O and L start as NaN, so that
an element no program writes shows as one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from flashviz.model.config import ConfigError, shown

from . import bind as binding
from . import carries, memory, record, truth
from .load import Kernel

DTYPES = ("float16", "bfloat16", "float32")
DEFAULT_BUDGET = 4096  # loop iterations per program: N = 65536 at Bc = 16, far beyond what the interpreter runs


@dataclass(frozen=True)
class Options:
    n: int
    d: int
    z: int = 1
    h: int = 1
    dtype: str = "float16"
    causal: bool = False
    scale: float | None = None
    seed: int = 0
    budget: int = DEFAULT_BUDGET

    @property
    def softmax_scale(self) -> float:
        return 1.0 / math.sqrt(self.d) if self.scale is None else float(self.scale)


@dataclass
class Run:
    kernel: Kernel
    options: Options
    binding: binding.Binding
    programs: list[record.Program]
    fault: record.Fault | None
    memory: memory.Memory
    heads: list[truth.Head]  # per z * H + h
    out: np.ndarray  # (Z·H, N, D) float64: O as the kernel left it
    lse: np.ndarray | None  # (Z·H, N) float64: L, when the kernel has one
    carry_names: dict[str, str] | None  # --carry: role -> variable


def parse_carry(text: str | None) -> dict[str, str] | None:
    """`m_i,l_i,acc` (the running max, the running sum, the accumulator, in that order; fewer names judge fewer) or
    `m=m_i,l=l_i,acc=acc`."""
    if not text:
        return None
    items = [t.strip() for t in str(text).split(",")]
    out: dict[str, str] = {}
    positional = all("=" not in t for t in items)
    if positional:
        if not 1 <= len(items) <= 3:
            raise ConfigError(
                "--carry", f"takes one to three names: the running max, sum, accumulator (got {shown(text)})"
            )
        pairs = list(zip(carries.ROLES, items, strict=False))
    else:
        pairs = [tuple(t.split("=", 1)) for t in items]  # type: ignore[misc]
    for role, name in pairs:
        role, name = role.strip(), name.strip()
        if role not in carries.ROLES or not name.isidentifier():
            raise ConfigError("--carry", f"must be NAMES (m_i,l_i,acc) or m=NAME,l=NAME,acc=NAME (got {shown(text)})")
        out[role] = name
    return out


def _tensors(opts: Options, inputs: dict[str, np.ndarray] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    import torch

    dtype = getattr(torch, opts.dtype)
    shape = (opts.z, opts.h, opts.n, opts.d)
    if inputs is None:
        rng = np.random.default_rng(opts.seed)
        drawn = {k: rng.standard_normal(shape, dtype=np.float32) for k in ("Q", "K", "V")}  # (Z, H, N, D)
    else:
        drawn = {k: np.asarray(inputs[k], dtype=np.float32).reshape(shape) for k in ("Q", "K", "V")}
    tensors, buffers = {}, {}
    for name in ("Q", "K", "V"):
        tensors[name], buffers[name] = memory.guarded(shape, dtype, 0.0)
        tensors[name].copy_(torch.from_numpy(drawn[name]).to(dtype))
    tensors["O"], buffers["O"] = memory.guarded(shape, dtype, float("nan"))
    tensors["L"], buffers["L"] = memory.guarded(shape[:3], torch.float32, float("nan"))
    return tensors, buffers


def check(opts: Options) -> None:
    if opts.dtype not in DTYPES:
        raise ConfigError("--dtype", f"must be one of {', '.join(DTYPES)} (got {shown(opts.dtype)})")
    if not 1 <= opts.budget <= 2**20:
        raise ConfigError("--budget", f"must be an integer in 1..{2**20} (got {shown(opts.budget)})")
    scale = opts.softmax_scale
    if not math.isfinite(scale) or scale == 0:
        raise ConfigError("--scale", f"must be a finite, nonzero number (got {shown(opts.scale)})")


def run(
    kernel: Kernel,
    opts: Options,
    *,
    inputs: dict[str, np.ndarray] | None = None,
    meta: dict[str, Any] | None = None,
    renames: dict[str, str] | None = None,
    grid: tuple[int, int, int] | None = None,
    carry: dict[str, str] | None = None,
) -> Run:
    check(opts)
    carries.check_names(carry, kernel.source, kernel.name)
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except ImportError as e:
        raise ConfigError("--kernel", f"needs torch and Triton: pip install 'flashviz[triton]' ({e})") from None
    from flashviz.runtime.interpreter import fix_interpreter

    fix_interpreter()  # the interpreter's gaps that flashviz's own kernels fill, filled for the user's too
    _import_gluon()
    tensors, buffers = _tensors(opts, inputs)
    given = {k: binding.meta_value(k, v) for k, v in (meta or {}).items()}
    params = binding.params(kernel.python)
    names = {p.name for p in params}
    defaults = {k: v for k, v in kernel.defaults.items() if k in names and k not in given}
    launch = binding.Launch(opts.z, opts.h, opts.n, opts.d, opts.softmax_scale, opts.causal)
    bound = binding.bind(params, kernel.name, launch, tensors, {**defaults, **given}, renames or {}, grid)
    mem = memory.Memory({role: tensors[role] for role in bound.roles})
    recorder = record.Recorder(kernel.source, mem, carries.carry_names(carry), opts.budget, heads=opts.z * opts.h)
    fault = record.launch(recorder, kernel.fn, bound.args, bound.grid)
    if fault is None:
        fault = _wrote_nothing(recorder.programs)
    heads = _heads(tensors, opts)
    zh = opts.z * opts.h
    out = tensors["O"].float().numpy().astype(np.float64).reshape(zh, opts.n, opts.d)
    lse = tensors["L"].numpy().astype(np.float64).reshape(zh, opts.n) if "L" in bound.roles else None
    del buffers  # the guard zones lived as long as the launch
    return Run(kernel, opts, bound, recorder.programs, fault, mem, heads, out, lse, carry)


def _import_gluon() -> None:
    """Triton imports Gluon on a kernel's first launch and Gluon's import asserts that Triton's standard library was
    decorated the way the interpreter setting now says; import it first, the way it was decorated, so that a launch
    under the interpreter does not meet that assertion (nor leave Gluon decorated for the interpreter)."""
    import os

    try:
        import triton.experimental.gluon
    except AssertionError:  # Triton was imported under TRITON_INTERPRET=1 (its standard library is interpreted)
        before = os.environ.get("TRITON_INTERPRET")
        os.environ["TRITON_INTERPRET"] = "1"
        try:
            import triton.experimental.gluon  # noqa: F401
        finally:
            if before is None:
                os.environ.pop("TRITON_INTERPRET", None)
            else:
                os.environ["TRITON_INTERPRET"] = before


def _heads(tensors: dict[str, Any], opts: Options) -> list[truth.Head]:
    arrays = {k: tensors[k].float().numpy().astype(np.float64).reshape(-1, opts.n, opts.d) for k in ("Q", "K", "V")}
    return [
        truth.Head(arrays["Q"][i], arrays["K"][i], arrays["V"][i], opts.softmax_scale) for i in range(opts.z * opts.h)
    ]


def _wrote_nothing(programs: list[record.Program]) -> record.Fault | None:
    stored = any(
        isinstance(e, record.Access) and e.kind == "store" and e.tensor == "O" and e.elements.size
        for p in programs
        for e in p.events
    )
    if stored or not programs:
        return None
    last = programs[-1]
    line = last.lines[-1][0] if last.lines else None
    return record.Fault("wrote_nothing", last.pid, None, line, "stored nothing to O")
