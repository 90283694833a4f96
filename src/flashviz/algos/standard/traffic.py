"""Standard attention, one head: three kernels with S and P materialized in HBM (standard.cu).

S and P each cross HBM once per pass: written N², read N². Q is read once (block i keeps Qi while it
streams K); K and V are streamed once per block of Q, Tr times, exactly as FA2 streams them. O is
written once; no L. Under causal, block i uses only the key columns 0 .. w_i - 1 of its rows.
"""

from __future__ import annotations

from flashviz.algos.picture import CAUSAL_SUM, Rule, times
from flashviz.model.tiling import sum_tiles, sum_width
from flashviz.model.units import FLOAT_BYTES


def count(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, dict[str, int]]:
    kv_rows = sum_width(n, br, bc, causal)  # K (and V) rows streamed, summed over blocks; ragged tiles are short
    sp = sum_width(n, br, bc, causal, weighted=True)  # entries of S (and of P) the blocks' rows use: N² if not causal
    return {
        "Q": {"read": n * d, "written": 0},
        "K": {"read": kv_rows * d, "written": 0},
        "V": {"read": kv_rows * d, "written": 0},
        "S": {"read": sp, "written": sp},
        "P": {"read": sp, "written": sp},
        "O": {"read": 0, "written": n * d},
    }


def kernel_sram_bytes(n: int, d: int, br: int, bc: int) -> dict[str, int]:
    """Shared memory per block of each of the three kernels (the .cu file's *_smem_bytes macros)."""
    return {
        "standard_scores": FLOAT_BYTES * (br * d + bc * d + br * bc),  # Qi, Kj, Sij
        "standard_softmax": FLOAT_BYTES * (n + 2),  # Sr (one row of S), mr, lr
        "standard_pv": FLOAT_BYTES * (br * bc + bc * d + br * d),  # Pij, Vj, Oi
    }


def sram_bytes(n: int, d: int, br: int, bc: int) -> int:
    """Shared memory per block: the largest of the three kernels'."""
    return max(kernel_sram_bytes(n, d, br, bc).values())


def steps(n: int, d: int, br: int, bc: int, causal: bool = False) -> int:
    """Steps of the whole launch: per block i, load_q + (load_k, scores) per tile, one softmax_row per row,
    (load_pv, accumulate) per tile, write_o."""
    tr = -(-n // br)
    return 2 * tr + 4 * sum_tiles(n, br, bc, causal) + n


def rules(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, Rule]:
    """Each tensor's count in words and as the page shows its closed form (`read`/`written`: without causal)."""
    tr = -(-n // br)
    kv = Rule(
        times(tr, "read once per block of Q"),
        CAUSAL_SUM if causal else f"Tr\u00b7N\u00b7D = {tr}\u00b7{n}\u00b7{d}",
        read="Tr*N*D",
    )
    square = CAUSAL_SUM if causal else f"N\u00b2 = {n}\u00b2"
    return {
        "Q": Rule("read once", f"N\u00b7D = {n}\u00b7{d}", read="N*D"),
        "K": kv,
        "V": kv,
        "S": Rule("written by kernel 1, read back by kernel 2: N\u00b2 each way", square, read="N*N", written="N*N"),
        "P": Rule("written by kernel 2, read back by kernel 3: N\u00b2 each way", square, read="N*N", written="N*N"),
        "O": Rule("written once", f"N\u00b7D = {n}\u00b7{d}", written="N*D"),
    }
