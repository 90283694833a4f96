"""Every fa3 kernel compiles for sm_90 without a GPU, and its PTX holds what the design claims.

CI has no GPU and Gluon has no interpreter, so this is where a change that silently drops warp specialization
(setmaxnreg: the partitions' registers), the TMA loads (cp.async.bulk.tensor), the mbarrier ring or the
asynchronous tensor-core products (wgmma.mma_async) fails. Correctness runs on the GPU (tests/test_fa3.py).
"""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton.experimental.gluon")

from flashviz import fa3_attention  # noqa: E402

CLAIMS = ("wgmma.mma_async", "setmaxnreg", "cp.async.bulk.tensor", "mbarrier")
# the forward's distinct kernels: the ablation's rungs ("+ persistent" is the last one's launch, not a new kernel)
FWD_RUNGS = [r for r in fa3_attention.ABLATION if r != "+ persistent"]
FWD = [(d, causal, rung) for d in fa3_attention.SUPPORTED_D for causal in (False, True) for rung in FWD_RUNGS]


def claims(ptx: str) -> dict:
    return {c: c in ptx for c in CLAIMS}


@pytest.mark.parametrize(("d", "causal", "rung"), FWD, ids=[f"D{d}-causal{int(c)}-{r}" for d, c, r in FWD])
def test_forward_compiles_with_its_claims(d, causal, rung):
    cfg = fa3_attention.ablation_config(d, rung)
    ptx = fa3_attention.compile_sm90("fwd", d, causal, config=cfg).asm["ptx"]
    assert claims(ptx) == dict.fromkeys(CLAIMS, True)
    # the producer gives registers away, the consumers take them (gl.warp_specialize's per-partition counts)
    regs = {int(n) for n in re.findall(r"setmaxnreg\.(?:inc|dec)\.sync\.aligned\.u32\s+(\d+)", ptx)}
    assert {fa3_attention._kernels().PRODUCER_REGS.value, fa3_attention._kernels().CONSUMER_REGS.value} <= regs
    waits = set(re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", ptx))
    # intra-warpgroup overlap: some products are waited for with one still in flight
    assert ("1" in waits) == cfg.overlap


def test_forward_compiles_in_fp16():
    ptx = fa3_attention.compile_sm90("fwd", 128, True, dtype=torch.float16).asm["ptx"]
    assert claims(ptx) == dict.fromkeys(CLAIMS, True)
    assert "m64n128k16.f32.f16.f16" in ptx


@pytest.mark.parametrize("d", fa3_attention.SUPPORTED_D)
@pytest.mark.parametrize("causal", [False, True])
def test_backward_compiles_with_its_claims(d, causal):
    ptx = fa3_attention.compile_sm90("bwd", d, causal).asm["ptx"]
    assert claims(ptx) == dict.fromkeys(CLAIMS, True)
    assert re.search(r"(atom|red)\.global\.[\w.]*add\.f32", ptx), "dQ is added into by atomics"


@pytest.mark.parametrize("d", fa3_attention.SUPPORTED_D)
def test_delta_prekernel_compiles(d):
    assert "ld.global" in fa3_attention.compile_sm90("bwd_preprocess", d, True).asm["ptx"]


def test_an_unknown_kernel_is_refused():
    with pytest.raises(ValueError, match=r"kernel must be fwd, bwd or bwd_preprocess; got 'dq'"):
        fa3_attention.compile_sm90("dq", 128, False)
