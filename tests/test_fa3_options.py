"""fa3's forward with the options of issue 22 (Nq != Nk with causal aligned to the bottom-right, sliding windows,
softcap, packed sequences), each with grouped-query attention and causal masking, against float64 attention.

The GPU tests (marked gpu, skipped without an sm_90 GPU) run fa3's forward (FlashAttention-3 in Gluon,
`fa3_launcher.forward`) and, on its O and L, FlashAttention-2's backward (`ta.launcher().backward`,
fixed tiles, so that no autotuning runs; the public functions with backend="fa3" go through the autotuned one):
O, L, dQ, dK and dV against float64, with attention_reference's tolerance (at most FACTOR times the error of plain
attention in the input dtype, plus FLOOR). Since the backward rebuilds P from L, a right dQ, dK, dV also says that
L is the log-sum-exp of the capped scores. Fresh random inputs on every run (the seed is printed); ragged lengths
(1, 77, 300, 1000, 3001, ...), both head dimensions, bf16 and fp16. Before the first GPU test the module compiles every
kernel it will launch in parallel worker processes (Triton's cache then serves the tests).

The CPU tests hold the host side: the tiles a block visits (`fa3_launcher.band_tiles`, the kernel's own arithmetic)
against the band counted score by score, the packed sequences' block list, the flags a call compiles, and the
routing of `backend=`.
"""

from __future__ import annotations

import itertools
import math
import os
import random
from dataclasses import dataclass, replace

import pytest

torch = pytest.importorskip("torch")
GPU = torch.cuda.is_available()
if not GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")
pytest.importorskip("triton")

import flashviz  # noqa: E402
from flashviz.algos.fa2_triton import launcher as ta  # noqa: E402
from flashviz.algos.fa2_triton.launch_tiles import DKDV_TILES  # noqa: E402
from flashviz.algos.fa3 import launcher as fa3_launcher  # noqa: E402
from flashviz.ops import backends as attention_backends  # noqa: E402
from flashviz.ops import fa3 as fa3_backend  # noqa: E402
from flashviz.ops.backends import FA3_OPTIONS_MIN_QUERIES, unmeasured  # noqa: E402
from flashviz.ops.reference import judge, visible  # noqa: E402

HOPPER = GPU and fa3_launcher.unavailable() is None
gpu = pytest.mark.gpu
needs_hopper = pytest.mark.skipif(not HOPPER, reason=f"fa3 needs an sm_90 GPU: {fa3_launcher.unavailable()}")
BF16, FP16 = torch.bfloat16, torch.float16
DTYPES = {"bf16": BF16, "fp16": FP16}


@pytest.fixture
def seed():
    """Fresh random inputs on every run; the seed is printed so that a failure can be replayed."""
    s = int.from_bytes(os.urandom(4), "little")
    print(f"torch seed: {s}")
    torch.manual_seed(s)
    return s


# ----------------------------------------------------------------------------------------------------------
# The calls the GPU tests make (one table, so that the warm-up compiles exactly what the tests launch)
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Call:
    """One fa3 forward (+ FlashAttention-2's backward on its O and L). lq, lk: one length each (dense, B sequences
    of that length) or one per sequence (packed). config: "default" (forward_config's), "fast_tanh", "persistent",
    "not_persistent" or an ablation rung."""

    lq: tuple
    lk: tuple
    hq: int
    hkv: int
    d: int
    causal: bool
    window: tuple = (-1, -1)
    softcap: float = 0.0
    dtype: str = "bf16"
    B: int = 1  # dense only
    packed: bool = False
    config: str = "default"
    grads: bool = True  # also dQ, dK, dV (narrow windows: O and L only, see NARROW)

    def fa3_config(self, n: int) -> fa3_launcher.FwdConfig | None:
        if self.config == "default":
            return None
        base = fa3_launcher.forward_config(self.d, n, self.causal)
        if self.config == "fast_tanh":
            return replace(base, fast_tanh=True)
        if self.config in ("persistent", "not_persistent"):
            return replace(base, persistent=self.config == "persistent")
        return replace(fa3_launcher.ablation_config(self.d, self.config), fast_tanh=False)


def cumulative(lengths, device="cuda") -> torch.Tensor:
    return torch.tensor([0, *itertools.accumulate(lengths)], dtype=torch.int32, device=device)


