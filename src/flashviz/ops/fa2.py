"""flashviz.attention's FlashAttention-2 backend: the kernels of `algos/fa2_triton/kernel.py` launched on torch
tensors, and the checks of flashviz.attention's arguments.

Checks the inputs, picks the kernels' tiles (autotuned once per shape on a GPU, fixed small tiles under the
interpreter) and launches forward and backward (`Launcher`); flashviz.ops.library makes them torch operators and
flashviz.ops.attention the public functions. Needs torch and Triton (`flashviz[triton]`).
"""

from __future__ import annotations

import functools
import itertools
import math
import os
from dataclasses import dataclass

import torch

from flashviz.model.echo import ECHO_MAX, cut
from flashviz.runtime import precompile
from flashviz.runtime.interpreter import fix_interpreter
from flashviz.runtime.tma import tma_ready
from flashviz.runtime.tuning import TuningCache, bucket

SUPPORTED_D = (32, 64, 96, 128, 256)
SUPPORTED_DTYPES = (torch.bfloat16, torch.float16)
WINDOW_MAX = 1 << 28  # window sides above this are refused (the kernels pass an unbounded side as 2**30)
UNBOUNDED = 1 << 30
_INSTALL = "pip install 'flashviz[triton]'"


def interpreting() -> bool:
    """TRITON_INTERPRET=1: the kernels run on the CPU, in NumPy. Triton reads it when it is first imported (and
    when a kernel is decorated), so it must be set before that; it is read here again at every call."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "on")


def _cut(value: object, limit: int = ECHO_MAX) -> str:
    return cut(str(value), limit)


def plain(value):
    """NumPy's scalars as the Python values they hold (np.True_ is True, np.float32(0.5) is 0.5), as flashviz.trace
    takes them; anything else as given, for check_inputs to judge."""
    import numpy as np

    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    return value


def shown(value: object) -> str:
    """A value as a message quotes it: its repr, cut."""
    return _cut(repr(value))


def _shape(t) -> str:
    return _cut(tuple(t.shape))


def check_inputs(q, k, v, causal, scale, window=(-1, -1), softcap=0.0, varlen: bool = False) -> tuple[int, int]:
    """Raise ValueError, one line naming the argument and what is accepted, for anything the kernels can't take.
    Returns the window as two ints (left, right), -1 meaning unbounded."""
    check_tensors(q, k, v, varlen=varlen)
    left, right = check_arguments(causal, scale, window, softcap)
    check_softcap(q, scale, softcap)
    return left, right


def check_tensors(q, k, v, varlen: bool = False) -> None:
    """q, k, v as the kernels take them (shapes, head counts, D, dtype, layout, device): ValueError, one line."""
    layout = "(total, H, D)" if varlen else "(B, H, N, D)"
    dims = 3 if varlen else 4
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor of shape {layout}; got {_cut(type(t).__name__)}")
        if t.dim() != dims:
            raise ValueError(f"{name} must be a {dims}-d tensor {layout}; got {t.dim()}-d shape {_shape(t)}")
    if k.shape != v.shape:
        raise ValueError(f"k and v must have the same shape; got k {_shape(k)}, v {_shape(v)}")
    if varlen:
        (Nq, Hq, D), (Nk, Hkv, Dk) = q.shape, k.shape
        if min(Nq, Nk, Hq, Hkv) < 1:
            raise ValueError(f"total rows and H must be at least 1; got q {_shape(q)}, k {_shape(k)}")
    else:
        (B, Hq, Nq, D), (Bk, Hkv, Nk, Dk) = q.shape, k.shape
        if Bk != B:
            raise ValueError(f"q and k must have one batch size B; got q {_shape(q)}, k {_shape(k)}")
        if min(B, Hq, Nq, Hkv, Nk) < 1:
            raise ValueError(f"B, H and N must be at least 1; got q {_shape(q)}, k {_shape(k)}")
    if Dk != D:
        raise ValueError(f"q, k and v must have one head dimension D; got q {_shape(q)}, k {_shape(k)}")
    if Hq % Hkv:
        raise ValueError(
            f"q's heads must be a multiple of k's and v's (grouped-query attention); got Hq = {Hq}, Hkv = {Hkv}"
        )
    if D not in SUPPORTED_D:
        raise ValueError(f"head dimension D must be one of {', '.join(map(str, SUPPORTED_D))}; got {D}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype not in SUPPORTED_DTYPES:
            raise ValueError(f"{name} must be bfloat16 or float16; got {_cut(t.dtype)}")
        if t.stride(-1) != 1:
            raise ValueError(f"{name} must have a contiguous last dimension (stride 1); got stride {t.stride(-1)}")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k and v must have one dtype (bfloat16 or float16); got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"q, k and v must be on one device; got {q.device}, {k.device}, {v.device}")
    if q.device.type not in ("cuda", "cpu"):
        raise ValueError(
            f"q, k and v must be CUDA tensors (CPU tensors under TRITON_INTERPRET=1), holding their values; got "
            f"{_cut(q.device)}"
        )
    if q.device.type != "cuda":
        if not interpreting():
            raise ValueError(
                f"q, k and v must be CUDA tensors (CPU tensors only under TRITON_INTERPRET=1); got {_cut(q.device)}"
            )
        if not launcher().interpret:
            raise ValueError(
                "CPU tensors need Triton's interpreter: set TRITON_INTERPRET=1 before Triton is first imported "
                f"(it was imported without it); got {_cut(q.device)}"
            )


def check_arguments(causal, scale, window, softcap) -> tuple[int, int]:
    """The scalar arguments (causal, scale, window, softcap): ValueError, one line; the window as (left, right)."""
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be True or False; got {_cut(repr(causal))}")
    if scale is not None and (
        isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale)
    ):
        raise ValueError(f"scale must be None (1/sqrt(D)) or a finite number; got {_cut(repr(scale))}")
    if (
        not isinstance(window, (tuple, list))
        or len(window) != 2
        or not all(isinstance(w, int) and not isinstance(w, bool) for w in window)
    ):
        raise ValueError(f"window must be a pair of ints (left, right), -1 for unbounded; got {_cut(repr(window))}")
    if min(window) < -1 or max(window) > WINDOW_MAX:
        raise ValueError(f"window values must be -1 (unbounded) or 0 .. {WINDOW_MAX}; got {_cut(tuple(window))}")
    if isinstance(softcap, bool) or not isinstance(softcap, (int, float)) or not math.isfinite(softcap) or softcap < 0:
        raise ValueError(f"softcap must be a finite number >= 0 (0: no soft-capping); got {_cut(repr(softcap))}")
    return int(window[0]), int(window[1])


def check_softcap(q, scale, softcap) -> None:
    """A softcap the kernels compute right at q's default scale (1/sqrt(D)) or the one given (`softcap_range`)."""
    if softcap > 0:
        _check_softcap_range(float(softcap), 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale))


