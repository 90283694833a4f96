"""FLOPs of one head of fa2_splitkv.cu in closed form, by kind (flashviz.engine.flops), checked against the engine's
counters. Per (i, j) pair the split kernel does fa2's tile work; per split block (Tr·S of them) the division
Oi / li and L = mi + log li at write-back; per merge (S − 1 per block of Q) the combine's log-sum-exp rule."""

from __future__ import annotations

from flashviz.model.tiling import count as blocks

from .record import splits

FORMULAS = {
    "matmul": "4·Br·Bc·D per pair: Sij = QiKjᵀ and P·Vj",
    "exp": "(Br·Bc + Br) per pair; 2·Br per merge: e^(Lc − m), e^(Ls − m)",
    "max": "(Br·Bc + Br) per pair: rowmax(Sij), max(mi, ·); Br per merge: max(Lc, Ls)",
    "add": "(2·Br·Bc + 2·Br + Br·D) per pair, Br per split block; (4·Br + Br·D) per merge (Lc − m, Ls − m count here)",
    "mul": "(Br·Bc + Br + Br·D) per pair; 2·Br·D per merge: Oc·ac, Os·as",
    "div": "Br·D per split block: Oi / li; 2·Br per merge: the weights ac, as",
    "log": "Br per split block: log li; Br per merge: log(wc + ws)",
}


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, int]:
    tr, tc, s = blocks(n, br), blocks(n, bc), splits(n, bc)
    pairs, split_blocks, merges = tr * tc, tr * s, tr * (s - 1)
    return {
        "matmul": 4 * br * bc * d * pairs,
        "exp": (br * bc + br) * pairs + 2 * br * merges,
        "log": br * split_blocks + br * merges,
        "max": (br * bc + br) * pairs + br * merges,
        "add": (2 * br * bc + 2 * br + br * d) * pairs + br * split_blocks + (4 * br + br * d) * merges,
        "mul": (br * bc + br + br * d) * pairs + 2 * br * d * merges,
        "div": br * d * split_blocks + 2 * br * merges,
    }
