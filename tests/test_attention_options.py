"""flashviz.attention's options (issue 22) against float64 attention: grouped-query and multi-query attention, Nq != Nk
with causal masking aligned to the bottom-right, sliding windows, soft-capping, packed sequences of ragged lengths,
and their combinations; O, L, dQ, dK and dV.

Tolerance as in tests/test_attention.py for fa2-triton: at most attention_reference.FACTOR times the error of plain
attention computed in the input dtype (with the same options), plus attention_reference.FLOOR. The CPU tests run the
real kernels under Triton's interpreter on small shapes (a hand-picked table that crosses every option with the
others, and a few combinations drawn by hypothesis); the `gpu` tests run the same checks compiled, at the shapes of
real models (fixed tiles with every backward variant, and the autotuned public functions). Inputs are fresh random
numbers on every run (the seed is printed).
"""

from __future__ import annotations

import itertools
import math

import pytest

torch = pytest.importorskip("torch")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import flashviz  # noqa: E402
import test_attention as base  # noqa: E402  (sets TRITON_INTERPRET=1 without a GPU, before Triton is imported)
from flashviz.algos.fa2_triton import launcher as ta  # noqa: E402
from flashviz.algos.fa2_triton.launch_tiles import BWD_VARIANTS, DKDV_TILES, DQ_TILES, FUSED_TILES, FWD_TILES, Tiles  # noqa: E402
from flashviz.algos.fa2_triton.tiles import padded  # noqa: E402
from flashviz.ops.checks import WINDOW_MAX, check_varlen, softcap_range  # noqa: E402
from flashviz.ops.reference import judge  # noqa: E402

DEVICE, GPU, GPU_LIKE = base.DEVICE, base.GPU, base.GPU_LIKE
kernels, seed = base.kernels, base.seed  # the same fixtures: the launcher (skips if Triton can't interpret), a seed
BF16, FP16 = torch.bfloat16, torch.float16


def cumulative(lengths) -> torch.Tensor:
    return torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device=DEVICE)


def run_options(launcher, q, k, v, do, causal, scale, variant, window=(-1, -1), softcap=0.0, cu=None, tiles=None,
                dl=None):  # fmt: skip
    """The kernels through the launcher (one backward variant chosen), as test_attention.run_kernels runs them."""
    tiles = tiles or {}
    if cu is None:
        opts = ta.Options(window[0], window[1], float(softcap))
    else:
        (cq, lq), (ck, lk) = cu
        opts = ta.Options(window[0], window[1], float(softcap), cq, ck, max(lq), max(lk))
    o, lse = launcher.forward(q, k, v, causal, scale, tiles=tiles.get("fwd"), opts=opts)
    dq, dk, dv = launcher.backward(q, k, v, o, lse, do, dl, causal, scale, variant=variant, tiles=tiles, opts=opts)
    return {"O": o, "L": lse, "dQ": dq, "dK": dk, "dV": dv}


def dense_inputs(B, Hq, Hkv, Nq, Nk, D, dtype, device=DEVICE):
    q = torch.randn(B, Hq, Nq, D, dtype=dtype, device=device)
    k, v = (torch.randn(B, Hkv, Nk, D, dtype=dtype, device=device) for _ in range(2))
    do = torch.randn(B, Hq, Nq, D, dtype=dtype, device=device)
    return q, k, v, do


def packed_inputs(lq, lk, Hq, Hkv, D, dtype, device=DEVICE):
    q = torch.randn(sum(lq), Hq, D, dtype=dtype, device=device)
    k, v = (torch.randn(sum(lk), Hkv, D, dtype=dtype, device=device) for _ in range(2))
    do = torch.randn(sum(lq), Hq, D, dtype=dtype, device=device)
    return q, k, v, do