FLT_MIN, FLT_MAX = 2.0**-126, float.fromhex("0x1.fffffep+127")  # the least normal and the largest finite fp32


def softcap_range(scale: float) -> tuple[float, float]:
    """The caps the kernels compute right at this scale: they multiply the scores by scale / softcap and the tanh by
    softcap * log2(e) in fp32, so scale / softcap must be a finite normal fp32 (or 0, at scale 0) and softcap * log2(e)
    finite."""
    top = FLT_MAX / _LOG2E
    if scale == 0:
        return FLT_MIN, top
    return abs(scale) / FLT_MAX, min(top, abs(scale) / FLT_MIN)


def _check_softcap_range(softcap: float, scale: float) -> None:
    lo, hi = softcap_range(scale)
    if not lo <= softcap <= hi:
        raise ValueError(
            f"softcap must be 0 (no soft-capping) or {lo:.3g} .. {hi:.3g} at scale {scale:.3g} (scale / softcap "
            f"must be a normal fp32; a cap far above the scores caps nothing: pass 0); got {softcap:g}"
        )


def check_varlen(q, k, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k) -> tuple[int, int]:
    """The packed sequences' lengths: int32 cumulative lengths from 0 to the tensors' rows, increasing, one batch,
    and maxima that bound every sequence (checked on the host: one small copy from the GPU). Returns the maxima the
    kernels run with: a maximum past its tensor's total rows bounds nothing more than the total does (the grid is
    sized by it), so it is taken as the total."""
    for name, cu, t in (("cu_seqlens_q", cu_seqlens_q, q), ("cu_seqlens_k", cu_seqlens_k, k)):
        if not isinstance(cu, torch.Tensor) or cu.dtype != torch.int32 or cu.dim() != 1 or cu.numel() < 2:
            got = f"{cu.dtype} {_shape(cu)}" if isinstance(cu, torch.Tensor) else type(cu).__name__
            raise ValueError(f"{name} must be a 1-d int32 tensor of B + 1 >= 2 offsets; got {_cut(got)}")
        if cu.device != t.device:
            raise ValueError(f"{name} must be on q's device {t.device}; got {_cut(cu.device)}")
    if cu_seqlens_q.numel() != cu_seqlens_k.numel():
        raise ValueError(
            f"cu_seqlens_q and cu_seqlens_k must hold one batch (B + 1 offsets each); got {cu_seqlens_q.numel()} "
            f"and {cu_seqlens_k.numel()}"
        )
    for name, cu, t, mx, mname in (
        ("cu_seqlens_q", cu_seqlens_q, q, max_seqlen_q, "max_seqlen_q"),
        ("cu_seqlens_k", cu_seqlens_k, k, max_seqlen_k, "max_seqlen_k"),
    ):
        host = cu.tolist()
        if host[0] != 0:
            raise ValueError(f"{name} must start at 0; got {host[0]}")
        if any(b <= a for a, b in itertools.pairwise(host)):
            raise ValueError(f"{name} must be strictly increasing (every sequence at least 1 row); got {_cut(host)}")
        if host[-1] != t.shape[0]:
            raise ValueError(f"{name} must end at the total rows of its tensor ({t.shape[0]}); got {host[-1]}")
        if isinstance(mx, bool) or not isinstance(mx, int) or mx < 1:
            raise ValueError(f"{mname} must be an int >= 1; got {_cut(repr(mx))}")
        longest = max(b - a for a, b in itertools.pairwise(host))
        if mx < longest:
            raise ValueError(f"{mname} must be at least the longest sequence ({longest}); got {mx}")
    return min(max_seqlen_q, q.shape[0]), min(max_seqlen_k, k.shape[0])


# ----------------------------------------------------------------------------------------------------------
# Tiles
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tiles:
    """One launch configuration. Forward and dq: Br rows of Q per program, tiles of Bc keys. dkdv: Bc rows
    of K and V per program, blocks of Br queries. maxnreg caps registers per thread (two programs per SM)."""

    Br: int
    Bc: int
    num_warps: int = 4
    num_stages: int = 2
    maxnreg: int | None = None
    warp_specialize: bool = False

    def kwargs(self) -> dict:
        kw = {"Br": self.Br, "Bc": self.Bc, "num_warps": self.num_warps, "num_stages": self.num_stages}
        if self.maxnreg:
            kw["maxnreg"] = self.maxnreg
        return kw


def _padded(d: int) -> int:
    return 1 << (d - 1).bit_length()


