"""Which kernels run a call of flashviz.attention: `backend=` "auto", "fa3" or "fa2".

- "fa2": FlashAttention-2 in Triton (`flashviz.triton_attention`): any CUDA GPU, and the CPU under Triton's
  interpreter (how CI runs it);
- "fa3": FlashAttention-3 in Gluon (`flashviz.fa3_attention`): an sm_90 GPU, D in {64, 128}, bf16/fp16;
- "auto": fa3 where it runs and FAST_FA3 says it measured faster for the shape, fa2 elsewhere.

These names are backends of flashviz.attention, not the viewer's algorithms (which the registry names).
"""

from __future__ import annotations

AUTO, FA3, FA2 = "auto", "fa3", "fa2"
BACKENDS = (AUTO, FA3, FA2)


def fast_fa3(d: int, n: int, causal: bool) -> bool:
    """Where fa3 (forward + backward) beat fa2-triton in the recorded run. Source: bench/results/attention/
    (see NOTES.md, "fa3"); until that run, fa3 is taken wherever it runs, from N = 1024 up."""
    return n >= 1024


def choose(backend: object, q, causal: bool) -> str:
    """The backend that runs (B, H, N, D) q; ValueError, one line naming what is there, when `backend` can't run."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {str(backend)[:40]!r}")
    if backend == FA2:
        return FA2
    from . import fa3_attention

    why = fa3_attention.unavailable() or fa3_attention.supports(q)
    if backend == FA3:
        if why:
            raise ValueError(f"backend {FA3!r} is not available here ({why}); available: {AUTO}, {FA2}")
        return FA3
    if why or not fast_fa3(q.shape[-1], q.shape[-2], causal):
        return FA2
    return FA3