# B, Hq, Hkv, Nq, Nk, D, dtype, causal, window, softcap, backward variant
DENSE = [
    (2, 4, 2, 37, 53, 32, BF16, True, (-1, -1), 0.0, "atomic"),  # GQA, a KV cache (Nq < Nk)
    (1, 4, 1, 53, 37, 32, FP16, True, (-1, -1), 0.0, "two_kernels"),  # MQA, Nq > Nk: the first rows see no key
    (1, 4, 1, 1, 70, 64, BF16, True, (-1, -1), 0.0, "fused"),  # decode: one query against the cache
    (1, 2, 2, 16, 90, 32, BF16, False, (-1, -1), 0.0, "atomic"),  # Nq < Nk, not causal
    (1, 6, 2, 70, 20, 32, BF16, False, (-1, -1), 0.0, "fused"),  # Nq > Nk, groups of 3
    (2, 2, 2, 45, 45, 32, BF16, False, (7, 3), 0.0, "two_kernels"),  # a two-sided window
    (1, 2, 1, 45, 45, 32, FP16, True, (10, -1), 0.0, "atomic"),  # causal with a left window (Mistral)
    (1, 2, 2, 45, 45, 32, BF16, False, (-1, 5), 0.0, "fused"),  # bounded on the right only
    (1, 2, 2, 45, 45, 32, BF16, False, (5, -1), 0.0, "atomic"),  # bounded on the left only, not causal
    (1, 2, 2, 40, 40, 32, BF16, False, (0, 0), 0.0, "two_kernels"),  # the diagonal only
    (1, 2, 2, 40, 40, 32, BF16, True, (4, 2), 0.0, "atomic"),  # causal cuts right to 0
    (1, 2, 2, 60, 60, 32, BF16, False, (-1, -1), 5.0, "atomic"),  # softcap
    (1, 2, 2, 60, 60, 64, FP16, True, (-1, -1), 1.0, "fused"),  # a softcap that saturates most scores
    (1, 4, 2, 30, 75, 32, BF16, True, (12, -1), 3.0, "two_kernels"),  # GQA, Nq < Nk, causal, window, softcap
    (1, 4, 1, 75, 30, 32, BF16, True, (8, -1), 2.0, "atomic"),  # MQA, Nq > Nk, causal, window, softcap
    (1, 2, 1, 33, 33, 96, BF16, True, (9, -1), 0.0, "fused"),  # D = 96 (padded columns) with a window
    (1, 2, 2, 25, 80, 32, BF16, False, (6, 6), 0.0, "atomic"),  # Nq < Nk with a band: most keys unseen
    (1, 8, 2, 1, 40, 128, BF16, False, (-1, -1), 50.0, "two_kernels"),  # decode, GQA, softcap 50 (Gemma 2)
    (2, 2, 1, 64, 64, 32, BF16, True, (16, -1), 0.0, "atomic"),  # N and the window multiples of every tile
    (1, 2, 2, 40, 40, 32, BF16, True, (1000, -1), 0.0, "two_kernels"),  # a window wider than N
    (1, 2, 2, 50, 20, 32, BF16, False, (3, 3), 0.0, "fused"),  # Nq > Nk with a band: the last rows see no key
    (1, 3, 3, 20, 20, 256, FP16, False, (2, 9), 0.5, "atomic"),  # D = 256, asymmetric band, softcap
]


@pytest.mark.parametrize(("B", "Hq", "Hkv", "Nq", "Nk", "D", "dtype", "causal", "window", "softcap", "variant"), DENSE)
def test_options_match_float64(kernels, seed, B, Hq, Hkv, Nq, Nk, D, dtype, causal, window, softcap, variant):
    q, k, v, do = dense_inputs(B, Hq, Hkv, Nq, Nk, D, dtype)
    scale = D**-0.5
    ours = run_options(kernels, q, k, v, do, causal, scale, variant, window, softcap)
    verdict = judge(ours, q, k, v, causal, scale, do, window=window, softcap=softcap)
    assert verdict.ok, verdict.failures()


# lengths of q's sequences, of k's, Hq, Hkv, D, dtype, causal, window, softcap, backward variant
PACKED = [
    ((5, 33, 1, 20), (5, 33, 1, 20), 4, 2, 32, BF16, True, (-1, -1), 0.0, "atomic"),  # GQA, one a single row
    ((3, 40, 17), (30, 41, 2), 2, 1, 32, BF16, True, (6, -1), 2.0, "two_kernels"),  # Nq < Nk and Nq > Nk mixed
    ((3, 40, 17), (30, 10, 19), 2, 2, 32, FP16, False, (4, 4), 0.0, "fused"),  # a band in each sequence
    ((1, 1, 1), (30, 10, 19), 4, 1, 64, BF16, True, (-1, -1), 0.0, "atomic"),  # decode of three sequences, MQA
    ((50,), (50,), 2, 2, 32, BF16, False, (-1, -1), 10.0, "fused"),  # one sequence, softcap
    ((17, 2, 31, 9, 1), (17, 40, 3, 9, 22), 6, 3, 32, BF16, False, (-1, -1), 0.0, "two_kernels"),
]


