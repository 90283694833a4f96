"""The split's trade in numbers, for `flashviz compare` (Algorithm.compare_table): decoding, Nq = 1..64 queries
against Nk = 16,384 keys, one head. FA2's grid is Tr x B·H blocks, the split's Tr x S x B·H; the split's extra HBM
bytes are its partials (written and read back) and its S - 1 extra reads of Q, from `traffic.rectangular`: the
same closed form the engine's counters are held to, at Nq != Nk. FA2's count at Nq != Nk is that form with one
chunk and no partials (its K and V read once per block of Q, Q, O and L once)."""

from __future__ import annotations

from typing import Any

from flashviz.model.tiling import count as blocks
from flashviz.model.units import FLOAT_BYTES, human_bytes

from ...hardware.device import h200
from .record import CHUNK, splits
from .traffic import rectangular

NK = 16384
NQ = (1, 2, 4, 8, 16, 32, 64)


def fa2_elements(nq: int, nk: int, d: int, br: int) -> int:
    """FA2's elements moved at Nq queries, Nk keys: Q, O, L once, K and V once per block of Q."""
    return nq * d + 2 * blocks(nq, br) * nk * d + nq * d + nq


def table(d: int, br: int, bc: int) -> dict[str, Any]:
    sms = h200().sms
    s = splits(NK, bc)
    rows = []
    for nq in NQ:
        tr = blocks(nq, br)
        mine = rectangular(nq, NK, d, br, bc)
        total = sum(t["read"] + t["written"] for t in mine.values())
        base = fa2_elements(nq, NK, d, br)
        extra = total - base  # the partials both ways and Q's S - 1 extra reads
        rows.append(
            {
                "nq": nq,
                "blocks": {"fa2": tr, "fa2-splitkv": tr * s},
                "fa2_blocks": tr,
                "split_blocks": tr * s,
                "fa2_sms": f"{min(tr, sms)}/{sms}",
                "split_sms": f"{min(tr * s, sms)}/{sms}",
                "extra_bytes": extra * FLOAT_BYTES,
                "extra": human_bytes(extra * FLOAT_BYTES),
                "extra_pct": f"{100 * extra / base:.2f}%",
            }
        )
    return {
        "title": f"split-KV for decoding: Nq queries against Nk = {NK:,} keys, one head, D={d} Br={br} Bc={bc}",
        "caption": f"From the closed forms (no engine run). S = \u2308Tc/{CHUNK}\u2309 = {s} chunks of the keys "
        f"(Tc = {blocks(NK, bc)}). Blocks in the grid per head, against the H200's {sms} SMs: multiply by B\u00b7H. "
        "Extra bytes: the partials Opart, Lpart written and read back once, and Q read once per chunk, beside "
        "FA2's bytes at the same shape.",
        "nk": NK,
        "sms": sms,
        "heads": 1,
        "br": br,
        "bc": bc,
        "splits": s,
        "columns": [
            {"key": "nq", "label": "Nq"},
            {"key": "fa2_blocks", "label": "FA2 blocks"},
            {"key": "fa2_sms", "label": "FA2 SMs busy"},
            {"key": "split_blocks", "label": "split-KV blocks"},
            {"key": "split_sms", "label": "split-KV SMs busy"},
            {"key": "extra", "label": "extra HBM bytes"},
            {"key": "extra_pct", "label": "extra vs FA2"},
        ],
        "rows": rows,
    }
