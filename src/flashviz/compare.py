"""Every algorithm side by side, from the closed-form models only (no engine run): HBM trips per tensor, bytes,
shared memory per block, and the number of steps. What `flashviz compare` prints.

Algorithms of different precision are compared honestly: the element counts are what each schedule moves, the
bytes are each tensor's elements times its own element size (fp32 4, bf16 2: the bf16 kernel's L stays fp32), and
each entry says its dtype. An algorithm that cannot run the config (no causal variant, tiles its kernel does not
take) is listed with `supported: false` and why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .algos import BASELINE, REGISTRY, Algorithm
from .config import Config, ConfigError
from .units import SMEM_OPTIN_BYTES, human_bytes, kib

if TYPE_CHECKING:
    from rich.table import Table


def model(algo: Algorithm, n: int, d: int, br: int, bc: int, causal: bool) -> dict[str, Any]:
    """One algorithm's entry: its traffic per tensor and in total, SRAM per block and steps, or only
    `supported: False` when it has no causal variant. `pass` is "backward" for a backward pass (a different
    computation: its numbers are not a rival to the forward's)."""
    entry: dict[str, Any] = {
        "title": algo.title,
        "short": algo.short,
        "pass": algo.direction,
        "supported": not causal or algo.causal,
        "dtype": algo.dtype,
        "element_bytes": algo.element_bytes,
    }
    if not entry["supported"]:
        entry["why"] = "no causal variant"
        return entry
    try:
        algo.check_launch(Config(algo=algo.name, n=n, d=d, br=br, bc=bc, causal=causal))
    except ConfigError as exc:
        return {**entry, "supported": False, "why": f"{exc.field}: {exc.message}"}
    module = algo.traffic
    counts = module.count(n=n, d=d, br=br, bc=bc, causal=causal)
    tensors = {
        name: {
            **t,
            "read_bytes": t["read"] * algo.bytes_of(name),
            "written_bytes": t["written"] * algo.bytes_of(name),
            "element_bytes": algo.bytes_of(name),
        }
        for name, t in counts.items()
    }
    read = sum(t["read"] for t in counts.values())
    written = sum(t["written"] for t in counts.values())
    read_bytes = sum(t["read_bytes"] for t in tensors.values())
    written_bytes = sum(t["written_bytes"] for t in tensors.values())
    sram = module.sram_bytes(n, d, br, bc)
    return {
        **entry,
        "tensors": tensors,
        "total": {
            "read": read,
            "written": written,
            "read_bytes": read_bytes,
            "written_bytes": written_bytes,
            "bytes": read_bytes + written_bytes,
        },
        "sram_bytes": sram,
        "sram_fits": sram <= SMEM_OPTIN_BYTES,
        "steps": module.steps(n, d, br, bc, causal=causal),
    }


def compare(n: int, d: int, br: int, bc: int, causal: bool = False) -> dict[str, Any]:
    """The comparison document (`flashviz compare --json`): every registered algorithm, in registry order."""
    algos = {name: model(a, n, d, br, bc, causal) for name, a in REGISTRY.items()}
    base = algos.get(BASELINE, {}).get("total", {}).get("bytes")
    for entry in algos.values():
        mine = entry.get("total", {}).get("bytes")
        forward = entry["pass"] == "forward"
        entry[f"traffic_vs_{BASELINE}"] = mine / base if forward and mine is not None and base else None
    return {
        "config": {"n": n, "d": d, "br": br, "bc": bc, "causal": causal, "tr": -(-n // br), "tc": -(-n // bc)},
        "bytes_per_element": REGISTRY[BASELINE].element_bytes,  # the baseline's; each entry has its own
        "sram_budget_bytes": SMEM_OPTIN_BYTES,
        "algorithms": algos,
    }


def render(doc: dict[str, Any]) -> Table:
    """The document as one rich Table: a row per (tensor, read/written), then totals, bytes, SRAM and steps."""
    from rich.table import Table

    c, algos = doc["config"], doc["algorithms"]
    shown = {name: e for name, e in algos.items() if e["supported"]}
    notes = "; ".join(f"{name}: {REGISTRY[name].sram_note}" for name in algos if REGISTRY[name].sram_note)
    table = Table(
        title=f"HBM trips per head, in elements: N={c['n']} D={c['d']} Br={c['br']} Bc={c['bc']} "
        f"(Tr={c['tr']}, Tc={c['tc']}){', causal' if c['causal'] else ''}",
        caption=" ".join(
            [
                "Closed-form models, each equal to its engine's per-element counters. SRAM: shared memory one",
                "CUDA block declares" + (f" ({notes})." if notes else "."),
                *(f"{name}: {e['why']}." for name, e in algos.items() if not e["supported"]),
                *(
                    f"{name} is {e['dtype']}: its bytes count {e['element_bytes']} per element"
                    + (
                        ""
                        if all(t["element_bytes"] == e["element_bytes"] for t in e["tensors"].values())
                        else " ("
                        + ", ".join(
                            f"{t} {x['element_bytes']}"
                            for t, x in e["tensors"].items()
                            if x["element_bytes"] != e["element_bytes"]
                        )
                        + ")"
                    )
                    + "."
                    for name, e in shown.items()
                    if e["dtype"] != "float32"
                ),
            ]
        ),
    )
    table.add_column("")
    for name, e in shown.items():
        table.add_column(name if e["pass"] == "forward" else f"{name}\n(backward pass)", justify="right")
    order: list[str] = []
    for e in shown.values():
        order += [t for t in e["tensors"] if t not in order]
    for tensor in order:
        for kind in ("read", "written"):
            cells = [e["tensors"].get(tensor, {}).get(kind) for e in shown.values()]
            if any(cells):
                table.add_row(f"{tensor} {kind}", *("—" if x is None else f"{x:,}" for x in cells))
    table.add_section()
    vs = f"traffic_vs_{BASELINE}"
    budget = kib(SMEM_OPTIN_BYTES)
    rows = {
        "total read": lambda e: f"{e['total']['read']:,}",
        "total written": lambda e: f"{e['total']['written']:,}",
        "HBM traffic (bytes)": lambda e: human_bytes(e["total"]["bytes"], digits=1),
        "dtype": lambda e: {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(e["dtype"], e["dtype"]),
        f"traffic ÷ {BASELINE}'s": lambda e: "—" if e[vs] is None else f"{e[vs]:.2f}×",
        "SRAM per block": lambda e: kib(e["sram_bytes"]) + ("" if e["sram_fits"] else f" (over {budget})"),
        "steps": lambda e: f"{e['steps']:,}",
    }  # fmt: skip
    for label, cell in rows.items():
        table.add_row(label, *(cell(e) for e in shown.values()))
    return table