def inputs(call: Call):
    """q, k, v, dO and the options (ta.Options, or None for none), fresh random numbers."""
    dt = DTYPES[call.dtype]
    if call.packed:
        q = torch.randn(sum(call.lq), call.hq, call.d, dtype=dt, device="cuda")
        k, v = (torch.randn(sum(call.lk), call.hkv, call.d, dtype=dt, device="cuda") for _ in range(2))
        opts = ta.Options(call.window[0], call.window[1], call.softcap, cumulative(call.lq), cumulative(call.lk),
                          max(call.lq), max(call.lk))  # fmt: skip
    else:
        q = torch.randn(call.B, call.hq, call.lq[0], call.d, dtype=dt, device="cuda")
        k, v = (torch.randn(call.B, call.hkv, call.lk[0], call.d, dtype=dt, device="cuda") for _ in range(2))
        plain = call.window == (-1, -1) and call.softcap == 0 and call.lq == call.lk
        opts = None if plain else ta.Options(call.window[0], call.window[1], call.softcap)
    return q, k, v, torch.randn_like(q), opts


def bwd_tiles(d: int) -> dict:
    return {"dkdv": DKDV_TILES[d][0]}  # the first candidate, valid under causal masking (one kernel: "atomic")


def run(call: Call, q, k, v, do, opts) -> dict:
    """fa3's forward, then FlashAttention-2's backward on its O and L (fixed tiles, dQ by atomics)."""
    scale = call.d**-0.5
    o, lse = fa3_launcher.forward(q, k, v, call.causal, scale, call.fa3_config(max(call.lk)), opts=opts)
    out = {"O": o, "L": lse}
    if call.grads:
        dq, dk, dv = ta.launcher().backward(q, k, v, o, lse, do, None, call.causal, scale, variant="atomic",
                                            tiles=bwd_tiles(call.d), opts=opts or ta.PLAIN)  # fmt: skip
        out.update(dQ=dq, dK=dk, dV=dv)
    return out


def check(call: Call, ours: dict, q, k, v, do, opts) -> None:
    extra = {"cu_q": opts.cu_q, "cu_k": opts.cu_k} if call.packed else {}
    verdict = judge(ours, q, k, v, call.causal, call.d**-0.5, do, window=call.window, softcap=call.softcap, **extra)
    assert verdict.ok, (call, verdict.failures())


GQA, MQA = (8, 2), (4, 1)  # (Hq, Hkv)
DENSE = [
    Call((300,), (1000,), *GQA, 128, True, B=2),  # a KV cache: 300 new tokens after 700 cached
    Call((1000,), (300,), *MQA, 64, True),  # Nq > Nk: the first 700 rows see no key (O = 0, L = -inf)
    Call((77,), (3001,), 4, 4, 128, False, dtype="fp16"),  # not causal, Nq < Nk, ragged both
    Call((1,), (2000,), *GQA, 128, True, B=2),  # one query against a cache (fa3 has no split-KV: correct, slow)
    Call((2048,), (2048,), *GQA, 128, True, (256, -1)),  # Mistral's window: each query its 257 latest keys
    Call((1500,), (1500,), 4, 4, 64, False, (100, 300)),  # a two-sided band
    Call((1000,), (1000,), 2, 2, 128, False, (-1, 50)),  # bounded on the right only
    Call((3001,), (1000,), 2, 2, 128, False, (200, 200)),  # Nq > Nk with a band: the last rows see no key
    Call((1000,), (1000,), *GQA, 128, True, softcap=50.0),  # Gemma 2's softcap
    Call((513,), (513,), 4, 4, 64, False, softcap=5.0, dtype="fp16"),  # a softcap that saturates most scores
    Call((700,), (2500,), *GQA, 128, True, (600, -1), 30.0),  # everything: GQA, cache, causal, window, softcap
    Call((256,), (1280,), *MQA, 64, False, (64, 0), 2.0, B=3),  # multiples of every tile, no ragged tile
]
PACKED = [
    Call((5, 300, 1, 129, 1000), (5, 300, 1, 129, 1000), *GQA, 128, True, packed=True),  # across block edges
    Call((3, 400, 170), (300, 41, 2000), *MQA, 64, True, (100, -1), 2.0, packed=True),  # Nq < Nk and Nq > Nk
    Call((1, 1, 1), (3000, 100, 190), *GQA, 128, True, packed=True),  # decoding three sequences
    Call((500, 129, 1000), (500, 129, 1000), 2, 2, 128, False, (64, 64), dtype="fp16", packed=True),
]
# Narrow bands (a row sees 1 to 6 keys): O and L only. FlashAttention-2's backward takes Delta = rowsum(dO * O)
# from the bf16-rounded O, which plain attention does not; where every row sees a handful of keys, its gradients
# can exceed the 2x-plain tolerance (tests/test_attention_options.py measured it for fa2's own O).
NARROW = [
    Call((500,), (500,), 2, 2, 128, False, (0, 0), grads=False),  # the diagonal only
    Call((500,), (700,), *GQA, 128, True, (5, -1), grads=False),
    Call((400,), (400,), 2, 2, 64, False, (3, 2), 1.0, grads=False),
]
FAST_TANH = [replace(c, config="fast_tanh") for c in DENSE + PACKED if c.softcap > 0]