@pytest.mark.parametrize(("lq", "lk", "Hq", "Hkv", "D", "dtype", "causal", "window", "softcap", "variant"), PACKED)
def test_packed_options_match_float64(kernels, seed, lq, lk, Hq, Hkv, D, dtype, causal, window, softcap, variant):
    q, k, v, do = packed_inputs(lq, lk, Hq, Hkv, D, dtype)
    cq, ck = cumulative(lq), cumulative(lk)
    scale = D**-0.5
    ours = run_options(kernels, q, k, v, do, causal, scale, variant, window, softcap, cu=((cq, lq), (ck, lk)))
    verdict = judge(ours, q, k, v, causal, scale, do, window=window, softcap=softcap, cu_q=cq, cu_k=ck)
    assert verdict.ok, verdict.failures()


@pytest.mark.parametrize("variant", BWD_VARIANTS)
def test_packed_ragged_with_gpu_sized_tiles(kernels, seed, variant):
    """The GPU's tiles (128-row blocks) over sequences shorter and longer than a block, causal, GQA."""
    lengths = (100, 7, 230)
    q, k, v, do = packed_inputs(lengths, lengths, 2, 1, 32, BF16)
    cu = cumulative(lengths)
    ours = run_options(kernels, q, k, v, do, True, 0.2, variant, (40, -1), cu=((cu, lengths), (cu, lengths)),
                       tiles=GPU_LIKE)  # fmt: skip
    verdict = judge(ours, q, k, v, True, 0.2, do, window=(40, -1), cu_q=cu, cu_k=cu)
    assert verdict.ok, verdict.failures()


@pytest.mark.parametrize("packed", [False, True])
def test_gradient_through_lse_with_options(kernels, seed, packed):
    """dL enters the backward as Delta - dL, also with GQA, a window, softcap and (packed) ragged sequences."""
    window, softcap = (9, -1), 4.0
    if packed:
        lq, lk = (13, 30, 4), (20, 30, 9)
        q, k, v, do = packed_inputs(lq, lk, 4, 2, 32, BF16)
        cq, ck = cumulative(lq), cumulative(lk)
        dl = torch.randn(4, sum(lq), dtype=torch.float32, device=DEVICE)
        extra = {"cu": ((cq, lq), (ck, lk))}
        options = {"cu_q": cq, "cu_k": ck}
    else:
        q, k, v, do = dense_inputs(2, 4, 2, 30, 45, 32, BF16)
        dl = torch.randn(2, 4, 30, dtype=torch.float32, device=DEVICE)
        extra, options = {}, {}
    ours = run_options(kernels, q, k, v, do, True, 0.2, "atomic", window, softcap, dl=dl, **extra)
    del ours["O"], ours["L"]
    verdict = judge(ours, q, k, v, True, 0.2, do, dl=dl, window=window, softcap=softcap, **options)
    assert verdict.ok, verdict.failures()


def test_public_api_with_every_option(kernels, seed):
    """flashviz.attention through torch.autograd: GQA, Nq < Nk, causal, a window, softcap, default scale, L."""
    q, k, v, do = dense_inputs(2, 6, 2, 24, 50, 64, BF16)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    o, lse = flashviz.attention(q, k, v, causal=True, window=(15, -1), softcap=20.0, return_lse=True)
    assert o.shape == q.shape and lse.shape == (2, 6, 24)
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), do)
    assert dk.shape == k.shape and dv.shape == v.shape
    ours = {"O": o, "L": lse, "dQ": dq, "dK": dk, "dV": dv}
    verdict = judge(ours, q.detach(), k.detach(), v.detach(), True, 64**-0.5, do, window=(15, -1), softcap=20.0)
    assert verdict.ok, verdict.failures()


def test_public_varlen_api(kernels, seed):
    """flashviz.attention_varlen through torch.autograd on ragged sequences: GQA, causal, a window, softcap, L."""
    lq, lk = (9, 1, 26), (30, 12, 26)
    q, k, v, do = packed_inputs(lq, lk, 4, 1, 32, FP16)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    cq, ck = cumulative(lq), cumulative(lk)
    o, lse = flashviz.attention_varlen(
        q, k, v, cq, ck, 26, 40, causal=True, scale=0.3, window=(8, -1), softcap=5.0, return_lse=True
    )  # fmt: skip  (max_seqlen_k above the longest is allowed)
    assert o.shape == q.shape and lse.shape == (4, sum(lq))
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), do)
    ours = {"O": o, "L": lse, "dQ": dq, "dK": dk, "dV": dv}
    verdict = judge(ours, q.detach(), k.detach(), v.detach(), True, 0.3, do, window=(8, -1), softcap=5.0, cu_q=cq,
                    cu_k=ck)  # fmt: skip
    assert verdict.ok, verdict.failures()