# Candidates per padded head dimension, autotuned per (N, D, causal, dtype); a handful each, so that the first
# call at a new shape costs seconds, not minutes. Causal needs Br % Bc == 0 (forward, dq) and Bc % Br == 0
# (dkdv): the diagonal stage steps through whole tiles. Compiled for sm_90 without a GPU first
# (bench/attention_compile_check.py): tiles that spilled registers or overflowed shared memory were left out;
# Hopper warp specialisation (tl.range(warp_specialize=True)) compiled to the same code as without it, so no
# candidate asks for it. NOTES.md in bench/results/attention has the numbers.
FWD_TILES = {
    32: [Tiles(128, 64, 4, 3), Tiles(128, 128, 8, 3), Tiles(64, 64, 4, 3)],
    64: [
        Tiles(128, 64, 4, 3),
        Tiles(128, 64, 8, 3),
        Tiles(128, 64, 8, 4),
        Tiles(128, 64, 8, 5),
        Tiles(128, 128, 8, 3),
        Tiles(128, 128, 8, 4),
    ],
    128: [
        Tiles(128, 128, 8, 3),  # 225 KB of shared memory: the deepest pipeline 128x128 tiles allow
        Tiles(128, 64, 8, 3),
        Tiles(128, 64, 8, 4),
        Tiles(128, 64, 8, 5),
        Tiles(128, 64, 8, 2, maxnreg=128),  # 96 KB of shared memory, 128 registers: two programs per SM
        Tiles(256, 64, 16, 3, maxnreg=128),  # four warpgroups share each Kj, Vj; 128 registers, no spills
        Tiles(256, 64, 16, 4, maxnreg=128),
    ],
    256: [Tiles(64, 64, 4, 2), Tiles(128, 64, 8, 2), Tiles(64, 32, 4, 3)],
}
DKDV_TILES = {
    32: [Tiles(32, 128, 4, 3), Tiles(64, 128, 8, 3), Tiles(64, 64, 4, 3)],
    64: [Tiles(64, 128, 8, 3), Tiles(32, 128, 4, 3), Tiles(64, 64, 4, 3)],
    128: [Tiles(64, 128, 8, 2), Tiles(32, 128, 8, 3), Tiles(64, 64, 4, 2), Tiles(32, 64, 4, 3)],
    256: [Tiles(32, 64, 4, 2), Tiles(64, 64, 8, 2)],
}
DQ_TILES = {
    32: [Tiles(128, 64, 4, 3), Tiles(64, 64, 4, 3)],
    64: [Tiles(128, 64, 8, 3), Tiles(128, 64, 4, 3), Tiles(64, 64, 4, 3)],
    128: [Tiles(128, 64, 8, 2), Tiles(128, 64, 8, 3), Tiles(64, 64, 4, 3), Tiles(64, 64, 4, 2)],
    256: [Tiles(64, 64, 4, 2), Tiles(64, 32, 4, 2)],
}
# Under the interpreter: small tiles, several per block, so that every loop stage runs on small N.
INTERPRET_TILES = {"fwd": Tiles(32, 16), "dkdv": Tiles(16, 32), "dq": Tiles(32, 16), "split": Tiles(16, 16)}

# dQ by TMA reductions from the dkdv loop; by a second kernel; by the same kernels in one launch
BWD_VARIANTS = ("atomic", "two_kernels", "fused")
# fused: (dkdv Br, Bc), (dq Br, Bc), warps, stages -- one launch, so one warps/stages for both halves
FUSED_TILES = {
    32: [((64, 64), (64, 64), 4, 3)],
    64: [((32, 128), (128, 64), 4, 3), ((64, 64), (64, 64), 4, 3), ((64, 128), (128, 64), 8, 3)],
    128: [((64, 64), (64, 64), 4, 2), ((64, 128), (128, 64), 8, 2)],
    256: [((32, 64), (64, 64), 4, 2)],
}


# ----------------------------------------------------------------------------------------------------------
# Split-KV forward (Flash-Decoding)
# ----------------------------------------------------------------------------------------------------------
H200_SMS = 132  # the SM count the heuristic assumes without a GPU (the interpreter); on a GPU its own count
MAX_SPLITS = 128


# The split's rows per K/V head up to which the split forward streams K and V (decode: the heuristic aims at half
# the SMs, `num_splits`'s memory_bound); the split kernel's tiles are long there too (`split_tiles`).
STREAMING_ROWS = 64


