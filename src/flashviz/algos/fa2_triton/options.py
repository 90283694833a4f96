"""fa2-triton's words and numbers for the options of real models a launch runs (issue 22): the trace's `options`
(docs/trace-schema.md), which the page's "Options of real models" section draws without knowing what they are, and
the veils that show what a block never touches (the tiles outside its band, the keys of other sequences).

Every number is a closed form of this folder (traffic.py, flops.py through models.py) at this launch and at the
launch it is compared with (no window, no masking at all, as many K/V heads as q heads, sequences padded to the
longest); the engine's counters are held to the same closed forms by the trace's `model.matches` and the tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flashviz.algos.picture import Rich, b, code, sub
from flashviz.model import tiling
from flashviz.model.flop_kinds import total
from flashviz.model.units import human_bytes

from . import models, traffic

if TYPE_CHECKING:
    from flashviz.algos.picture import Tensor
    from flashviz.model.config import Config

BYTES = {"Q": 2, "K": 2, "V": 2, "O": 2, "L": 4}  # the record's tensor_bytes


def bytes_of(cfg: Config) -> int:
    return sum(BYTES[t] * (c["read"] + c["written"]) for t, c in models.count(cfg).items())


def flops_of(cfg: Config) -> dict[str, int]:
    return total(models.flops(cfg))


def saving(label: str, here: int, there: int) -> list[str]:
    """A row: what a launch moves against another, and the difference."""
    if there == here:
        return [label, f"{human_bytes(there)}: the same"]
    return [label, f"{human_bytes(there)} \u2192 {human_bytes(here)}, {human_bytes(there - here)} saved"]


def flop_saving(label: str, here: dict[str, int], there: dict[str, int]) -> list[str]:
    a, c = here["matmul"] + here["non_matmul"], there["matmul"] + there["non_matmul"]
    return [label, f"{c:,} \u2192 {a:,} FLOPs" + (f", {c - a:,} saved" if c > a else "")]


def pairs_summary(pairs: list[str]) -> dict[str, int]:
    """Over the picks' rows of the tile map: pairs run, skipped left of the band, right of it, and masked."""
    out = {"run": 0, "left": 0, "right": 0, "masked": 0, "all": 0}
    for row in pairs:
        live = [j for j, k in enumerate(row) if k != "s"]
        out["all"] += len(row)
        out["run"] += len(live)
        out["masked"] += sum(1 for k in row if k in "mlb")
        first, last = (live[0], live[-1]) if live else (len(row), len(row) - 1)
        out["left"] += first
        out["right"] += len(row) - 1 - last if live else 0
    return out


def gqa(cfg: Config) -> dict[str, Any]:
    g, d = cfg.group, cfg.d
    nk = cfg.kv_n
    kv = traffic.kv_unique(d, nk, g)
    here = models.count(cfg)
    loads = 2 * (here["K"]["read"] + here["V"]["read"])
    unique_gqa = 2 * (cfg.q_rows * d * 2) + 4 * cfg.q_rows + 2 * kv["gqa"]  # Q, O, L and K, V: each element once
    unique_mha = unique_gqa - 2 * kv["gqa"] + 2 * kv["mha"]
    return {
        "option": "gqa",
        "title": f"Grouped-query attention: {g} q heads share one K/V head",
        "text": [
            "This trace runs one K/V head and the ",
            b(g),
            " q heads that read it (their rows of Q, O and L one above the other in the picture). Each q head's "
            "programs load the K/V head's tiles themselves, so the ",
            b("loads"),
            " of K and V are those of ",
            b(g),
            " heads of their own; what GQA saves is what K and V ",
            b("hold"),
            f" in HBM (the K/V cache: 1/{g} of multi-head attention's) and so the bytes that must come from DRAM at "
            "least once; the rest of the loads are repeats that L2 can serve. The heads control of the GPU section "
            "shows which q heads share each K/V head.",
        ],
        "rows": [
            ["q heads per K/V head", str(g)],
            saving(f"K, V in HBM per K/V head (against {g} K/V heads)", 2 * kv["gqa"], 2 * kv["mha"]),
            ["K, V loaded per K/V head (each q head's programs)", f"{human_bytes(loads)}: as {g} heads of their own"],
            saving("the least DRAM traffic (each byte once) per K/V head", unique_gqa, unique_mha),
        ],
    }


