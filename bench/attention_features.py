"""`bench/attention_bench.py --features`: flashviz.attention's options (issue 22) against the kernels that take them.

One process, one GPU, every provider, in this order, stopping (and saying so) when --budget-s runs out:
1. compiles flashviz's candidate tiles for each option set the cases use, in parallel worker processes (Triton's
   cache then serves the autotuner), before this process touches CUDA;
2. per case (CASES: grouped-query attention Hq=32 Hkv=8 D=128 in every one; decode Nq = 1, 16, 128 against
   Nk = 8k, 32k, 128k; prefill with a cache Nq = 2k, Nk = 16k; 64 packed sequences of mixed lengths, 64k tokens;
   a sliding window of 4096 at N = 32k; softcap 50), every provider that takes the case:
   flashviz (flashviz.attention / attention_varlen), sdpa-cudnn (F.scaled_dot_product_attention under
   SDPBackend.CUDNN_ATTENTION, enable_gqa; lower-right causal bias when Nq < Nk; no window, softcap or packed
   sequences: recorded as unsupported), flex (torch.compile'd flex_attention with the case's mask_mod and
   score_mod), fa4 (flash-attn-4's flash_attn.cute.flash_attn_func / flash_attn_varlen_func on (B, N, H, D)
   copies, where importable; split-KV left to its heuristic on forward-only cases);
   on each provider's first call its O is compared with flashviz's (max |diff| printed and recorded) before it is
   timed (triton.testing.do_bench medians): forward, and forward + backward for the training cases.
   FLOPs: 4 * D * (the (query, key) pairs the mask lets through) * Hq, backward 2.5 x forward.
3. writes <out>/<date>-<gpu>-features.json ({"date", "gpu", "versions", "cases", "rows"}: each row the main
   benchmark's fields plus `case`), -features.md (the table) and -features-extra.json (diffs, skips, compile log).

  PYTHONPATH=src python bench/attention_bench.py --features --out "$OUT" --budget-s 200
  python bench/attention_bench.py --features --dry-run   # the case list, FLOPs and providers, no GPU
"""

from __future__ import annotations

import datetime as dt
import inspect
import json
import multiprocessing
import os
import platform
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field

import torch

PROVIDERS = ("flashviz", "fa3", "sdpa-cudnn", "flex", "fa4")
OURS = ("flashviz", "fa3")  # flashviz's kernels: fa2-triton (algos/fa2_triton/launcher.py) and fa3 (backend="fa3")
HQ, HKV, D = 32, 8, 128  # Llama 3 8B's heads: grouped-query attention in every case
T0 = time.time()


def log(msg: str) -> None:
    print(f"[{time.time() - T0:6.1f}s] {msg}", flush=True)


@dataclass(frozen=True)
class Case:
    name: str
    B: int
    nq: int
    nk: int
    causal: bool = True
    window: tuple = (-1, -1)  # flashviz's (left, right), -1 unbounded
    softcap: float = 0.0
    lengths: tuple = ()  # packed sequences (q and k of the same lengths); B is their count
    backward: bool = False  # a training case: forward + backward timed too
    hq: int = HQ
    hkv: int = HKV
    d: int = D
    what: str = ""

    @property
    def varlen(self) -> bool:
        return bool(self.lengths)

    def pairs(self) -> int:
        """(query, key) pairs the mask lets through, per q head, summed over the batch."""
        if self.varlen:
            return sum(visible_pairs(n, n, self.causal, self.window) for n in self.lengths)
        return self.B * visible_pairs(self.nq, self.nk, self.causal, self.window)

    def fwd_flops(self) -> float:
        return 4.0 * self.d * self.pairs() * self.hq

    def options(self) -> tuple:
        """What the kernels are compiled for: (causal, softcap, packed, a bounded left side of the window)."""
        return (self.causal, self.softcap > 0, self.varlen, self.window[0] >= 0)


