"""What several test files share: fresh inputs, a config that records every block, and a region cutter written
independently of flashviz.model.kernels (so the tests do not check that module against itself)."""

from __future__ import annotations

import numpy as np

from flashviz.algos import get
from flashviz.model.config import Config


def qkv(rng, n: int, d: int, scale: float = 1.0) -> dict[str, np.ndarray]:
    return {k: (rng.standard_normal((n, d)) * scale).astype(np.float32) for k in "QKV"}


def every_block(cfg: Config) -> Config:
    return cfg.replace(record=tuple(range(get(cfg.algo).blocks(cfg))))


def runnable(cfg: Config) -> Config:
    """cfg, or where its algorithm's kernel does not run those tiles (a Triton kernel: powers of two from 16, its head
    dimensions), the nearest launch it runs: Br and Bc rounded up to powers of two from 16 (Bc no more than Br under
    causal masking) at the algorithm's example D, and failing that its example D, Br, Bc (`Algorithm.example`); N and
    causal stay, unless the algorithm's rules tie N to its other fields (ring: N = P·Br), where the whole example
    is taken."""
    from flashviz.model.config import ConfigError

    record = get(cfg.algo)
    try:
        record.check_launch(cfg)
        return cfg
    except ConfigError:
        assert record.example is not None, f"{cfg.algo} refuses {cfg} and has no example"

    def up(x: int) -> int:
        return max(16, 1 << (x - 1).bit_length())

    br = up(cfg.br)
    near = cfg.replace(d=record.example["d"], br=br, bc=min(up(cfg.bc), br) if cfg.causal else up(cfg.bc))
    try:
        record.check_launch(near)
        return near
    except ConfigError:
        pass
    own = cfg.replace(**{k: v for k, v in record.example.items() if k != "n"})
    try:
        record.check_launch(own)
        return own
    except ConfigError:  # a launch whose N its own rules fix too (ring: a multiple of the devices' chunks)
        return cfg.replace(**record.example)


def region_lines(source: str, op: str) -> list[str]:
    """The dedented lines between `// step: op` and `// end step`, cut by hand."""
    lines = source.splitlines()
    start = next(k for k, line in enumerate(lines) if line.strip() == f"// step: {op}")
    end = next(k for k in range(start, len(lines)) if lines[k].strip() == "// end step")
    body = lines[start + 1 : end]
    indent = min(len(line) - len(line.lstrip()) for line in body if line.strip())
    return [line[indent:] for line in body]


def bounded_work(fn, *args, max_lines: int = 50_000, max_bytes: int = 64 * 2**20, **kwargs):
    """fn(*args, **kwargs), failing as soon as it runs more than max_lines Python lines or allocates more than
    max_bytes at once: a check that a closed form has no loop over 2^31 blocks, by its work rather than a clock."""
    import sys
    import tracemalloc

    lines = 0

    def tracer(frame, event, arg):
        nonlocal lines
        if event == "line":
            lines += 1
            if lines > max_lines:
                raise AssertionError(f"more than {max_lines:,} Python lines: a loop over blocks?")
        return tracer

    tracemalloc.start()
    sys.settrace(tracer)
    try:
        result = fn(*args, **kwargs)
    finally:
        sys.settrace(None)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak <= max_bytes, f"{peak / 2**20:.0f} MiB allocated at once: an array over blocks?"
    return result, lines
