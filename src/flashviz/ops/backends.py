"""Which kernels run a call of flashviz.attention: `backend=` "auto", "fa3" or "fa2".

- "fa2": FlashAttention-2 in Triton (`flashviz.algos.fa2_triton.launcher`): any CUDA GPU, and the CPU under
  Triton's interpreter (how CI runs it);
- "fa3": FlashAttention-3 in Gluon (`flashviz.algos.fa3.launcher`, `flashviz.ops.fa3`): an sm_90 GPU, D in
  {64, 128}, bf16/fp16, scale > 0, every option of flashviz.attention and attention_varlen in its forward (their
  backward fa2's);
- "auto": fa3 where it runs and was measured faster for the shape (`fast_fa3`; with the options of issue 22,
  `FA3_OPTIONS_MIN_QUERIES`), fa2 elsewhere.

These names are backends of flashviz.attention, not the viewer's algorithms (which the registry names).
"""

from __future__ import annotations

from flashviz.model.echo import cut

AUTO, FA3, FA2 = "auto", "fa3", "fa2"
BACKENDS = (AUTO, FA3, FA2)


def fast_fa3(d: int, n: int, causal: bool) -> bool:
    """Where fa3 beat fa2-triton in the recorded run (2026-12-01, H200: bench/results/attention/
    2026-12-01-nvidia-h200.md, logs/fa3-run2; NOTES.md "fa3"). Both backends then ran the same backward kernels
    (flashviz.ops.fa3.BACKWARD), so the forward decides; TFLOP/s fa3 against fa2, non-causal / causal:
    - D=128: N=16384 640 / 596 against 545 / 552 (fa3's forward_config, its ablation rows); N=8192 625 / 550
      against 538 / 497; N=4096 649 / 484 against 500 / 451; N=1024 390 / 330 against 413 / 297;
    - D=64: N=16384 448 / 418 against 445 / 420; N=8192 440 / 351 against 446 / 409; N=4096 427 / 374 against
      433 / 371 (ties or fa2); N=1024 399 / 268 against 356 / 241.
    N between the measured ones (2048) takes the side of its neighbours' boundary: a guess, not a measurement."""
    if d == 128:
        return causal or n >= 2048
    if d == 64:
        return n <= 2048
    return False


# Where fa3's forward with the options measured faster than fa2's, so auto runs it: D = 128, causal, at least this
# many queries per sequence. The two feature runs of 2026-12-05 (an H100, every provider in one process;
# bench/results/attention/features/2026-12-05-nvidia-h100 and -run2), GQA 32/8, fa3 against fa2, forward TFLOP/s:
# GQA N=8k 634, 642 against 483, 495; a cache Nq=2k Nk=16k 643 against 524; a window of 4096 at N=32k 627, 579
# against 483, 491; softcap 50 at N=8k 355, 345 against 307, 337; 64 packed sequences of 91 to 3,994 tokens 412, 378
# against 350, 371. With 1 to 128 queries against a cache (decode) fa2's split-KV forward was 2 to 10x faster; in
# between, not causal, at D = 64 and with more queries than keys, fa3 was not timed with the options.
FA3_OPTIONS_MIN_QUERIES = 2048


def unmeasured(q, k, window, softcap, varlen: bool, causal: bool = False, queries: int = 0) -> str | None:
    """What of a call fa3 takes but was not timed faster than fa2 for (None: nothing), in words, for `choose`: fa3
    runs it when asked (backend="fa3"), auto keeps fa2 for it. Grouped-query attention (fa3's forward reads K/V head
    h // group since issue 22), Nq != Nk, a window, softcap and packed sequences (compiled into fa3's forward where
    a call asks for them); the backward of each is fa2's. None, too, where they were timed and fa3 was faster:
    D = 128, causal, `queries` (Nq, or max_seqlen_q) at least FA3_OPTIONS_MIN_QUERIES, and (dense) no more queries
    than keys."""
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


def choose(backend: object, q, causal: bool, scale: float | None = None, unmeasured: str | None = None,
           n: int | None = None) -> str:  # fmt: skip
    """The backend that runs q (B, H, N, D), or packed (total, H, D) with `n` its longest sequence; ValueError, one
    line naming what is there, when `backend` can't run. unmeasured: what fa3 takes but was not timed faster on
    ("grouped-query attention"): "fa3" runs it, "auto" runs fa2. n: the queries per sequence (None: q's N)."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {cut(str(backend))!r}")
    if backend == FA2:
        return FA2
    from flashviz.algos.fa3 import launcher as fa3_launcher
    from flashviz.ops import fa3

    why = fa3_launcher.unavailable() or fa3.supports(q, scale)
    if backend == FA3:
        if why:
            raise ValueError(f"backend {FA3!r} is not available here ({why}); available: {AUTO}, {FA2}")
        return FA3
    if why or unmeasured or not fast_fa3(q.shape[-1], q.shape[-2] if n is None else n, causal):
        return FA2
    return FA3
