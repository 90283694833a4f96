"""kernel.py's Gluon kernels launched on torch tensors on a Hopper GPU, and compiled for sm_90 without a GPU (what
CI checks). flashviz.attention's fa3 backend (flashviz.ops.fa3, flashviz.ops.library) and this folder's GPU launch
(`gpu.py`) run them through `forward`.

Launches: the forward persistent over min(blocks, SMs) programs, one warpgroup of 4 warps plus a second one and a
producer warp (gl.warp_specialize), registers capped at MAXNREG at entry and moved by setmaxnreg; the backward
(`backward_gluon`) one program per 128 rows of K, V, then dQ = scale * (the fp32 buffer the kernel added into).

The options of issue 22 (Nq != Nk with causal aligned to the bottom-right, a sliding window, softcap, packed
sequences; `option_flags`) are compiled into the forward only where a call asks for them (fa3_fwd's constexprs,
`OptionFlags`): without them the forward is the same kernel, the same PTX, as before they existed. Their backward
is FlashAttention-2's on fa3's O and L (flashviz.ops.fa3.backward; L the log-sum-exp of the capped scores where
softcap is on). Needs torch and Triton 3.6 with Gluon (`flashviz[triton]`), and, to run, an sm_90 GPU.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import Any

import torch

from flashviz.model.echo import ECHO_MAX, cut

SUPPORTED_D = (64, 128)
SUPPORTED_DTYPES = (torch.bfloat16, torch.float16)
BR = 128  # rows of Q per forward block (two consumer warpgroups of 64), rows of K, V per backward block
BWD_BR = 64  # rows of Q per backward step


@dataclass(frozen=True)
class FwdConfig:
    """One forward launch: the tile of keys, the depth of the K/V ring, and which of FA3's ideas are on."""

    Bc: int = 128
    stages: int = 2
    pingpong: bool = True  # the two consumers take turns on the tensor cores
    overlap: bool = True  # Sij of tile j+1 issued with P V of tile j, softmax under P V
    persistent: bool = True  # min(blocks, SMs) programs, each looping over blocks
    kv_first: bool = False  # the producer loads a block's first Kj, Vj before its Qi
    fast_tanh: bool = False  # softcap's tanh by tanh.approx.f32 (one MUFU op) instead of an exp2 and a division

    def name(self) -> str:
        parts = ["ws"] + [n for n, on in (("pingpong", self.pingpong), ("overlap", self.overlap)) if on]
        parts += [n for n, on in (("persistent", self.persistent), ("kv_first", self.kv_first)) if on]
        parts += ["fast_tanh"] if self.fast_tanh else []
        return "+".join(parts) + f" Bc={self.Bc} stages={self.stages}"


# Per head dimension; shared memory per program: D=128 196 KB (2 stages), D=64 131 KB (3 stages), 164 KB (4);
# compiled for sm_90 on the CPU first (tests/test_fa3_compile.py): 240 registers per consumer thread, no spills in
# the loops. FWD_CANDIDATES: every config the recorded run checked and timed (bench/attention_bench.py).
FWD_CONFIGS = {128: FwdConfig(Bc=128, stages=2), 64: FwdConfig(Bc=128, stages=3)}
FWD_CANDIDATES = {
    128: [
        FWD_CONFIGS[128],
        replace(FWD_CONFIGS[128], persistent=False),
        replace(FWD_CONFIGS[128], kv_first=True),
        replace(FWD_CONFIGS[128], persistent=False, kv_first=True),
    ],
    64: [
        FWD_CONFIGS[64],
        replace(FWD_CONFIGS[64], persistent=False),
        replace(FWD_CONFIGS[64], kv_first=True),
        replace(FWD_CONFIGS[64], stages=4),
        replace(FWD_CONFIGS[64], pingpong=False),
        replace(FWD_CONFIGS[64], pingpong=False, persistent=False),
    ],
}
BWD_STAGES = {128: 2, 64: 2}


@dataclass(frozen=True)
class OptionFlags:
    """The forward's options as fa3_fwd compiles them (its constexprs; each off: compiled out). band: the blocks'
    sequences and bands found at run time (Nq != Nk, a window, packed sequences); band_left: the window's left side
    is bounded; softcap: 0 off, 1 tanh by exp2 (CAP_EXACT), 2 tanh.approx.f32 (CAP_FAST); varlen: packed sequences."""

    band: bool = False
    band_left: bool = False
    softcap: int = 0
    varlen: bool = False

    def constexprs(self) -> dict:
        return {"BAND": self.band, "BAND_LEFT": self.band_left, "SOFTCAP": self.softcap, "VARLEN": self.varlen}

    def name(self) -> str:
        on = [n for n, v in (("band", self.band), ("left", self.band_left), ("varlen", self.varlen)) if v]
        on += [("softcap", "softcap-fast")[self.softcap - 1]] if self.softcap else []
        return "+".join(on) or "plain"


