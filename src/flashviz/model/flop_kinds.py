"""The kinds of FLOPs flashviz counts (the engine as it computes, the closed forms per algorithm): `matmul`, the
products of tiles (2·m·n·k each: what tensor cores run in a real kernel), and the "non-matmul" FLOPs of the
FlashAttention-2 paper (section 3.1): `exp`, `log`, `max`, `add` (an addition or a subtraction), `mul`, `div`. A
leaf: the comparison reads it without importing the engine."""

from __future__ import annotations

MATMUL = "matmul"
NON_MATMUL = ("exp", "log", "max", "add", "mul", "div")
KINDS = (MATMUL, *NON_MATMUL)


def total(counts: dict[str, int]) -> dict[str, int]:
    """`matmul`, `non_matmul` (the sum of the other kinds) and `exp` of a count by kind."""
    return {
        "matmul": int(counts.get(MATMUL, 0)),
        "non_matmul": int(sum(counts.get(k, 0) for k in NON_MATMUL)),
        "exp": int(counts.get("exp", 0)),
    }