@st.composite
def combinations(draw):
    """Any combination of the options, on shapes small enough for the interpreter."""
    group = draw(st.sampled_from([1, 2, 4]))
    hkv = draw(st.sampled_from([1, 2]))
    causal = draw(st.booleans())
    # windows of at least 16 keys per row, for the reason below (a drawn (3, 5) band, 9 keys a row, exceeded the
    # tolerance on dK once in a fresh CI run: 0.0303 against 0.0248); the hand-picked table above holds the narrow
    # bands ((0, 0), (3, 3), (4, 4), (6, -1)), each in a shape of its own
    left = draw(st.sampled_from([-1, 17, 30]))
    right = draw(st.sampled_from([-1, 0, 17]))
    softcap = draw(st.sampled_from([0.0, 0.0, 2.5, 50.0]))
    packed = draw(st.booleans())
    # At least 16 keys per sequence and per window: where a handful of rows each see 2-5 keys and nothing else,
    # the gradients' error is that of Delta = rowsum(dO * O) from the bf16-rounded O (FlashAttention-2's backward
    # does the same), which plain attention does not have, and the 2x-plain tolerance fails about 1 draw in 100
    # (measured on the interpreter); the hand-picked table keeps such sequences inside larger batches.
    if packed:
        count = draw(st.integers(1, 3))
        lq = tuple(draw(st.lists(st.integers(1, 40), min_size=count, max_size=count)))
        lk = tuple(draw(st.lists(st.integers(16, 40), min_size=count, max_size=count)))
        shape = (lq, lk)
    else:
        shape = (draw(st.integers(1, 2)), draw(st.integers(1, 60)), draw(st.integers(16, 60)))
    variant = draw(st.sampled_from(BWD_VARIANTS))
    dtype = draw(st.sampled_from([BF16, FP16]))
    torch_seed = draw(st.integers(0, 2**31 - 1))
    return group * hkv, hkv, causal, (left, right), softcap, packed, shape, variant, dtype, torch_seed


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)  # no shrinking: each example runs the kernels
@given(combinations())
def test_drawn_combinations_match_float64(kernels, case):
    hq, hkv, causal, window, softcap, packed, shape, variant, dtype, torch_seed = case
    torch.manual_seed(torch_seed)
    if packed:
        lq, lk = shape
        q, k, v, do = packed_inputs(lq, lk, hq, hkv, 32, dtype)
        cq, ck = cumulative(lq), cumulative(lk)
        ours = run_options(kernels, q, k, v, do, causal, 0.25, variant, window, softcap, cu=((cq, lq), (ck, lk)))
        options = {"cu_q": cq, "cu_k": ck}
    else:
        B, nq, nk = shape
        q, k, v, do = dense_inputs(B, hq, hkv, nq, nk, 32, dtype)
        ours = run_options(kernels, q, k, v, do, causal, 0.25, variant, window, softcap)
        options = {}
    verdict = judge(ours, q, k, v, causal, 0.25, do, window=window, softcap=softcap, **options)
    assert verdict.ok, (case, verdict.failures())


@pytest.mark.parametrize("softcap", [1e3, 1e4, 1e6, 1e8, 1e30, "top"])
@pytest.mark.parametrize("dtype", [BF16, FP16])
def test_a_cap_far_above_the_scores_is_computed_as_no_cap(kernels, seed, softcap, dtype):
    """softcap * tanh(s / softcap) where s / softcap is tiny: the tanh by one exp2 cancels to nothing there (O was
    4.4e-2 off at 1e6 and 88 % off at 1e8); the kernels' series near 0 keeps it, up to the largest cap accepted."""
    q, k, v, do = dense_inputs(1, 2, 2, 40, 40, 32, dtype)
    scale = 1.0 / math.sqrt(32)  # the default scale, as flashviz.attention computes it
    cap = softcap_range(scale)[1] if softcap == "top" else softcap
    ours = run_options(kernels, q, k, v, do, True, scale, "atomic", softcap=cap)
    if dtype == BF16 or cap < torch.finfo(FP16).max:  # fp16 attention, the tolerance's baseline, holds the cap
        verdict = judge(ours, q, k, v, True, scale, do, softcap=cap)
        assert verdict.ok, verdict.failures()
    uncapped = judge(ours, q, k, v, True, scale, do)  # and a cap this far above the scores is no cap at all
    assert uncapped.ok, uncapped.failures()
    public = flashviz.attention(q, k, v, causal=True, softcap=cap)
    assert judge({"O": public}, q, k, v, True, scale, do).ok