NO_OPTIONS = OptionFlags()


def forward_config(d: int, n: int, causal: bool) -> FwdConfig:
    """The forward config the launches use: per shape, the fastest the recorded run measured (2026-12-01, H200,
    bench/results/attention/logs/fa3-run2, its ablation rows and fa3 rows; NOTES.md "fa3"). Persistent programs
    in a fixed order lost to the hardware's own block order from N = 8192 up (D=128, N=16384: 558 against 640
    TFLOP/s non-causal, 541 against 596 causal) and won at N = 4096 (D=64: 439 against 421; 369 against 346).
    Ping-pong and intra-warpgroup overlap stay on; kv_first and 4 stages measured within noise: off."""
    return replace(FWD_CONFIGS[d], persistent=n <= 4096)


# The ablation of the FA3 paper's table, each a rung of `flashviz ladder` and a row of the benchmark.
ABLATION = {
    "warp specialization": dict(pingpong=False, overlap=False, persistent=False),
    "+ ping-pong": dict(pingpong=True, overlap=False, persistent=False),
    "+ intra-warpgroup overlap": dict(pingpong=True, overlap=True, persistent=False),
    "+ persistent": dict(pingpong=True, overlap=True, persistent=True),
}


def ablation_config(d: int, rung: str) -> FwdConfig:
    return replace(FWD_CONFIGS[d], **ABLATION[rung])


def _cut(value: object, limit: int = ECHO_MAX) -> str:
    return cut(str(value), limit)


@functools.cache
def unavailable() -> str | None:
    """Why fa3 cannot run here (None: it can): it needs a CUDA GPU of compute capability 9.0 and Triton's Gluon."""
    if not torch.cuda.is_available():
        return "no CUDA GPU"
    major, minor = torch.cuda.get_device_capability()
    if (major, minor) != (9, 0):
        return f"the GPU is sm_{major}{minor}, fa3 needs sm_90 (Hopper)"
    try:
        from triton.experimental import gluon  # noqa: F401
    except ImportError as e:
        return f"Triton's Gluon is missing ({_cut(e)}); pip install 'flashviz[triton]'"
    return None


# ----------------------------------------------------------------------------------------------------------
# Descriptors and launches
# ----------------------------------------------------------------------------------------------------------
def _gl_dtype(dtype):
    from triton.experimental.gluon import language as gl

    return {torch.bfloat16: gl.bfloat16, torch.float16: gl.float16}[dtype]


def tile_layout(rows: int, d: int, dtype, swizzle: int | None = None):
    """The shared-memory layout of a [1, 1, rows, d] TMA block (the kernel's tiles use the same swizzle)."""
    from triton.experimental.gluon import language as gl

    if swizzle is not None:
        return gl.NVMMASharedLayout(swizzle_byte_width=swizzle, element_bitwidth=16, rank=4)
    return gl.NVMMASharedLayout.get_default_for([1, 1, rows, d], _gl_dtype(dtype))


def _desc(t, rows: int, swizzle: int | None = None):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    d = t.shape[-1]
    return TensorDescriptor(t, list(t.shape), list(t.stride()), [1, 1, rows, d], tile_layout(rows, d, t.dtype, swizzle))


@functools.cache
def _num_sms() -> int:
    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


def _kernels():
    from . import kernel

    return kernel


UNBOUNDED = 1 << 30  # a window side without bound, as the kernels take it (as fa2_triton's launcher passes it)


def option_flags(q, k, causal: bool, opts, config: FwdConfig) -> OptionFlags:
    """What fa3_fwd compiles for a call (its constexprs): opts is flashviz.algos.fa2_triton.launcher.Options or None
    (no window, no softcap, dense). The band is needed for Nq != Nk, a window (a right side only where it is not
    causal: causal cuts it to 0), and packed sequences. Nq != Nk needs it whatever opts is: without it fa3_fwd runs
    Nq rows against the first Nq keys, aligned to the top-left (flashviz.attention passes None for a cache with no
    other option: the features run of 2026-12-05 saw O = V's first row there)."""
    uneven = q.shape[2] != k.shape[2] and not (opts is not None and opts.cu_q is not None)  # N (dense)
    if opts is None:
        return OptionFlags(band=True) if uneven else NO_OPTIONS
    varlen = opts.cu_q is not None
    band = varlen or uneven or opts.left >= 0 or (opts.right >= 0 and not causal)
    softcap = (2 if config.fast_tanh else 1) if opts.softcap > 0 else 0
    return OptionFlags(band=band, band_left=band and opts.left >= 0, softcap=softcap, varlen=varlen)