def _mixed(count: int, total: int, seed: int) -> tuple:
    g = torch.Generator().manual_seed(seed)
    w = torch.rand(count, generator=g) ** 3 + 0.01
    lengths = (w / w.sum() * (total - count)).floor().long() + 1
    lengths[0] += total - int(lengths.sum())
    return tuple(int(x) for x in lengths)


MIXED = _mixed(64, 16384, 22)  # the feature benchmark's packed case, a quarter of its tokens
BIG_PACKED = Call(MIXED, MIXED, 32, 8, 128, True, packed=True)
RUNGS = [
    Call((1000,), (1000,), 2, 2, 128, True, (300, -1), 10.0, config=rung)
    for rung in ("warp specialization", "+ ping-pong", "+ intra-warpgroup overlap")
]
REPEAT = [
    Call((2048,), (2048,), *GQA, 128, True, (256, -1), config="persistent", grads=False),
    Call((2048,), (2048,), *GQA, 128, True, (256, -1), config="not_persistent", grads=False),
    Call(MIXED, MIXED, 32, 8, 128, True, packed=True, config="persistent", grads=False),
]
API_DENSE = Call((333,), (900,), 6, 2, 128, True, (200, -1), 20.0, B=2)
API_PACKED = Call((9, 1, 260), (300, 12, 260), 4, 1, 64, True, (100, -1), 5.0, dtype="fp16", packed=True)
# The feature run's caches at their length, as flashviz.attention passes them: no options object (opts=None)
LONG_CACHES = [
    Call((1,), (131072,), 32, 8, 128, True, grads=False),
    Call((16,), (32768,), 32, 8, 128, True, grads=False),
    Call((2048,), (16384,), *GQA, 128, True, grads=False),
]
ALL = DENSE + PACKED + NARROW + FAST_TANH + [BIG_PACKED] + RUNGS + REPEAT + LONG_CACHES


def _warm(call: Call) -> str:
    """In a worker process: the call once (fa3's forward, FlashAttention-2's backward), so that its kernels are in
    Triton's cache when the test launches them; "ok" or what went wrong."""
    try:
        q, k, v, do, opts = inputs(call)
        run(call, q, k, v, do, opts)
        torch.cuda.synchronize()
        return "ok"
    except Exception as e:  # the test itself reports it
        return f"{type(e).__name__}: {str(e)[:200]}"


def _warm_api(which: str) -> str:
    try:
        api_call(API_DENSE if which == "dense" else API_PACKED)
        torch.cuda.synchronize()
        return "ok"
    except Exception as e:
        return f"{type(e).__name__}: {str(e)[:200]}"


WARM_S = 140  # the warm-up's limit: a call still running then is taken to hang (its test will show it)


@pytest.fixture(scope="module")
def warm():
    """Compile everything the GPU tests launch, in parallel processes (spawned: this one has CUDA started). Every
    call of the tables runs once (one with the same kernels as another finds them in the cache, or compiles them
    too); whatever fails or hangs here is reported, and its test fails (or hangs) on its own."""
    if not HOPPER:
        return {}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, wait

    workers = max(1, min(12, (os.cpu_count() or 2) - 1))
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    futures = {pool.submit(_warm, call): call for call in ALL}
    futures.update({pool.submit(_warm_api, which): f"api-{which}" for which in ("dense", "packed")})
    finished, pending = wait(futures, timeout=WARM_S)
    if pending:  # a kernel that never returns: stop the workers rather than wait for them
        for process in list(getattr(pool, "_processes", {}).values()):
            process.terminate()
    pool.shutdown(wait=not pending, cancel_futures=True)
    done = {str(futures[f])[:100]: (f.result() if f in finished and not f.exception() else "failed") for f in futures}
    done.update({str(futures[f])[:100]: f"still running after {WARM_S} s" for f in pending})
    print({k: v for k, v in done.items() if v != "ok"} or "warm: every kernel compiled")
    return done


# ----------------------------------------------------------------------------------------------------------
# GPU: against float64
# ----------------------------------------------------------------------------------------------------------
def _ids(calls):
    def name(c: Call) -> str:
        shape = f"packed{len(c.lq)}" if c.packed else f"B{c.B}-Nq{c.lq[0]}-Nk{c.lk[0]}"
        window = f"w{c.window[0]}_{c.window[1]}"
        return f"{shape}-H{c.hq}x{c.hkv}-D{c.d}-c{int(c.causal)}-{window}-cap{c.softcap:g}-{c.dtype}"

    return [name(c) + ("" if c.config == "default" else f"-{c.config}") for c in calls]


