"""flashviz.attention's fa3 backend: which calls it takes (`supports`; where it can run at all is
`flashviz.algos.fa3.launcher.unavailable`) and which kernels run its backward (`backward`). The forward and fa3's own
backward kernel are launched by algos/fa3/launcher.py.

Which kernel runs the backward: BACKWARD, FlashAttention-2's Triton kernels (algos/fa2_triton/launcher.py) on fa3's
O and L, because in the recorded run they beat the Gluon backward at every shape; the Gluon one (fa3_bwd) is
correct (tests/test_fa3.py) and is run with kernel="gluon" or "gluon-vec" (plain attention only).
Needs torch and Triton 3.6 with Gluon (`flashviz[triton]`), and, to run, an sm_90 GPU.
"""

from __future__ import annotations

from flashviz.algos.fa2_triton import launcher as fa2_launcher
from flashviz.algos.fa3.launcher import SUPPORTED_D, _cut, backward_gluon


def supports(q, scale: float | None = None) -> str | None:
    """Why fa3 cannot take these inputs (None: it can), for inputs already checked by check_inputs. A scale <= 0
    is refused (fa2 takes it): the kernels take the running max of the unscaled scores and scale it afterwards,
    which is the max of the scaled ones only for scale > 0, and a zero scale turns the mask's -inf into NaN."""
    if scale is not None and scale <= 0:
        return f"fa3 takes scale > 0; got {_cut(scale)}"
    if q.shape[-1] not in SUPPORTED_D:
        return f"fa3 takes head dimension D in {', '.join(map(str, SUPPORTED_D))}; got {q.shape[-1]}"
    if q.device.type != "cuda":
        return f"fa3 runs on CUDA tensors; got {_cut(q.device)}"
    return None


# The backward's kernels: fa3_bwd with dQ added by scalar atomics ("gluon") or by two-column vector reductions
# ("gluon-vec", red.global.add.v2.f32), or FlashAttention-2's Triton kernels on fa3's O and L ("triton").
BWD_CANDIDATES = ("gluon", "gluon-vec", "triton")
# The kernel that runs fa3's backward: in the recorded run (fa3-run2) FlashAttention-2's Triton kernels beat
# fa3_bwd at every shape (D=128, N=16384: 13.0 ms against 13.4 (gluon-vec) and 14.0 (gluon); D=64: 14.4 against
# 17.0), so the fa3 backend runs them; fa3_bwd stays, correct and tested, for the work NOTES.md lists.
BACKWARD = "triton"


def backward(q, k, v, o, lse, do, dlse, causal: bool, scale: float, kernel: str | None = None, opts=None):
    """dQ, dK, dV by `kernel`, one of BWD_CANDIDATES (None: BACKWARD). Grouped-query attention, Nq != Nk and the
    options (opts: the fa2 launcher's Options, not None: a window, softcap, packed sequences) run FlashAttention-2's
    Triton kernels, whatever `kernel` says: fa3_bwd takes plain attention only."""
    kernel = kernel or BACKWARD
    if kernel not in BWD_CANDIDATES:
        raise ValueError(f"kernel must be one of {', '.join(BWD_CANDIDATES)}; got {_cut(repr(kernel))}")
    needs_fa2 = q.shape[1] != k.shape[1] or q.shape[2] != k.shape[2] or opts is not None  # fa3_bwd: plain only
    if kernel.startswith("gluon") and not needs_fa2:
        return backward_gluon(q, k, v, o, lse, do, dlse, causal, scale, vec_atomic=kernel == "gluon-vec")
    return fa2_launcher.launcher().backward(q, k, v, o, lse, do, dlse, causal, scale, opts=opts)