def band_tiles(r0: int, nq: int, nk: int, left: int, right: int, bc: int) -> tuple[int, int, int, int]:
    """kernel._band_tiles on the host (the kernel's own arithmetic, in Python): the tiles of keys the query rows
    [r0, r0 + 128) of a sequence visit, (jlo, s1, s2, jhi) -- jlo masked, [jlo + 1, s1) the band's left edge,
    [s1, s2) unmasked, [s2, jhi) its right edge; left, right as the kernel takes them (UNBOUNDED for no bound)."""
    off = nk - nq
    r1 = min(r0 + BR, nq) - 1
    jlo = max(r0 + off - left, 0) // bc
    hi = max(min(r1 + off + right + 1, nk), jlo * bc)
    jhi = max(-(-hi // bc), jlo + 1)
    a = -(-max(r1 + off - left, 0) // bc)
    c = max(min(r0 + off + right + 1, nk), 0) // bc
    s1 = min(max(a, jlo + 1), jhi)
    s2 = min(max(c, s1), jhi)
    return jlo, s1, s2, jhi


@functools.lru_cache(maxsize=64)
def _varlen_table(cu_q: tuple, cu_k: tuple, left: int, right: int, bc: int, device: str) -> torch.Tensor:
    """The blocks of packed sequences as fa3_fwd visits them: (sequence, block) pairs, int32 (NB, 2), the ones with
    the most tiles of keys first (a stable sort: equal ones keep their order), so that the last programs to start
    are short ones. Cached per batch of lengths (every layer of a model passes the same)."""
    entries = []
    for b in range(len(cu_q) - 1):
        nq, nk = cu_q[b + 1] - cu_q[b], cu_k[b + 1] - cu_k[b]
        for i in range(-(-nq // BR)):
            jlo, _, _, jhi = band_tiles(i * BR, nq, nk, left, right, bc)
            entries.append((jhi - jlo, b, i))
    entries.sort(key=lambda e: -e[0])
    return torch.tensor([[b, i] for _, b, i in entries], dtype=torch.int32, device=device)


def _packed(t):
    """A packed (total, H, D) tensor as the 4-d (1, H, total, D) view fa3's descriptors take (the same memory)."""
    return t.permute(1, 0, 2).unsqueeze(0)


def forward(q, k, v, causal: bool, scale: float, config: FwdConfig | None = None, ts=None, ts_tiles: int = 0,
            opts=None):  # fmt: skip
    """O and L, fp32, natural log: O (B, H, Nq, D) and L (B, H, Nq), or, packed, O (total_q, H, D) and L (H, total_q).
    q, k, v: TMA-ready CUDA tensors. config None: the one forward_config gives for the shape. ts_tiles > 0: the
    timestamped build (issue 20), writing %globaltimer into ts (int64, zeroed, at least kernel.TS_PROGRAMS * 3 *
    kernel.ts_slots(ts_tiles)); 0 (default): the plain build, the same PTX as without these arguments.
    opts: flashviz.algos.fa2_triton.launcher.Options (a window, softcap, packed sequences; None or its defaults with
    Nq = Nk: plain attention, the plain build)."""
    km = _kernels()
    varlen = opts is not None and opts.cu_q is not None
    if varlen:
        total, H, D = q.shape
        cu_q, cu_k = tuple(opts.cu_q.tolist()), tuple(opts.cu_k.tolist())
        nk = opts.max_k
    else:
        B, H, N, D = q.shape
        nk = k.shape[2]
    left = opts.left if opts is not None and opts.left >= 0 else UNBOUNDED
    right = 0 if causal else (opts.right if opts is not None and opts.right >= 0 else UNBOUNDED)
    # as measured for plain attention: persistent where each block's keys are few
    cfg = config or forward_config(D, min(nk, left + right + BR), causal)
    flags = option_flags(q, k, causal, opts, cfg)
    extra: dict[str, Any] = {}
    if flags.band:
        extra.update(Nk=nk, LEFT=left, RIGHT=right)
    if flags.softcap:
        extra["softcap2"] = opts.softcap * _LOG2E
        qk_scale = scale / opts.softcap
    else:
        qk_scale = scale * _LOG2E
    if varlen:
        o = torch.empty((total, H, D), dtype=q.dtype, device=q.device)
        lse = torch.empty((H, total), dtype=torch.float32, device=q.device)
        table = _varlen_table(cu_q, cu_k, left, right, cfg.Bc, str(q.device))
        extra.update(cu_q=opts.cu_q, cu_k=opts.cu_k, blocks=table, O=o)
        blocks = table.shape[0] * H
        descs = (_desc(_packed(q), 64), _desc(_packed(k), cfg.Bc), _desc(_packed(v), cfg.Bc), _desc(_packed(o), 64))
        n_arg = total
    else:
        o = torch.empty((B, H, N, D), dtype=q.dtype, device=q.device)
        lse = torch.empty((B, H, N), dtype=torch.float32, device=q.device)
        blocks = math.ceil(N / BR) * B * H
        descs = (_desc(q, 64), _desc(k, cfg.Bc), _desc(v, cfg.Bc), _desc(o, 64))
        n_arg = N
    programs = min(blocks, _num_sms()) if cfg.persistent else blocks
    km.fa3_fwd[(programs,)](
        *descs, lse, H, n_arg, blocks, qk_scale,
        D=D, Bc=cfg.Bc, STAGES=cfg.stages, CAUSAL=causal, PINGPONG=cfg.pingpong, OVERLAP=cfg.overlap,
        KV_FIRST=cfg.kv_first, GROUP=H // k.shape[1], num_warps=4, maxnreg=km.MAXNREG,
        **({"TS": ts, "TS_TILES": ts_tiles} if ts_tiles else {}),
        **(flags.constexprs() if flags != NO_OPTIONS else {}), **extra,
    )  # fmt: skip
    return o, lse


def delta(o, do, dlse):
    """Delta = rowsum(dO * O) - dL (B, H, N) fp32."""
    km = _kernels()
    B, H, N, D = o.shape
    out = torch.empty((B, H, N), dtype=torch.float32, device=o.device)
    km.fa3_bwd_preprocess[(math.ceil(N / 128), B * H)](
        o, do, dlse if dlse is not None else out, out, *o.stride()[:3], *do.stride()[:3], H, N,
        D=D, Br=128, HAS_DL=dlse is not None, num_warps=4,
    )  # fmt: skip
    return out


def backward_gluon(q, k, v, o, lse, do, dlse, causal: bool, scale: float, vec_atomic: bool = False):
    """dQ, dK, dV by fa3_bwd (after the Delta pre-kernel)."""
    km = _kernels()
    B, H, N, D = q.shape
    dl = delta(o, do, dlse)
    dq_acc = torch.zeros((B, H, N, D), dtype=torch.float32, device=q.device)
    dk = torch.empty((B, H, N, D), dtype=q.dtype, device=q.device)
    dv = torch.empty_like(dk)
    tc = math.ceil(N / BR)
    grid = (B * H, tc) if causal else (tc, B * H)
    km.fa3_bwd[grid](
        _desc(q, BWD_BR), _desc(k, BWD_BR, swizzle=D), _desc(v, BWD_BR), _desc(do, BWD_BR), lse, dl, dq_acc, dk, dv,
        *dk.stride()[:3], *dv.stride()[:3], H, N, scale, scale * _LOG2E,
        D=D, STAGES=BWD_STAGES[D], CAUSAL=causal, VEC_ATOMIC=vec_atomic, num_warps=4, maxnreg=km.MAXNREG,
    )  # fmt: skip
    return dq_acc.mul_(scale).to(q.dtype), dk, dv


_LOG2E = 1.4426950408889634


# ----------------------------------------------------------------------------------------------------------
# Compiling for sm_90 without a GPU (CI, bench/fa3_compile_check.py)
# ----------------------------------------------------------------------------------------------------------
def _desc_type(rows: int, d: int, dtype, swizzle: int | None = None) -> str:
    name = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
    return f"tensordesc<{name}[1, 1, {rows}, {d}],{tile_layout(rows, d, dtype, swizzle)!r}>"


def compile_sm90(
    kernel: str,
    d: int,
    causal: bool,
    dtype=torch.bfloat16,
    config: FwdConfig | None = None,
    vec_atomic: bool = False,
    ts_tiles: int = 0,
    group: int = 1,
    flags: OptionFlags | None = None,
):
    """triton.compile of one fa3 kernel ("fwd", "bwd" or "bwd_preprocess") for sm_90, as the launches above
    specialise it; no GPU or driver needed. flags: the forward's options (None: none). Returns Triton's
    CompiledKernel (asm: ttgir, ptx, cubin)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    km = _kernels()
    elt = {torch.bfloat16: "bf16", torch.float16: "fp16"}[dtype]
    options = {"num_warps": 4, "maxnreg": km.MAXNREG}
    flags = flags or NO_OPTIONS
    if kernel == "fwd":
        cfg = config or FWD_CONFIGS[d]
        sig = {"desc_q": _desc_type(64, d, dtype), "desc_k": _desc_type(cfg.Bc, d, dtype),
               "desc_v": _desc_type(cfg.Bc, d, dtype), "desc_o": _desc_type(64, d, dtype), "L": "*fp32",
               "H": "i32", "N": "i32", "num_blocks": "i32", "qk_scale": "fp32"}  # fmt: skip
        consts: dict[str, Any] = dict(
            D=d,
            Bc=cfg.Bc,
            STAGES=cfg.stages,
            CAUSAL=causal,
            PINGPONG=cfg.pingpong,
            OVERLAP=cfg.overlap,
            KV_FIRST=cfg.kv_first,
            GROUP=group,
        )
        fn = km.fa3_fwd
        consts["TS_TILES"] = ts_tiles
        if ts_tiles:
            sig["TS"] = "*i64"
        else:
            consts["TS"] = None  # as a launch passes it: a constant, no parameter
        # the options: their arguments where on, constants None (no parameter) where off, as a launch passes them
        on = {"Nk": flags.band, "LEFT": flags.band, "RIGHT": flags.band, "softcap2": flags.softcap > 0,
              "cu_q": flags.varlen, "cu_k": flags.varlen, "blocks": flags.varlen, "O": flags.varlen}  # fmt: skip
        types = {"softcap2": "fp32", "cu_q": "*i32", "cu_k": "*i32", "blocks": "*i32", "O": f"*{elt}"}
        for name, used in on.items():
            if used:
                sig[name] = types.get(name, "i32")
            else:
                consts[name] = None
        consts.update(flags.constexprs())
    elif kernel == "bwd":
        sig = {"desc_q": _desc_type(BWD_BR, d, dtype), "desc_k": _desc_type(BWD_BR, d, dtype, swizzle=d),
               "desc_v": _desc_type(BWD_BR, d, dtype), "desc_do": _desc_type(BWD_BR, d, dtype), "L": "*fp32",
               "Delta": "*fp32", "dQ": "*fp32", "dK": f"*{elt}", "dV": f"*{elt}",
               **{n: "i32" for n in ("sdkb", "sdkh", "sdkn", "sdvb", "sdvh", "sdvn", "H", "N")},
               "scale": "fp32", "qk_scale": "fp32"}  # fmt: skip
        consts = dict(D=d, STAGES=BWD_STAGES[d], CAUSAL=causal, VEC_ATOMIC=vec_atomic)
        fn = km.fa3_bwd
    elif kernel == "bwd_preprocess":
        sig = {"O": f"*{elt}", "dO": f"*{elt}", "dL": "*fp32", "Delta": "*fp32",
               **{n: "i32" for n in ("sob", "soh", "son", "sdb", "sdh", "sdn", "H", "N")}}  # fmt: skip
        consts = dict(D=d, Br=128, HAS_DL=causal)  # (the flag stands in for "with dL")
        fn = km.fa3_bwd_preprocess
        options = {"num_warps": 4}
    else:
        raise ValueError(f"kernel must be fwd, bwd or bwd_preprocess; got {_cut(repr(kernel))}")
    sig.update({name: "constexpr" for name in consts})
    # the options' pointers 16-byte aligned, as a launch specialises torch's allocations (the packed O's stores are
    # vectorised only then); the plain build's arguments as before
    aligned = [(k,) for k, name in enumerate(fn.arg_names) if name in ("O", "cu_q", "cu_k", "blocks") and
               sig.get(name, "constexpr") != "constexpr"]  # fmt: skip
    attrs = {k: [["tt.divisibility", 16]] for k in aligned}
    return triton.compile(GluonASTSource(fn, sig, consts, attrs), target=GPUTarget("cuda", 90, 32), options=options)