@gpu
@needs_hopper
@pytest.mark.parametrize("call", DENSE + PACKED + NARROW + FAST_TANH + RUNGS, ids=_ids(DENSE + PACKED + NARROW +
                                                                                      FAST_TANH + RUNGS))  # fmt: skip
def test_options_match_float64(warm, seed, call):
    q, k, v, do, opts = inputs(call)
    check(call, run(call, q, k, v, do, opts), q, k, v, do, opts)


@gpu
@needs_hopper
def test_many_packed_sequences_of_mixed_lengths(warm, seed):
    """64 sequences, 16k tokens, lengths from 1 to thousands, GQA 32/8, causal: the feature benchmark's case at a
    quarter of its size (blocks listed longest first, persistent or not as forward_config says)."""
    q, k, v, do, opts = inputs(BIG_PACKED)
    check(BIG_PACKED, run(BIG_PACKED, q, k, v, do, opts), q, k, v, do, opts)


@gpu
@needs_hopper
@pytest.mark.parametrize("call", LONG_CACHES, ids=_ids(LONG_CACHES))
def test_long_caches_through_flashviz_attention_match_float64(warm, seed, call):
    """Up to 131,072 keys through flashviz.attention(backend="fa3") with no other option, so fa3 gets opts=None:
    the path that compiled no band (the 2026-12-05 feature run's wrong O past 4096 keys); O and L against float64."""
    q, k, v, do, _ = inputs(call)
    o, lse = flashviz.attention(q, k, v, causal=True, return_lse=True, backend="fa3")
    check(call, {"O": o, "L": lse}, q, k, v, do, None)


@gpu
@needs_hopper
@pytest.mark.parametrize("call", REPEAT, ids=_ids(REPEAT))
def test_the_options_forward_is_repeatable_to_the_bit(warm, seed, call):
    """Three runs on the same inputs give the same bits (a race between the producer and the consumers, or between
    programs of the persistent loop, moves them), and the first is right."""
    q, k, v, do, opts = inputs(call)
    runs = [run(call, q, k, v, do, opts) for _ in range(3)]
    for other in runs[1:]:
        assert torch.equal(other["O"], runs[0]["O"]) and torch.equal(other["L"], runs[0]["L"])
    check(call, runs[0], q, k, v, do, opts)


def api_call(call: Call, dl: bool = False) -> tuple:
    """flashviz.attention / attention_varlen with backend="fa3" through autograd (FlashAttention-2's autotuned
    backward): (ours, q, k, v, do, dl, opts)."""
    q, k, v, do, opts = inputs(call)
    q, k, v = (t.requires_grad_() for t in (q, k, v))
    kw = dict(causal=call.causal, window=call.window, softcap=call.softcap, return_lse=True, backend="fa3")
    if call.packed:
        o, lse = flashviz.attention_varlen(q, k, v, opts.cu_q, opts.cu_k, max(call.lq), max(call.lk), **kw)
    else:
        o, lse = flashviz.attention(q, k, v, **kw)
    g = torch.randn_like(lse) if dl else None
    torch.autograd.backward((o, lse) if dl else (o,), (do, g) if dl else (do,))
    ours = {"O": o, "L": lse, "dQ": q.grad, "dK": k.grad, "dV": v.grad}
    return ours, q.detach(), k.detach(), v.detach(), do, g, opts


@gpu
@needs_hopper
@pytest.mark.parametrize("call", [API_DENSE, API_PACKED], ids=["dense", "packed"])
def test_public_functions_run_fa3_with_every_option(warm, seed, call):
    """backend="fa3" runs fa3's forward (the same bits as fa3_launcher.forward) with GQA, a cache, causal, a window
    and softcap, dense and packed; O, L and, through dL as well as dO, dQ, dK, dV against float64."""
    ours, q, k, v, do, dl, opts = api_call(call, dl=True)
    scale = 1.0 / math.sqrt(call.d)  # the default scale as flashviz.attention computes it (128**-0.5 is an ulp off)
    o, lse = fa3_launcher.forward(q, k, v, call.causal, scale, opts=opts)
    assert torch.equal(ours["O"], o) and torch.equal(ours["L"], lse)  # fa3 ran, not fa2
    extra = {"cu_q": opts.cu_q, "cu_k": opts.cu_k} if call.packed else {}
    verdict = judge(ours, q, k, v, call.causal, scale, do, dl=dl, window=call.window, softcap=call.softcap, **extra)
    assert verdict.ok, verdict.failures()


