"""The autotuner's candidates compiled in parallel, before it times them.

A first call at a new head dimension, dtype or set of options compiles every candidate tile set of every kernel it
tunes (the forward's, and the three backward variants': about 20 kernels at D = 128), one after another in Triton's
autotuner, at about a second each. Here the launcher asks Triton for each candidate's specialization (the
`jit_cache_hook` sees it and skips the compile), hands them to a few worker processes that compile them into
Triton's cache on disk, and then lets the autotuner run: each of its compiles is a hit.

The workers are plain subprocesses (`python -m flashviz.runtime.precompile`, the jobs as JSON on stdin): they import
neither the user's `__main__` nor torch's CUDA state, and a worker that fails costs nothing but its speed-up (the
autotuner compiles whatever is missing). FLASHVIZ_COMPILE_WORKERS sets how many (0: compile in the autotuner, as
Triton does by default; unset: one per CPU, at most 16).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterable

MAX_WORKERS = 16
WORKER_LIMIT_S = 600.0  # a worker's share of compiles takes seconds; one that hangs is stopped after this


def workers(jobs: int) -> int:
    """How many processes compile `jobs` candidates (FLASHVIZ_COMPILE_WORKERS, else the CPUs, at most 16)."""
    asked = os.environ.get("FLASHVIZ_COMPILE_WORKERS", "").strip()
    limit = int(asked) if asked.isdigit() else min(os.cpu_count() or 1, MAX_WORKERS)
    return max(0, min(limit, jobs))


def enabled() -> bool:
    """Whether candidates are compiled in parallel: two workers at least (one would only add a process)."""
    return workers(2) >= 2


def specializations(tuner, grid, args: tuple, kwargs: dict) -> list[dict]:
    """One job per candidate of `tuner` (a triton.autotune'd kernel) at this launch: the kernel's module and name,
    Triton's serialized specialization and the GPU target. Nothing is compiled or launched."""
    from triton import knobs
    from triton.runtime import driver

    jobs: list[dict] = []
    target = driver.active.get_current_target()
    before = knobs.runtime.jit_cache_hook
    owner = threading.get_ident()

    def record(**hooked) -> bool | None:
        if threading.get_ident() != owner:  # another thread's launch compiles as it would have
            return before(**hooked) if before else None
        fn = hooked["fn"].jit_function.fn
        jobs.append({"module": fn.__module__, "name": fn.__qualname__, "target": vars(target),
                     "spec": hooked["compile"]["specialization_data"]})  # fmt: skip
        return True  # skip this compile: a worker does it

    knobs.runtime.jit_cache_hook = record
    try:
        tuner.warmup(*args, grid=grid, **kwargs)
    finally:
        knobs.runtime.jit_cache_hook = before
    return jobs


def compile_all(jobs: list[dict]) -> int:
    """Compile `jobs` into Triton's disk cache in worker processes; the number of processes that succeeded."""
    n = workers(len(jobs))
    if n < 2:
        return 0
    shares = [jobs[i::n] for i in range(n)]
    quiet = subprocess.DEVNULL
    env = {**os.environ, "TRITON_INTERPRET": "0"}  # the kernels as JIT functions, whatever this process runs
    worker = [sys.executable, "-m", __name__]  # this module's main()
    procs = [
        subprocess.Popen(worker, stdin=subprocess.PIPE, stdout=quiet, stderr=quiet, text=True, env=env) for _ in shares
    ]
    for proc, share in zip(procs, shares, strict=True):
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(share))
        proc.stdin.close()
    return sum(_finished(proc) for proc in procs)


def _finished(proc: subprocess.Popen, limit_s: float = WORKER_LIMIT_S) -> bool:
    """Whether a worker compiled its share; one still running after `limit_s` is stopped (the autotuner compiles
    what it left)."""
    try:
        return proc.wait(timeout=limit_s) == 0
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return False


def _listed(value):
    return tuple(_listed(v) for v in value) if isinstance(value, list) else value


def source_of(job: dict):
    """The ASTSource and options that Triton's JIT would compile for this job (its `preload`, without a GPU)."""
    import triton.language as tl

    fn = getattr(importlib.import_module(job["module"]), job["name"])
    data = json.loads(job["spec"])

    def constant(value):
        if isinstance(value, str) and tl.dtype.is_dtype(value):
            return tl.dtype(value)
        if isinstance(value, dict) and "constexpr" in value:
            return tl.constexpr(_listed(value["constexpr"]))
        return _listed(value)

    constants = {tuple(k): constant(v) for k, v in zip(data["constant_keys"], data["constant_vals"], strict=True)}
    attrs = {tuple(k): v for k, v in zip(data["attrs_keys"], data["attrs_vals"], strict=True)}
    signature = {k: _listed(v) for k, v in data["signature"].items()}
    options = {k: _listed(v) for k, v in data["options"].items()}
    return _source_class(fn)(fn, signature, constants, attrs), options


def _source_class(fn):
    """The ASTSource class of fn's kind (a JIT function sets it on its first launch, which needs a GPU)."""
    try:
        from triton.experimental.gluon._runtime import GluonASTSource, GluonJITFunction

        if isinstance(fn, GluonJITFunction):
            return GluonASTSource
    except ImportError:
        pass
    from triton.compiler import ASTSource

    return ASTSource


def compile_job(job: dict):
    import triton
    from triton.backends.compiler import GPUTarget

    src, options = source_of(job)
    return triton.compile(src, target=GPUTarget(**job["target"]), options=options)


def main(stream: Iterable[str] = sys.stdin) -> int:
    failed = 0
    for job in json.loads("".join(stream)):
        try:
            compile_job(job)
        except Exception:  # the autotuner compiles it again and reports what is wrong
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
