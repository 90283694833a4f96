"""Every algorithm side by side, from the closed-form models only (no engine run): HBM trips per tensor, bytes,
shared memory per block, and the number of steps. What `flashviz compare` prints.

Algorithms of different precision are compared honestly: the element counts are what each schedule moves, the
bytes are each tensor's elements times its own element size (fp32 4, bf16 2: the bf16 kernel's L stays fp32), and
each entry says its dtype. An algorithm that cannot run the config (no causal variant, tiles its kernel does not
take) is listed with `supported: false` and why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flashviz.algos import BASELINE, REGISTRY, Algorithm
from flashviz.model.config import Config, ConfigError
from flashviz.model.flop_kinds import total
from flashviz.model.units import SMEM_OPTIN_BYTES, human_bytes, kib
from flashviz.reports import regimes

if TYPE_CHECKING:
    from rich.table import Table


def model(
    algo: Algorithm, n: int, d: int, br: int, bc: int, causal: bool, options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One algorithm's entry: its traffic per tensor and in total, SRAM per block and steps, or only
    `supported: False` when it has no causal variant. `pass` is "backward" for a backward pass (a different
    computation: its numbers are not a rival to the forward's). `options`: the options of real models (Config's
    group, nk, window, softcap, seqlens): counted per K/V head by an algorithm that runs them, unsupported by the
    others."""
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
    cfg = Config(algo=algo.name, n=n, d=d, br=br, bc=bc, causal=causal, **(options or {}))
    try:
        cfg.check_options(algo.options, algo.name, "count")
        algo.check_launch(cfg)
    except ConfigError as exc:
        return {**entry, "supported": False, "why": f"{exc.field}: {exc.message}"}
    module = algo.traffic
    counts = algo.traffic_of(cfg)
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
        "steps": algo.steps_of(cfg),
        "flops": flops_of(algo, cfg),
        "terms": regimes.terms(algo.name, n, d, br, bc, causal) if not cfg.has_options else [],
    }


def flops_of(algo: Algorithm, cfg: Config) -> dict[str, Any] | None:
    """Its FLOPs per head in closed form (algos/<name>/flops.py; per K/V head with the options of real models): by
    kind, `matmul` and `non_matmul`; None when its folder has no closed form."""
    by_kind = algo.flops_of(cfg)
    if by_kind is None:
        return None
    return {"by_kind": by_kind, **total(by_kind)}


def compare(n: int, d: int, br: int, bc: int, causal: bool = False, **options: Any) -> dict[str, Any]:
    """The comparison document (`flashviz compare --json`): every registered algorithm that is a rival of the
    single-GPU kernels (`Algorithm.rival`: not the ring, one forward spread over devices, which `--ring P` models
    beside them), in registry order. With the options of real models (Config's group, nk, window, softcap, seqlens)
    the algorithms that run them are counted per K/V head, and `options` says what each option saves (`savings`)."""
    algos = {name: model(a, n, d, br, bc, causal, options) for name, a in REGISTRY.items() if a.rival}
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
        "regimes": regimes.sweep(n, d, br, bc, causal),
        "flops_anchor": flops_anchor(),
        # the algorithms' own tables (Algorithm.compare_table), by name: decoding's Nq against Nk for split-KV
        "tables": {
            a.name: a.compare_table(d, br, bc) for a in REGISTRY.values() if a.rival and a.compare_table is not None
        },
        "options": savings(n, d, br, bc, causal, options) if options else None,
    }


def _bytes(algo: Algorithm, cfg: Config) -> int:
    return sum(algo.bytes_of(t) * (c["read"] + c["written"]) for t, c in algo.traffic_of(cfg).items())


def _flops(algo: Algorithm, cfg: Config) -> int:
    by_kind = algo.flops_of(cfg) or {}
    return sum(by_kind.values())


