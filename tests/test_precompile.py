"""flashviz.runtime.precompile: a job serialized as Triton's JIT serializes a specialization compiles in a worker
process into Triton's disk cache, and the JIT's own compile of the same specialization is then a hit (no new cache
entry).
The checks run in a child process with TRITON_INTERPRET=0 (the kernels as JIT functions: other test modules set the
interpreter for this one). The capture side (the jit_cache_hook during the autotuner's warm-up) needs a GPU and is
exercised by bench/tuning_bench.py and the GPU test in tests/test_attention_compile.py."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

from flashviz.runtime import precompile

CHILD = r"""
import inspect, json, os, sys
from pathlib import Path
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, make_backend
from triton.runtime.jit import serialize_specialization_data
from flashviz.algos.fa2_triton import kernel as km
from flashviz.runtime import precompile

TARGET = GPUTarget("cuda", 90, 32)
cache = Path(os.environ["TRITON_CACHE_DIR"])

def job(block):
    # fa2_fwd_combine as the launcher specializes it (pointers, row stride and Dv divisible by 16)
    fn = km.fa2_fwd_combine
    constants = {(10,): 4, (11,): 128, (12,): block}
    signature = {"Opart": "*fp32", "Lpart": "*fp32", "O": "*bf16", "L": "*fp32", "soh": "i32", "son": "i32",
                 "Hkv": "i32", "Nq": "i32", "Dv": "i32", "S": "i32", "GROUP": "constexpr", "D": "constexpr",
                 "BLOCK": "constexpr"}
    attrs = {(i,): [["tt.divisibility", 16]] for i in (0, 1, 2, 3, 4, 5, 8)}
    options = make_backend(TARGET).parse_options({"num_warps": 4})
    args = ["fa2_fwd_combine", signature, constants, attrs, options, "key"]
    if "target" in inspect.signature(serialize_specialization_data).parameters:  # Triton 3.9
        args.append(TARGET)
    spec = serialize_specialization_data(*args)
    return ({"module": fn.fn.__module__, "name": fn.fn.__qualname__, "target": vars(TARGET), "spec": spec},
            ASTSource(fn, signature, constants, attrs), options.__dict__)

entries = lambda: sorted(p.name for p in cache.iterdir()) if cache.exists() else []
jobs = [job(block) for block in (16, 32)]
out = {"same_source": [], "same_options": []}
for j, src, options in jobs:
    got, got_options = precompile.source_of(j)
    out["same_source"].append(got.hash() == src.hash())
    out["same_options"].append(make_backend(TARGET).parse_options(got_options).__dict__ == options)
out["before"] = entries()
out["workers_ok"] = precompile.compile_all([j for j, _, _ in jobs])
out["filled"] = entries()
out["ptx"] = ["ld.global" in triton.compile(src, target=TARGET, options=o).asm["ptx"] for _, src, o in jobs]
out["after"] = entries()
out["job"] = jobs[0][0]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def child(tmp_path_factory) -> dict:
    cache = tmp_path_factory.mktemp("triton-cache")
    env = {**os.environ, "TRITON_INTERPRET": "0", "TRITON_CACHE_DIR": str(cache), "FLASHVIZ_COMPILE_WORKERS": "2"}
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_job_is_the_source_and_options_the_jit_would_compile(child):
    assert child["same_source"] == [True, True]
    assert child["same_options"] == [True, True]


def test_workers_fill_the_cache_that_the_jit_then_hits(child):
    assert child["before"] == []
    assert child["workers_ok"] == 2
    assert len(child["filled"]) >= 2
    assert child["ptx"] == [True, True]
    assert child["after"] == child["filled"]  # every compile in the child was a hit


def test_a_failing_job_fails_only_its_worker(child, monkeypatch, tmp_path: Path):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    broken = {**child["job"], "name": "no_such_kernel"}
    script = "import sys\nfrom flashviz.runtime import precompile\nsys.exit(precompile.main())"
    run = lambda jobs: subprocess.run([sys.executable, "-c", script], input=json.dumps(jobs), text=True)  # noqa: E731
    assert run([child["job"], broken]).returncode == 1
    assert run([child["job"]]).returncode == 0


