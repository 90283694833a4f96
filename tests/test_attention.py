"""flashviz.attention (FlashAttention-2 in Triton) against float64 attention.

The CPU tests run the real kernels under Triton's interpreter (TRITON_INTERPRET=1, set per test), on small
shapes; the GPU test compiles them for the GPU and autotunes. Tolerance: at most attention_reference.FACTOR
times the error of plain attention computed in the input dtype, plus a tiny absolute floor.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
GPU = torch.cuda.is_available()
if not GPU:
    # Triton picks compiled or interpreted kernels when it is first imported: choose before it is.
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")
DEVICE = "cuda" if GPU else "cpu"  # the small cases run compiled where there is a GPU, interpreted elsewhere

import flashviz  # noqa: E402
from flashviz.algos.fa2_triton import launcher as ta  # noqa: E402
from flashviz.algos.fa2_triton.launch_tiles import BWD_VARIANTS, Tiles  # noqa: E402
from flashviz.ops.reference import judge  # noqa: E402

KERNEL_FILE = Path(ta.__file__).parent / "kernel.py"
# GPU-sized tiles, run by the interpreter too: blocks larger than N, one loop stage empty
GPU_LIKE = {"fwd": Tiles(128, 64), "dkdv": Tiles(64, 128), "dq": Tiles(128, 64)}


@pytest.fixture
def kernels():
    run = ta.launcher()
    if not GPU and not run.interpret:
        pytest.skip("no GPU, and Triton was imported before TRITON_INTERPRET=1 could be set")
    return run


@pytest.fixture
def seed():
    """Fresh random inputs on every run; the seed is printed so that a failure can be replayed."""
    s = int.from_bytes(os.urandom(4), "little")
    print(f"torch seed: {s}")
    torch.manual_seed(s)
    return s


def qkv(B, H, N, D, dtype, device=DEVICE):
    return [torch.randn(B, H, N, D, dtype=dtype, device=device) for _ in range(4)]  # q, k, v, dO


def run_kernels(launcher, q, k, v, do, causal, scale, variant, tiles=None, dl=None):
    tiles = tiles or {}
    o, lse = launcher.forward(q, k, v, causal, scale, tiles=tiles.get("fwd"))
    dq, dk, dv = launcher.backward(q, k, v, o, lse, do, dl, causal, scale, variant=variant, tiles=tiles)
    return {"O": o, "L": lse, "dQ": dq, "dK": dk, "dV": dv}


CASES = [  # B, H, N, D, dtype, causal, backward variant
    (2, 3, 77, 64, torch.bfloat16, False, "atomic"),
    (2, 3, 77, 64, torch.bfloat16, True, "two_kernels"),
    (1, 2, 77, 64, torch.float16, True, "atomic"),
    (1, 2, 77, 64, torch.float16, False, "fused"),
    (1, 1, 1, 64, torch.bfloat16, False, "atomic"),
    (1, 2, 1, 32, torch.float16, True, "two_kernels"),
    (1, 1, 50, 32, torch.bfloat16, True, "atomic"),
    (1, 1, 40, 96, torch.bfloat16, False, "fused"),
    (1, 1, 40, 128, torch.float16, True, "atomic"),
    (1, 1, 33, 256, torch.bfloat16, True, "two_kernels"),
    (3, 1, 64, 64, torch.bfloat16, True, "atomic"),  # N a multiple of every tile: no ragged stage
    (2, 1, 64, 32, torch.float16, False, "fused"),
]


@pytest.mark.parametrize(("B", "H", "N", "D", "dtype", "causal", "variant"), CASES)
def test_kernels_match_float64(kernels, seed, B, H, N, D, dtype, causal, variant):
    q, k, v, do = qkv(B, H, N, D, dtype)
    scale = D**-0.5
    ours = run_kernels(kernels, q, k, v, do, causal, scale, variant)
    verdict = judge(ours, q, k, v, causal, scale, do)
    assert verdict.ok, verdict.failures()


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("variant", BWD_VARIANTS)
def test_gpu_sized_tiles_on_ragged_n(kernels, seed, causal, variant):
    """The tiles the GPU runs (128-row blocks) on N = 1000: many blocks, a ragged last one."""
    q, k, v, do = qkv(1, 1, 1000, 32, torch.bfloat16)
    ours = run_kernels(kernels, q, k, v, do, causal, 0.3, variant, tiles=GPU_LIKE)
    verdict = judge(ours, q, k, v, causal, 0.3, do)
    assert verdict.ok, verdict.failures()


def test_blocks_larger_than_n(kernels, seed):
    q, k, v, do = qkv(2, 2, 77, 64, torch.float16)
    ours = run_kernels(kernels, q, k, v, do, True, 0.125, "atomic", tiles=GPU_LIKE)
    verdict = judge(ours, q, k, v, True, 0.125, do)
    assert verdict.ok, verdict.failures()


@pytest.mark.parametrize("variant", BWD_VARIANTS)
def test_gradient_through_lse(kernels, seed, variant):
    """L is an output too: its gradient dL enters as Delta - dL (dS = P * (dP - Delta + dL))."""
    q, k, v, do = qkv(2, 2, 77, 64, torch.bfloat16)
    dl = torch.randn(2, 2, 77, dtype=torch.float32, device=DEVICE)
    ours = run_kernels(kernels, q, k, v, do, True, 0.125, variant, dl=dl)
    del ours["O"], ours["L"]
    verdict = judge(ours, q, k, v, True, 0.125, do, dl=dl)
    assert verdict.ok, verdict.failures()


def test_public_api_autograd(kernels, seed):
    """flashviz.attention through torch.autograd, default scale, return_lse, on a (B, N, H, D) layout."""
    B, N, H, D = 2, 77, 3, 64
    base = [torch.randn(B, N, H, D, dtype=torch.bfloat16, device=DEVICE) for _ in range(3)]
    q, k, v = (t.transpose(1, 2).requires_grad_() for t in base)  # (B, H, N, D), strides not contiguous
    o, lse = flashviz.attention(q, k, v, causal=True, return_lse=True)
    assert o.shape == (B, H, N, D) and o.dtype == torch.bfloat16
    assert lse.shape == (B, H, N) and lse.dtype == torch.float32
    do = torch.randn_like(o)
    o.backward(do)
    ours = {"O": o, "L": lse, "dQ": q.grad, "dK": k.grad, "dV": v.grad}
    verdict = judge(ours, q.detach(), k.detach(), v.detach(), True, D**-0.5, do)
    assert verdict.ok, verdict.failures()
    only_o = flashviz.attention(q.detach(), k.detach(), v.detach(), causal=True)
    assert torch.equal(only_o, o.detach()) and only_o.grad_fn is None  # no autograd where no gradient is asked
    with torch.no_grad():
        assert torch.equal(flashviz.attention(q, k, v, causal=True), only_o)


def test_scale_is_used(kernels, seed):
    q, k, v, _ = qkv(1, 1, 20, 32, torch.float16)
    _, lse2 = flashviz.attention(q, k, v, scale=0.5, return_lse=True)
    _, lse_default = flashviz.attention(q, k, v, return_lse=True)
    ref2 = torch.logsumexp((q.double() @ k.double().transpose(-1, -2)) * 0.5, -1)
    assert (lse2 - ref2).abs().max() < 1e-3
    assert (lse_default - lse2).abs().max() > 1e-2


@pytest.mark.parametrize("n", [1, 17, 100])
@pytest.mark.parametrize("scale", [-0.5, 0.0])
def test_negative_and_zero_scale(kernels, seed, n, scale):
    """Issue 17 item 3: max(S) * scale is the minimum of the scaled scores when scale < 0 (every O was NaN, L inf);
    the kernel scales each score before the max when scale <= 0. O, L and the gradients against float64."""
    q, k, v, do = qkv(1, 2, n, 96, torch.bfloat16)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    for causal in (False, True):
        o, lse = flashviz.attention(q, k, v, causal=causal, scale=scale, return_lse=True)
        dq, dk, dv = torch.autograd.grad(o, (q, k, v), do)
        ours = {"O": o, "L": lse, "dQ": dq, "dK": dk, "dV": dv}
        verdict = judge(ours, q.detach(), k.detach(), v.detach(), causal, scale, do)
        assert verdict.ok, (causal, verdict.failures())


def _bad(**over):
    q, k, v = (torch.randn(1, 2, 8, 64, dtype=torch.bfloat16, device=DEVICE) for _ in range(3))
    return {"q": q, "k": k, "v": v, **over}


BAD = [
    (_bad(q=torch.randn(2, 8, 64, dtype=torch.bfloat16)), r"q must be a 4-d tensor \(B, H, N, D\); got 3-d"),
    (
        _bad(k=torch.randn(1, 2, 9, 64, dtype=torch.bfloat16)),
        r"k and v must have the same shape; got k \(1, 2, 9, 64\)",
    ),
    (
        _bad(
            q=torch.randn(1, 2, 8, 48, dtype=torch.bfloat16),
            k=torch.randn(1, 2, 8, 48, dtype=torch.bfloat16),
            v=torch.randn(1, 2, 8, 48, dtype=torch.bfloat16),
        ),
        r"D must be one of 32, 64, 96, 128, 256; got 48",
    ),
    (_bad(v=torch.randn(1, 2, 8, 64)), r"v must be bfloat16 or float16; got torch.float32"),
    (_bad(k=torch.randn(1, 2, 8, 64, dtype=torch.float16)), r"q, k and v must have one dtype"),
    (_bad(q=torch.randn(1, 2, 64, 8, dtype=torch.bfloat16).transpose(-1, -2)), r"q must have a contiguous last dim"),
    (_bad(q=[[1.0]]), r"q must be a torch.Tensor of shape \(B, H, N, D\); got list"),
    (_bad(causal="yes"), r"causal must be True or False; got 'yes'"),
    (_bad(scale=float("nan")), r"scale must be None \(1/sqrt\(D\)\) or a finite number; got nan"),
    (_bad(scale="0.1" * 30), r"scale must be .*; got '0\.10\.10\.1.*…$"),  # long values are cut (model/echo.py)
    (_bad(return_lse=1), r"return_lse must be True or False; got 1"),
]


@pytest.mark.parametrize(("args", "message"), BAD)
def test_bad_input_says_what_is_accepted(kernels, args, message):
    with pytest.raises(ValueError, match=message) as info:
        flashviz.attention(**args)
    assert "\n" not in str(info.value)


def test_empty_sequence_is_refused(kernels):
    q = torch.randn(1, 2, 0, 64, dtype=torch.bfloat16, device=DEVICE)
    with pytest.raises(ValueError, match=r"B, H and N must be at least 1; got q \(1, 2, 0, 64\), k \(1, 2, 0, 64\)"):
        flashviz.attention(q, q, q)


def test_cpu_tensors_need_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    q = torch.randn(1, 2, 8, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"must be CUDA tensors \(CPU tensors only under TRITON_INTERPRET=1\)"):
        flashviz.attention(q, q, q)


def test_import_without_torch_names_the_extra(tmp_path):
    """`import flashviz` needs neither torch nor Triton; calling attention without them names the extra."""
    code = (
        "import sys; sys.modules['torch'] = None; sys.modules['triton'] = None\n"
        "import flashviz\n"
        "try:\n    flashviz.attention(None, None, None)\n"
        "except ImportError as e:\n    print('ImportError:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'flashviz[triton]'" in out.stdout, out.stdout + out.stderr


def test_step_markers_balanced_with_seed_names():
    """The kernel file carries the .cu files' step markers, so that a later viewer can cut code from it."""
    names, open_step = [], None
    for n, line in enumerate(KERNEL_FILE.read_text().splitlines(), 1):
        if m := re.match(r"^\s*# step: (\w+)\s*$", line):
            assert open_step is None, f"line {n}: step {m[1]} opens inside {open_step}"
            open_step = m[1]
            names.append(open_step)
        elif re.match(r"^\s*# end step\s*$", line):
            assert open_step is not None, f"line {n}: end step without a step"
            open_step = None
    assert open_step is None
    seed_names = {"load_q", "load_kv", "scores", "online_softmax", "write_back"}  # fa2_forward.cu
    seed_names |= {"load_do_o", "write_delta", "probs", "dv", "ds", "dk", "dq"}  # fa2_backward.cu
    assert set(names) <= seed_names
    assert {"load_q", "load_kv", "scores", "online_softmax", "write_back"} <= set(names)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(("B", "H", "N", "D"), [(2, 4, 1000, 64), (1, 8, 4096, 128), (3, 2, 77, 96)])
def test_gpu_autotuned_matches_float64(monkeypatch, seed, B, H, N, D, causal):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    q, k, v, do = qkv(B, H, N, D, torch.bfloat16, device="cuda")
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    o, lse = flashviz.attention(q, k, v, causal=causal, return_lse=True)
    o.backward(do)
    ours = {"O": o, "L": lse, "dQ": q.grad, "dK": k.grad, "dV": v.grad}
    verdict = judge(ours, q.detach(), k.detach(), v.detach(), causal, D**-0.5, do)
    assert verdict.ok, verdict.failures()