@gpu
@needs_hopper
def test_auto_runs_fa3_with_the_options_only_where_it_was_timed_faster():
    """On this GPU: auto runs fa3 for a cache of 2048 queries (D=128, causal: timed faster) and fa2 for decode
    (fa2's split-KV forward was 2 to 10x faster), for a cache that is not causal and at D=64 (not timed)."""
    k = torch.randn(1, 4, 16384, 128, dtype=BF16, device="cuda")
    for nq, causal, d, want in (
        (2048, True, 128, attention_backends.FA3),
        (1, True, 128, attention_backends.FA2),
        (2048, False, 128, attention_backends.FA2),
        (2048, True, 64, attention_backends.FA2),
    ):
        q = torch.randn(1, 8, nq, d, dtype=BF16, device="cuda")
        kk = k[..., :d]
        untimed = unmeasured(q, kk, (-1, -1), 0.0, False, causal, nq)
        assert attention_backends.choose("auto", q, causal, unmeasured=untimed) == want, (nq, causal, d)
        assert attention_backends.choose("fa3", q, causal, unmeasured=untimed) == attention_backends.FA3


# ----------------------------------------------------------------------------------------------------------
# CPU: the host side
# ----------------------------------------------------------------------------------------------------------
U = fa3_launcher.UNBOUNDED