def test_interpreted_calls_print_no_numpy_warnings(kernels, seed):
    """Rows that see no key take L = log2(0) = -inf on purpose: NumPy's divide warning is not shown to the user."""
    import warnings

    q, k, v, do = dense_inputs(1, 2, 1, 30, 12, 32, BF16)  # Nq > Nk, causal: the first rows see no key
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        o = flashviz.attention(q, k, v, causal=True, window=(4, -1), softcap=3.0)
        torch.autograd.grad(o, (q, k, v), do)


def test_varlen_maxima_past_the_total_bound_the_grid_by_the_total(kernels, seed):
    """max_seqlen_q = max_seqlen_k = 10**9 sized the grid (a hang on the CPU): a maximum past its tensor's total rows
    is taken as the total, and the output is the same."""
    lq, lk = (5, 17), (12, 9)
    q, k, v, do = packed_inputs(lq, lk, 2, 1, 32, BF16)
    cq, ck = cumulative(lq), cumulative(lk)
    assert check_varlen(q, k, cq, ck, 10**9, 10**30) == (sum(lq), sum(lk))
    assert check_varlen(q, k, cq, ck, 17, 12) == (17, 12)
    huge = flashviz.attention_varlen(q, k, v, cq, ck, 10**9, 10**9, causal=True)
    exact = flashviz.attention_varlen(q, k, v, cq, ck, max(lq), max(lk), causal=True)
    assert torch.equal(huge, exact)
    assert judge({"O": huge}, q, k, v, True, 32**-0.5, do, cu_q=cq, cu_k=ck).ok


# ----------------------------------------------------------------------------------------------------------
# Bad combinations: one-line ValueErrors naming the argument
# ----------------------------------------------------------------------------------------------------------
def _dense(Hq=2, Hkv=2, Nq=8, Nk=8, D=64, **over):
    q = torch.randn(1, Hq, Nq, D, dtype=BF16, device=DEVICE)
    k, v = (torch.randn(1, Hkv, Nk, D, dtype=BF16, device=DEVICE) for _ in range(2))
    return {"q": q, "k": k, "v": v, **over}


def _packed(lq=(3, 5), lk=(4, 4), **over):
    q = torch.randn(sum(lq), 2, 32, dtype=BF16, device=DEVICE)
    k, v = (torch.randn(sum(lk), 2, 32, dtype=BF16, device=DEVICE) for _ in range(2))
    args = {"q": q, "k": k, "v": v, "cu_seqlens_q": cumulative(lq), "cu_seqlens_k": cumulative(lk)}
    return {**args, "max_seqlen_q": max(lq), "max_seqlen_k": max(lk), **over}


def _cu(*values, dtype=torch.int32):
    return torch.tensor(values, dtype=dtype, device=DEVICE)


