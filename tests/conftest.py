from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def _interpreter_without_a_gpu() -> None:
    """Triton decorates its standard library (tl.zeros, ...) when it is first imported, reading TRITON_INTERPRET
    then: whichever module imports it first decides for the whole session, and a kernel interpreted later calls
    compiled-mode helpers ("Cannot call @triton.jit'd outside of the scope of a kernel"). A browser test module that
    only asked `importorskip("triton")` came first in the full run and broke every interpreter test after it. Without
    a GPU every in-process kernel runs under the interpreter, so it is set here, before any test module is imported
    (tests that need it off take it away with monkeypatch, as before)."""
    if "TRITON_INTERPRET" in os.environ:
        return
    try:
        import torch
    except ImportError:
        return
    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"


_interpreter_without_a_gpu()


@pytest.fixture
def rng(request):
    """Fresh random inputs for every test run; the seed is printed so a failure can be replayed."""
    import numpy as np

    seed = int.from_bytes(os.urandom(4), "little")
    print(f"random seed: {seed}")
    return np.random.default_rng(seed)
