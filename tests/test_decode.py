"""Split-KV decode (Flash-Decoding) in the Triton forward: fa2_fwd_split (GQA groups packed into the tile's rows,
chunks of keys in separate programs) and fa2_fwd_combine (the log-sum-exp merge), against float64.

Few queries (Nq = 1, 3, 16) against ragged Nk, GQA groups 1, 4 and 8, with every option (causal bottom-right, a
window, softcap); the S chunks forced and chosen by the heuristic, whose choice is tested as a pure function. Tolerance
as in tests/test_attention_options.py (attention_reference.judge). The `gpu` tests run compiled at decode shapes.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import flashviz  # noqa: E402
import test_attention as base  # noqa: E402  (sets TRITON_INTERPRET=1 without a GPU, before Triton is imported)
from flashviz.algos.fa2_triton import launcher as ta  # noqa: E402
from flashviz.algos.fa2_triton.launch_tiles import Tiles  # noqa: E402
from flashviz.algos.fa2_triton.split_kv import num_splits, split_plan, split_tiles  # noqa: E402
from flashviz.ops.reference import judge  # noqa: E402

DEVICE, GPU = base.DEVICE, base.GPU
kernels, seed = base.kernels, base.seed
BF16, FP16 = torch.bfloat16, torch.float16


def inputs(B, Hq, Hkv, Nq, Nk, D, dtype, device=DEVICE):
    q = torch.randn(B, Hq, Nq, D, dtype=dtype, device=device)
    k, v = (torch.randn(B, Hkv, Nk, D, dtype=dtype, device=device) for _ in range(2))
    return q, k, v


def check_forward(run, q, k, v, causal, window, softcap, splits, tiles=None):
    scale = q.shape[-1] ** -0.5
    opts = ta.Options(window[0], window[1], float(softcap))
    o, lse = run.forward(q, k, v, causal, scale, tiles=tiles, opts=opts, splits=splits)
    verdict = judge({"O": o, "L": lse}, q, k, v, causal, scale, torch.zeros_like(q), window=window, softcap=softcap)
    assert verdict.ok, verdict.failures()


# B, Hq, Hkv, Nq, Nk, D, dtype, causal, window, softcap, S (None: the heuristic)
CASES = [
    (1, 4, 1, 1, 70, 64, BF16, True, (-1, -1), 0.0, None),  # MQA decode, the heuristic's S
    (2, 8, 2, 1, 301, 32, BF16, True, (-1, -1), 0.0, 5),  # groups of 4, ragged Nk
    (1, 8, 1, 3, 97, 32, FP16, True, (-1, -1), 0.0, 3),  # groups of 8, 3 queries: 24 packed rows, 2 blocks
    (1, 2, 2, 16, 150, 32, BF16, True, (-1, -1), 0.0, 4),  # group 1 (no GQA), 16 queries
    (1, 8, 2, 16, 133, 32, BF16, True, (40, -1), 0.0, 4),  # a sliding window: the chunks left of it skipped
    (1, 8, 1, 3, 120, 32, BF16, False, (10, 5), 2.0, 6),  # two-sided band (not causal), softcap
    (1, 4, 1, 1, 200, 128, BF16, True, (-1, -1), 50.0, 7),  # Gemma 2's softcap 50 at D = 128
    (1, 4, 4, 16, 90, 96, BF16, True, (20, -1), 5.0, 3),  # D = 96 (padded columns), window and softcap
    (1, 8, 2, 3, 64, 32, BF16, False, (-1, -1), 0.0, 4),  # Nk a multiple of every tile, not causal
    (1, 8, 8, 16, 10, 32, BF16, True, (-1, -1), 0.0, 2),  # Nq > Nk: the first rows see no key (O = 0, L = -inf)
    (1, 16, 2, 3, 257, 32, FP16, True, (-1, 0), 0.0, 40),  # more chunks asked than tiles: one tile each
    (1, 4, 1, 1, 45, 32, BF16, True, (2, -1), 0.0, 3),  # a window of 3 keys: every chunk but one empty
]


@pytest.mark.parametrize(("B", "Hq", "Hkv", "Nq", "Nk", "D", "dtype", "causal", "window", "softcap", "S"), CASES)
def test_split_forward_matches_float64(kernels, seed, B, Hq, Hkv, Nq, Nk, D, dtype, causal, window, softcap, S):
    q, k, v = inputs(B, Hq, Hkv, Nq, Nk, D, dtype)
    check_forward(kernels, q, k, v, causal, window, softcap, S)


def test_split_forward_with_gpu_sized_tiles(kernels, seed):
    """The GPU's tiles for 16 queries x 4 heads (64 packed rows, 128 keys a tile) on the interpreter."""
    q, k, v = inputs(1, 8, 2, 16, 700, 32, BF16)
    check_forward(kernels, q, k, v, True, (300, -1), 0.0, 3, tiles=split_tiles(64, 32))