def savings(n: int, d: int, br: int, bc: int, causal: bool, options: dict[str, Any]) -> dict[str, Any]:
    """What the options save, per K/V head, for each forward algorithm that runs them, from its closed forms at this
    launch and at the launch without the option: `gqa` (K and V in HBM against as many K/V heads as q heads; the
    least DRAM traffic, each byte once; the loads, which each q head's programs issue), `window` (bytes and FLOPs
    without the window, and with no mask at all), `varlen` (the sequences padded to the longest)."""
    out: dict[str, Any] = {"launch": {k: (list(v) if isinstance(v, tuple) else v) for k, v in options.items()}}
    for name, algo in REGISTRY.items():
        if algo.direction != "forward" or not algo.options:
            continue
        cfg = Config(algo=name, n=n, d=d, br=br, bc=bc, causal=causal, **options)
        try:
            cfg.check_options(algo.options, name, "count")
            algo.check_launch(cfg)
        except ConfigError:
            continue
        here = {"bytes": _bytes(algo, cfg), "flops": _flops(algo, cfg)}
        entry: dict[str, Any] = {"this launch": here}
        counts = algo.traffic_of(cfg)
        if cfg.group > 1:
            kv = 2 * cfg.kv_n * d * algo.bytes_of("K")  # K and V of one K/V head in HBM
            q_side = sum(algo.bytes_of(t) * (counts[t]["read"] + counts[t]["written"]) for t in ("Q", "O", "L"))
            entry["gqa"] = {
                "group": cfg.group,
                "kv_bytes": kv,
                "kv_bytes_mha": cfg.group * kv,
                "kv_loads_bytes": algo.bytes_of("K") * (counts["K"]["read"] + counts["V"]["read"]),
                "least_dram_bytes": q_side + kv,
                "least_dram_bytes_mha": q_side + cfg.group * kv,
            }
        if cfg.masks_tiles:
            free = cfg.replace(window=(-1, -1))
            plain = cfg.replace(window=(-1, -1), causal=False)
            entry["band"] = {
                "bytes_without_window": _bytes(algo, free),
                "flops_without_window": _flops(algo, free),
                "bytes_without_mask": _bytes(algo, plain),
                "flops_without_mask": _flops(algo, plain),
            }
        if cfg.seqlens is not None:
            s = len(cfg.seqs)
            mq, mk = max(q for q, _ in cfg.seqs), max(k for _, k in cfg.seqs)
            padded = cfg.replace(n=mq * s, seqlens=(mq,) * s, seqlens_k=(mk,) * s)
            entry["varlen"] = {"bytes_padded": _bytes(algo, padded), "flops_padded": _flops(algo, padded)}
        out[name] = entry
    return out


def render_savings(doc: dict[str, Any]) -> list[Table]:
    """`savings` as one table per algorithm that runs the options: what each saves, per K/V head."""
    from rich.table import Table

    from flashviz.model.units import human_bytes

    opts = doc.get("options") or {}
    out = []
    launch = ", ".join(f"{k}={v}" for k, v in opts.get("launch", {}).items())
    for name, e in opts.items():
        if name == "launch":
            continue
        table = Table(
            title=f"What the options save, per K/V head: {name} ({launch})",
            caption="Closed forms at this launch and at the same launch without the option. GQA: the loads are "
            "each q head's programs' own (as many as multi-head attention's); what shrinks is what K and V hold in "
            "HBM, and with it the least DRAM traffic (each byte once); L2 serves the repeats.",
        )
        for col in ("", "without", "with", "saved"):
            table.add_column(col, justify="left" if not col else "right")

        def row(label: str, without: int, with_: int, unit: str = "bytes", table: Table = table) -> None:
            text = human_bytes if unit == "bytes" else (lambda x: f"{x:,}")
            table.add_row(label, text(without), text(with_), text(without - with_))

        here = e["this launch"]
        if "gqa" in e:
            g = e["gqa"]
            row(f"K, V in HBM (GQA {g['group']}:1 against {g['group']} K/V heads)", g["kv_bytes_mha"], g["kv_bytes"])
            row("least DRAM traffic (each byte once)", g["least_dram_bytes_mha"], g["least_dram_bytes"])
            row("K, V loads (each q head's programs)", g["kv_loads_bytes"], g["kv_loads_bytes"])
        if "band" in e:
            b = e["band"]
            row("HBM traffic: without the window / with it", b["bytes_without_window"], here["bytes"])
            row("FLOPs: without the window / with it", b["flops_without_window"], here["flops"], "flops")
            row("HBM traffic: with no mask / this launch", b["bytes_without_mask"], here["bytes"])
            row("FLOPs: with no mask / this launch", b["flops_without_mask"], here["flops"], "flops")
        if "varlen" in e:
            v = e["varlen"]
            row("HBM traffic: padded to the longest / packed", v["bytes_padded"], here["bytes"])
            row("FLOPs: padded to the longest / packed", v["flops_padded"], here["flops"], "flops")
        out.append(table)
    return out


def flops_anchor() -> dict[str, Any]:
    from flashviz.tracing.flops import anchor

    return anchor()


