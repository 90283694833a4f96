"""What several test files share: fresh inputs, a config that records every block, and a region cutter written
independently of flashviz.kernels (so the tests do not check that module against itself)."""

from __future__ import annotations

import numpy as np

from flashviz.config import Config


def qkv(rng, n: int, d: int, scale: float = 1.0) -> dict[str, np.ndarray]:
    return {k: (rng.standard_normal((n, d)) * scale).astype(np.float32) for k in "QKV"}


def every_block(cfg: Config) -> Config:
    return cfg.replace(record=tuple(range(cfg.blocks)))


def region_lines(source: str, op: str) -> list[str]:
    """The dedented lines between `// step: op` and `// end step`, cut by hand."""
    lines = source.splitlines()
    start = next(k for k, line in enumerate(lines) if line.strip() == f"// step: {op}")
    end = next(k for k in range(start, len(lines)) if lines[k].strip() == "// end step")
    body = lines[start + 1 : end]
    indent = min(len(line) - len(line.lstrip()) for line in body if line.strip())
    return [line[indent:] for line in body]