def test_public_api_decode_is_split_and_differentiable(kernels, seed):
    """flashviz.attention on a decode shape takes the split forward (its kernels ran) and the unchanged backward."""
    q, k, v = inputs(1, 8, 2, 1, 150, 32, BF16)
    do = torch.randn_like(q)
    kernels.compiled.pop("split", None)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    o, lse = flashviz.attention(q, k, v, causal=True, window=(100, -1), softcap=10.0, return_lse=True)
    if not kernels.interpret:
        assert "split" in kernels.compiled
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), do)
    ours = {"O": o, "L": lse, "dQ": dq, "dK": dk, "dV": dv}
    verdict = judge(ours, q.detach(), k.detach(), v.detach(), True, 32**-0.5, do, window=(100, -1), softcap=10.0)
    assert verdict.ok, verdict.failures()


# ----------------------------------------------------------------------------------------------------------
# The heuristic, as pure functions
# ----------------------------------------------------------------------------------------------------------
def test_a_full_grid_is_not_split():
    assert num_splits(programs=132, kv_tiles=1024) == 1
    assert num_splits(programs=106, kv_tiles=1024) == 1  # >= 80% of the SMs


@pytest.mark.parametrize("programs", [1, 2, 8, 16, 32, 64, 100])
def test_a_small_grid_is_split_to_near_full_waves(programs):
    s = num_splits(programs=programs, kv_tiles=1024)
    waves = programs * s / 132
    assert s > 1
    assert waves / math.ceil(waves) >= 0.84  # within 85% of the best wave efficiency (itself at most 1)


@pytest.mark.parametrize(
    ("programs", "kv_tiles", "expected"),
    [
        (32, 1024, 4),  # 128 programs: 0.97 of a wave; 3 chunks would fill 0.73
        (64, 1024, 2),  # 128 programs again
        (8, 1024, 14),  # 112 programs: 0.848, within 85% of the best (0.99 at S = 49); 13 would fill 0.79
        (8, 16, 16),  # one tile a chunk: as far as the tiles go
    ],
)
def test_the_smallest_split_near_the_best_efficiency(programs, kv_tiles, expected):
    assert num_splits(programs=programs, kv_tiles=kv_tiles) == expected


@pytest.mark.parametrize(
    ("programs", "kv_tiles", "expected"),
    [
        (8, 1024, 8),  # 64 programs: half of 132 SMs (the H100's S = 8 over the wave-filling 14)
        (32, 1024, 2),  # 64 programs again
        (16, 1024, 4),
        (64, 1024, 1),  # half the SMs already: unsplit
        (100, 1024, 1),
        (8, 12, 6),  # 8 would give chunks of 2 tiles as 7 and 6 do: 6, the fewest partials for that length
        (1, 3, 3),  # as far as the tiles go
    ],
)
def test_a_memory_bound_split_aims_at_half_the_sms(programs, kv_tiles, expected):
    assert num_splits(programs=programs, kv_tiles=kv_tiles, memory_bound=True) == expected