def _seen_tiles(r0: int, nq: int, nk: int, left: int, right: int, bc: int):
    """Counted score by score: per tile of keys, (whether some real row of the block sees a key of it, whether every
    real row sees every key of it)."""
    w = (-1 if left == U else left, -1 if right == U else right)
    rows = visible(nq, nk, False, w)[r0 : min(r0 + fa3_launcher.BR, nq)]  # (rows, nk)
    tiles = -(-nk // bc)
    some = [bool(rows[:, j * bc : (j + 1) * bc].any()) for j in range(tiles)]
    every = [(j + 1) * bc <= nk and bool(rows[:, j * bc : (j + 1) * bc].all()) for j in range(tiles)]
    return some, every


def _band_cases(n: int, seed: int):
    rnd = random.Random(seed)
    for _ in range(n):
        nq, nk = rnd.choice([1, 77, 128, 300, 1000]), rnd.choice([1, 100, 128, 256, 700, 1100])
        left = rnd.choice([U, U, 0, 3, 100, 127, 128, 129, 500, 2000])
        right = rnd.choice([U, U, 0, 0, 5, 200])
        yield nq, nk, left, right, rnd.randrange(0, -(-nq // 128)) * 128


def test_band_tiles_visit_every_seen_tile_and_skip_the_rest(rng):
    """The tiles fa3's kernel visits (`band_tiles`: its arithmetic, on the host) against the band counted score by
    score: every tile a real row of the block sees a key of is visited; the first and the last visited tiles hold
    such a key (the tiles left of the band and right of it are skipped, as causal skips those above the diagonal);
    the unmasked tiles are seen whole by every real row; a block that sees nothing visits one tile."""
    for nq, nk, left, right, r0 in _band_cases(400, int(rng.integers(2**31))):
        jlo, s1, s2, jhi = fa3_launcher.band_tiles(r0, nq, nk, left, right, 128)
        where = (nq, nk, left, right, r0, (jlo, s1, s2, jhi))
        assert 0 <= jlo < jlo + 1 <= s1 <= s2 <= jhi, where
        some, every = _seen_tiles(r0, nq, nk, left, right, 128)
        seen = [j for j, s in enumerate(some) if s]
        if not seen:
            assert jhi == jlo + 1, where  # one tile, every score of it masked: O = 0, L = -inf
            continue
        assert jlo == seen[0] and jhi - 1 == seen[-1], where  # tight: nothing outside the band is visited
        assert all(every[j] for j in range(s1, s2)), where  # the unmasked stage needs no mask
        if left == U:
            assert s1 == jlo + 1, where  # no left edge: the kernel compiles no stage for it (BAND_LEFT off)


@pytest.mark.parametrize("nq, nk", [(1, 8192), (16, 32768), (128, 131072), (2048, 16384)])
def test_band_tiles_of_the_features_runs_caches(nq, nk):
    """The caches the features run measured (8k to 128k keys, causal: the band of every block ends on its bottom-right
    diagonal): each block visits every tile up to its diagonal's, the last one masked, the ones before it not."""
    for r0 in sorted({0, (nq - 1) // 128 // 2 * 128, (nq - 1) // 128 * 128}):
        jlo, s1, s2, jhi = fa3_launcher.band_tiles(r0, nq, nk, U, 0, 128)
        some, every = _seen_tiles(r0, nq, nk, U, 0, 128)
        seen = [j for j, s in enumerate(some) if s]
        assert (jlo, s1) == (0, 1) and jhi - 1 == seen[-1] and seen == list(range(jhi)), (nq, nk, r0)
        assert all(every[j] for j in range(s1, s2)) and s2 >= jhi - 2, (nq, nk, r0, s2)


def test_packed_blocks_are_listed_once_each_most_tiles_first():
    lq, lk = (5, 300, 1, 129, 1000), (5, 300, 40, 3000, 1000)
    cu_q, cu_k = tuple(itertools.accumulate((0, *lq))), tuple(itertools.accumulate((0, *lk)))
    table = fa3_launcher._varlen_table(cu_q, cu_k, U, 0, 128, "cpu").tolist()
    expected = {(b, i) for b, n in enumerate(lq) for i in range(-(-n // 128))}
    assert len(table) == len(expected) and {tuple(e) for e in table} == expected
    tiles = []
    for b, i in table:
        jlo, _, _, jhi = fa3_launcher.band_tiles(i * 128, lq[b], lk[b], U, 0, 128)
        tiles.append(jhi - jlo)
    assert tiles == sorted(tiles, reverse=True) and tiles[0] == 24  # sequence 3: 129 queries after 2871 keys


def _q(nq, nk=None, hq=2, hkv=2):
    return torch.empty(1, hq, nq, 64), torch.empty(1, hkv, nk or nq, 64)


@pytest.mark.parametrize(
    ("shape", "causal", "opts", "flags"),
    [
        ((8,), True, None, fa3_launcher.NO_OPTIONS),
        ((8,), False, ta.Options(), fa3_launcher.NO_OPTIONS),  # Options() at its defaults: plain attention
        ((8, 16), True, ta.Options(), fa3_launcher.OptionFlags(band=True)),  # a KV cache
        ((8,), True, ta.Options(-1, 4), fa3_launcher.NO_OPTIONS),  # causal cuts the right side to 0 anyway
        ((8,), False, ta.Options(-1, 4), fa3_launcher.OptionFlags(band=True)),
        ((8,), True, ta.Options(7, -1), fa3_launcher.OptionFlags(band=True, band_left=True)),
        ((8,), True, ta.Options(softcap=30.0), fa3_launcher.OptionFlags(softcap=1)),
    ],
)
def test_a_call_compiles_only_the_options_it_asks_for(shape, causal, opts, flags):
    q, k = _q(*shape)
    assert fa3_launcher.option_flags(q, k, causal, opts, fa3_launcher.FWD_CONFIGS[64]) == flags


def test_fast_tanh_and_packed_sequences_are_flags_of_their_own():
    q, k = torch.empty(10, 2, 64), torch.empty(12, 2, 64)
    cu = torch.tensor([0, 10], dtype=torch.int32)
    opts = ta.Options(-1, -1, 50.0, cu, cu, 10, 12)
    fast = replace(fa3_launcher.FWD_CONFIGS[64], fast_tanh=True)
    got = fa3_launcher.option_flags(q, k, True, opts, fast)
    assert got == fa3_launcher.OptionFlags(band=True, softcap=2, varlen=True)
    assert got.name() == "band+varlen+softcap-fast" and "fast_tanh" in fast.name()


def test_the_unmeasured_options_are_named_for_auto():
    """auto keeps fa2 for what fa3 takes but was not timed on; the words say which (one line)."""
    q, k = _q(8, 16, hq=4, hkv=2)
    got = unmeasured(q, k, (3, -1), 2.0, False)
    assert got == "grouped-query attention, Nq != Nk, a window, softcap"
    assert unmeasured(*_q(8), (-1, -1), 0.0, False) is None
    assert unmeasured(torch.empty(9, 2, 64), torch.empty(9, 2, 64), (-1, -1), 0.0, True) == "packed sequences"


def test_the_options_timed_faster_on_fa3_are_not_unmeasured():
    """D = 128, causal, at least FA3_OPTIONS_MIN_QUERIES queries per sequence: the feature runs' cases, where fa3's
    forward beat fa2's with every option; one query fewer, not causal, or D = 64 stays unmeasured."""
    m = FA3_OPTIONS_MIN_QUERIES
    q, k = torch.empty(1, 32, m, 128), torch.empty(1, 8, 8 * m, 128)
    assert unmeasured(q, k, (4095, -1), 50.0, False, True, m) is None
    assert unmeasured(q, k, (4095, -1), 50.0, False, False, m) == "grouped-query attention, Nq != Nk, a window, softcap"
    assert unmeasured(q[:, :, 1:], k, (-1, -1), 0.0, False, True, m - 1) == "grouped-query attention, Nq != Nk"
    assert unmeasured(q[..., :64], k[..., :64], (-1, -1), 0.0, False, True, m) == "grouped-query attention, Nq != Nk"
    more_queries = torch.empty(1, 32, 2 * m, 128), torch.empty(1, 8, m, 128)  # Nq > Nk: not timed
    assert unmeasured(*more_queries, (-1, -1), 0.0, False, True, 2 * m) == "grouped-query attention, Nq != Nk"
    packed = torch.empty(5 * m, 32, 128), torch.empty(5 * m, 8, 128)
    assert unmeasured(*packed, (-1, -1), 0.0, True, True, m) is None
    assert unmeasured(*packed, (-1, -1), 0.0, True, True, m // 2) == "grouped-query attention, packed sequences"


def test_auto_asks_fast_fa3_with_a_packed_calls_longest_sequence(monkeypatch):
    """A packed q is (total, H, D): auto judges the shape by max_seqlen_q (n), not by q's second dimension (H)."""
    monkeypatch.setattr(fa3_launcher, "unavailable", lambda: None)
    monkeypatch.setattr(fa3_backend, "supports", lambda q, scale=None: None)
    packed = torch.empty(9000, 4, 64)  # D = 64: fast_fa3 holds for n <= 2048 only
    assert attention_backends.choose("auto", packed, False, n=1024) == attention_backends.FA3
    assert attention_backends.choose("auto", packed, False, n=4096) == attention_backends.FA2


def test_forcing_fa3_without_a_hopper_gpu_says_why():
    if HOPPER:
        pytest.skip("fa3 runs here")
    q = torch.randn(1, 2, 8, 64, dtype=BF16)
    k = torch.randn(1, 2, 16, 64, dtype=BF16)
    with pytest.raises(ValueError, match=r"^backend 'fa3' is not available here \(.+\); available: auto, fa2$"):
        flashviz.attention(q, k, k, causal=True, window=(4, -1), softcap=3.0, backend="fa3")


def test_fa3_takes_nq_ne_nk_past_4096_keys():
    """The 4096-key bound of 2026-12-05 is lifted: bench/fa3_band_probe.py saw fa3's O match fp32 attention up to
    131,072 keys on the GPU with no options and with the options' defaults (bench/results/attention/features/
    2026-12-05-fa3-band-probe). Forcing fa3 on a cache is refused only for what this machine lacks, never for
    Nq != Nk."""
    dev = "cuda" if HOPPER else "cpu"
    q = torch.randn(1, 2, 16, 64, dtype=BF16, device=dev)
    k = torch.randn(1, 2, 4097, 64, dtype=BF16, device=dev)
    qp, kp = torch.randn(16 + 8, 2, 64, dtype=BF16, device=dev), torch.randn(4097 + 8, 2, 64, dtype=BF16, device=dev)
    cu_q, cu_k = (torch.tensor([0, n, n + 8], dtype=torch.int32, device=dev) for n in (16, 4097))
    for call in (
        lambda: flashviz.attention(q, k, k, causal=True, backend="fa3"),
        lambda: flashviz.attention_varlen(qp, kp, kp, cu_q, cu_k, 16, 4097, causal=True, backend="fa3"),
    ):
        if HOPPER:
            call()
            continue
        with pytest.raises(ValueError, match=r"^backend 'fa3' is not available here") as e:
            call()
        assert "Nq != Nk" not in str(e.value) and "keys" not in str(e.value)
    assert not hasattr(ta, "FA3_UNEVEN_MAX_KEYS")


class _Recorder:
    """Stands in for kernel.fa3_fwd: records the grid and the arguments of a launch (no GPU)."""

    def __init__(self, real):
        self.real, self.launches = real, []

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.launches.append((grid, args, kwargs))


@pytest.mark.parametrize("packed", [False, True], ids=["dense", "packed"])
def test_the_launch_passes_what_fa3_fwd_takes(monkeypatch, packed):
    """fa3_launcher.forward up to the launch, on the CPU: every keyword is a parameter of fa3_fwd, the options'
    arguments are there exactly where their flags are on, and the grid and block count match the blocks of Q."""
    pytest.importorskip("triton.experimental.gluon")
    km = fa3_launcher._kernels()
    rec = _Recorder(km.fa3_fwd)
    monkeypatch.setattr(km, "fa3_fwd", rec)
    monkeypatch.setattr(fa3_launcher, "_num_sms", lambda: 132)
    if packed:
        lq, lk = (5, 300, 129), (40, 300, 1000)
        q = torch.randn(sum(lq), 4, 64, dtype=BF16)
        k = v = torch.randn(sum(lk), 2, 64, dtype=BF16)
        cq, ck = cumulative(lq, "cpu"), cumulative(lk, "cpu")
        opts = ta.Options(100, -1, 30.0, cq, ck, max(lq), max(lk))
        blocks = (1 + 3 + 2) * 4  # blocks of 128 rows (5, 300 and 129 queries) x q heads
    else:
        q = torch.randn(2, 4, 300, 64, dtype=BF16)
        k = v = torch.randn(2, 2, 1000, 64, dtype=BF16)
        opts = ta.Options(-1, -1, 30.0)
        blocks = 3 * 2 * 4
    o, lse = fa3_launcher.forward(q, k, v, True, 0.125, opts=opts)
    (grid, args, kwargs), *more = rec.launches
    assert not more and set(kwargs) - {"num_warps", "maxnreg"} <= set(rec.real.arg_names)
    flags = fa3_launcher.OptionFlags(band=True, band_left=packed, softcap=1, varlen=packed)
    assert {n: kwargs[n] for n in ("BAND", "BAND_LEFT", "SOFTCAP", "VARLEN")} == flags.constexprs()
    assert kwargs["GROUP"] == 2 and kwargs["RIGHT"] == 0 and kwargs["LEFT"] == (100 if packed else U)
    assert kwargs["softcap2"] == pytest.approx(30.0 * 1.4426950408889634)
    assert args[5:9] == (4, sum(lq) if packed else 300, blocks, 0.125 / 30.0)  # H, N, num_blocks, scale / c
    assert grid == (min(blocks, 132),) if fa3_launcher.forward_config(64, 1000, True).persistent else (blocks,)
    if packed:
        assert kwargs["blocks"].shape == (blocks // 4, 2) and kwargs["O"] is o and o.shape == q.shape
        assert lse.shape == (4, sum(lq)) and kwargs["cu_q"] is cq
        assert args[0].shape == [1, 4, sum(lq), 64] and args[0].strides == [q.stride(1) * 4, 64, 256, 1]
    else:
        assert o.shape == q.shape and lse.shape == (2, 4, 300) and "cu_q" not in kwargs and kwargs["Nk"] == 1000


CACHES = [(300, 1000, True), (1, 8192, True), (2048, 16384, False), (128, 131072, True)]


@pytest.mark.parametrize("nq, nk, causal", CACHES)
def test_a_cache_without_options_launches_the_band(monkeypatch, nq, nk, causal):
    """flashviz.attention passes fa3 no options (None) for Nq != Nk with no window and no softcap. fa3's launch then
    compiled no band (2026-12-05): Nq rows ran against the first Nq keys, aligned to the top-left (the features run:
    O = V's first row at decode, |diff| 2.9-4.1, a constant 0.11 ms). Now it launches exactly what the options' path
    launches (the band, Nk, unbounded left, right 0 when causal), the path the GPU tests checked against float64."""
    pytest.importorskip("triton.experimental.gluon")
    km = fa3_launcher._kernels()
    rec = _Recorder(km.fa3_fwd)
    monkeypatch.setattr(km, "fa3_fwd", rec)
    monkeypatch.setattr(fa3_launcher, "_num_sms", lambda: 132)
    q = torch.randn(1, 4, nq, 64, dtype=BF16)
    k = torch.randn(1, 2, nk, 64, dtype=BF16)
    assert fa3_launcher.option_flags(q, k, causal, None, fa3_launcher.FWD_CONFIGS[64]) == fa3_launcher.OptionFlags(
        band=True
    )
    fa3_launcher.forward(q, k, k, causal, 0.125, opts=None)
    fa3_launcher.forward(q, k, k, causal, 0.125, opts=ta.Options(-1, -1, 0.0))
    (grid, args, kwargs), (grid_o, args_o, kwargs_o) = rec.launches
    assert kwargs["BAND"] is True and kwargs["Nk"] == nk and kwargs["LEFT"] == U
    assert kwargs["RIGHT"] == (0 if causal else U)
    assert grid == grid_o and kwargs == kwargs_o
    assert [getattr(a, "shape", a) for a in args[4:]] == [getattr(a, "shape", a) for a in args_o[4:]]


def test_nq_eq_nk_without_options_is_the_plain_build():
    cfg = fa3_launcher.FWD_CONFIGS[128]
    q = torch.randn(1, 2, 300, 128, dtype=BF16)
    assert fa3_launcher.option_flags(q, q, True, None, cfg) == fa3_launcher.NO_OPTIONS


def test_a_cache_without_options_runs_fa2s_backward(monkeypatch):
    """fa3_bwd takes Nq = Nk only: a cache's backward is FlashAttention-2's whatever kernel is asked."""
    seen = []

    class Launcher:
        def backward(self, *args, **kwargs):
            seen.append(args)
            return "dq", "dk", "dv"

    monkeypatch.setattr(ta, "launcher", lambda: Launcher())
    q = torch.randn(1, 2, 16, 64, dtype=BF16)
    k = torch.randn(1, 2, 40, 64, dtype=BF16)
    got = fa3_backend.backward(q, k, k, q, None, q, None, True, 0.125, kernel="gluon", opts=None)
    assert got == ("dq", "dk", "dv") and len(seen) == 1
