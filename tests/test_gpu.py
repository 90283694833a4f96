"""On a CUDA GPU: the kernel file compiled by NVRTC agrees with the engine and float64, ragged N and
many heads included; its counters agree with the traffic model; compute-sanitizer finds nothing.

Skipped without CuPy or without a CUDA device. Run on the H200: `pytest -m gpu tests/test_gpu.py`.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from flashviz.model.config import Config, ConfigError

cupy = pytest.importorskip("cupy")
try:
    HAVE_GPU = cupy.cuda.runtime.getDeviceCount() > 0
except Exception:
    HAVE_GPU = False

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason="no CUDA device")]

from flashviz.gpu import check, launch  # noqa: E402
from flashviz.gpu import run as gpu_run  # noqa: E402

NS = (8, 10, 100, 1000, 4096)
DS = (4, 16, 64)
TILES = (4, 16, 32, 64)


def assert_agrees(report: dict) -> None:
    for head in report["check"]["heads"]:
        for name, e in head["engine"].items():
            assert e["nan"] == 0, (head["head"], name, "unwritten or NaN elements")
            assert e["max_rel"] <= (1e-4 if name.startswith("d") else 1e-5), (head["head"], name, e)
        assert head["float64"]["ok"], (head["head"], head["float64"])
    assert report["ok"]


@pytest.mark.parametrize(
    ("n", "d", "br", "bc", "heads", "batch"),
    [
        (8, 4, 4, 4, 1, 1),  # the seed's example
        (10, 4, 4, 4, 2, 1),  # ragged: the last block of Q and the last tile of K/V are short
        (100, 16, 32, 16, 3, 2),  # ragged, Br != Bc, 6 heads
        (1000, 64, 64, 64, 2, 1),  # 82 KB of shared memory: above the 48 KB default, opted in
        (4096, 64, 32, 32, 1, 1),
        (1, 4, 4, 4, 1, 1),  # one row
        (33, 3, 16, 8, 1, 3),  # odd D: rows start off 32-byte boundaries
    ],
)
def test_gpu_agrees_with_engine(n, d, br, bc, heads, batch):
    report = gpu_run.run(Config(n=n, d=d, br=br, bc=bc, seed=n), heads=heads, batch=batch)
    assert report["launch"]["grid"] == [-(-n // br), heads * batch, 1]
    assert report["launch"]["local_bytes"] == 0  # no spills
    assert_agrees(report)


@pytest.mark.parametrize("case", range(12))
def test_gpu_agrees_on_random_configs(case, rng):
    while True:  # keep the engine's side (Tr*Tc Python-level tile steps) to a few seconds
        n, d, br, bc = int(rng.choice(NS)), int(rng.choice(DS)), int(rng.choice(TILES)), int(rng.choice(TILES))
        if -(-n // br) * -(-n // bc) <= 8192:
            break
    heads, batch = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    causal = bool(rng.integers(0, 2))
    seed = int(rng.integers(0, 2**32))
    cfg = Config(n=n, d=d, br=br, bc=bc, seed=seed, causal=causal)
    print(cfg, heads, batch)
    assert_agrees(gpu_run.run(cfg, heads=heads, batch=batch))


@pytest.mark.parametrize("algo", ["standard", "fa1", "fa2-backward"])
@pytest.mark.parametrize(
    ("n", "d", "br", "bc", "heads", "causal"),
    [
        (8, 4, 4, 4, 1, False),  # the seed's example
        (10, 4, 4, 4, 2, True),  # ragged, causal
        (100, 16, 32, 16, 3, False),  # ragged, Br != Bc
        (257, 64, 32, 64, 2, True),  # ragged, causal; fa2_bwd takes 98 KB of shared memory
    ],
)
def test_every_other_algorithm_agrees_with_its_engine(algo, n, d, br, bc, heads, causal):
    """Every kernel file that has landed, launch after launch (standard: three; fa2-backward: the forward,
    the preprocessing kernel and the main one), against its own executor and float64."""
    report = gpu_run.run(Config(algo=algo, n=n, d=d, br=br, bc=bc, seed=n, causal=causal), heads=heads)
    assert_agrees(report)


@pytest.mark.parametrize("n", [10, 100, 257])
def test_gpu_causal_ragged(n):
    assert_agrees(gpu_run.run(Config(n=n, d=16, br=16, bc=32, seed=1, causal=True), heads=2))


def test_head_zero_is_the_engine_trace():
    """Head 0 of a multi-head run is exactly what `flashviz trace` shows for the same seed."""
    from flashviz.tracing.build import make_trace

    cfg = Config(n=10, d=4, br=4, bc=4, seed=7)
    inputs = check.head_inputs(cfg, 3)
    outputs, _ = launch.launch(cfg, inputs)
    trace = make_trace(cfg)
    np.testing.assert_allclose(outputs["O"][0], trace.outputs["O"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(outputs["L"][0], trace.outputs["L"], rtol=0, atol=1e-6)


def test_torch_tensors_in_and_out_through_dlpack():
    torch = pytest.importorskip("torch")
    cfg = Config(n=100, d=16, br=16, bc=16, seed=3)
    inputs = check.head_inputs(cfg, 4)
    want, _ = launch.launch(cfg, {k: v.reshape(2, 2, 100, 16) for k, v in inputs.items()})
    tensors = {k: torch.from_numpy(v).cuda().reshape(2, 2, 100, 16) for k, v in inputs.items()}
    got, _ = launch.launch(cfg, tensors)
    assert isinstance(got["O"], torch.Tensor) and got["O"].is_cuda
    assert tuple(got["O"].shape) == (2, 2, 100, 16) and tuple(got["L"].shape) == (2, 2, 100)
    np.testing.assert_array_equal(got["O"].cpu().numpy(), want["O"])
    np.testing.assert_array_equal(got["L"].cpu().numpy(), want["L"])


def test_same_inputs_same_bits():
    """No race: the same launch twice gives identical bits."""
    cfg = Config(n=1000, d=64, br=32, bc=64, seed=11)
    inputs = check.head_inputs(cfg, 2)
    a, _ = launch.launch(cfg, inputs)
    b, _ = launch.launch(cfg, inputs)
    np.testing.assert_array_equal(a["O"], b["O"])
    np.testing.assert_array_equal(a["L"], b["L"])


def test_launch_limits_are_config_errors():
    with pytest.raises(ConfigError, match="shared memory"):
        launch.prepare(Config(n=256, d=256, br=256, bc=256))
    with pytest.raises(ConfigError, match="threads"):
        launch.prepare(Config(n=64, d=4, br=64, bc=4), threads=32)


@pytest.mark.skipif(shutil.which("ncu") is None, reason="Nsight Compute (ncu) is not installed")
@pytest.mark.parametrize(("n", "d", "br", "bc", "heads"), [(1024, 64, 32, 32, 2), (100, 16, 32, 16, 3)])
def test_profile_global_bytes_match_the_model(n, d, br, bc, heads):
    from flashviz.gpu.profile import profile

    doc = profile(Config(n=n, d=d, br=br, bc=bc), heads=heads)
    assert len(doc["kernels"]) == 1 and doc["kernels"][0]["counted"]
    assert doc["comparison"]["load"]["verdict"] in ("exact", "sector-rounded")
    assert doc["comparison"]["store"]["verdict"] in ("exact", "sector-rounded")
    assert doc["measured"]["dram_read_bytes"] < doc["measured"]["load_bytes"]


@pytest.mark.skipif(shutil.which("ncu") is None, reason="Nsight Compute (ncu) is not installed")
@pytest.mark.parametrize("algo", ["standard", "fa1", "fa2-backward"])
def test_profile_of_every_other_algorithm_matches_its_model(algo):
    """Sector-aligned sizes, so the plain model must hold exactly; fa2-backward's dQ atomics count as
    one read and one write each, as its model counts them."""
    from flashviz.gpu.profile import profile

    doc = profile(Config(algo=algo, n=256, d=64, br=32, bc=32), heads=2)
    assert doc["comparison"]["load"]["verdict"] == "exact", doc["summary"]
    assert doc["comparison"]["store"]["verdict"] == "exact", doc["summary"]


@pytest.mark.skipif(shutil.which("compute-sanitizer") is None, reason="compute-sanitizer is not installed")
def test_sanitizers_are_clean_on_ragged_n():
    from flashviz.gpu.sanitize import sanitize

    doc = sanitize(Config(n=10, d=4, br=4, bc=4), heads=2)
    assert [r["tool"] for r in doc["runs"]] == ["memcheck", "racecheck", "synccheck", "initcheck"]
    for r in doc["runs"]:
        assert r["errors"] == 0 and r["ok"], r["output"][-2000:]
