"""FlashAttention-2 backward, one head: what fa2_backward.cu moves across HBM, in elements.

Two launches. The preprocessing kernel reads dO and O once, writes Delta = rowsum(dO ∘ O) once and zeroes
dQ (N·D writes). The main kernel's block j reads Kj and Vj once and writes dKj and dVj once; for every
block i of Q it visits, it reads Qi, dOi, Li and Deltai and adds its share into dQ[i] with atomicAdd, which
counts as one read and one write of each element added to (a read-modify-write). The forward's O and L
are inputs here: the backward reads them, never writes them.

Ragged N: rows past N are never moved, so a visit of block i moves exactly its valid rows. Causal:
block j visits blocks i >= i0(j) = j·Bc // Br, those whose last row reaches its first column j·Bc; the
blocks it visits hold rows i0(j)·Br … N−1, so it moves N − i0(j)·Br rows of each per-row tensor.
"""

from __future__ import annotations

from flashviz.algos.picture import CAUSAL_SUM, Rule, times
from flashviz.model import tiling
from flashviz.model.units import FLOAT_BYTES


def q_rows_streamed(n: int, br: int, bc: int, causal: bool = False) -> int:
    """Rows of Q (and of dO, L, Delta, dQ) that the main kernel's blocks stream, summed over blocks j."""
    return tiling.count(n, bc) * n - br * tiling.sum_first_blocks(n, br, bc, causal)


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, dict[str, int]]:
    rows = q_rows_streamed(n, br, bc, causal)  # every visit of a block i moves its valid rows
    return {
        "Q": {"read": rows * d, "written": 0},
        "K": {"read": n * d, "written": 0},  # Kj once, by block j
        "V": {"read": n * d, "written": 0},
        "O": {"read": n * d, "written": 0},  # preprocessing only
        "L": {"read": rows, "written": 0},
        "dO": {"read": n * d + rows * d, "written": 0},  # preprocessing, then once per visit
        "Delta": {"read": rows, "written": n},
        "dQ": {"read": rows * d, "written": n * d + rows * d},  # zeroed, then one atomicAdd per visit
        "dK": {"read": 0, "written": n * d},
        "dV": {"read": 0, "written": n * d},
    }


def sram_bytes(n: int, d: int, br: int, bc: int) -> int:
    """Shared memory one block of the main kernel claims: fa2_bwd_smem_bytes(Br, Bc, D) in the kernel file.
    (The preprocessing kernel's blocks claim less: fa2_bwd_preprocess_smem_bytes(Br, D) = 4·(2·Br·D + Br).)"""
    return FLOAT_BYTES * (4 * bc * d + 2 * br * d + 2 * br * bc + 2 * br)


def steps(n: int, d: int, br: int, bc: int, causal: bool = False) -> int:
    """Steps in the trace of the whole launch with every block recorded: two per preprocessing block
    (load_do_o, write_delta); per main block load_kv, six per visited block i (load_q, probs, dv, ds, dk,
    dq) and write_back."""
    tr, tc = -(-n // br), -(-n // bc)
    visits = tc * tr - tiling.sum_first_blocks(n, br, bc, causal)
    return 2 * tr + 2 * tc + 6 * visits


def rules(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, Rule]:
    """Each tensor's count in words and as the page shows its closed form (`read`/`written`: without causal)."""
    tc = -(-n // bc)
    nd = f"N\u00b7D = {n}\u00b7{d}"
    kv = Rule("read once (the outer loop)", nd, read="N*D")
    out = Rule("accumulated in SRAM, written once", nd, written="N*D")
    return {
        "Q": Rule(
            times(tc, "read once per tile of K/V that visits it"),
            CAUSAL_SUM if causal else f"Tc\u00b7N\u00b7D = {tc}\u00b7{n}\u00b7{d}",
            read="Tc*N*D",
        ),
        "K": kv,
        "V": kv,
        "O": Rule("read once, by the preprocessing kernel", nd, read="N*D"),
        "L": Rule(
            "the forward's L, read on every visit: P = exp(S \u2212 L) is recomputed, never stored",
            CAUSAL_SUM if causal else f"Tc\u00b7N = {tc}\u00b7{n}",
            read="Tc*N",
        ),
        "dO": Rule(
            "read by the preprocessing kernel, then on every visit",
            CAUSAL_SUM if causal else f"(1+Tc)\u00b7N\u00b7D, Tc = {tc}",
            read="(1+Tc)*N*D",
        ),
        "Delta": Rule(
            "written once (rowsum(dO\u2218O)), read on every visit",
            CAUSAL_SUM if causal else f"written N, read Tc\u00b7N, Tc = {tc}",
            read="Tc*N",
            written="N",
        ),
        "dQ": Rule(
            "zeroed once, then each atomicAdd counts one read and one write",
            CAUSAL_SUM if causal else "read Tc\u00b7N\u00b7D, written (1+Tc)\u00b7N\u00b7D",
            read="Tc*N*D",
            written="(1+Tc)*N*D",
        ),
        "dK": out,
        "dV": out,
    }