def band_item(cfg: Config, pairs: list[str]) -> dict[str, Any]:
    left, right = cfg.window
    p = pairs_summary(pairs)
    here_b, here_f = bytes_of(cfg), flops_of(cfg)
    rows: list[list[str]] = [
        ["(block, tile) pairs run", f"{p['run']:,} of {p['all']:,} ({p['masked']:,} of them masked)"],
        *([["skipped left of the band (before the window)", f"{p['left']:,}"]] if left >= 0 or p["left"] else []),
        ["skipped right of it (past the diagonal or the window)", f"{p['right']:,}"],
    ]
    if tuple(cfg.window) != (-1, -1):
        free = cfg.replace(window=(-1, -1))
        rows.append(saving("HBM traffic without the window \u2192 with it", here_b, bytes_of(free)))
        rows.append(flop_saving("FLOPs without the window \u2192 with it", here_f, flops_of(free)))
    plain = cfg.replace(window=(-1, -1), causal=False)
    if plain != cfg:
        rows.append(saving("HBM traffic with no mask \u2192 this launch", here_b, bytes_of(plain)))
        rows.append(flop_saving("FLOPs with no mask \u2192 this launch", here_f, flops_of(plain)))
    sides = []
    if left >= 0:
        sides.append(f"at most {left} keys before its own")
    if right > 0 and not cfg.causal:
        sides.append(f"at most {right} after")
    elif right == 0 and not cfg.causal:
        sides.append("none after its own")
    if cfg.causal:
        sides.append("none after its own (causal)")
    off = cfg.kv_n - cfg.n if cfg.seqlens is None else 0
    shift = f"+ {off}" if off >= 0 else f"\u2212 {-off}"
    aligned = f" (its own: key r {shift}, Nk \u2212 Nq, aligned to the bottom-right)" if off else ""
    return {
        "option": "band",
        "title": "A sliding window" if tuple(cfg.window) != (-1, -1) else "The causal band",
        "text": [
            f"Each query row r sees {', '.join(sides)}{aligned}: a band along the diagonal. A block visits only the "
            "tiles its rows' bands reach, in kernel.py's three stages (",
            code("_q_stages"),
            "): the tiles crossing the band's left edge (masked, under ",
            code("BAND_LEFT"),
            "), those wholly inside it (",
            code("NO_MASK"),
            "), those crossing its right edge or the last key (",
            code("MASK_BAND"),
            "). The tiles ",
            b("above"),
            " it (past the diagonal or the window's right side)",
            *([" and ", b("left"), " of it (before the window)"] if left >= 0 else []),
            " are never loaded: the tile map in this section draws them blank, and the memory picture veils the keys "
            "a block skips.",
        ],
        "rows": rows,
    }


def keys_item(cfg: Config) -> dict[str, Any]:
    nq, nk = cfg.n, cfg.kv_n
    off = nk - nq
    none = max(0, -off) if cfg.causal else 0
    which = "a KV cache: more keys than queries" if nk > nq else "fewer keys than queries"
    shift = f"+ {off}" if off >= 0 else f"\u2212 {-off}"
    text: Rich = [
        f"Q has Nq = {nq} rows and K, V have Nk = {nk} ({which}). The band is aligned to the bottom-right as in "
        f"FlashAttention-2: row r is aligned with key r {shift}",
    ]
    if cfg.causal:
        text.append(f", so causal row r sees keys 0 \u2026 r {shift}")
        if none:
            text.append(
                f"; the first {none} rows see no key at all: their li stays 0, and the kernel writes O = 0 and "
                "L = \u2212\u221e for them"
            )
    text.append(".")
    return {"option": "nk", "title": f"Nq = {nq} queries against Nk = {nk} keys", "text": text, "rows": []}


