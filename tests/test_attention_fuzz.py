"""The fuzzer of flashviz.attention's options under Triton's interpreter, kept in CI with a bounded count
(bench/fuzz_attention.py runs the same generator and judge at scale).

Each drawn call is a real call of `flashviz.attention` or `flashviz.attention_varlen` on fresh random inputs, at the
edges of what the options accept: softcap from far below to far above the scores (up to the largest value accepted,
and past it), windows from the diagonal alone to wider than the sequence, scales from tiny to large, GQA and MQA,
Nq != Nk, packed sequences with maxima from the longest sequence to 10**9. The judge: the call returns O (and L)
within attention_reference's tolerance of float64 attention with the same options (ops.reference.judge: at most
FACTOR times the error of the same attention computed in the input dtype, plus FLOOR), or it raises a ValueError of
one line that names the argument. Nothing else: no other exception, no NaN, no hang (the sizes are small), and no
NumPy warning from the interpreter.
"""

from __future__ import annotations

import math
import os
import warnings

import pytest

torch = pytest.importorskip("torch")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import flashviz  # noqa: E402
import test_attention as base  # noqa: E402  (sets TRITON_INTERPRET=1 without a GPU, before Triton is imported)
from flashviz.ops.checks import WINDOW_MAX, softcap_range  # noqa: E402
from flashviz.ops.reference import judge  # noqa: E402

kernels = base.kernels
DEVICE = base.DEVICE  # compiled on a GPU, interpreted on the CPU
EXAMPLES = int(os.environ.get("FLASHVIZ_FUZZ_EXAMPLES", "12"))
ONE_LINE = 300
NAMES = ("q", "k", "v", "softcap", "scale", "window", "causal", "max_seqlen_q", "max_seqlen_k", "cu_seqlens")


@st.composite
def softcaps(draw, scale: float) -> float:
    """0, a cap among the scores, far above them, at the edges of the accepted range, or just past them."""
    lo, hi = softcap_range(scale)
    kind = draw(st.sampled_from(["none", "among", "far", "top", "bottom", "past"]))
    if kind == "none":
        return 0.0
    if kind == "among":
        return draw(st.floats(0.05, 50.0))
    if kind == "far":
        return 10.0 ** draw(st.floats(3.0, math.log10(hi)))
    if kind == "top":
        return hi
    if kind == "bottom":
        return lo
    return draw(st.sampled_from([hi * 1.01, lo / 2, float("inf"), -1.0]))


@st.composite
def calls(draw) -> dict:
    """One call: its arguments, the shapes and the options, and a torch seed for its inputs."""
    packed = draw(st.booleans())
    hkv = draw(st.sampled_from([1, 2]))
    hq = hkv * draw(st.sampled_from([1, 2, 3]))
    d = draw(st.sampled_from([32, 64, 96]))
    dtype = draw(st.sampled_from(["bfloat16", "float16"]))
    scale = draw(st.one_of(st.none(), st.floats(1e-3, 4.0), st.sampled_from([1e-6, 30.0])))
    causal = draw(st.booleans())
    side = st.one_of(st.just(-1), st.integers(0, 4), st.integers(5, 80), st.just(WINDOW_MAX))
    window = (draw(side), draw(side))
    softcap = draw(softcaps(1.0 / math.sqrt(d) if scale is None else scale))
    case = {"packed": packed, "hq": hq, "hkv": hkv, "d": d, "dtype": dtype, "scale": scale, "causal": causal,
            "window": window, "softcap": softcap, "torch_seed": draw(st.integers(0, 2**31 - 1))}  # fmt: skip
    if packed:
        count = draw(st.integers(1, 3))
        case["lq"] = draw(st.lists(st.integers(1, 40), min_size=count, max_size=count))
        case["lk"] = draw(st.lists(st.integers(1, 40), min_size=count, max_size=count))
        extra = st.sampled_from([0, 0, 1, 7, 10**9])
        case["max_q"] = max(case["lq"]) + draw(extra) - draw(st.sampled_from([0, 0, 0, 1]))
        case["max_k"] = max(case["lk"]) + draw(extra)
    else:
        case["b"] = draw(st.integers(1, 2))
        case["nq"], case["nk"] = draw(st.integers(1, 50)), draw(st.integers(1, 50))
    return case


def run_and_judge(case: dict) -> str:
    """ "ok" (within tolerance of float64) or "refused" (a one-line ValueError naming an argument); anything else
    fails the assertion, naming the case."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # NumPy's warnings under the interpreter are not the user's
        return _run_and_judge(case)


def _run_and_judge(case: dict) -> str:
    torch.manual_seed(case["torch_seed"])
    dtype = getattr(torch, case["dtype"])
    hq, hkv, d = case["hq"], case["hkv"], case["d"]
    options = {"causal": case["causal"], "scale": case["scale"], "window": case["window"], "softcap": case["softcap"]}
    try:
        if case["packed"]:
            lq, lk = case["lq"], case["lk"]
            q = torch.randn(sum(lq), hq, d, dtype=dtype, device=DEVICE)
            k, v = (torch.randn(sum(lk), hkv, d, dtype=dtype, device=DEVICE) for _ in range(2))
            cq = torch.tensor([0, *_cumsum(lq)], dtype=torch.int32, device=DEVICE)
            ck = torch.tensor([0, *_cumsum(lk)], dtype=torch.int32, device=DEVICE)
            o, lse = flashviz.attention_varlen(q, k, v, cq, ck, case["max_q"], case["max_k"], return_lse=True,
                                               **options)  # fmt: skip
            where = {"cu_q": cq, "cu_k": ck}
        else:
            q = torch.randn(case["b"], hq, case["nq"], d, dtype=dtype, device=DEVICE)
            k, v = (torch.randn(case["b"], hkv, case["nk"], d, dtype=dtype, device=DEVICE) for _ in range(2))
            o, lse = flashviz.attention(q, k, v, return_lse=True, **options)
            where = {}
    except ValueError as exc:
        text = str(exc)
        assert "\n" not in text and len(text) <= ONE_LINE, (case, text)
        assert any(text.startswith(name) or f" {name} " in text for name in NAMES), (case, text)
        return "refused"
    scale = 1.0 / math.sqrt(d) if case["scale"] is None else case["scale"]
    do = torch.randn_like(q)
    verdict = judge({"O": o, "L": lse}, q, k, v, case["causal"], scale, do, window=case["window"],
                    softcap=case["softcap"], **where)  # fmt: skip
    assert verdict.ok, (case, verdict.failures())
    return "ok"


def _cumsum(values: list[int]) -> list[int]:
    out, total = [], 0
    for x in values:
        total += x
        out.append(total)
    return out


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: each example runs the kernels
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(calls())
def test_fuzz_attention_options_against_float64(kernels, case):
    run_and_judge(case)