def visible_pairs(nq: int, nk: int, causal: bool, window=(-1, -1)) -> int:
    """Row r sees key c when -left <= c - (r + nk - nq) <= right (causal: right <= 0): attention_reference.visible,
    counted row by row without forming the (nq, nk) mask."""
    left, right = window
    if causal:
        right = 0 if right < 0 else min(right, 0)
    r = torch.arange(nq, dtype=torch.int64) + (nk - nq)
    hi = torch.clamp(r + right if right >= 0 else torch.full_like(r, nk - 1), max=nk - 1)
    lo = torch.clamp(r - left if left >= 0 else torch.zeros_like(r), min=0)
    return int(torch.clamp(hi - lo + 1, min=0).sum())


def mixed_lengths(count: int, total: int, seed: int = 22) -> tuple:
    """`count` lengths summing to `total`, a few long and many short (the cube of uniform draws), reproducible."""
    g = torch.Generator().manual_seed(seed)
    w = torch.rand(count, generator=g) ** 3 + 0.02
    lengths = (w / w.sum() * (total - count)).floor().long() + 1
    lengths[int(torch.argmax(lengths))] += total - int(lengths.sum())
    return tuple(int(x) for x in lengths)


def cases() -> list[Case]:
    """In the order they run (within each provider's pass: the training cases first, the many decode shapes last)."""
    lengths = mixed_lengths(64, 65536)
    out = [
        Case("gqa causal N=8k", 2, 8192, 8192, backward=True, what="GQA 32/8, causal, B=2"),
        Case("prefill with cache Nq=2k Nk=16k", 1, 2048, 16384, what="a 2k chunk after 14k cached tokens"),
        Case("varlen 64 seqs 64k tokens", 64, max(lengths), max(lengths), lengths=lengths, backward=True,
             what=f"packed, lengths {min(lengths)}..{max(lengths)}"),
        Case("window 4096 N=32k", 1, 32768, 32768, window=(4095, -1), backward=True,
             what="Mistral: each query sees its 4096 latest keys"),
        Case("softcap 50 N=8k", 2, 8192, 8192, softcap=50.0, backward=True, what="Gemma 2's 50 tanh(s/50)"),
    ]  # fmt: skip
    for nq in (1, 16, 128):
        for nk in (8192, 32768, 131072):
            out.append(Case(f"decode Nq={nq} Nk={nk // 1024}k", 1, nq, nk, what="a KV cache: causal bottom-right"))
    return out