FA3_REFUSED = (
    r"^backend 'fa3' is not available here "
    r"\((no CUDA GPU|the GPU is sm_\d+, .*|fa3 takes head dimension D in 64, 128; got 32)\); available: auto, fa2$"
)
BAD_DENSE = [
    (_dense(Hq=3, Hkv=2), r"q's heads must be a multiple of k's and v's .*; got Hq = 3, Hkv = 2"),
    (_dense(Hq=2, Hkv=4), r"q's heads must be a multiple of k's and v's .*; got Hq = 2, Hkv = 4"),
    (_dense(window=(-2, 3)), r"window values must be -1 \(unbounded\) or 0 \.\. \d+; got \(-2, 3\)"),
    (_dense(window=(4, -5)), r"window values must be -1 \(unbounded\) or 0 \.\. \d+; got \(4, -5\)"),
    (_dense(window=(WINDOW_MAX + 1, 0)), r"window values must be -1 \(unbounded\) or 0 \.\. \d+; got"),
    (_dense(window=(3,)), r"window must be a pair of ints \(left, right\), -1 for unbounded; got \(3,\)"),
    (_dense(window=(1.5, 2)), r"window must be a pair of ints .*; got \(1\.5, 2\)"),
    (_dense(window=(True, 2)), r"window must be a pair of ints .*; got \(True, 2\)"),
    (_dense(window="left"), r"window must be a pair of ints .*; got 'left'"),
    (_dense(softcap=-1.0), r"softcap must be a finite number >= 0 \(0: no soft-capping\); got -1\.0"),
    (_dense(softcap=float("inf")), r"softcap must be a finite number >= 0 .*; got inf"),
    (_dense(softcap=True), r"softcap must be a finite number >= 0 .*; got True"),
    (_dense(softcap="50"), r"softcap must be a finite number >= 0 .*; got '50'"),
    (
        _dense(softcap=1e38),
        r"softcap must be 0 \(no soft-capping\) or 3\.67e-40 \.\. 1\.06e\+37 at scale 0\.125 .*; got 1e\+38$",
    ),
    (
        _dense(softcap=1e-45, scale=1.0),
        r"softcap must be 0 \(no soft-capping\) or 2\.94e-39 \.\. 8\.51e\+37 at scale 1 ",
    ),
    (_dense(q=torch.empty(1, 2, 8, 64, dtype=BF16, device="meta")), r"q, k and v must be on one device; got meta"),
    (
        {k: torch.empty(1, 2, 8, 64, dtype=BF16, device="meta") for k in "qkv"},
        r"^q, k and v must be CUDA tensors \(CPU tensors under TRITON_INTERPRET=1\), holding their values; got meta$",
    ),
    (_dense(k=torch.randn(1, 2, 9, 64, dtype=BF16)), r"k and v must have the same shape; got k \(1, 2, 9, 64\)"),
    (
        _dense(k=torch.randn(2, 2, 8, 64, dtype=BF16), v=torch.randn(2, 2, 8, 64, dtype=BF16)),
        r"q and k must have one batch size B; got q \(1, 2, 8, 64\), k \(2, 2, 8, 64\)",
    ),
    (
        _dense(k=torch.randn(1, 2, 8, 32, dtype=BF16), v=torch.randn(1, 2, 8, 32, dtype=BF16)),
        r"q, k and v must have one head dimension D; got q \(1, 2, 8, 64\), k \(1, 2, 8, 32\)",
    ),
    (_dense(Nk=0), r"B, H and N must be at least 1; got q \(1, 2, 8, 64\), k \(1, 2, 0, 64\)"),
    # fa3 takes every option (tests/test_fa3_options.py), but not D = 32, nor any call without a Hopper GPU
    (_dense(Hq=4, Hkv=2, D=32, window=(3, -1), backend="fa3"), FA3_REFUSED),
    (_dense(Nq=1, D=32, backend="fa3", softcap=2.0), FA3_REFUSED),
]


@pytest.mark.parametrize(("args", "message"), BAD_DENSE)
def test_bad_options_say_what_is_accepted(kernels, args, message):
    with pytest.raises(ValueError, match=message) as info:
        flashviz.attention(**args)
    assert "\n" not in str(info.value)


