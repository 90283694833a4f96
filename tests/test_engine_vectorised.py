"""The engine's vectorised blocks (engine.recorder.Grid.fast, issue 17 item 20): a block a trace does not record runs
as whole-block NumPy, and must give the trace the step-by-step run gives, value for value (outputs bit for bit, the
float64 check's errors) and counter for counter (HBM per element and per phase, FLOPs per phase, every write, the
blocks' phases and idle ranges). Fresh random inputs at launches with ragged N, Br != Bc both ways, causal or not, a
negative scale, block 0 and another recorded."""

from __future__ import annotations

import numpy as np
import pytest

import flashviz
from flashviz.engine import recorder

# the algorithms whose engine runs unrecorded blocks vectorised, and the launches each is held at (more than
# RECORD_ALL_MAX_BLOCKS blocks of Q, so that some are not recorded)
FAST = ("fa2", "fa2-triton", "fa3", "fa2-splitkv", "standard", "fa2-backward", "fa1")
LAUNCHES = [
    {"n": 300, "d": 16, "br": 32, "bc": 16},
    {"n": 333, "d": 8, "br": 16, "bc": 32, "scale": -0.4},
    {"n": 190, "d": 12, "br": 16, "bc": 16, "block": 5},
    {"n": 80, "d": 4, "br": 4, "bc": 8},
]
# fa2-triton runs powers of two, D in its table and (causal) Br a multiple of Bc; a scale <= 0 takes SCALE_FIRST
TRITON = [
    {"n": 300, "d": 32, "br": 32, "bc": 16},
    {"n": 333, "d": 96, "br": 16, "bc": 16, "scale": -0.4},
    {"n": 190, "d": 64, "br": 16, "bc": 16, "block": 5},
    # the options of real models (issue 22): a window (tiles skipped both sides, the left edge's stage), Nq > Nk
    # (rows that see no key under causal: O = 0, L = -inf), a group of q heads, packed sequences, soft-capping
    {"n": 200, "d": 32, "br": 16, "bc": 16, "window": (40, 8)},
    {"n": 160, "d": 32, "br": 16, "bc": 16, "nk": 72, "softcap": 5.0},
    {"n": 96, "d": 32, "br": 16, "bc": 16, "group": 3, "seqlens": (20, 44, 32), "seqlens_k": (40, 9, 70), "block": 4},
]
# fa3 runs Br = Bc = 128, D of 64 or 128, a positive scale
FA3 = [
    {"n": 1200, "d": 64, "br": 128, "bc": 128},
    {"n": 1100, "d": 128, "br": 128, "bc": 128, "block": 3, "scale": 0.07},
]
OWN = {"fa2-triton": TRITON, "fa3": FA3}
NO_CAUSAL = ("fa2-splitkv",)
CASES = [
    (algo, kw, causal)
    for algo in FAST
    for kw in OWN.get(algo, LAUNCHES)
    for causal in ((False,) if algo in NO_CAUSAL else (False, True))
]


def both(monkeypatch, **kw):
    """The trace made with vectorised blocks, and made step by step; the number of blocks run vectorised."""
    runs = []
    real = recorder.run_launch

    def counting(rec, *args, **kwargs):
        out = real(rec, *args, **kwargs)
        runs.append(out.vectorised)
        return out

    monkeypatch.setattr(recorder, "run_launch", counting)
    for name in FAST:
        monkeypatch.setattr(f"flashviz.algos.{name.replace('-', '_')}.engine.run_launch", counting)
    fast = flashviz.trace(**kw)
    vectorised = runs[-1]  # the launch itself (the backward runs the forward first)
    monkeypatch.setattr(recorder, "VECTORISED", False)
    slow = flashviz.trace(**kw)
    return fast, slow, vectorised


@pytest.mark.parametrize(
    ("algo", "launch", "causal"),
    CASES,
    ids=[f"{a}-{'causal-' if c else ''}" + "_".join(f"{k}{v}" for k, v in kw.items()) for a, kw, c in CASES],
)
def test_vectorised_blocks_give_the_same_trace(monkeypatch, algo, causal, launch):
    seed = int(np.random.default_rng().integers(0, 2**31))  # fresh inputs every run (the seed says which)
    fast, slow, vectorised = both(monkeypatch, algo=algo, causal=causal, seed=seed, **launch)
    assert vectorised > 0, "no block ran vectorised"
    for name in fast.outputs:
        a, b = fast.outputs[name], slow.outputs[name]
        assert a.tobytes() == b.tobytes(), f"seed {seed}: {name} differs"
    assert fast.to_json() == slow.to_json(), f"seed {seed}: the traces differ"


def test_products_on_one_blas_thread_are_the_products_on_several():
    """engine.blas.one_thread changes how long the engine's products take, never their numbers: the tile products on
    one thread equal those on the default threads, bit for bit (the float64 reference keeps the BLAS's threads: some of
    the backward's large products differ in their last bits on one thread)."""
    from flashviz.engine.blas import one_thread, setter

    if setter() is None:
        pytest.skip("this BLAS has no per-thread thread count (not OpenBLAS 0.3.27+): one_thread changes nothing")
    rng = np.random.default_rng()
    Qi = rng.standard_normal((64, 128), dtype=np.float32)
    Kt = rng.standard_normal((64, 64, 128), dtype=np.float32)
    P = rng.standard_normal((64, 64, 64), dtype=np.float32)

    def products():
        return [np.matmul(Qi, Kt.swapaxes(1, 2)), np.matmul(P, Kt), Qi @ Kt[0].T, P[0] @ Kt[1]]

    several = products()
    with one_thread():
        one = products()
    for a, b in zip(one, several, strict=True):
        assert a.tobytes() == b.tobytes()


def test_bf16_rounding_in_32_bits_is_the_64_bit_rounding():
    """precision.bf16 rounds in uint32 now (the 64-bit version took 0.8 s of fa2-triton's trace at N=4096): for every
    bit pattern it gives what the 64-bit arithmetic gave (checked once over all 2^32 patterns; here fresh random ones
    and the edges: ties, the largest finite values rounding to infinity, infinities, NaNs, zeros, subnormals)."""
    from flashviz.model.precision import bf16

    def in_64_bits(x):
        a = np.ascontiguousarray(x, dtype=np.float32)
        bits = a.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32)
        return np.where(np.isnan(a), np.float32(np.nan), rounded.view(np.float32).reshape(a.shape))

    rng = np.random.default_rng()
    edges = [0, 0x8000, 0x18000, 0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7FFFFFFF, 0x80000000]
    edges += [0xFF7F8000, 0xFF7FFFFF, 0xFF800000, 0xFF800001, 0xFFFF8000, 0xFFFFFFFF, 0x00000001, 0x807FFFFF]
    drawn = rng.integers(0, 2**32, 2**20, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([drawn, np.array(edges, np.uint32)]).view(np.float32).reshape(-1, 2)
    with np.errstate(all="ignore"):
        assert bf16(x).tobytes() == in_64_bits(x).tobytes()