def shrink(case: Case) -> Case:
    """The same case at a size the CPU interpreter runs in seconds (--smoke): every length / 256, heads / 8."""
    small = dict(nq=case.nq if case.nq <= 16 else max(1, case.nq // 256), nk=max(1, case.nk // 256), hq=4, hkv=1, d=32)
    if case.varlen:
        lengths = tuple(max(1, n // 256) for n in case.lengths[:6])
        small.update(lengths=lengths, B=len(lengths), nq=max(lengths), nk=max(lengths))
    if case.window[0] >= 0:
        small["window"] = (max(0, case.window[0] // 256), case.window[1])
    return Case(**{**asdict(case), **small})


# ----------------------------------------------------------------------------------------------------------
# Inputs and providers
# ----------------------------------------------------------------------------------------------------------
@dataclass
class Inputs:
    q: torch.Tensor  # (B, Hq, Nq, D), or packed (total, Hq, D)
    k: torch.Tensor
    v: torch.Tensor
    do: torch.Tensor
    cu: torch.Tensor | None = None
    extra: dict = field(default_factory=dict)


def make_inputs(case: Case, device: str, seed: int) -> Inputs:
    torch.manual_seed(seed)
    if case.varlen:
        total = sum(case.lengths)
        shape_q, shape_k = (total, case.hq, case.d), (total, case.hkv, case.d)
    else:
        shape_q, shape_k = (case.B, case.hq, case.nq, case.d), (case.B, case.hkv, case.nk, case.d)
    q = torch.randn(shape_q, device=device, dtype=torch.bfloat16, requires_grad=case.backward)
    k, v = (torch.randn(shape_k, device=device, dtype=torch.bfloat16, requires_grad=case.backward) for _ in range(2))
    do = torch.randn(shape_q, device=device, dtype=torch.bfloat16)
    cu = None
    if case.varlen:
        cu = torch.tensor([0, *torch.tensor(case.lengths).cumsum(0).tolist()], dtype=torch.int32, device=device)
    return Inputs(q, k, v, do, cu)


def flashviz_fn(case: Case, x: Inputs):
    from flashviz.ops import attention as api

    if case.varlen:
        m = max(case.lengths)
        return lambda: api.attention_varlen(x.q, x.k, x.v, x.cu, x.cu, m, m, causal=case.causal, window=case.window,
                                           softcap=case.softcap)  # fmt: skip
    return lambda: api.attention(x.q, x.k, x.v, causal=case.causal, window=case.window, softcap=case.softcap)


def fa3_fn(case: Case, x: Inputs):
    """flashviz.attention / attention_varlen with backend="fa3" (its forward fa3's, a backward fa2's kernels on fa3's
    O and L); (None, why) where fa3 does not take the case (its one-line ValueError, said before any launch)."""
    import flashviz

    if case.varlen:
        m = max(case.lengths)

        def fn():
            return flashviz.attention_varlen(x.q, x.k, x.v, x.cu, x.cu, m, m, causal=case.causal, window=case.window,
                                             softcap=case.softcap, backend="fa3")  # fmt: skip
    else:

        def fn():
            return flashviz.attention(x.q, x.k, x.v, causal=case.causal, window=case.window, softcap=case.softcap,
                                      backend="fa3")  # fmt: skip

    try:
        fn()  # compiles; refused in one line (no GPU of sm_90, a D it has no kernel for) before any launch
    except ValueError as e:
        if "not available" in str(e):
            return None, str(e)
        raise
    return fn, None


def sdpa_cudnn_fn(case: Case, x: Inputs):
    """(fn, None) or (None, why not)."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if case.varlen:
        return None, "SDPA takes no packed sequences (cu_seqlens)"
    if case.window != (-1, -1):
        return None, "SDPA has no sliding window"
    if case.softcap:
        return None, "SDPA has no softcap"
    kwargs: dict = {"enable_gqa": case.hq != case.hkv}
    if case.causal and case.nq == case.nk:
        kwargs["is_causal"] = True
    elif case.causal and case.nq > 1:  # SDPA's is_causal is aligned to the top-left: the cache needs lower-right
        from torch.nn.attention.bias import causal_lower_right

        kwargs["attn_mask"] = causal_lower_right(case.nq, case.nk)
    # (causal with one query sees every key: no mask)

    group = case.hq // case.hkv
    state = {"repeat": False}

    def fn():
        """enable_gqa where cuDNN takes it; else (the first call fails) K and V repeated per q head, in the time."""
        k, v, kw = x.k, x.v, kwargs
        if state["repeat"]:
            k, v = (t.repeat_interleave(group, dim=1) for t in (x.k, x.v))
            kw = {**kwargs, "enable_gqa": False}
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            try:
                return F.scaled_dot_product_attention(x.q, k, v, **kw)
            except RuntimeError as e:
                if state["repeat"] or not kwargs["enable_gqa"]:
                    raise
                x.extra["sdpa-cudnn"] = f"enable_gqa refused ({str(e).splitlines()[0][:120]}): K, V repeated"
                state["repeat"] = True
        return fn()

    return fn, None


def flex_fn(case: Case, x: Inputs):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    compiled = torch.compile(flex_attention, dynamic=False)
    off, (left, right), cap = case.nk - case.nq, case.window, case.softcap
    if case.causal:
        right = 0 if right < 0 else min(right, 0)
    doc = None
    if case.varlen:
        doc = torch.repeat_interleave(torch.arange(case.B, device=x.q.device),
                                      torch.tensor(case.lengths, device=x.q.device))  # fmt: skip
        off = 0

    def mask_mod(b, h, qi, ki):
        d = ki - (qi + off)
        ok = d <= (right if right >= 0 else case.nk)
        if left >= 0:
            ok = ok & (d >= -left)
        if doc is not None:
            ok = ok & (doc[qi] == doc[ki])
        return ok

    score_mod = None
    if cap:

        def score_mod(score, b, h, qi, ki):
            return cap * torch.tanh(score / cap)

    if case.varlen:
        q, k, v = (t.transpose(0, 1)[None] for t in (x.q, x.k, x.v))  # (1, H, total, D)
        n = x.q.shape[0]
        block = create_block_mask(mask_mod, None, None, n, n, device=x.q.device)

        def packed():
            return compiled(q, k, v, block_mask=block, score_mod=score_mod, enable_gqa=True)[0].transpose(0, 1)

        return packed, None
    masked = (case.causal and case.nq > 1) or left >= 0
    block = create_block_mask(mask_mod, None, None, case.nq, case.nk, device=x.q.device) if masked else None
    return lambda: compiled(x.q, x.k, x.v, block_mask=block, score_mod=score_mod, enable_gqa=True), None


def fa4_functions():
    try:
        from flash_attn.cute import flash_attn_func, flash_attn_varlen_func

        return flash_attn_func, flash_attn_varlen_func, None
    except Exception as e:
        return None, None, f"flash_attn.cute not importable: {type(e).__name__}: {str(e)[:160]}"


def fa4_fn(case: Case, x: Inputs, dense, varlen):
    """FlashAttention-4 on (B, N, H, D) copies (packed: (total, H, D) as they are); its output back in our layout."""
    left, right = case.window
    kwargs: dict = {"causal": case.causal}
    if left >= 0 or right >= 0:
        kwargs["window_size"] = (left if left >= 0 else None, right if right >= 0 else None)
    if case.softcap:
        kwargs["softcap"] = case.softcap
    fn = varlen if case.varlen else dense
    if (
        not case.backward
        and "num_splits" in inspect.signature(fn).parameters
        and torch.cuda.get_device_capability()[0] >= 10
    ):
        # < 1: FA4's own split-KV heuristic (Flash-Decoding), forward only; on sm_90 FA4 asserts "SplitKV not
        # supported on SM 9.0" (the 2026-12-05 run): there its default, no split
        kwargs["num_splits"] = 0

    def first(out):
        return out[0] if isinstance(out, tuple) else out

    if case.varlen:
        m = max(case.lengths)
        return lambda: first(varlen(x.q, x.k, x.v, cu_seqlens_q=x.cu, cu_seqlens_k=x.cu, max_seqlen_q=m,
                                    max_seqlen_k=m, **kwargs)), (x.q, x.k, x.v), x.do  # fmt: skip
    q4, k4, v4 = (t.detach().transpose(1, 2).contiguous().requires_grad_(case.backward) for t in (x.q, x.k, x.v))
    do4 = x.do.transpose(1, 2).contiguous()
    return lambda: first(dense(q4, k4, v4, **kwargs)).transpose(1, 2), (q4, k4, v4), do4.transpose(1, 2)


# ----------------------------------------------------------------------------------------------------------
# Compile flashviz's tiles in parallel
# ----------------------------------------------------------------------------------------------------------
def compile_jobs(case_list: list[Case]) -> list:
    """One job per (option set, kernel, tile config): the forward's candidates, and the backward's where a case
    of that option set is timed backward too."""
    from flashviz.algos.fa2_triton.launch_tiles import DKDV_TILES, DQ_TILES, FUSED_TILES, FWD_TILES, Tiles

    jobs, seen = [], set()
    for case in case_list:
        key = (case.options(), case.backward)
        if key in seen:
            continue
        seen.add(key)
        causal = case.causal
        for t in FWD_TILES[case.d]:
            if not causal or t.Br % t.Bc == 0:
                jobs.append((case, "fwd", t, None))
        if not case.backward:
            continue
        for t in DKDV_TILES[case.d]:
            if not causal or t.Bc % t.Br == 0:
                jobs += [(case, "dkdv", t, variant) for variant in ("atomic", "two_kernels")]
        for t in DQ_TILES[case.d]:
            if not causal or t.Br % t.Bc == 0:
                jobs.append((case, "dq", t, "two_kernels"))
        for (br, bc), (brq, bcq), warps, stages in FUSED_TILES[case.d]:
            if not causal or (bc % br == 0 and brq % bcq == 0):
                jobs.append((case, "fused", (Tiles(br, bc, warps, stages), Tiles(brq, bcq, warps, stages)),
                             "fused"))  # fmt: skip
    return jobs


def precompile(job):
    """In a worker: launch one config once at a small size with the case's options and head counts (the same
    constexprs and integer specialisations as the real launch)."""
    from flashviz.algos.fa2_triton import launcher as ta
    from flashviz.algos.fa2_triton.launch_tiles import DKDV_TILES, DQ_TILES, FWD_TILES

    case, kernel, t, variant = job
    start = time.time()
    try:
        small = Case(**{**asdict(case), "B": 1, "nq": 256, "nk": 256,
                        "lengths": (128, 128) if case.varlen else ()})  # fmt: skip
        x = make_inputs(small, "cuda", 0)
        q, k, v = x.q.detach(), x.k.detach(), x.v.detach()
        opts = ta.Options(case.window[0], case.window[1], float(case.softcap))
        if case.varlen:
            opts = ta.Options(case.window[0], case.window[1], float(case.softcap), x.cu, x.cu, 128, 128)
        run = ta.launcher()
        scale = case.d**-0.5
        fwd = t if kernel == "fwd" else FWD_TILES[case.d][0]
        o, lse = run.forward(q, k, v, case.causal, scale, tiles=fwd, opts=opts)
        if kernel != "fwd":
            tiles = {"dkdv": t[0], "dq": t[1]} if kernel == "fused" else {kernel: t}
            tiles.setdefault("dkdv", DKDV_TILES[case.d][0])  # the other kernel fixed, so it is not autotuned here
            tiles.setdefault("dq", DQ_TILES[case.d][0])
            run.backward(q, k, v, o, lse, x.do, None, case.causal, scale, variant=variant, tiles=tiles, opts=opts)
        torch.cuda.synchronize()
        return "ok", time.time() - start
    except Exception as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}", time.time() - start


def describe(job) -> str:
    case, kernel, t, variant = job
    tiles = f"{t[0].Br}x{t[0].Bc}+{t[1].Br}x{t[1].Bc}" if kernel == "fused" else f"{t.Br}x{t.Bc} w{t.num_warps}"
    return f"{case.options()} {kernel}{'/' + variant if variant else ''} {tiles}"


# ----------------------------------------------------------------------------------------------------------
# The run
# ----------------------------------------------------------------------------------------------------------
def timer(args, fn) -> float:
    """ms: do_bench's median on a GPU; one timed call on the CPU (--smoke)."""
    if args.device == "cuda":
        from triton.testing import do_bench

        return do_bench(fn, warmup=args.warmup, rep=args.rep, return_mode="median")
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def capture_graph(fn):
    """(graph, O): fn captured once in a CUDA graph, after two calls on a side stream (as capture wants). O is what
    the graph's replays write."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return graph, out


def graph_timer(args, fn) -> tuple[float, torch.Tensor]:
    """(ms, O): fn's CUDA graph (`capture_graph`) replayed and timed by do_bench: the kernels alone, back to back, as
    a serving engine launches a decode step. O is what the replays write, for the caller to compare with the eager
    call's."""
    from triton.testing import do_bench

    graph, out = capture_graph(fn)
    graph.replay()
    torch.cuda.synchronize()
    return do_bench(graph.replay, warmup=args.warmup, rep=args.rep, return_mode="median"), out


def run_case(args, case: Case, index: int, providers, budget_end: float, rows: list, extra: dict, fa4,
             refs: dict) -> None:  # fmt: skip
    x = make_inputs(case, args.device, 1000 + index)  # the same inputs in every pass
    fwd_flops = case.fwd_flops()
    notes = extra.setdefault("cases", {}).setdefault(case.name, {})
    for provider in providers:
        if time.time() > budget_end:
            notes[provider] = "skipped: budget ran out"
            continue
        inputs, grad = (x.q, x.k, x.v), x.do
        why = None
        try:
            if provider == "flashviz":
                fn = flashviz_fn(case, x)
            elif provider == "fa3":
                fn, why = fa3_fn(case, x)
            elif provider == "sdpa-cudnn":
                fn, why = sdpa_cudnn_fn(case, x)
            elif provider == "flex":
                fn, why = flex_fn(case, x)
            else:
                dense, varlen, why = fa4
                fn = None
                if why is None:
                    fn, inputs, grad = fa4_fn(case, x, dense, varlen)
        except Exception as e:
            fn, why = None, f"could not be set up: {type(e).__name__}: {str(e)[:160]}"
        if fn is None:
            notes[provider] = f"unsupported: {why}"
            log(f"{case.name}: {provider} {notes[provider]}")
            continue
        try:
            start = time.time()
            o = fn()  # the first call: compiles, autotunes
            if args.device == "cuda":
                torch.cuda.synchronize()
            first = time.time() - start
            if provider == "flashviz":
                refs[case.name] = o.detach()
                diff = None
            else:
                ours = refs.get(case.name)
                diff = None if ours is None else (o.detach().float() - ours.float()).abs().max().item()
            notes[provider] = {"first_call_s": round(first, 2), "max_abs_diff_vs_flashviz": diff,
                               **({"note": x.extra[provider]} if provider in x.extra else {})}  # fmt: skip
            del o
            t_f = timer(args, fn)
        except Exception as e:
            notes[provider] = f"error: {type(e).__name__}: {str(e)[:200]}"
            log(f"{case.name}: {provider} ERROR {traceback.format_exc(limit=2)[-400:]}")
            continue
        t_b = None
        if case.backward and time.time() < budget_end:
            try:
                grads = lambda fn=fn, inputs=inputs, grad=grad: torch.autograd.grad(fn(), inputs, grad)  # noqa: E731
                start = time.time()
                grads()  # the backward's first call (tunes, picks a variant)
                notes[provider]["backward_first_call_s"] = round(time.time() - start, 2)
                t_b = timer(args, grads) - t_f
            except Exception as e:
                notes[provider]["backward"] = f"error: {type(e).__name__}: {str(e)[:200]}"
                log(f"{case.name}: {provider} backward ERROR {type(e).__name__}: {str(e)[:200]}")
        t_g = None
        if not case.backward and args.device == "cuda" and time.time() < budget_end:
            try:
                t_g, o = graph_timer(args, fn)
                ours = refs.get(case.name)
                notes[provider]["graph_max_abs_diff_vs_flashviz"] = (
                    None if ours is None else (o.detach().float() - ours.float()).abs().max().item()
                )
                del o
            except Exception as e:  # recorded, not hidden: a provider whose call a graph cannot capture
                notes[provider]["graph"] = f"error: {type(e).__name__}: {str(e)[:200]}"
                log(f"{case.name}: {provider} graph ERROR {type(e).__name__}: {str(e)[:200]}")
        for mode, ms, flops in (("fwd", t_f, fwd_flops), ("bwd", t_b, 2.5 * fwd_flops), ("fwd-graph", t_g, fwd_flops)):
            if ms is None:
                continue
            rows.append({"provider": provider, "mode": mode, "causal": case.causal, "d": case.d, "n": case.nk,
                         "batch": case.B, "heads": case.hq, "dtype": "bf16", "tflops": round(flops / ms / 1e9, 1),
                         "ms": round(ms, 4), "case": case.name})  # fmt: skip
        shown = "" if diff is None else f", max |O - flashviz's| {diff:.3g}"
        bwd = "" if t_b is None else f", bwd {t_b:.3f} ms {2.5 * fwd_flops / t_b / 1e9:.1f} TFLOP/s"
        bwd += "" if t_g is None else f", graph {t_g:.3f} ms {fwd_flops / t_g / 1e9:.1f} TFLOP/s"
        log(f"{case.name}: {provider:10s} fwd {t_f:.3f} ms {fwd_flops / t_f / 1e9:.1f} TFLOP/s{bwd} "
            f"(first call {first:.1f} s{shown})")  # fmt: skip
    del x
    if args.device == "cuda":
        torch.cuda.empty_cache()


def table(doc: dict, fwd: str, bwd: str | None, names: list) -> list[str]:
    """One markdown table: per case, each provider's TFLOP/s (forward mode `fwd`, / backward where `bwd` has a row),
    and flashviz's best (of its two kernels) against the best other provider's, from the times (the same FLOPs)."""
    cell = {(r["case"], r["provider"], r["mode"]): r for r in doc["rows"]}
    lines = ["| case | " + " | ".join(PROVIDERS) + " | flashviz's best / best other |",
             "|---|" + "---|" * (len(PROVIDERS) + 1)]  # fmt: skip
    for name in names:
        vals, best = [], {}
        for p in PROVIDERS:
            f, b = cell.get((name, p, fwd)), cell.get((name, p, bwd)) if bwd else None
            text = "–" if f is None else f"{f['tflops']:.0f}" + ("" if b is None else f" / {b['tflops']:.0f}")
            vals.append(text)
            if f is not None and p not in OURS:
                best[p] = f["ms"]
        mine = [c["ms"] for p in OURS if (c := cell.get((name, p, fwd))) is not None]
        ratio = "–" if not mine or not best else f"{min(best.values()) / min(mine):.2f} (fwd)"
        lines.append(f"| {name} | " + " | ".join(vals) + f" | {ratio} |")
    return lines


def markdown(doc: dict, extra: dict) -> str:
    lines = [
        f"# flashviz.attention's options on {doc['gpu']}, {doc['date']}",
        "",
        f"Versions: {', '.join(f'{k} {v}' for k, v in doc['versions'].items())}.",
        f"bf16, Hq={HQ} Hkv={HKV} D={D}; TFLOP/s forward / backward (triton.testing.do_bench medians); FLOPs "
        "4·D·(pairs the mask lets through)·Hq, backward 2.5×; backward time = (fwd+bwd) − fwd; – = not run "
        "(-features-extra.json says why).",
        "",
        *table(doc, "fwd", "bwd", doc["cases"]),
    ]
    graphed = [n for n in doc["cases"] if any(r["case"] == n and r["mode"] == "fwd-graph" for r in doc["rows"])]
    if graphed:
        lines += [
            "",
            "The forward-only cases again, each provider's call captured in a CUDA graph and its replay timed (the "
            "kernels alone, without the host's launch work, as a serving engine runs a decode step):",
            "",
            *table(doc, "fwd-graph", None, graphed),
        ]
    if extra.get("stopped"):
        lines += ["", f"Stopped early: {'; '.join(extra['stopped'])}."]
    return "\n".join(lines) + "\n"


def main(args) -> int:
    """Called by attention_bench.py with its parsed arguments (--features)."""
    case_list = cases()
    if args.case:
        case_list = [c for c in case_list if any(s in c.name for s in args.case)]
    if args.smoke:
        case_list = [shrink(c) for c in case_list]
    args.providers = [p for p in args.providers if p in PROVIDERS] or list(PROVIDERS)
    if args.dry_run:
        for c in case_list:
            print(f"{c.name:34s} B={c.B:3d} Nq={c.nq:6d} Nk={c.nk:6d} Hq={c.hq} Hkv={c.hkv} D={c.d} "
                  f"causal={int(c.causal)} window={c.window} softcap={c.softcap} packed={len(c.lengths)} "
                  f"backward={int(c.backward)} fwd GFLOP {c.fwd_flops() / 1e9:.1f}")  # fmt: skip
        print(f"providers: {', '.join(args.providers)}; flashviz compile jobs: {len(compile_jobs(case_list))}")
        return 0
    budget_end = T0 + args.budget_s
    os.makedirs(args.out, exist_ok=True)
    extra: dict = {"args": {k: v for k, v in vars(args).items() if k != "providers"}}
    if args.device == "cuda" and "flashviz" in args.providers:
        jobs = compile_jobs(case_list)
        log(f"compiling {len(jobs)} flashviz configs in {args.workers} processes")
        with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("fork")) as pool:
            extra["compile"] = {}
            for job, (status, secs) in zip(jobs, pool.map(precompile, jobs), strict=True):
                extra["compile"][describe(job)] = f"{status} ({secs:.1f}s)"
                if status != "ok":
                    log(f"  {describe(job)}: {status}")
        log("compiled")
    if args.device == "cuda":
        from torch import _dynamo

        for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit"):
            if hasattr(_dynamo.config, name):
                setattr(_dynamo.config, name, 256)  # flex_attention is compiled once per case
    fa4 = fa4_functions() if "fa4" in args.providers else (None, None, "not asked for")
    if fa4[2]:
        log(f"fa4: {fa4[2]}")
    versions = {"torch": torch.__version__, "python": platform.python_version(),
                "flashviz": os.environ.get("FLASHVIZ_COMMIT", "unknown")}  # fmt: skip
    try:
        import triton

        versions["triton"] = triton.__version__
    except ImportError:
        pass
    gpu = torch.cuda.get_device_name() if args.device == "cuda" else "cpu-interpreter"
    if args.device == "cuda":
        versions |= {"cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}
    rows: list = []
    refs: dict = {}  # case name -> flashviz's O, which every other provider's first output is compared with
    try:
        # flashviz and cuDNN (quick to start) over every case first; then FA4, then flex (each compiles per case)
        for group in (("flashviz", "fa3", "sdpa-cudnn"), ("fa4",), ("flex",)):
            chosen = [p for p in args.providers if p in group]
            for index, case in enumerate(case_list if chosen else []):
                if time.time() > budget_end:
                    extra.setdefault("stopped", []).append(f"budget ran out before {case.name} for {chosen}")
                    log(extra["stopped"][-1])
                    break
                run_case(args, case, index, chosen, budget_end, rows, extra, fa4, refs)
    finally:
        date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d")
        doc = {"date": date, "gpu": gpu, "versions": versions,
               "cases": {c.name: {**asdict(c), "lengths": list(c.lengths), "fwd_flops": c.fwd_flops()}
                         for c in case_list},
               "rows": rows}  # fmt: skip
        stem = os.path.join(args.out, f"{date}-{gpu.lower().replace(' ', '-')}-features")
        with open(stem + ".json", "w") as fh:
            json.dump(doc, fh, indent=1)
        with open(stem + "-extra.json", "w") as fh:
            json.dump(extra, fh, indent=1, default=str)
        md = markdown(doc, extra)
        with open(stem + ".md", "w") as fh:
            fh.write(md)
        print(md, flush=True)
        log(f"wrote {stem}.json, .md, -extra.json")
    return 0 if rows else 1
