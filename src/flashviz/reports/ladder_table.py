"""The ladder's table (`flashviz ladder`): one recorded run's rungs side by side, then what changed at each.

Reads a parsed `flashviz.ladder/1` document (checked by `flashviz.hardware.ladder.load`); needs rich only, so that the
benchmark can print the same table on the GPU machine, where pydantic is not installed.
"""

from __future__ import annotations

from typing import Any

from flashviz.model.units import human_bytes, kib

SHORT_PEAK = {"bf16_matmul": "bf16 mm", "tf32_matmul": "tf32 mm", "fp32_sgemm": "SGEMM", "fp32_ffma": "FFMA"}


def tiles_text(t: dict | None) -> str:
    if t is None:
        return "not known"
    return f"{t['br']}×{t['bc']}, {t['warps']}w, {t['stages']}st"


def render(doc: dict[str, Any]) -> list[Any]:
    """Rich renderables: the rungs' numbers, then one sentence per rung on what changed from the rung below."""
    from rich.table import Table
    from rich.text import Text

    s = doc["shape"]
    mode = "" if doc["mode"] == "full" else f" ({doc['mode']} run)"
    title = (
        f"From the seed's kernel to tensor cores: D={s['d']}, N={s['n']}, B={s['batch']}, H={s['heads']} "
        f"({s['tokens']:,} tokens{', causal' if s['causal'] else ''})"
    )
    peaks = doc["peaks"]
    caption = (
        f"Recorded {doc['date']} on {doc['gpu']}{mode}{'' if doc['complete'] else ', incomplete'}. Peaks measured in "
        "the same run: " + "; ".join(f"{k} {v['tflops']:.1f} TFLOP/s" for k, v in peaks.items()) + ". "
        "HBM: the traffic model's bytes at the rung's tiles (the L2 serves many re-reads of K and V); "
        "SRAM: shared memory per block."
    )
    table = Table(title=title, caption=caption, caption_justify="left")
    for col, justify in (
        ("#", "right"),
        ("rung", "left"),
        ("dtype", "left"),
        ("tensor cores", "left"),
        ("tiles Br×Bc", "left"),
        ("ms", "right"),
        ("TFLOP/s", "right"),
        ("of peak", "right"),
        ("HBM", "right"),
        ("SRAM/block", "right"),
        ("max rel err", "right"),
    ):
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for i, r in enumerate(doc["rungs"], 1):
        tc = ("yes" if r["tensor_cores"] else "no") + (f" ({r['mma']})" if r.get("mma") not in (None, "none") else "")
        table.add_row(
            str(i),
            Text(r["label"]),
            r["dtype"],
            tc,
            tiles_text(r["tiles"]),
            f"{r['ms']:.4g}",
            f"{r['tflops']:.4g}",
            Text(f"{100 * r['share_of_peak']:.1f}% {SHORT_PEAK.get(r['peak'], r['peak'])}"),
            "–" if r["hbm_bytes"] is None else human_bytes(r["hbm_bytes"]),
            "–" if r["sram_bytes_per_block"] is None else kib(r["sram_bytes_per_block"]),
            f"{r['max_rel_err']:.1e}",
        )
    notes = Text()
    for i, r in enumerate(doc["rungs"], 1):
        notes.append(f"{i}. ", style="bold")
        notes.append(f"{r['label']}: ", style="bold")
        notes.append(r["what_changed"] + "\n")
    for sk in doc["skipped"]:
        notes.append(f"not measured: {sk['name']}: {sk['why']}\n")
    return [table, notes]
