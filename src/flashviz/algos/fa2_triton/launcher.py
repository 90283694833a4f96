"""kernel.py's kernels launched on torch tensors: `Launcher` runs the forward (fa2_fwd, or the split-KV kernels for
decode and for grids that would leave SMs idle) and the backward (preprocess, then dkdv and dq by one of three
variants), with the tiles given, the interpreter's fixed ones, or the autotuner's choice per bucket of lengths on a
GPU (kept on disk by flashviz.runtime.tuning, its candidates compiled in parallel by flashviz.runtime.precompile).
`launcher()` is the one Launcher of the process. flashviz.attention's operators (flashviz.ops.library) and this
folder's GPU launch (`gpu.py`) run the kernels through it. Needs torch and Triton (`flashviz[triton]`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

from flashviz.model.echo import ECHO_MAX, cut
from flashviz.runtime import precompile
from flashviz.runtime.interpreter import fix_interpreter
from flashviz.runtime.tuning import TuningCache, bucket

from .launch_tiles import BWD_VARIANTS, DKDV_TILES, DQ_TILES, FUSED_TILES, FWD_TILES, INTERPRET_TILES, Tiles
from .split_kv import H200_SMS, STREAMING_ROWS, SplitPlan, split_plan, split_tiles
from .tiles import padded

UNBOUNDED = 1 << 30  # a window side without bound, as the kernels take it
_INSTALL = "pip install 'flashviz[triton]'"


def _cut(value: object, limit: int = ECHO_MAX) -> str:
    return cut(str(value), limit)


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

    from . import kernel

    interpret = isinstance(kernel.fa2_fwd, InterpretedFunction)
    if interpret:
        fix_interpreter()
    return kernel, interpret


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
        if not precompile.enabled():
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
        """O and L. precision: tl.dot's input_precision for float32 inputs ("ieee" or "tf32": the ladder's fp32 rungs,
        flashviz.ops.fa2._forward_fp32). opts: the window, soft-capping and packed sequences (None: plain attention
        over (B, H, N, D)).
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

            if precompile.enabled():  # every variant's candidates compiled at once, before the timing
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
        return padded(self.Dv)

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