BAD_PACKED = [
    (
        _packed(cu_seqlens_q=_cu(0, 5, 5, 8), cu_seqlens_k=_cu(0, 2, 6, 8)),
        r"cu_seqlens_q must be strictly increasing \(every sequence at least 1 row\); got \[0, 5, 5, 8\]",
    ),
    (_packed(cu_seqlens_k=_cu(0, 6, 3)), r"cu_seqlens_k must be strictly increasing .*; got \[0, 6, 3\]"),
    (_packed(cu_seqlens_q=_cu(0, 3, 7)), r"cu_seqlens_q must end at the total rows of its tensor \(8\); got 7"),
    (_packed(cu_seqlens_k=_cu(0, 4, 9)), r"cu_seqlens_k must end at the total rows of its tensor \(8\); got 9"),
    (_packed(cu_seqlens_q=_cu(1, 3, 8)), r"cu_seqlens_q must start at 0; got 1"),
    (
        _packed(cu_seqlens_q=_cu(0, 3, 8, dtype=torch.int64)),
        r"cu_seqlens_q must be a 1-d int32 tensor of B \+ 1 >= 2 offsets; got torch.int64 \(3,\)",
    ),
    (_packed(cu_seqlens_k=[0, 4, 8]), r"cu_seqlens_k must be a 1-d int32 tensor of B \+ 1 >= 2 offsets; got list"),
    (_packed(cu_seqlens_k=_cu(8)), r"cu_seqlens_k must be a 1-d int32 tensor of B \+ 1 >= 2 offsets; got"),
    (_packed(cu_seqlens_k=_cu(0, 2, 5, 8)), r"cu_seqlens_q and cu_seqlens_k must hold one batch .*; got 3 and 4"),
    (_packed(max_seqlen_q=4), r"max_seqlen_q must be at least the longest sequence \(5\); got 4"),
    (_packed(max_seqlen_k=0), r"max_seqlen_k must be an int >= 1; got 0"),
    (_packed(max_seqlen_k=4.0), r"max_seqlen_k must be an int >= 1; got 4\.0"),
    (_packed(q=torch.randn(1, 8, 2, 32, dtype=BF16)), r"q must be a 3-d tensor \(total, H, D\); got 4-d"),
    (_packed(window=(-3, -1)), r"window values must be -1 \(unbounded\) or 0 \.\. \d+; got \(-3, -1\)"),
    (_packed(softcap=-0.5), r"softcap must be a finite number >= 0 .*; got -0\.5"),
    (_packed(q=torch.randn(8, 3, 32, dtype=BF16)), r"q's heads must be a multiple of k's and v's .*; got Hq = 3"),
    (_packed(causal=1), r"causal must be True or False; got 1"),
    (_packed(return_lse="yes"), r"return_lse must be True or False; got 'yes'"),
    (_packed(backend="fa3"), FA3_REFUSED),  # D = 32
]


@pytest.mark.parametrize(("args", "message"), BAD_PACKED)
def test_bad_packed_sequences_say_what_is_accepted(kernels, args, message):
    with pytest.raises(ValueError, match=message) as info:
        flashviz.attention_varlen(**args)
    assert "\n" not in str(info.value)


# ----------------------------------------------------------------------------------------------------------
# The same checks on the H200, compiled, at the shapes of real models. Each option set compiles its kernels once:
# the first candidate tiles of each kernel, every backward variant (about 5 compiles a set); one test goes through
# the autotuned public function (every candidate: about 20 compiles).
# ----------------------------------------------------------------------------------------------------------
GPU_DENSE = [  # B, Hq, Hkv, Nq, Nk, D, causal, window, softcap
    (1, 32, 8, 2048, 2048, 128, True, (-1, -1), 0.0),  # Llama 3's GQA
    (2, 32, 8, 1, 8192, 128, True, (-1, -1), 0.0),  # decode against an 8k cache
    (1, 32, 8, 128, 8192, 128, True, (-1, -1), 0.0),  # a speculative / chunked decode
    (1, 16, 16, 1024, 4096, 64, True, (-1, -1), 0.0),  # prefill with a cache
    (1, 8, 1, 3000, 1000, 128, True, (-1, -1), 0.0),  # MQA, Nq > Nk (the first 2000 rows see no key)
    (1, 32, 8, 4096, 4096, 128, True, (1024, -1), 0.0),  # Mistral's sliding window
    (1, 16, 8, 2048, 2048, 256, True, (-1, -1), 50.0),  # Gemma 2's softcap at D = 256
    (2, 8, 2, 1500, 2500, 96, False, (300, 200), 30.0),  # everything at once, ragged N, D = 96
]


def first_tiles(d: int) -> dict:
    """The first candidate of each kernel for head dimension d (each valid under causal masking)."""
    p = padded(d)
    (br, bc), (brq, bcq), warps, stages = FUSED_TILES[p][0]
    return {"fwd": FWD_TILES[p][0], "dkdv": DKDV_TILES[p][0], "dq": DQ_TILES[p][0],
            "fused": {"dkdv": Tiles(br, bc, warps, stages), "dq": Tiles(brq, bcq, warps, stages)}}  # fmt: skip