def varlen_item(cfg: Config) -> dict[str, Any]:
    assert cfg.seqlens is not None
    seqs = cfg.seqs
    s = len(seqs)
    blocks = sum(tiling.count(nq, cfg.br) for nq, _ in seqs)
    grid = tiling.count(max(nq for nq, _ in seqs), cfg.br) * s
    longest = (max(nq for nq, _ in seqs), max(nk for _, nk in seqs))
    padded = cfg.replace(seqlens=(longest[0],) * s, seqlens_k=(longest[1],) * s, n=longest[0] * s)
    lens = ", ".join(f"{nq}" if nq == nk else f"{nq}\u00d7{nk}" for nq, nk in seqs)
    return {
        "option": "varlen",
        "title": f"{s} packed sequences",
        "text": [
            f"The batch is {s} sequences packed one after another (lengths {lens}), no padding between them: ",
            code("cu_q"),
            " and ",
            code("cu_k"),
            " hold where each starts. Each program reads its sequence's start and length and builds its tensor "
            "descriptors to end there, so its block starts at the sequence's first row and ends inside it: the "
            "rows of the last block past the sequence's end read as zeros, and no query sees a key of another "
            "sequence (the memory picture draws the sequences' boundaries, and veils the other sequences' keys).",
        ],
        "rows": [
            ["blocks of Q (per q head)", f"{blocks}"],
            ["programs of the grid (per q head)", f"{grid}: Tr of the longest \u00d7 {s}; {grid - blocks} end at once"],
            saving("HBM traffic padded to the longest \u2192 packed", bytes_of(cfg), bytes_of(padded)),
        ],
    }


def softcap_item(cfg: Config) -> dict[str, Any]:
    c = cfg.softcap
    plain = flops_of(cfg.replace(softcap=0.0))
    here = flops_of(cfg)
    return {
        "option": "softcap",
        "title": f"Soft-capping at {c:g}",
        "text": [
            "Every scaled score s becomes ",
            b(f"{c:g}\u00b7tanh(s / {c:g})"),
            f", so no score passes \u00b1{c:g} (Gemma 2). The kernel scales first (",
            code("SCALE_FIRST"),
            ": qk_scale = scale / c) and caps in the scores step, ",
            code("Sij = softcap2 * _tanh(Sij)"),
            ", with softcap2 = c\u00b7log\u2082e so that the scores stay in units of log\u2082; ",
            code("_tanh"),
            " is one exp2, 1 \u2212 2 / (2^(2\u00b7log\u2082e\u00b7x) + 1), and below |x| = 1/32, where that "
            "difference cancels as x \u2192 0 (a cap far above the scores), its series x \u2212 x\u00b3/3: the "
            "kernel computes both and keeps one. The step's math (",
            sub("S", "ij"),
            ") and its code show it.",
        ],
        "rows": [
            [
                "non-matmul FLOPs without the cap \u2192 with it",
                f"{plain['non_matmul']:,} \u2192 {here['non_matmul']:,}",
            ],
        ],
    }


def section(cfg: Config, pairs: list[str]) -> dict[str, Any] | None:
    """The trace's `options`: one item per option the launch runs, in the issue's order, or None."""
    if not cfg.has_options and not cfg.masks_tiles:
        return None
    items = []
    if cfg.group > 1:
        items.append(gqa(cfg))
    if cfg.seqlens is None and cfg.kv_n != cfg.n:
        items.append(keys_item(cfg))
    if cfg.masks_tiles and cfg.has_options:
        items.append(band_item(cfg, pairs))
    if cfg.seqlens is not None:
        items.append(varlen_item(cfg))
    if cfg.softcap > 0:
        items.append(softcap_item(cfg))
    if not items:
        return None
    return {"title": "The options of real models in this launch", "items": items}


def veil(cfg: Config, tensors: Mapping[str, Tensor], tiles: list[tuple[int, str]], keys: tuple[int, int]):
    """What the step's block never touches: the keys of its sequence outside the tiles it visits ("skipped", left
    and right of its band) and the keys of the other sequences ("other sequence"), on K and V."""
    k0, k1 = keys
    first = k0 + (tiles[0][0] if tiles else k1 - k0)
    end = k0 + min(k1 - k0, tiles[-1][0] + cfg.bc) if tiles else first
    out = []
    for name, t in tensors.items():
        if t.axes[0] != "kv":
            continue
        cols = [0, cfg.d]
        for rows, label in (
            ((0, k0), "other sequence"),
            ((k0, first), "skipped"),
            ((end, k1), "skipped"),
            ((k1, cfg.kv_n), "other sequence"),
        ):
            if rows[1] > rows[0]:
                out.append({"tensor": name, "rows": list(rows), "cols": cols, "label": label})
    return out or None