def render(doc: dict[str, Any]) -> Table:
    """The document as one rich Table: a row per (tensor, read/written), then totals, bytes, SRAM and steps."""
    from rich.table import Table

    c, algos = doc["config"], doc["algorithms"]
    shown = {name: e for name, e in algos.items() if e["supported"]}
    notes = "; ".join(f"{name}: {REGISTRY[name].sram_note}" for name in algos if REGISTRY[name].sram_note)
    table = Table(
        title=f"HBM trips per {'K/V head' if doc.get('options') else 'head'}, in elements: N={c['n']} D={c['d']} "
        f"Br={c['br']} Bc={c['bc']} "
        f"(Tr={c['tr']}, Tc={c['tc']}){', causal' if c['causal'] else ''}",
        caption=" ".join(
            [
                "Closed-form models, each equal to its engine's per-element counters. SRAM: shared memory one",
                "CUDA block declares" + (f" ({notes})." if notes else "."),
                *(f"{', '.join(names)}: {why}." for why, names in _by_why(algos).items()),
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
        "matmul FLOPs": lambda e: flop_text(e["flops"], "matmul"),
        "non-matmul FLOPs": lambda e: flop_text(e["flops"], "non_matmul"),
        "  of which exp": lambda e: flop_text(e["flops"], "exp"),
        "  of which div": lambda e: flop_text(e["flops"] and e["flops"]["by_kind"], "div"),
    }  # fmt: skip
    for label, cell in rows.items():
        table.add_row(label, *(cell(e) for e in shown.values()))
    return table


def _by_why(algos: dict[str, Any]) -> dict[str, list[str]]:
    """The algorithms left out, grouped by why (each reason said once)."""
    out: dict[str, list[str]] = {}
    for name, e in algos.items():
        if not e["supported"]:
            out.setdefault(e["why"].replace(f"{name} does not", "does not"), []).append(name)
    return out


def flop_text(counts: dict[str, Any] | None, key: str) -> str:
    """A FLOP count in three significant digits: 4.29 G, 118 M, 262 k (the exact count is in --json); — when the
    algorithm has no closed form."""
    if counts is None:
        return "—"
    x = counts[key]
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return str(x)


def dominant(entry: dict[str, Any], shown: int = 2) -> str:
    """The tensors that make up most of an algorithm's traffic, e.g. "O 64% (read 32×, written 32×), Q 32% (read
    32×)": how many times over each is read and written."""
    parts = []
    for t in entry["terms"][:shown]:
        times = []
        if t["times"]:
            times.append(f"read {t['times']:.3g}×")
        if t["rewrites"]:
            times.append(f"written {t['rewrites']:.3g}×")
        parts.append(f"{t['tensor']} {100 * t['share']:.0f}%" + (f" ({', '.join(times)})" if times else ""))
    return ", ".join(parts)


def render_regimes(doc: dict[str, Any]) -> Table:
    """The sweep of Bc/Br at this N and D: each forward algorithm's bytes ÷ the baseline's, which moves fewest,
    and what dominates each algorithm's traffic at the current tiles; the FLOP argument's anchor below."""
    from rich.table import Table

    r, a = doc["regimes"], doc["flops_anchor"]
    names = list(r["points"][0]["bytes"])
    table = Table(
        title=f"HBM bytes ÷ {BASELINE}'s as Bc/Br varies: N={r['n']} D={r['d']}{', causal' if r['causal'] else ''}",
        caption=" ".join(
            [
                r["real_kernels"],
                *([r["left_out"]] if r.get("left_out") else []),
                "Traffic at these tiles is mostly "
                + "; ".join(
                    f"{name}: {dominant(e)}"
                    for name, e in doc["algorithms"].items()
                    if e.get("terms") and e["pass"] == "forward"
                )
                + ".",
                f"Non-matmul FLOPs cost more than matmul FLOPs: ~{a['paper_ratio']}× on an A100 (FlashAttention-2,",
                f"section 3.1); measured on the {a['gpu']} ({a['date']}, {a['source']}): bf16 tensor-core matmul",
                f"{a['matmul_tflops']} TFLOP/s vs fp32 FMA {a['fma_tflops']} TFLOP/s = {a['measured_ratio']}×.",
            ]
        ),
    )
    table.add_column("Br × Bc")
    table.add_column("Bc/Br", justify="right")
    for name in names:
        table.add_column(name, justify="right")
    table.add_column("fewest bytes")
    for p in r["points"]:
        mark = " (this config)" if p["current"] else ""
        ratios = p[f"vs_{BASELINE}"]
        table.add_row(
            f"{p['br']} × {p['bc']}{mark}",
            f"{p['bc'] / p['br']:.3g}",
            *(f"{ratios[n]:.2f}×" for n in names),
            p["fewest"],
        )
    return table


def render_tables(doc: dict[str, Any]) -> list[Table]:
    """The algorithms' own tables (`tables`), one rich Table each, their cells as text."""
    from rich.table import Table

    out = []
    for t in doc.get("tables", {}).values():
        table = Table(title=t["title"], caption=t["caption"])
        for c in t["columns"]:
            table.add_column(c["label"], justify="right")
        for row in t["rows"]:
            table.add_row(*(f"{x:,}" if isinstance(x, int) else str(x) for x in (row[c["key"]] for c in t["columns"])))
        out.append(table)
    return out
