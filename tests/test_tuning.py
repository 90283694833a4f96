"""Tuning that fits a training loop (flashviz.runtime.tuning): the autotuner's choices kept per bucket of lengths (the
next power of two) and on disk per GPU, Triton release and kernel source, so that a new length in a bucket already seen,
or a new process, launches without tuning; `flashviz tune` to fill them before a job. The launcher's own code runs
here with a stand-in for Triton's autotuner and kernels (the CPU has no GPU to tune on; the times are the GPU
benchmark's, bench/results/)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from flashviz.runtime.tuning import VERSION, TuningCache, bucket, cache_dir, identity

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
from flashviz.algos.fa2_triton import launcher as ta  # noqa: E402


@pytest.mark.parametrize(("n", "b"), [(1, 16), (16, 16), (17, 32), (1000, 1024), (1024, 1024), (1025, 2048),
                                      (4001, 4096), (4096, 4096), (5000, 8192)])  # fmt: skip
def test_a_length_goes_to_the_next_power_of_two(n, b):
    assert bucket(n) == b


def test_the_cache_keeps_choices_across_processes(tmp_path):
    path = tmp_path / "c.json"
    ident = identity("NVIDIA H100 80GB HBM3", "3.6.0", ["kernel source"])
    cache = TuningCache(path, ident)
    key = ("config", "fwd", 128, 4096, 4096, 128, True, torch.bfloat16, 1, False, False, False, False)
    assert cache.get(key) is None
    cache.put(key, {"Br": 128, "Bc": 64, "num_warps": 8, "num_stages": 3})
    again = TuningCache(path, ident)  # another process on the same machine
    assert again.get(key) == {"Br": 128, "Bc": 64, "num_warps": 8, "num_stages": 3}
    doc = json.loads(path.read_text())
    assert doc["version"] == VERSION and doc["identity"] == ident
    # another GPU, another Triton, edited kernels: nothing of it holds
    others = [("NVIDIA H200", "3.6.0", "kernel source"), ("NVIDIA H100 80GB HBM3", "3.9.0", "kernel source"),
              ("NVIDIA H100 80GB HBM3", "3.6.0", "kernel source, edited")]  # fmt: skip
    for gpu, triton_version, source in others:
        assert TuningCache(path, identity(gpu, triton_version, [source])).get(key) is None


@pytest.mark.parametrize("content", ["", "{", "[]", '{"version": 0, "identity": "x", "entries": {}}', "\x00\xff"])
def test_a_cache_file_that_cannot_be_read_starts_afresh(tmp_path, content):
    path = tmp_path / "c.json"
    path.write_bytes(content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content)
    cache = TuningCache(path, "x")
    assert cache.entries == {}
    cache.put(("variant", 1), "fused")
    assert TuningCache(path, "x").get(("variant", 1)) == "fused"


def test_an_unwritable_cache_folder_keeps_the_choices_in_memory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = TuningCache(blocker / "sub" / "c.json", "x")
    cache.put(("k",), 1)
    assert cache.get(("k",)) == 1 and cache.path is None


def test_where_the_cache_lives(monkeypatch, tmp_path):
    monkeypatch.setenv("FLASHVIZ_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("FLASHVIZ_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "flashviz"
    monkeypatch.setenv("FLASHVIZ_TUNING_CACHE", "0")
    assert TuningCache.for_gpu("g", "3.6.0", ["s"]).path is None


class Tuner:
    """Triton's autotuner as the launcher uses it: tuner[grid](*args, **kwargs) times the candidates (counted here)
    and keeps the best in best_config."""

    def __init__(self, best):
        self.runs = 0
        self.best_config = type("Config", (), {"all_kwargs": lambda _: dict(best)})()

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            self.runs += 1

        return run


class Kernel:
    def __init__(self):
        self.launches = []

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.launches.append(kwargs)


def gpu_launcher(cache: TuningCache, tuner: Tuner) -> ta.Launcher:
    """The launcher's GPU path (its _launch and its choice of backward) with stand-ins for Triton's tuner."""
    run = ta.Launcher.__new__(ta.Launcher)
    run.interpret, run.tuned, run.best, run.compiled = False, {("fwd", 128): tuner}, {}, {}
    run.bwd_variant, run.variant_ms, run.cache = {}, {}, cache
    run.capture, run.precompiled = None, set()
    return run


def key(nq, nk=None):
    return (nq, nk or nq, 128, True, torch.bfloat16, 1, False, False, False, False)


def test_a_new_length_in_a_bucket_seen_launches_without_tuning(tmp_path):
    best = {"Br": 128, "Bc": 64, "num_warps": 8, "num_stages": 2}
    tuner, kernel = Tuner(best), Kernel()
    run = gpu_launcher(TuningCache(tmp_path / "c.json", "id"), tuner)
    q = torch.empty(1)
    run._launch("fwd", kernel, 128, None, key(4096), None, q)  # tunes
    for n in (4000, 4001, 2049, 3333):  # the training loop's next steps: no tuning, the bucket's choice
        run._launch("fwd", kernel, 128, None, key(n), None, q)
    assert tuner.runs == 1 and kernel.launches == [best] * 4
    run._launch("fwd", kernel, 128, None, key(5000), None, q)  # another bucket: tuned once
    run._launch("fwd", kernel, 128, None, key(4096, 5000), None, q)  # keys in another bucket: so is this
    assert tuner.runs == 3
    # a new process: tuned from the file, not again
    fresh_tuner = Tuner(best)
    fresh = gpu_launcher(TuningCache(tmp_path / "c.json", "id"), fresh_tuner)
    fresh._launch("fwd", kernel, 128, None, key(3000), None, q)
    assert fresh_tuner.runs == 0 and kernel.launches[-1] == best


def test_the_backward_variant_is_kept_per_bucket(tmp_path):
    cache = TuningCache(tmp_path / "c.json", "id")
    run = gpu_launcher(cache, Tuner({}))
    q, k = (torch.empty(2, h, 4000, 1, dtype=torch.bfloat16) for h in (16, 4))
    cache.put(("variant", 2, 16, 4096, 1, 2, 4, 4096, 1, True, torch.bfloat16, False, False, False, False), "fused")
    assert run._choose_variant(q, k, None, None, None, None, True, 0.1, ta.PLAIN) == "fused"  # no timing run
    # packed sequences: their total is the length
    qp, kp = (torch.empty(7000, h, 1, dtype=torch.bfloat16) for h in (16, 4))
    cache.put(("variant", 8192, 16, 1, 8192, 4, 1, True, torch.bfloat16, False, False, False, True), "atomic")
    cu = torch.zeros(3, dtype=torch.int32)
    packed = ta.Options(cu_q=cu, cu_k=cu, max_q=4000, max_k=4000)
    assert run._choose_variant(qp, kp, None, None, None, None, True, 0.1, packed) == "atomic"


def flashviz_cli(*args):
    return subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})  # fmt: skip


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--lengths", "512,4096"], "flashviz tune needs a CUDA GPU"),
        (["--lengths", "0"], "--lengths: must be comma-separated integers in 1..1048576"),
        (["--lengths", "1,x"], "--lengths: must be comma-separated integers"),
        (["--lengths", "64", "--window", "3"], "--window: must be two integers LEFT,RIGHT"),
        (["--lengths", "64", "--d", "48"], "must be one of 32, 64, 96, 128, 256"),
    ],
)
def test_tune_without_a_gpu_or_with_bad_flags_says_so_in_one_line(args, says):
    run = flashviz_cli("tune", *args)
    assert run.returncode == 2 and run.stdout == ""
    assert len(run.stderr.strip().splitlines()) == 1 and says in run.stderr, run.stderr