@pytest.mark.parametrize(("asked", "jobs", "expected"), [("0", 9, 0), ("3", 9, 3), ("3", 2, 2)])
def test_the_number_of_workers(monkeypatch, asked, jobs, expected):
    monkeypatch.setenv("FLASHVIZ_COMPILE_WORKERS", asked)
    assert precompile.workers(jobs) == expected


def test_workers_default_to_the_cpus(monkeypatch):
    monkeypatch.delenv("FLASHVIZ_COMPILE_WORKERS", raising=False)
    assert precompile.workers(100) == min(os.cpu_count() or 1, precompile.MAX_WORKERS)
    assert precompile.main(io.StringIO("[]")) == 0


GPU_CHILD = r"""
import json, torch, flashviz
from triton import knobs
from flashviz.runtime import precompile
compiles, jobs = [], []
def listen(src, cache_hit, **_):
    fn = getattr(src.fn, "fn", src.fn)
    compiles.append([getattr(fn, "__name__", str(fn)), cache_hit])
knobs.compilation.listener = listen
compile_all = precompile.compile_all
precompile.compile_all = lambda batch: (jobs.append(len(batch)), compile_all(batch))[1]
q, k, v = (torch.randn(2, 8, 1024, 64, dtype=torch.bfloat16, device="cuda", requires_grad=True) for _ in "qkv")
o = flashviz.attention(q, k, v, causal=True, backend="fa2")
o.backward(torch.randn_like(o))
print(json.dumps({"jobs": jobs, "compiles": compiles}))
"""
TUNED = ("fa2_fwd", "fa2_bwd_dkdv", "fa2_bwd_dq", "fa2_bwd_fused")


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_the_autotuner_compiles_nothing_the_workers_did(tmp_path):
    """A first call (forward and backward) in a process whose Triton cache is empty: the workers compile every
    candidate of the tuned kernels, and each compile of those kernels in the process itself is a cache hit."""
    env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path), "FLASHVIZ_CACHE_DIR": str(tmp_path / "tuning")}
    env.pop("FLASHVIZ_COMPILE_WORKERS", None)
    done = subprocess.run([sys.executable, "-c", GPU_CHILD], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    tuned = [hit for name, hit in got["compiles"] if name in TUNED]
    assert sum(got["jobs"]) >= 10, got
    assert len(tuned) >= 10 and all(tuned), got


def test_a_worker_that_hangs_is_stopped():
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert precompile._finished(sleeper, limit_s=0.5) is False
    assert sleeper.returncode is not None


@pytest.mark.parametrize(("asked", "expected"), [("0", False), ("1", False), ("2", True)])
def test_one_worker_is_no_parallel_compile(monkeypatch, asked, expected):
    monkeypatch.setenv("FLASHVIZ_COMPILE_WORKERS", asked)
    assert precompile.enabled() is expected
    spawned = []
    monkeypatch.setattr(precompile.subprocess, "Popen", lambda *a, **k: spawned.append(a))
    if not expected:
        assert precompile.compile_all([{"spec": "a"}, {"spec": "b"}]) == 0 and spawned == []


def test_only_the_capturing_threads_compiles_are_taken(monkeypatch):
    """While the launcher gathers candidates, Triton's hook skips the compiles of its own thread only: a kernel
    another thread launches meanwhile compiles (and runs) as it would have."""
    import threading
    from types import SimpleNamespace

    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.runtime import driver

    def launch_hook(name: str):
        fn = SimpleNamespace(__module__="m", __qualname__=name)
        info = SimpleNamespace(jit_function=SimpleNamespace(fn=fn))
        return knobs.runtime.jit_cache_hook(fn=info, compile={"specialization_data": name})

    elsewhere: list = []

    class Tuner:
        def warmup(self, *args, grid, **kwargs):
            assert launch_hook("ours") is True  # skipped here: a worker compiles it
            other = threading.Thread(target=lambda: elsewhere.append(launch_hook("theirs")))
            other.start()
            other.join()

    monkeypatch.setattr(driver, "_active", SimpleNamespace(get_current_target=lambda: GPUTarget("cuda", 90, 32)))
    jobs = precompile.specializations(Tuner(), None, (), {})
    assert [job["spec"] for job in jobs] == ["ours"]
    assert elsewhere == [None]  # the other thread's compile goes ahead
    assert knobs.runtime.jit_cache_hook is None  # restored
