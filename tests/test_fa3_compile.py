"""Every fa3 kernel compiles for sm_90 without a GPU, and its PTX holds what the design claims.

CI has no GPU and Gluon has no interpreter, so this is where a change that silently drops warp specialization
(setmaxnreg: the partitions' registers), the TMA loads (cp.async.bulk.tensor), the mbarrier ring or the
asynchronous tensor-core products (wgmma.mma_async) fails. Correctness runs on the GPU (tests/test_fa3.py).
The kernels compile in a child process with TRITON_INTERPRET=0: other test modules set the interpreter for the
whole session, and under it Triton hands Gluon's functions to the interpreter, which cannot compile them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton.experimental.gluon")

from flashviz.ops import fa3 as fa3_attention  # noqa: E402

CLAIMS = ("wgmma.mma_async", "setmaxnreg", "cp.async.bulk.tensor", "mbarrier")
# the forward's distinct kernels: the ablation's rungs ("+ persistent" is the last one's launch, not a new kernel)
FWD_RUNGS = [r for r in fa3_attention.ABLATION if r != "+ persistent"]
FWD = [(d, causal, rung) for d in fa3_attention.SUPPORTED_D for causal in (False, True) for rung in FWD_RUNGS]
BWD = [(d, causal) for d in fa3_attention.SUPPORTED_D for causal in (False, True)]

COMPILE = r"""
import json, re, sys, torch
from flashviz.ops import fa3 as f
jobs = json.loads(sys.argv[1])
out = {}
for name, kind, d, causal, rung, dtype, *group in jobs:
    cfg = f.ablation_config(d, rung) if rung else None
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    try:
        ptx = f.compile_sm90(kind, d, causal, dtype=dt, config=cfg, group=group[0] if group else 1).asm["ptx"]
    except Exception as e:
        out[name] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        continue
    out[name] = {
        "claims": {c: c in ptx for c in ("wgmma.mma_async", "setmaxnreg", "cp.async.bulk.tensor", "mbarrier")},
        "regs": sorted({int(n) for n in re.findall(r"setmaxnreg\.(?:inc|dec)\.sync\.aligned\.u32\s+(\d+)", ptx)}),
        "waits": sorted(set(re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", ptx))),
        "atomics": bool(re.search(r"(atom|red)\.global\.[\w.]*add\.f32", ptx)),
        "loads": "ld.global" in ptx,
        "f16_mma": "m64n128k16.f32.f16.f16" in ptx,
    }
print(json.dumps(out))
"""


def _name(*parts) -> str:
    return "-".join(str(p) for p in parts)


@pytest.fixture(scope="module")
def compiled() -> dict:
    jobs = [[_name("fwd", d, c, r), "fwd", d, c, r, "bf16"] for d, c, r in FWD]
    jobs += [[_name("bwd", d, c), "bwd", d, c, None, "bf16"] for d, c in BWD]
    jobs += [["fwd-fp16", "fwd", 128, True, None, "fp16"]]
    jobs += [[_name("fwd-gqa", d, c), "fwd", d, c, None, "bf16", 4] for d in fa3_attention.SUPPORTED_D for c in (0, 1)]
    jobs += [[_name("pre", d), "bwd_preprocess", d, True, None, "bf16"] for d in fa3_attention.SUPPORTED_D]
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, "-c", COMPILE, json.dumps(jobs)], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def _get(compiled: dict, name: str) -> dict:
    got = compiled[name]
    assert "error" not in got, got.get("error")
    return got


@pytest.mark.parametrize(("d", "causal", "rung"), FWD, ids=[_name(f"D{d}", f"causal{int(c)}", r) for d, c, r in FWD])
def test_forward_compiles_with_its_claims(compiled, d, causal, rung):
    got = _get(compiled, _name("fwd", d, causal, rung))
    assert got["claims"] == dict.fromkeys(CLAIMS, True)
    # the producer gives registers away, the consumers take them (gl.warp_specialize's per-partition counts)
    km = fa3_attention._kernels()
    assert {km.PRODUCER_REGS.value, km.CONSUMER_REGS.value} <= set(got["regs"])
    # intra-warpgroup overlap: some products are waited for with one still in flight
    assert ("1" in got["waits"]) == fa3_attention.ablation_config(d, rung).overlap


def test_forward_compiles_in_fp16(compiled):
    got = _get(compiled, "fwd-fp16")
    assert got["claims"] == dict.fromkeys(CLAIMS, True) and got["f16_mma"]


@pytest.mark.parametrize("d", fa3_attention.SUPPORTED_D)
@pytest.mark.parametrize("causal", [0, 1])
def test_grouped_query_forward_compiles_with_its_claims(compiled, d, causal):
    """GROUP = 4 (q head h reads K/V head h // 4): the same pipeline, warp specialised, TMA, wgmma."""
    got = _get(compiled, _name("fwd-gqa", d, causal))
    assert got["claims"] == dict.fromkeys(CLAIMS, True)
    km = fa3_attention._kernels()
    assert {km.PRODUCER_REGS.value, km.CONSUMER_REGS.value} <= set(got["regs"])


@pytest.mark.parametrize(("d", "causal"), BWD)
def test_backward_compiles_with_its_claims(compiled, d, causal):
    got = _get(compiled, _name("bwd", d, causal))
    assert got["claims"] == dict.fromkeys(CLAIMS, True)
    assert got["atomics"], "dQ is added into by atomics"


@pytest.mark.parametrize("d", fa3_attention.SUPPORTED_D)
def test_delta_prekernel_compiles(compiled, d):
    assert _get(compiled, _name("pre", d))["loads"]


def test_an_unknown_kernel_is_refused():
    with pytest.raises(ValueError, match=r"kernel must be fwd, bwd or bwd_preprocess; got 'dq'"):
        fa3_attention.compile_sm90("dq", 128, False)