def num_splits(programs: int, kv_tiles: int, sms: int = H200_SMS, max_splits: int = MAX_SPLITS,
               memory_bound: bool = False) -> int:  # fmt: skip
    """How many chunks S to split the keys into, for a grid of `programs` (blocks of packed rows x K/V heads) over
    `kv_tiles` tiles of keys: FlashAttention-2's num_splits_heuristic (flash_api.cpp). A grid that fills 80% of the
    SMs runs unsplit (S = 1). Otherwise, over S = 1 .. min(max_splits, sms, kv_tiles) -- skipping an S whose chunks
    are as long as those of S - 1, which would only add empty programs -- the wave efficiency of S is
    n / ceil(n) with n = programs * S / sms waves; the smallest S within 85% of the best efficiency is taken (about
    one full wave: more programs add partial carries to merge and nothing to hide).
    memory_bound (a few rows per K/V head, STREAMING_ROWS: decode): the largest S whose programs fill at most half
    the SMs. Measured on an H100 from CUDA graphs (bench/results/attention/features/2026-12-05-decode-tiles): one
    or 16 queries, 8 K/V heads, 8k to 128k keys, S = 8 (64 programs) took 29.3 to 199.4 us where the wave-filling
    S = 14 to 16 took 32.8 to 206.6 (HBM is full with half the SMs streaming; shorter chunks only add partials)."""
    if programs < 1 or kv_tiles < 1:
        raise ValueError(f"programs and kv_tiles must be at least 1; got {programs}, {kv_tiles}")
    if programs >= 0.8 * sms:
        return 1
    limit = min(max_splits, sms, kv_tiles)

    def eligible(s: int) -> bool:
        return s == 1 or math.ceil(kv_tiles / s) != math.ceil(kv_tiles / (s - 1))

    if memory_bound:
        target = max(1, min(limit, sms // 2 // programs))
        return max(s for s in range(1, target + 1) if eligible(s))

    def efficiency(s: int) -> float:
        waves = programs * s / sms
        return waves / math.ceil(waves)

    best = max(efficiency(s) for s in range(1, limit + 1) if eligible(s))
    return next(s for s in range(1, limit + 1) if eligible(s) and efficiency(s) >= 0.85 * best)


def split_tiles(rows: int, d: int) -> Tiles:
    """The split kernel's tiles for `rows` packed rows (Nq * group) per K/V head and padded head dimension d:
    Br the rows rounded up to a power of two, 16 (the smallest tl.dot) to 128; tiles of 64 keys at D = 256,
    otherwise 128 for up to STREAMING_ROWS rows (the decode case is memory bound: long tiles, few rows) and 64 above."""
    br = min(128, max(16, _padded(rows)))
    bc = 64 if d >= 256 or br > STREAMING_ROWS else 128
    return Tiles(br, bc, num_warps=4 if br <= 64 else 8, num_stages=2 if d >= 256 else 3)


@dataclass(frozen=True)
class SplitPlan:
    """The keys a split forward covers, [klo, klo + S * chunk) cut to Nk: the span that some query sees (a window
    or causal masking leaves the rest out), klo and chunk multiples of Bc."""

    S: int
    klo: int
    chunk: int
    programs: int  # blocks of packed rows x K/V heads (x batch), before the split


@functools.lru_cache(maxsize=4096)
def split_plan(B: int, Hkv: int, group: int, Nq: int, Nk: int, causal: bool, left: int, right: int, br: int,
               bc: int, sms: int = H200_SMS, splits: int | None = None) -> SplitPlan:  # fmt: skip
    """S from `num_splits` (or `splits`, forced) over the keys the queries see at all; left/right -1: unbounded.
    Memoized: a decode loop asks the same shape every step, and the heuristic's search was a fifth of a call's host
    time (bench/results/attention/features/2026-12-05-decode-probe)."""
    off = Nk - Nq
    if causal:
        right = 0 if right < 0 else min(right, 0)
    klo = max(off - left, 0) // bc * bc if left >= 0 else 0
    khi = min(Nq - 1 + off + right + 1, Nk) if right >= 0 else Nk
    programs = math.ceil(Nq * group / br) * B * Hkv
    if khi <= klo:  # no query sees a key: one chunk, no tile, O = 0 and L = -inf
        return SplitPlan(1, 0, bc, programs)
    tiles = math.ceil((khi - klo) / bc)
    streaming = Nq * group <= STREAMING_ROWS
    s = num_splits(programs, tiles, sms, memory_bound=streaming) if splits is None else max(1, min(splits, tiles))
    chunk = math.ceil(tiles / s) * bc
    return SplitPlan(math.ceil((khi - klo) / chunk), klo, chunk, programs)


@functools.cache
def _sm_count(index: int) -> int:
    """The SMs of CUDA device `index` (asked once: the property call is host time on every decode step)."""
    return torch.cuda.get_device_properties(index).multi_processor_count


def _load_kernels():
    """algos/fa2_triton/kernel.py, compiled or interpreted as Triton decided when it was first imported."""
    try:
        import triton  # noqa: F401
    except ImportError as e:
        raise ImportError(f"flashviz.attention needs Triton: {_INSTALL} ({_cut(e)})") from None
    from triton.runtime.interpreter import InterpretedFunction

    from flashviz.algos.fa2_triton import kernel as fa2_triton

    interpret = isinstance(fa2_triton.fa2_fwd, InterpretedFunction)
    if interpret:
        fix_interpreter()
    return fa2_triton, interpret


def _scratch(size: int, alignment: int, stream):
    return torch.empty(size, dtype=torch.int8, device="cuda")


def _ensure_allocator(allocation) -> None:
    """Device-side tensor descriptors need scratch memory; Triton asks for it through a context-local allocator,
    so it is set in whichever thread launches (autograd runs the backward in a thread of its own)."""
    if allocation._allocator.get() is allocation._NULL_ALLOCATOR:
        allocation.set_allocator(_scratch)


def bucketed(key: tuple) -> tuple:
    """A launch's key (Nq, Nk, Dv, causal, dtype, group, *options) with Nq and Nk taken to their buckets."""
    nq, nk, *rest = key
    return (bucket(nq), bucket(nk), *rest)


def bucketed_shape(shape, lengths: tuple[int, ...]) -> tuple[int, ...]:
    """A tensor's shape with its length dimensions (`lengths`) taken to their buckets."""
    return tuple(bucket(n) if i in lengths else int(n) for i, n in enumerate(shape))


def _triton_configs(tiles: list[Tiles], **extra):
    import triton

    return [
        triton.Config({"Br": t.Br, "Bc": t.Bc, **extra}, num_warps=t.num_warps, num_stages=t.num_stages,
                      maxnreg=t.maxnreg)
        for t in tiles
    ]  # fmt: skip


def _prune(rule):
    def prune(configs, named_args, **kwargs):
        kept = [c for c in configs if not kwargs.get("CAUSAL") or rule(c.kwargs["Br"], c.kwargs["Bc"])]
        return kept or configs[:1]

    return prune


def _prune_fused(configs, named_args, **kwargs):
    kept = [
        c
        for c in configs
        if not kwargs.get("CAUSAL") or (c.kwargs["Bc"] % c.kwargs["Br"] == 0 and c.kwargs["BrQ"] % c.kwargs["BcQ"] == 0)
    ]
    return kept or configs[:1]


def _quiet_interpreter(launch):
    """Under the interpreter the kernels' arithmetic runs in NumPy, which warns at what the kernels mean to compute:
    log2(0) = -inf, the L of a row that sees no key; exp2 of a large score = inf in softcap's tanh, and the series
    beside it, which `where` then drops. Those warnings are silenced there (the values are checked)."""

    @functools.wraps(launch)
    def run(self, *args, **kwargs):
        if not self.interpret:
            return launch(self, *args, **kwargs)
        import numpy as np

        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            return launch(self, *args, **kwargs)

    return run


class Launcher:
    """The kernels of one mode (compiled or interpreted) and their tuned launches."""

    def __init__(self):
        import triton
        from triton.runtime import _allocation

        self.km, self.interpret = _load_kernels()
        self.allocation = _allocation
        self.tuned: dict = {}
        # (kernel, D, bucketed key) -> the autotuner's choice, launched directly; a new length in a bucket seen
        # before (flashviz.runtime.tuning.bucket) takes it at once, and so does a new process where `cache` has it
        self.best: dict = {}
        self.bwd_variant: dict = {}  # (bucketed shapes, causal, dtype, options) -> the faster of BWD_VARIANTS
        self.cache: TuningCache | None = None  # the choices on disk, for this GPU (made at the first tuned launch)
        self.variant_ms: dict = {}  # the same key -> {variant: ms}, for the benchmark's notes
        self.compiled: dict = {}  # kernel name ("fwd", "dq", ...) -> its last launch's CompiledKernel (on a GPU)
        self.capture: list | None = None  # while gathering candidates to compile (flashviz.runtime.precompile)
        self.precompiled: set = set()  # their specializations, compiled into Triton's cache already
        if self.interpret:
            return
        key = ["N", "Nk", "Dv", "CAUSAL"]
        for d in FWD_TILES:
            self.tuned["fwd", d] = triton.autotune(
                _triton_configs(FWD_TILES[d], WARP_SPECIALIZE=False),
                key=key,
                prune_configs_by={"early_config_prune": _prune(lambda br, bc: br % bc == 0)},
            )(self.km.fa2_fwd)
            prune_dkdv = {"early_config_prune": _prune(lambda br, bc: bc % br == 0)}
            self.tuned["dkdv", d] = triton.autotune(
                _triton_configs(DKDV_TILES[d]), key=key, prune_configs_by=prune_dkdv
            )(self.km.fa2_bwd_dkdv)
            self.tuned["dkdv_atomic", d] = triton.autotune(
                _triton_configs(DKDV_TILES[d]), key=key, prune_configs_by=prune_dkdv, reset_to_zero=["dQ"]
            )(self.km.fa2_bwd_dkdv)
            self.tuned["fused", d] = triton.autotune(
                [
                    triton.Config({"Br": a[0], "Bc": a[1], "BrQ": b[0], "BcQ": b[1]}, num_warps=w, num_stages=st)
                    for a, b, w, st in FUSED_TILES[d]
                ],
                key=key,
                prune_configs_by={"early_config_prune": _prune_fused},
            )(self.km.fa2_bwd_fused)
            self.tuned["dq", d] = triton.autotune(
                _triton_configs(DQ_TILES[d]),
                key=key,
                prune_configs_by={"early_config_prune": _prune(lambda br, bc: br % bc == 0)},
            )(self.km.fa2_bwd_dq)

    # -- launches ----------------------------------------------------------------------------------------
    def _launch(self, name: str, kernel, d: int, tiles: Tiles | None, key: tuple, grid, *args, **kwargs):
        """Launch `kernel` with the given tiles (interpreted: the fixed ones); with none on a GPU, tune once per
        bucket of the key (flashviz.runtime.tuning: in this process, or a process before it on this GPU) through
        Triton's autotuner, then launch the plain kernel with its choice (less work per call)."""
        if tiles is None and not self.interpret:
            at = ("config", name, d, *bucketed(key))
            best = self.best.get(at)
            if best is None:
                best = self.best[at] = self._cache(args[0]).get(at)
            if best is None:
                tuner = self.tuned[name, d]
                self._precompile(tuner, grid, args, kwargs)
                if self.capture is not None:  # the backward's variants gather their candidates first
                    return
                self.compiled[name] = tuner[grid](*args, **kwargs)
                self.best[at] = tuner.best_config.all_kwargs()
                self._cache(args[0]).put(at, self.best[at])
                return
            self.compiled[name] = kernel[grid](*args, **kwargs, **best)
            return
        t = tiles or INTERPRET_TILES["dkdv" if name.startswith("dkdv") else name]
        kw = t.kwargs()
        if name == "fwd":
            kw["WARP_SPECIALIZE"] = t.warp_specialize
        self.compiled[name] = kernel[grid](*args, **kwargs, **kw)

    def _precompile(self, tuner, grid, args: tuple, kwargs: dict) -> None:
        """The candidates `tuner` is about to compile, compiled in parallel (gathered while self.capture is a
        list, to compile several kernels' candidates at once)."""
        if not precompile.workers(2):
            return
        try:
            jobs = precompile.specializations(tuner, grid, args, kwargs)
        except Exception:  # a Triton whose hook differs: the autotuner compiles them one by one
            return
        jobs = [job for job in jobs if job["spec"] not in self.precompiled]
        if self.capture is not None:
            self.capture.extend(jobs)
            return
        precompile.compile_all(jobs)
        self.precompiled.update(j["spec"] for j in jobs)

    @_quiet_interpreter
    def forward(self, q, k, v, causal: bool, scale: float, tiles: Tiles | None = None, precision: str | None = None,
                opts: Options | None = None, splits: int | None = None):  # fmt: skip
        """O and L. precision: tl.dot's input_precision for float32 inputs ("ieee" or "tf32"; `forward_fp32`).
        opts: the window, soft-capping and packed sequences (None: plain attention over (B, H, N, D)).
        splits: None -- the split-KV kernels where `num_splits` says the grid would leave SMs idle (tuned tiles
        only: with `tiles` given, fa2_fwd runs them); 0 -- never; S >= 1 -- the split kernels with S chunks
        (`tiles`, if given, are theirs). Packed sequences and float32 always run fa2_fwd."""
        import triton

        if not self.interpret:
            _ensure_allocator(self.allocation)
        opts = opts or PLAIN
        g = _geometry(q, k, opts)
        if not g.varlen and precision is None and splits != 0 and (splits is not None or tiles is None):
            t = tiles or (INTERPRET_TILES["split"] if self.interpret else split_tiles(g.Nq * (g.Hq // g.Hkv), g.D))
            sms = H200_SMS if self.interpret else _sm_count(q.device.index)
            plan = split_plan(g.B, g.Hkv, g.Hq // g.Hkv, g.Nq, g.Nk, causal, opts.left, opts.right, t.Br, t.Bc, sms,
                              splits)  # fmt: skip
            # decode (a few rows per K/V head against a longer cache) takes the split kernel even unsplit: it packs
            # the q heads of one K/V head into a tile's rows, so K and V are read once per K/V head, not once per q
            # head as fa2_fwd reads them
            decode = g.Nq < g.Nk and g.Nq * (g.Hq // g.Hkv) <= STREAMING_ROWS
            if splits is not None or plan.S > 1 or decode:
                return self._split_forward(q, k, v, causal, scale, opts, g, t, plan)
        o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        lse = torch.empty(g.lse_shape, dtype=torch.float32, device=q.device)
        grid = lambda meta: (triton.cdiv(g.Nq, meta["Br"]), g.B * g.Hq)  # noqa: E731
        self._launch(
            "fwd", self.km.fa2_fwd, g.D, tiles, g.key(causal, q.dtype, opts), grid,
            q, k, v, o, lse, *g.strides(q), *g.strides(k), *g.strides(v), *g.strides(o),
            g.Hq, g.Nq, g.Dv, opts.qk_scale(scale), D=g.D, CAUSAL=causal, SCALE_FIRST=opts.scale_first(scale),
            **({} if precision is None else {"INPUT_PRECISION": precision}),
            **g.extra(opts),
        )  # fmt: skip
        return o, lse

    def _split_forward(self, q, k, v, causal, scale, opts: Options, g: _Geometry, t: Tiles, plan: SplitPlan):
        """fa2_fwd_split over plan.S chunks of the keys, then fa2_fwd_combine: O, L as `forward` returns them.
        Always SCALE_FIRST (the same math): Triton 3.6's pipeliner fails on the split loop that scales after the max
        at Br >= 64 ("PassManager::run failed", bench/attention_compile_check.py --split)."""
        group = g.Hq // g.Hkv
        rows = g.Nq * group
        o = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        lse = torch.empty(g.lse_shape, dtype=torch.float32, device=q.device)
        o_part = torch.empty(plan.S, g.B * g.Hkv, rows, g.D, dtype=torch.float32, device=q.device)
        l_part = torch.empty(plan.S, g.B * g.Hkv, rows, dtype=torch.float32, device=q.device)
        nk, _, left, right, softcap2, *_ = g.runtime(opts)
        grid = (plan.S, math.ceil(rows / t.Br), g.B * g.Hkv)
        self.compiled["split"] = self.km.fa2_fwd_split[grid](
            q, k, v, o_part, l_part, *g.strides(q), *g.strides(k), *g.strides(v),
            g.Hkv, g.Nq, nk, g.Dv, opts.qk_scale(scale), left, right, softcap2, plan.klo, plan.chunk,
            GROUP=group, D=g.D, Br=t.Br, Bc=t.Bc, CAUSAL=causal, SCALE_FIRST=True,
            SOFTCAP=opts.softcap > 0, BAND_LEFT=opts.left >= 0, num_warps=t.num_warps, num_stages=t.num_stages,
        )  # fmt: skip
        block = 16 if self.interpret else 32
        self.compiled["combine"] = self.km.fa2_fwd_combine[(math.ceil(rows / block), g.B * g.Hkv)](
            o_part, l_part, o, lse, o.stride(1), o.stride(2), g.Hkv, g.Nq, g.Dv, plan.S,
            GROUP=group, D=g.D, BLOCK=block, num_warps=4,
        )  # fmt: skip
        return o, lse

    @_quiet_interpreter
    def backward(self, q, k, v, o, lse, do, dlse, causal: bool, scale: float, variant: str | None = None,
                 tiles: dict | None = None, opts: Options | None = None):  # fmt: skip
        """dQ, dK, dV. variant: one of BWD_VARIANTS (None: the faster one); tiles: {"dkdv": .., "dq": ..}."""
        import triton

        if not self.interpret:
            _ensure_allocator(self.allocation)
        opts = opts or PLAIN
        g = _geometry(q, k, opts)
        delta = torch.empty_like(lse)
        pre = 64
        # rows are independent: packed sequences run as one batch of `total` rows
        rows, heads = (q.shape[0], g.Hq) if opts.varlen else (g.Nq, g.B * g.Hq)
        self.km.fa2_bwd_preprocess[(triton.cdiv(rows, pre), heads)](
            o, do, dlse if dlse is not None else lse, delta, *g.strides(o), *g.strides(do),
            g.Hq, rows, g.Dv, D=g.D, Br=pre, HAS_DL=dlse is not None,
        )  # fmt: skip
        if variant is None:
            variant = self._choose_variant(q, k, v, do, lse, delta, causal, scale, opts)
        return self.main_backward(q, k, v, do, lse, delta, causal, scale, variant, tiles or {}, opts)

    def main_backward(self, q, k, v, do, lse, delta, causal, scale, variant, tiles, opts: Options | None = None):
        """The backward after its preprocessing (Delta given): dkdv, then dq by reductions or a second kernel."""
        import triton

        opts = opts or PLAIN
        g = _geometry(q, k, opts)
        dk = torch.empty(k.shape, dtype=k.dtype, device=k.device)
        dv = torch.empty(v.shape, dtype=v.dtype, device=v.device)
        common = (g.Hq, g.Nq, g.Dv, scale, opts.qk_scale(scale), *g.runtime(opts))
        flags = {"SOFTCAP": opts.softcap > 0, "VARLEN": opts.varlen, "BAND_LEFT": opts.left >= 0}
        key = g.key(causal, q.dtype, opts)
        if variant == "fused":
            return self._fused_backward(q, k, v, do, lse, delta, dk, dv, causal, common, tiles, g, key, flags)
        atomic = variant == "atomic"
        if atomic:
            dq_acc = torch.zeros(q.shape, dtype=torch.float32, device=q.device)
            dq_args = (dq_acc, *g.strides(dq_acc))
        else:
            dq_args = (lse, 0, 0, 0)  # unused
        self._launch(
            "dkdv_atomic" if atomic else "dkdv", self.km.fa2_bwd_dkdv, g.D, tiles.get("dkdv"), key,
            lambda meta: (triton.cdiv(g.Nk, meta["Bc"]), g.B * g.Hkv),
            q, k, v, do, lse, delta, dq_args[0], dk, dv,
            *g.strides(q), *g.strides(k), *g.strides(v), *g.strides(do),
            *dq_args[1:], *g.strides(dk), *g.strides(dv), *common,
            D=g.D, CAUSAL=causal, DQ_ATOMIC=atomic, TMA_REDUCE=atomic and not self.interpret, **flags,
        )  # fmt: skip
        if atomic:
            return dq_acc.mul_(scale).to(q.dtype), dk, dv
        dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        self._launch(
            "dq", self.km.fa2_bwd_dq, g.D, tiles.get("dq"), key,
            lambda meta: (triton.cdiv(g.Nq, meta["Br"]), g.B * g.Hq),
            q, k, v, do, lse, delta, dq,
            *g.strides(q), *g.strides(k), *g.strides(v), *g.strides(do), *g.strides(dq), *common,
            D=g.D, CAUSAL=causal, **flags,
        )  # fmt: skip
        return dq, dk, dv

    def _fused_backward(self, q, k, v, do, lse, delta, dk, dv, causal, common, tiles, g, key, flags):
        import triton

        dq = torch.empty(q.shape, dtype=q.dtype, device=q.device)
        args = (
            q, k, v, do, lse, delta, dq, dk, dv,
            *g.strides(q), *g.strides(k), *g.strides(v), *g.strides(do), *g.strides(dq), *g.strides(dk),
            *g.strides(dv), *common,
        )  # fmt: skip
        grid = lambda meta: (triton.cdiv(g.Nk, meta["Bc"]) + triton.cdiv(g.Nq, meta["BrQ"]), g.B * g.Hq)  # noqa: E731
        if "dkdv" not in tiles and not self.interpret:
            self._launch("fused", self.km.fa2_bwd_fused, g.D, None, key, grid, *args, D=g.D, CAUSAL=causal, **flags)
        else:
            t, tq = tiles.get("dkdv") or INTERPRET_TILES["dkdv"], tiles.get("dq") or INTERPRET_TILES["dq"]
            self.km.fa2_bwd_fused[grid](*args, D=g.D, CAUSAL=causal, **t.kwargs(), BrQ=tq.Br, BcQ=tq.Bc, **flags)
        return dq, dk, dv

    def _choose_variant(self, q, k, v, do, lse, delta, causal, scale, opts: Options | None = None) -> str:
        """Under the interpreter: atomic (tests pick each). On a GPU: time each once per shape (each tunes its
        own tiles on its first run) and keep the fastest."""
        if self.interpret:
            return "atomic"
        opts = opts or PLAIN
        lengths = (0,) if opts.varlen else (2,)  # packed (total, H, D): its total; (B, H, N, D): N
        key = ("variant", *bucketed_shape(q.shape, lengths), *bucketed_shape(k.shape, lengths), causal, q.dtype,
               *opts.kind())  # fmt: skip
        if key not in self.bwd_variant and self._cache(q).get(key) in BWD_VARIANTS:
            self.bwd_variant[key] = self._cache(q).get(key)
        if key not in self.bwd_variant:
            from triton.testing import do_bench

            if precompile.workers(2):  # every variant's candidates compiled at once, before the timing
                self.capture = []
                try:
                    for variant in BWD_VARIANTS:
                        self.main_backward(q, k, v, do, lse, delta, causal, scale, variant, {}, opts)
                finally:
                    jobs, self.capture = self.capture, None
                precompile.compile_all(jobs)
                self.precompiled.update(j["spec"] for j in jobs)
            ms = {}
            for variant in BWD_VARIANTS:
                run = functools.partial(self.main_backward, q, k, v, do, lse, delta, causal, scale, variant, {}, opts)
                run()  # tunes this variant's tiles
                ms[variant] = do_bench(run, warmup=10, rep=50, return_mode="median")
            self.bwd_variant[key] = min(ms, key=lambda variant: ms[variant])
            self.variant_ms[key] = ms
            self._cache(q).put(key, self.bwd_variant[key])
        return self.bwd_variant[key]

    def choice(self, name: str, d: int, key: tuple) -> dict | None:
        """The tiles the autotuner chose for kernel `name` at head dimension `d` and a launch's key (its bucket)."""
        return self.best.get(("config", name, d, *bucketed(key)))

    def _cache(self, t) -> TuningCache:
        """The tuned choices of t's GPU, this Triton and these kernels (flashviz.runtime.tuning), read once."""
        if self.cache is None:
            import inspect

            import triton

            sources = [inspect.getsource(self.km), repr((FWD_TILES, DKDV_TILES, DQ_TILES, FUSED_TILES))]
            gpu = torch.cuda.get_device_name(t.device)
            self.cache = TuningCache.for_gpu(gpu, triton.__version__, sources)
        return self.cache


@dataclass(frozen=True, eq=False)
class Options:
    """What a call asks beyond plain attention: the band (left, right; -1 unbounded), soft-capping (0: none) and
    packed sequences (cu_q, cu_k: int32 cumulative lengths; max_q, max_k: the longest)."""

    left: int = -1
    right: int = -1
    softcap: float = 0.0
    cu_q: torch.Tensor | None = None
    cu_k: torch.Tensor | None = None
    max_q: int = 0
    max_k: int = 0

    @property
    def varlen(self) -> bool:
        return self.cu_q is not None

    def scale_first(self, scale: float) -> bool:
        """The forward scales (and caps) each score before its max: a scale <= 0, or soft-capping."""
        return scale <= 0 or self.softcap > 0

    def qk_scale(self, scale: float) -> float:
        """What the kernels multiply the scores by: scale / c inside the tanh when capping, else scale * log2(e)."""
        return scale / self.softcap if self.softcap > 0 else scale * _LOG2E

    def kind(self) -> tuple:
        return (self.left >= 0, self.right >= 0, self.softcap > 0, self.varlen)


PLAIN = Options()


@dataclass(frozen=True)
class _Geometry:
    """Sizes of one call as the kernels take them (packed: Nq, Nk the longest sequences, B their count)."""

    B: int
    Hq: int
    Hkv: int
    Nq: int
    Nk: int
    Dv: int
    varlen: bool

    @property
    def D(self) -> int:
        return _padded(self.Dv)

    @property
    def lse_shape(self) -> tuple:
        return (self.Hq, self.total_q) if self.varlen else (self.B, self.Hq, self.Nq)

    total_q: int = 0

    def strides(self, t) -> tuple[int, int, int]:
        """(batch, head, row) strides: packed (total, H, D) tensors have no batch stride (rows are offset)."""
        return (0, t.stride(1), t.stride(0)) if self.varlen else (t.stride(0), t.stride(1), t.stride(2))

    def runtime(self, opts: Options) -> tuple:
        """The kernels' Nk, GROUP, LEFT, RIGHT, softcap2, cu_q, cu_k, LN."""
        left = opts.left if opts.left >= 0 else UNBOUNDED
        right = opts.right if opts.right >= 0 else UNBOUNDED
        ln = self.total_q if self.varlen else self.Nq
        return (self.Nk, self.Hq // self.Hkv, left, right, opts.softcap * _LOG2E, opts.cu_q, opts.cu_k, ln)

    def extra(self, opts: Options) -> dict:
        """fa2_fwd's keyword arguments past its defaults."""
        nk, group, left, right, softcap2, cu_q, cu_k, ln = self.runtime(opts)
        return dict(Nk=nk, GROUP=group, LEFT=left, RIGHT=right, softcap2=softcap2, SOFTCAP=opts.softcap > 0,
                    VARLEN=self.varlen, cu_q=cu_q, cu_k=cu_k, LN=ln, BAND_LEFT=opts.left >= 0)  # fmt: skip

    def key(self, causal: bool, dtype, opts: Options) -> tuple:
        return (self.Nq, self.Nk, self.Dv, causal, dtype, self.Hq // self.Hkv, *opts.kind())


def _geometry(q, k, opts: Options) -> _Geometry:
    if opts.varlen:
        assert opts.cu_q is not None  # checked with the varlen arguments
        return _Geometry(opts.cu_q.numel() - 1, q.shape[1], k.shape[1], opts.max_q, opts.max_k, q.shape[2], True,
                         total_q=q.shape[0])  # fmt: skip
    return _Geometry(q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], False)


_LOG2E = 1.4426950408889634


def _strides(t) -> tuple[int, int, int]:
    return t.stride(0), t.stride(1), t.stride(2)


@functools.cache
def launcher() -> Launcher:
    return Launcher()


# Where fa3's forward with the options measured faster than fa2's, so auto runs it: D = 128, causal, at least this
# many queries per sequence. The two feature runs of 2026-12-05 (an H100, every provider in one process;
# bench/results/attention/features/2026-12-05-nvidia-h100 and -run2), GQA 32/8, fa3 against fa2, forward TFLOP/s:
# GQA N=8k 634, 642 against 483, 495; a cache Nq=2k Nk=16k 643 against 524; a window of 4096 at N=32k 627, 579
# against 483, 491; softcap 50 at N=8k 355, 345 against 307, 337; 64 packed sequences of 91 to 3,994 tokens 412, 378
# against 350, 371. With 1 to 128 queries against a cache (decode) fa2's split-KV forward was 2 to 10x faster; in
# between, not causal, at D = 64 and with more queries than keys, fa3 was not timed with the options.
FA3_OPTIONS_MIN_QUERIES = 2048


def unmeasured(q, k, window, softcap, varlen: bool, causal: bool = False, queries: int = 0) -> str | None:
    """What of a call fa3 takes but was not timed faster than fa2 for (None: nothing), in words, for
    `attention_backends.choose`: fa3 runs it when asked (backend="fa3"), auto keeps fa2 for it. Grouped-query
    attention (fa3's forward reads K/V head h // group since issue 22), Nq != Nk, a window, softcap and packed
    sequences (compiled into fa3's forward where a call asks for them); the backward of each is fa2's. None, too,
    where they were timed and fa3 was faster: D = 128, causal, `queries` (Nq, or max_seqlen_q) at least
    FA3_OPTIONS_MIN_QUERIES, and (dense) no more queries than keys."""
    what = []
    if q.shape[1] != k.shape[1]:  # H is dimension 1 in both layouts
        what.append("grouped-query attention")
    if not varlen and q.shape[2] != k.shape[2]:
        what.append("Nq != Nk")
    if tuple(window) != (-1, -1):
        what.append("a window")
    if softcap:
        what.append("softcap")
    if varlen:
        what.append("packed sequences")
    more_queries_than_keys = not varlen and q.shape[2] > k.shape[2]  # not among the timed cases
    if q.shape[-1] == 128 and causal and queries >= FA3_OPTIONS_MIN_QUERIES and not more_queries_than_keys:
        return None
    return ", ".join(what) or None


FP32_PRECISIONS = ("ieee", "tf32")


def _forward_fp32(q, k, v, tiles: Tiles | None, precision: str, causal: bool = False, scale: float | None = None):
    """The ladder's private fp32 rungs (bench/ladder_bench.py), not part of `attention`'s API: fa2_fwd on float32
    q, k, v (B, H, N, D) with fixed tiles (on a GPU), tl.dot at `precision` -- "ieee" (CUDA cores, fp32 products)
    or "tf32" (tensor cores, operands cut to tf32). Returns (O float32, L). Forward only, no autograd."""
    if precision not in FP32_PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(FP32_PRECISIONS)}; got {_cut(repr(precision))}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
            raise ValueError(f"{name} must be a float32 torch.Tensor; got {_cut(getattr(t, 'dtype', type(t)))}")
    if q.dim() != 4 or not (q.shape == k.shape == v.shape) or q.shape[-1] not in SUPPORTED_D:
        raise ValueError(f"q, k, v must share one shape (B, H, N, D), D in {SUPPORTED_D}; got {_cut(tuple(q.shape))}")
    run = launcher()
    if tiles is None and not run.interpret:
        raise ValueError("tiles must be given on a GPU: the autotuner's candidates are bf16 tile sets")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    q, k, v = (tma_ready(t) for t in (q, k, v))
    return run.forward(q, k, v, causal, scale, tiles=tiles, precision=precision)