def test_decode_plans_are_memory_bound_and_prefill_plans_are_not():
    """A few packed rows per K/V head (Nq * group <= STREAMING_ROWS) aims at half the SMs; 128 queries of 4 heads
    (512 rows) keep FlashAttention-2's full-wave heuristic."""
    assert split_plan(1, 8, 4, 1, 131072, True, -1, -1, 16, 128, 132).S == 8
    assert split_plan(1, 8, 4, 16, 131072, True, -1, -1, 64, 128, 132).S == 8
    assert split_plan(1, 8, 4, 128, 131072, True, -1, -1, 128, 64, 132).S == 4  # 128 programs; half the SMs: 2


def test_a_decode_that_needs_no_split_still_packs_the_q_heads(kernels, seed):
    """72 programs fill half of the SMs, so the plan is S = 1; the split kernel still runs (one chunk, K and V read
    once per K/V head), not fa2_fwd (once per q head), and O and L hold to float64."""
    q, k, v = inputs(9, 32, 8, 1, 40, 32, BF16)
    kernels.compiled.clear()
    check_forward(kernels, q, k, v, True, (-1, -1), 0.0, None)
    assert "split" in kernels.compiled and "fwd" not in kernels.compiled


def test_the_split_is_bounded_by_the_tiles():
    assert num_splits(programs=8, kv_tiles=3) <= 3
    assert num_splits(programs=1, kv_tiles=1) == 1


def test_the_heuristic_refuses_empty_grids():
    with pytest.raises(ValueError, match=r"programs and kv_tiles must be at least 1; got 0, 5"):
        num_splits(programs=0, kv_tiles=5)


def test_the_plan_covers_the_keys_some_query_sees():
    # decode with a window of 4096 keys at Nk = 32k: only the last 4096 (+ one tile of alignment) are split
    plan = split_plan(1, 8, 4, 1, 32768, True, 4095, -1, 16, 128)
    assert plan.klo == (32767 - 4095) // 128 * 128 and plan.S > 1
    assert plan.klo + plan.S * plan.chunk >= 32768 > plan.klo + (plan.S - 1) * plan.chunk
    assert plan.chunk % 128 == 0 and plan.programs == 8
    # no query sees a key (Nq > Nk by more than the window): one empty chunk
    assert split_plan(1, 1, 1, 50, 10, True, 3, -1, 16, 16).S == 1


def test_split_tiles_fit_the_packed_rows():
    assert split_tiles(4, 128) == Tiles(16, 128, 4, 3)
    assert split_tiles(64, 128).Br == 64 and split_tiles(512, 128).Br == 128
    assert split_tiles(4, 256).Bc == 64


# ----------------------------------------------------------------------------------------------------------
# On the H200, compiled: the feature benchmark's decode shapes (B = 1, Hq = 32, Hkv = 8, D = 128)
# ----------------------------------------------------------------------------------------------------------
GPU_CASES = [  # Nq, Nk, causal, window, softcap
    (1, 8192, True, (-1, -1), 0.0),
    (1, 131072, True, (-1, -1), 0.0),
    (3, 5000, True, (-1, -1), 0.0),
    (16, 32768, True, (-1, -1), 0.0),
    (128, 8192, True, (-1, -1), 0.0),
    (16, 32768, True, (4095, -1), 0.0),
    (1, 8192, True, (-1, -1), 50.0),
    (128, 20000, False, (3000, 1000), 30.0),
]


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU")
@pytest.mark.parametrize(("Nq", "Nk", "causal", "window", "softcap"), GPU_CASES)
def test_gpu_split_forward_matches_float64(monkeypatch, seed, Nq, Nk, causal, window, softcap):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    q, k, v = inputs(1, 32, 8, Nq, Nk, 128, BF16, device="cuda")
    check_forward(ta.launcher(), q, k, v, causal, window, softcap, None)
    check_forward(ta.launcher(), q, k, v, causal, window, softcap, 16)
