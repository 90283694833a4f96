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
import triton  # noqa: E402

from flashviz.algos.fa3 import launcher as fa3_launcher  # noqa: E402

CLAIMS = ("wgmma.mma_async", "setmaxnreg", "cp.async.bulk.tensor", "mbarrier")
# the forward's distinct kernels: the ablation's rungs ("+ persistent" is the last one's launch, not a new kernel)
FWD_RUNGS = [r for r in fa3_launcher.ABLATION if r != "+ persistent"]
FWD = [(d, causal, rung) for d in fa3_launcher.SUPPORTED_D for causal in (False, True) for rung in FWD_RUNGS]
BWD = [(d, causal) for d in fa3_launcher.SUPPORTED_D for causal in (False, True)]
# The forward's options (issue 22), each as a call that asks for it compiles it: (what, D, causal, GROUP, flags,
# ablation rung or None). BAND: Nq != Nk (a KV cache), a window (BAND_LEFT: bounded on the left), packed sequences.
FWD_OPTIONS = [
    ("cache", 128, True, 4, {"band": True}, None),
    ("cache", 64, True, 1, {"band": True}, None),
    ("window", 128, True, 4, {"band": True, "band_left": True}, None),
    ("band", 64, False, 1, {"band": True, "band_left": True}, None),
    ("softcap", 128, True, 4, {"softcap": 1}, None),
    ("softcap-fast", 128, False, 1, {"softcap": 2}, None),
    ("packed", 128, True, 4, {"band": True, "varlen": True}, None),
    ("packed-all", 64, True, 1, {"band": True, "band_left": True, "varlen": True, "softcap": 1}, None),
    ("packed-all", 128, False, 4, {"band": True, "band_left": True, "varlen": True, "softcap": 2}, None),
    ("window-softcap", 128, True, 1, {"band": True, "band_left": True, "softcap": 1}, "warp specialization"),
]

COMPILE = r"""
import json, os, re, subprocess, sys, tempfile, torch, triton
from flashviz.algos.fa3 import launcher as f
CUOBJDUMP = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")

def tile_loops(cubin):
    # the innermost loops of the SASS that issue tensor-core products (HGMMA): the tile loops; per loop, its HGMMAs
    # and its local-memory accesses (LDL/STL: spilled registers). A loop is a backward branch; the retry loops of
    # the mbarrier waits, placed after the kernel's EXIT, are not tile loops.
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        sass = subprocess.run([CUOBJDUMP, "--dump-sass", fh.name], capture_output=True, text=True).stdout
    ins = [(int(m[1], 16), m[2]) for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", sass)]
    loops = []
    for addr, text in ins:
        target = re.search(r"\bBRA\b[^;]*?0x([0-9a-f]+)", text)
        if target and int(target[1], 16) < addr:
            loops.append((int(target[1], 16), addr))
    def count(lo, hi, pattern):
        return sum(1 for a, t in ins if lo <= a <= hi and re.search(pattern, t))
    mma = [(lo, hi) for lo, hi in loops if count(lo, hi, r"HGMMA") and not count(lo, hi, r"\bEXIT\b")]
    inner = [(lo, hi) for lo, hi in mma if not any(o != (lo, hi) and lo <= o[0] and o[1] <= hi for o in mma)]
    return [[count(lo, hi, r"HGMMA"), count(lo, hi, r"\b(LDL|STL)")] for lo, hi in inner]

jobs = json.loads(sys.argv[1])
out = {}
for name, kind, d, causal, rung, dtype, *more in jobs:
    group, flags = (more[0] if more else 1), (more[1] if len(more) > 1 else {})
    cfg = f.ablation_config(d, rung) if rung else None
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    try:
        k = f.compile_sm90(kind, d, causal, dtype=dt, config=cfg, group=group, flags=f.OptionFlags(**flags))
    except Exception as e:
        out[name] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        continue
    ptx = k.asm["ptx"]
    out[name] = {
        "claims": {c: c in ptx for c in ("wgmma.mma_async", "setmaxnreg", "cp.async.bulk.tensor", "mbarrier")},
        "regs": sorted({int(n) for n in re.findall(r"setmaxnreg\.(?:inc|dec)\.sync\.aligned\.u32\s+(\d+)", ptx)}),
        "waits": sorted(set(re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", ptx))),
        "atomics": bool(re.search(r"(atom|red)\.global\.[\w.]*add\.f32", ptx)),
        "loads": "ld.global" in ptx,
        "f16_mma": "m64n128k16.f32.f16.f16" in ptx,
        "params": len(set(re.findall(r"fa3_fwd_param_(\d+)", ptx))),
        "tanh": ptx.count("tanh.approx.f32"),
        "loops": tile_loops(k.asm["cubin"]) if kind == "fwd" else [],
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
    jobs += [[_name("fwd-gqa", d, c), "fwd", d, c, None, "bf16", 4] for d in fa3_launcher.SUPPORTED_D for c in (0, 1)]
    jobs += [[_name("pre", d), "bwd_preprocess", d, True, None, "bf16"] for d in fa3_launcher.SUPPORTED_D]
    jobs += [[_name("opt", *o), "fwd", o[1], o[2], o[5], "bf16", o[3], o[4]] for o in FWD_OPTIONS]
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
    km = fa3_launcher._kernels()
    assert {km.PRODUCER_REGS.value, km.CONSUMER_REGS.value} <= set(got["regs"])
    # intra-warpgroup overlap: some products are waited for with one still in flight
    assert ("1" in got["waits"]) == fa3_launcher.ablation_config(d, rung).overlap


def _tile_loops_hold_no_spills(got: dict, d: int, stages: int) -> None:
    """Each consumer warpgroup's tile loops (one per stretch of tiles with its own mask: `stages`) issue their tile's
    products -- Sij = Qi Kj^T (K = D: D / 16 wgmma instructions, HGMMA in SASS) and Oi += P Vj (K = Bc = 128: 8) --
    and touch no local memory: nothing of the running state is spilled where the time goes."""
    assert got["loops"], "no tile loop found in the SASS"
    assert {h for h, _ in got["loops"]} == {d // 16 + 128 // 16}, got["loops"]
    assert len(got["loops"]) == 2 * stages, got["loops"]  # two consumer warpgroups
    assert all(spills == 0 for _, spills in got["loops"]), f"local memory in a tile loop: {got['loops']}"


@pytest.mark.parametrize(("d", "causal", "rung"), FWD, ids=[_name(f"D{d}", f"causal{int(c)}", r) for d, c, r in FWD])
def test_forward_tile_loops_hold_no_spills(compiled, d, causal, rung):
    _tile_loops_hold_no_spills(_get(compiled, _name("fwd", d, causal, rung)), d, 2)


@pytest.mark.parametrize("option", FWD_OPTIONS, ids=[_name(*o[:3], o[5] or "") for o in FWD_OPTIONS])
def test_the_forwards_options_compile_with_its_claims(compiled, option):
    """Each option's forward: the same pipeline (warp specialised, the registers moved by setmaxnreg, TMA, the
    mbarrier ring, asynchronous wgmma), its tile loops free of spills, tanh.approx only where CAP_FAST asks for it,
    and the options' arguments as parameters only where they are on."""
    _, d, causal, _, flags, rung = option
    got = _get(compiled, _name("opt", *option))
    assert got["claims"] == dict.fromkeys(CLAIMS, True)
    km = fa3_launcher._kernels()
    assert {km.PRODUCER_REGS.value, km.CONSUMER_REGS.value} <= set(got["regs"])
    # stretches of tiles: unmasked and masked, and the band's left edge; without overlap the first tile is not
    # peeled, so that a band always has the three
    overlap = fa3_launcher.ablation_config(d, rung).overlap if rung else True
    band_stages = 3 if flags.get("band_left") or not overlap else 2
    stages = band_stages if flags.get("band") else 2
    assert len(got["loops"]) == 2 * stages, got["loops"]
    assert (got["tanh"] > 0) == (flags.get("softcap") == 2)
    plain = _get(compiled, _name("fwd", d, causal, FWD_RUNGS[-1]))
    extra = 3 * flags.get("band", False) + (flags.get("softcap", 0) > 0) + 4 * flags.get("varlen", False)
    assert got["params"] == plain["params"] + extra  # Nk, LEFT, RIGHT; softcap2; cu_q, cu_k, blocks, O


