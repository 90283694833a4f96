"""CUDA-event timing shared by the CuPy benchmarks (bench/gpu_bench.py, bench/parallelism_bench.py): warm-up, then
repeats timed by events until a minimum count and a time budget are reached (the device's METHOD.md)."""

from __future__ import annotations


def timed(cp, fn, warmup: int, min_reps: int = 5, max_reps: int = 50, budget_s: float = 1.5) -> list[float]:
    """Milliseconds of each repeat of fn() by CUDA events, after warm-up; repeats sized to ~budget_s."""
    start, end = cp.cuda.Event(), cp.cuda.Event()
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    times: list[float] = []
    while len(times) < min_reps or (len(times) < max_reps and sum(times) < budget_s * 1e3):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return times
