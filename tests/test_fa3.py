"""The fa3 backend of flashviz.attention (FlashAttention-3 in Gluon) against float64 attention, on an sm_90 GPU.

Gluon has no interpreter: without a Hopper GPU these tests skip, except the ones about choosing a backend. The
tolerance is attention_reference's: at most FACTOR times the error of plain attention computed in the input dtype
(plus a tiny floor). A race shows as an error that moves between runs: the forward is repeated and must give
identical bits.
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
GPU = torch.cuda.is_available()
if not GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")  # the CPU tests below call flashviz.attention's fa2 path
pytest.importorskip("triton")

import flashviz  # noqa: E402
from flashviz.algos.fa3 import launcher as fa3_launcher  # noqa: E402
from flashviz.ops import backends as attention_backends  # noqa: E402
from flashviz.ops import fa3 as fa3_backend  # noqa: E402
from flashviz.ops.reference import judge  # noqa: E402

HOPPER = GPU and fa3_launcher.unavailable() is None
gpu = pytest.mark.gpu
needs_hopper = pytest.mark.skipif(not HOPPER, reason=f"fa3 needs an sm_90 GPU: {fa3_launcher.unavailable()}")


@pytest.fixture
def seed():
    """Fresh random inputs on every run; the seed is printed so that a failure can be replayed."""
    s = int.from_bytes(os.urandom(4), "little")
    print(f"torch seed: {s}")
    torch.manual_seed(s)
    return s


def qkv(B, H, N, D, dtype):
    return [torch.randn(B, H, N, D, dtype=dtype, device="cuda") for _ in range(4)]  # q, k, v, dO


def run(q, k, v, do, causal, scale, config=None, kernel="gluon", dl=None):
    o, lse = fa3_launcher.forward(q, k, v, causal, scale, config)
    dq, dk, dv = fa3_backend.backward(q, k, v, o, lse, do, dl, causal, scale, kernel=kernel)
    return {"O": o, "L": lse, "dQ": dq, "dK": dk, "dV": dv}


CASES = [  # B, H, N, D, dtype, causal: ragged N (1, 77, 1000, 3001), several B and H, both head dimensions
    (1, 1, 1, 64, torch.bfloat16, False),
    (1, 2, 1, 128, torch.bfloat16, True),
    (2, 3, 77, 64, torch.bfloat16, True),
    (2, 3, 77, 128, torch.bfloat16, False),
    (1, 2, 1000, 64, torch.bfloat16, False),
    (2, 1, 1000, 128, torch.bfloat16, True),
    (1, 2, 3001, 128, torch.bfloat16, False),
    (1, 1, 3001, 64, torch.bfloat16, True),
    (3, 2, 256, 128, torch.bfloat16, True),  # N a multiple of every tile: no ragged tile
    (2, 2, 1000, 64, torch.float16, True),
    (1, 3, 1000, 128, torch.float16, False),
]


@gpu
@needs_hopper
@pytest.mark.parametrize(("B", "H", "N", "D", "dtype", "causal"), CASES)
def test_forward_and_backward_match_float64(seed, B, H, N, D, dtype, causal):
    q, k, v, do = qkv(B, H, N, D, dtype)
    scale = D**-0.5
    ours = run(q, k, v, do, causal, scale)
    verdict = judge(ours, q, k, v, causal, scale, do)
    assert verdict.ok, verdict.failures()


@gpu
@needs_hopper
@pytest.mark.parametrize("kernel", ["gluon-vec", "triton"])
@pytest.mark.parametrize(("N", "D", "causal"), [(1000, 128, True), (77, 64, False)])
def test_the_other_backward_kernels_match_float64(seed, kernel, N, D, causal):
    """fa3_bwd with two-column dQ reductions, and FlashAttention-2's kernels on fa3's O and L (what BACKWARD runs)."""
    q, k, v, do = qkv(2, 2, N, D, torch.bfloat16)
    ours = run(q, k, v, do, causal, D**-0.5, kernel=kernel)
    verdict = judge(ours, q, k, v, causal, D**-0.5, do)
    assert verdict.ok, verdict.failures()


@gpu
@needs_hopper
@pytest.mark.parametrize("D", fa3_launcher.SUPPORTED_D)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("rung", list(fa3_launcher.ABLATION))
def test_every_ablation_rung_is_correct_and_repeatable(seed, rung, causal, D):
    """Each forward of the ablation (no ping-pong, no overlap, not persistent, ...) against float64; run three
    times on the same inputs, the outputs must agree to the bit (a race moves them)."""
    q, k, v, do = qkv(2, 3, 1000, D, torch.bfloat16)
    cfg = fa3_launcher.ablation_config(D, rung)
    runs = [fa3_launcher.forward(q, k, v, causal, 0.1, cfg) for _ in range(3)]
    for o, lse in runs[1:]:
        assert torch.equal(o, runs[0][0]) and torch.equal(lse, runs[0][1])
    verdict = judge({"O": runs[0][0], "L": runs[0][1]}, q, k, v, causal, 0.1, do)
    assert verdict.ok, verdict.failures()


@gpu
@needs_hopper
def test_persistent_programs_loop_over_many_blocks(seed):
    """More blocks than SMs (each program runs several): every block written once, right."""
    q, k, v, do = qkv(4, 16, 2048, 128, torch.bfloat16)
    o, lse = fa3_launcher.forward(q, k, v, True, 128**-0.5)
    for b, h in ((slice(0, 1), slice(0, 2)), (slice(3, 4), slice(14, 16))):  # the first heads and the last
        sub = [t[b, h] for t in (q, k, v, do)]
        verdict = judge({"O": o[b, h], "L": lse[b, h]}, *sub[:3], True, 128**-0.5, sub[3])
        assert verdict.ok, verdict.failures()


@gpu
@needs_hopper
def test_gradient_through_lse_and_strided_inputs(seed):
    """flashviz.attention(backend="fa3") through autograd on a (B, N, H, D) layout, with dL as well as dO."""
    B, N, H, D = 2, 333, 3, 128
    base = [torch.randn(B, N, H, D, dtype=torch.bfloat16, device="cuda") for _ in range(3)]
    q, k, v = (t.transpose(1, 2).requires_grad_() for t in base)  # (B, H, N, D), not contiguous
    o, lse = flashviz.attention(q, k, v, causal=True, return_lse=True, backend="fa3")
    do, dl = torch.randn_like(o), torch.randn_like(lse)
    torch.autograd.backward((o, lse), (do, dl))
    ours = {"O": o, "L": lse, "dQ": q.grad, "dK": k.grad, "dV": v.grad}
    verdict = judge(ours, q.detach(), k.detach(), v.detach(), True, D**-0.5, do, dl=dl)
    assert verdict.ok, verdict.failures()


@gpu
@needs_hopper
@pytest.mark.parametrize(("B", "Hq", "Hkv", "N", "D", "causal"), [
    (1, 32, 8, 2048, 128, True),  # Llama 3's groups of 4
    (2, 8, 1, 1000, 64, False),  # multi-query, ragged N
    (1, 6, 2, 77, 128, True),
    (2, 32, 8, 8192, 128, True),  # the feature benchmark's gqa causal N=8k
])  # fmt: skip
def test_grouped_query_forward_matches_float64(seed, B, Hq, Hkv, N, D, causal):
    """fa3's forward with q head h reading K/V head h // (Hq / Hkv); the backward is fa2's (through flashviz.attention
    with backend="fa3", as a model calls it)."""
    q = torch.randn(B, Hq, N, D, dtype=torch.bfloat16, device="cuda")
    k, v = (torch.randn(B, Hkv, N, D, dtype=torch.bfloat16, device="cuda") for _ in range(2))
    do = torch.randn_like(q)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    o, lse = flashviz.attention(q, k, v, causal=causal, return_lse=True, backend="fa3")
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), do)
    ours = {"O": o, "L": lse, "dQ": dq, "dK": dk, "dV": dv}
    verdict = judge(ours, q.detach(), k.detach(), v.detach(), causal, D**-0.5, do)
    assert verdict.ok, verdict.failures()


@gpu
@needs_hopper
def test_auto_picks_fa3_where_the_table_says(seed):
    q = torch.randn(1, 2, 4096, 128, dtype=torch.bfloat16, device="cuda")
    expected = attention_backends.FA3 if attention_backends.fast_fa3(128, 4096, False) else attention_backends.FA2
    assert attention_backends.choose("auto", q, False) == expected
    q96 = torch.randn(1, 2, 4096, 96, dtype=torch.bfloat16, device="cuda")
    assert attention_backends.choose("auto", q96, False) == attention_backends.FA2  # D=96: fa2 only
    # grouped-query attention: fa3 runs it when asked, auto keeps fa2 until fa3 is timed on it
    gqa = "grouped-query attention"
    assert attention_backends.choose("fa3", q, True, unmeasured=gqa) == attention_backends.FA3
    assert attention_backends.choose("auto", q, True, unmeasured=gqa) == attention_backends.FA2


# ----------------------------------------------------------------------------------------------------------
# Choosing a backend (any machine)
# ----------------------------------------------------------------------------------------------------------
def _inputs(d=64):
    device = "cuda" if GPU else "cpu"
    return [torch.randn(1, 2, 8, d, dtype=torch.bfloat16, device=device) for _ in range(3)]


@pytest.mark.parametrize("backend", ["fa4", "", None, 3, "FA3"])
def test_an_unknown_backend_is_refused(backend):
    q, k, v = _inputs()
    with pytest.raises(ValueError, match=r"^backend must be one of auto, fa3, fa2; got ") as info:
        flashviz.attention(q, k, v, backend=backend)
    assert "\n" not in str(info.value)


def test_an_unavailable_fa3_names_what_is_there():
    q, k, v = _inputs(d=96 if HOPPER else 64)  # on a Hopper GPU, D=96 is what fa3 does not take
    with pytest.raises(ValueError, match=r"^backend 'fa3' is not available here \(.+\); available: auto, fa2$"):
        flashviz.attention(q, k, v, backend="fa3")


@pytest.mark.parametrize("scale", [-0.5, 0.0])
def test_a_scale_not_above_zero_is_not_for_fa3(scale):
    """fa3 scales its running max after taking it (right for scale > 0 only; a zero scale makes the mask's -inf
    NaN): auto sends such a scale to fa2, and forcing fa3 says why it cannot (before needing a GPU to say so)."""
    q = torch.randn(1, 2, 8, 64, dtype=torch.bfloat16)
    assert fa3_backend.supports(q.cuda() if GPU else q, scale) == f"fa3 takes scale > 0; got {scale}"
    if HOPPER:
        q = q.cuda()
        assert attention_backends.choose("auto", q, True, scale) == attention_backends.FA2
        with pytest.raises(ValueError, match=r"^backend 'fa3' is not available here \(fa3 takes scale > 0"):
            attention_backends.choose("fa3", q, True, scale)


def test_auto_and_fa2_run_fa2_where_fa3_cannot():
    if HOPPER:
        pytest.skip("fa3 runs here")
    if not GPU and not os.environ.get("TRITON_INTERPRET"):
        pytest.skip("no GPU and no interpreter")
    q, k, v = _inputs()
    assert attention_backends.choose("auto", q, False) == attention_backends.FA2
    o_auto = flashviz.attention(q, k, v, backend="auto")
    o_fa2 = flashviz.attention(q, k, v, backend="fa2")
    assert torch.equal(o_auto, o_fa2)