# Under Triton 3.9 these options' forwards at D = 128 spill registers in one consumer's tile loops (27 to 32 LDL/STL
# a loop; softcap 1), where 3.6 spills none: its register allocation differs. Not yet timed on a GPU (NOTES.md).
SPILL_UNDER_39 = {"cache-128-True-", "window-128-True-", "softcap-128-True-", "packed-128-True-",
                  "packed-all-128-False-"}  # fmt: skip
NEWER_TRITON = tuple(int(p) for p in triton.__version__.split(".")[:2]) >= (3, 9)


@pytest.mark.parametrize(
    "option",
    [
        pytest.param(o, marks=pytest.mark.xfail(NEWER_TRITON and _name(*o[:3], o[5] or "") in SPILL_UNDER_39,
                                                reason="Triton 3.9 spills in this option's tile loops", strict=True))
        for o in FWD_OPTIONS
    ],
    ids=[_name(*o[:3], o[5] or "") for o in FWD_OPTIONS],
)  # fmt: skip
def test_the_forwards_options_tile_loops_hold_no_spills(compiled, option):
    _, d, _, _, flags, rung = option
    got = _get(compiled, _name("opt", *option))
    overlap = fa3_launcher.ablation_config(d, rung).overlap if rung else True
    band_stages = 3 if flags.get("band_left") or not overlap else 2
    _tile_loops_hold_no_spills(got, d, band_stages if flags.get("band") else 2)


def test_forward_compiles_in_fp16(compiled):
    got = _get(compiled, "fwd-fp16")
    assert got["claims"] == dict.fromkeys(CLAIMS, True) and got["f16_mma"]


@pytest.mark.parametrize("d", fa3_launcher.SUPPORTED_D)
@pytest.mark.parametrize("causal", [0, 1])
def test_grouped_query_forward_compiles_with_its_claims(compiled, d, causal):
    """GROUP = 4 (q head h reads K/V head h // 4): the same pipeline, warp specialised, TMA, wgmma."""
    got = _get(compiled, _name("fwd-gqa", d, causal))
    assert got["claims"] == dict.fromkeys(CLAIMS, True)
    km = fa3_launcher._kernels()
    assert {km.PRODUCER_REGS.value, km.CONSUMER_REGS.value} <= set(got["regs"])


@pytest.mark.parametrize(("d", "causal"), BWD)
def test_backward_compiles_with_its_claims(compiled, d, causal):
    got = _get(compiled, _name("bwd", d, causal))
    assert got["claims"] == dict.fromkeys(CLAIMS, True)
    assert got["atomics"], "dQ is added into by atomics"


@pytest.mark.parametrize("d", fa3_launcher.SUPPORTED_D)
def test_delta_prekernel_compiles(compiled, d):
    assert _get(compiled, _name("pre", d))["loads"]


def test_an_unknown_kernel_is_refused():
    with pytest.raises(ValueError, match=r"kernel must be fwd, bwd or bwd_preprocess; got 'dq'"):
        fa3_launcher.compile_sm90("dq", 128, False)