def _gpu_variants(q, k, v, do, causal, window, softcap, cu=None):
    """Forward, then every backward variant, on fixed tiles; each against float64."""
    run = ta.launcher()
    tiles = first_tiles(q.shape[-1])
    scale = q.shape[-1] ** -0.5
    options = {} if cu is None else {"cu_q": cu[0][0], "cu_k": cu[1][0]}
    for variant in BWD_VARIANTS:
        bwd = tiles["fused"] if variant == "fused" else {"dkdv": tiles["dkdv"], "dq": tiles["dq"]}
        ours = run_options(run, q, k, v, do, causal, scale, variant, window, softcap, cu=cu,
                           tiles={"fwd": tiles["fwd"], **bwd})  # fmt: skip
        verdict = judge(ours, q, k, v, causal, scale, do, window=window, softcap=softcap, **options)
        assert verdict.ok, (variant, verdict.failures())


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU")
@pytest.mark.parametrize(("B", "Hq", "Hkv", "Nq", "Nk", "D", "causal", "window", "softcap"), GPU_DENSE)
def test_gpu_options_match_float64(monkeypatch, seed, B, Hq, Hkv, Nq, Nk, D, causal, window, softcap):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    q, k, v, do = dense_inputs(B, Hq, Hkv, Nq, Nk, D, BF16, device="cuda")
    _gpu_variants(q, k, v, do, causal, window, softcap)


def _mixed_lengths(count: int, total: int, generator) -> list[int]:
    """`count` lengths from 1 up, summing to `total`: a few long sequences and many short ones."""
    weights = torch.rand(count, generator=generator) ** 3 + 0.01
    lengths = (weights / weights.sum() * (total - count)).floor().long() + 1
    lengths[0] += total - int(lengths.sum())
    return [int(x) for x in lengths]


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU")
@pytest.mark.parametrize(("causal", "window", "softcap"), [(True, (-1, -1), 0.0), (True, (512, -1), 30.0)])
def test_gpu_packed_options_match_float64(monkeypatch, seed, causal, window, softcap):
    """64 sequences of mixed lengths, 16k tokens, GQA 32/8, D = 128 (the feature benchmark's varlen case, smaller)."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    lengths = _mixed_lengths(64, 16384, torch.Generator().manual_seed(seed))
    q, k, v, do = packed_inputs(lengths, lengths, 32, 8, 128, BF16, device="cuda")
    cu = torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device="cuda")
    _gpu_variants(q, k, v, do, causal, window, softcap, cu=((cu, lengths), (cu, lengths)))


@pytest.mark.gpu
@pytest.mark.skipif(not GPU, reason="needs a CUDA GPU")
@pytest.mark.parametrize("packed", [False, True])
def test_gpu_public_api_autotuned(monkeypatch, seed, packed):
    """flashviz.attention / attention_varlen as a model calls them: autotuned tiles, the backward variant timed
    and chosen, through torch.autograd; GQA 32/8 at D=128, causal; dense: a KV cache (Nq < Nk) and a window; packed:
    ragged sequences. (The option sets of `attention_bench.py --features`, whose compile step fills Triton's cache
    with their candidates: run after it on the same machine, these should find their kernels there.) On an sm_90
    GPU auto runs fa3's forward for the packed call (D=128, causal, a longest sequence of 2048 queries:
    FA3_OPTIONS_MIN_QUERIES) and fa2's for the dense one (1024 queries); both backwards are fa2's."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    window, softcap = ((-1, -1), 0.0) if packed else ((1023, -1), 0.0)
    if packed:
        lq, lk = [700, 1, 1300, 2048], [900, 50, 1300, 4096]
        q, k, v, do = packed_inputs(lq, lk, 32, 8, 128, BF16, device="cuda")
        cq, ck = (torch.tensor([0, *itertools.accumulate(n)], dtype=torch.int32, device="cuda") for n in (lq, lk))
        q, k, v = (t.requires_grad_() for t in (q, k, v))
        o, lse = flashviz.attention_varlen(q, k, v, cq, ck, max(lq), max(lk), causal=True, window=window,
                                           softcap=softcap, return_lse=True)  # fmt: skip
        options = {"cu_q": cq, "cu_k": ck}
    else:
        q, k, v, do = dense_inputs(2, 32, 8, 1024, 4096, 128, BF16, device="cuda")
        q, k, v = (t.requires_grad_() for t in (q, k, v))
        o, lse = flashviz.attention(q, k, v, causal=True, window=window, softcap=softcap, return_lse=True)
        options = {}
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), do)
    ours = {"O": o, "L": lse, "dQ": dq, "dK": dk, "dV": dv}
    verdict = judge(ours, q.detach(), k.detach(), v.detach(), True, 128**-0.5, do, window=window, softcap=softcap,
                    **options)  # fmt: skip
    assert verdict.ok, verdict.failures()
