"""A traced user kernel (`flashviz.kernel-trace/1`) as the viewer's Trace (`flashviz.trace/4`), so that every view
draws it unchanged: `flashviz view t.json`, `flashviz export page.html --trace t.json`, `flashviz.show(kernel=...)`.

The picture is fa2's (`algos/fa2/picture.py`: the tensors Q, K, V, O, L, the tiles Qi, Kj, Vj, the carries mi, li, Oi,
FA2's closed-form traffic and causal tiling) at the kernel's own tiles (Br the rows of its blocks, Bc the most keys
one tile loaded); everything that happens in it is the kernel's: its file in the code panel, its steps (`# step:`
regions, or what phase 1 found statement by statement) with their lines, the loads and stores it made (rows of the
tiles it touched after masking), the carries it held at the end of every tile beside their float64 counterparts and
their errors, O and L as it left them, the bytes it moved beside FA2's closed form, and its verdict as the page's
first line. What has no honest value for a user's kernel is left out: FLOPs, the H200 launch, the tensor cores,
the scores tile Sij (the kernel's own values of it are not recorded), sub-operations.

Head 0 is drawn (its blocks are the launch's blocks of Q); the verdict, the divergence and the traffic table of the
document cover every head.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from flashviz.engine.steps import Step, Transfer
from flashviz.model.config import ConfigError
from flashviz.tracing.trace import Trace

from .source import _BEGIN, _END

TILE_OF = {"Q": "Qi", "K": "Kj", "V": "Vj", "O": "Oi", "L": None}
LOAD_MATH = {"Q": ("Qi = Q[i]", r"Q_i \leftarrow Q[i]"), "K": ("Kj = K[j]", r"K_j \leftarrow K[j]")}
LOAD_MATH["V"] = ("Vj = V[j]", r"V_j \leftarrow V[j]")
LEFT_OUT = ("Sij",)  # the kernel's scores are not recorded: no honest values for that buffer
OP_NOTES = {  # the narrative card's sentence per op, in words true of any kernel's steps of that name
    "load_q": "Your kernel loads its block of Q (and sets up its carries): it stays for the whole loop.",
    "load_kv": "Your kernel loads a tile of K or V: the statements up to and including the tl.load.",
    "scores": "The tile's first tl.dot, the scores Sij, and the statements that only rework them (the scale, a mask).",
    "online_softmax": "The online softmax as your kernel writes it: from the first statement that uses a carry "
    "(the running max, the sums, the rescale, P·V).",
    "write_back": "After the loop: your kernel's epilogue and its stores of O and L.",
}
GAP = 2  # lines of a step's statements at most this far apart are one highlighted run


def _decode(doc: dict[str, Any]) -> dict[str, np.ndarray]:
    from flashviz.tracing.codec import decode_array

    arrays = doc.get("arrays")
    if not isinstance(arrays, dict) or not all(k in arrays for k in ("Q", "K", "V", "O")):
        raise ConfigError(
            "kernel trace",
            "has no arrays (Q, K, V, O of head 0): write it again with this flashviz's `flashviz trace --kernel`",
        )
    return {k: np.asarray(decode_array(v), dtype=np.float64) for k, v in arrays.items()}


def _runs(lines: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in sorted(set(lines)):
        if out and n - out[-1][1] <= GAP:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def _regions(text: list[str]) -> list[tuple[str, int, int]]:
    """The file's `# step: NAME` ... `# end step` regions: (name, first, last line inside), 1-based."""
    out: list[tuple[str, int, int]] = []
    name, first = None, 0
    for k, line in enumerate(text, start=1):
        found = _BEGIN.match(line)
        if found:
            name, first = found[1], k + 1
        elif _END.match(line) and name is not None:
            out.append((name, first, k - 1))
            name = None
    return out


def _highlight(step: dict[str, Any], regions: list[tuple[str, int, int]] | None = None) -> tuple[int, int]:
    """A marked file: the step's `# step:` region (the one holding its first load, store or dot, else its first
    line in one). Otherwise the run of the step's lines that holds its first load, store or dot (else its last)."""
    events = [e["line"] for k in ("loads", "stores", "dots") for e in step[k]]
    if regions:
        mine = [(a, b) for name, a, b in regions if name == step["op"] and a <= b]
        for line in [*sorted(events), *sorted(step["lines"])]:
            for a, b in mine:
                if a <= line <= b:
                    return a, b
    runs = _runs(step["lines"]) or [(1, 1)]
    if events:
        first = min(events)
        for a, b in runs:
            if a <= first <= b:
                return a, b
    return runs[-1]


def _code(step: dict[str, Any], text: list[str], header: str) -> str:
    out = [header]
    prev = None
    for n in sorted(set(step["lines"])):
        if prev is not None and n - prev > 1:
            out.append("    ...")
        if 1 <= n <= len(text):
            out.append(text[n - 1])
        prev = n
    return "\n".join(out)


def _pad(rows: np.ndarray, count: int) -> np.ndarray:
    """A tile of `count` rows: the rows read, zeros past them (rows masked off, past N)."""
    out = np.zeros((count, *rows.shape[1:]), dtype=np.float32)
    out[: min(count, len(rows))] = rows[:count]
    return out


def _vec(values: list[Any], width: int | None = None) -> np.ndarray:
    a = np.array([np.nan if v is None else v for v in values] if width is None else values, dtype=np.float64)
    if width is None:
        return a.astype(np.float32)
    return np.array([[np.nan if x is None else x for x in row] for row in values], dtype=np.float32)


def _sci(x: float | None) -> str:
    from .verdict import sci

    return "inf" if x is None else sci(x)


def to_trace(doc: dict[str, Any]) -> Trace:
    """The viewer's Trace of a kernel-trace document (flashviz.yourkernel.report.KernelTrace.doc)."""
    from flashviz.model.config import Config
    from flashviz.tracing.build import trace_of

    from ..algos import BASELINE, get

    algo = get(BASELINE)  # FlashAttention-2: the kernel is held to its picture, its closed forms, its tiling

    arrays = _decode(doc)
    launch = doc["launch"]
    n, d = int(launch["n"]), int(launch["d"])
    programs = [p for p in doc["programs"] if p["head"] == 0 and p["rows"] is not None]
    programs.sort(key=lambda p: p["block"])
    br = int(doc["traffic"]["br"])
    bc = max(int(doc["traffic"]["bc"]), 1)
    tr = -(-n // br)
    if [p["block"] for p in programs] != list(range(tr)):
        if doc["verdict"] == "fault":
            raise ConfigError("kernel", f"faulted, so no whole run is there to draw: {doc['message']}")
        raise ConfigError(
            "kernel trace",
            f"the viewer draws a kernel whose programs of head 0 are its {tr} blocks of Br={br} rows of Q "
            f"(this one's: {[p['block'] for p in programs]})",
        )
    inputs = {k: arrays[k].astype(np.float32) for k in ("Q", "K", "V")}
    cfg = Config(algo=BASELINE, n=n, d=d, br=br, bc=bc, scale=float(launch["scale"]), causal=bool(launch["causal"]))
    from flashviz.model.reference import attention

    _, ref_l = attention(arrays["Q"], arrays["K"], arrays["V"], cfg.softmax_scale, cfg.causal)
    skeleton = trace_of(algo, cfg, inputs)  # FA2's picture at the kernel's tiles; its steps are replaced below
    kernel_name = skeleton.picker["kernels"][0]  # the picture's one kernel (its scope, its ops)
    text = doc["code"].splitlines()
    regions = _regions(text) if doc["kernel"]["markers"] else None
    names = doc["carries"]["names"]
    units = _units(doc)
    low = launch["dtype"]
    low_bytes = {"float16": 2, "bfloat16": 2, "float32": 4}[low]
    has_l = "L" in arrays

    veil_of: dict[int, int | None] = {}
    for s in skeleton.steps:
        if s.veil is not None:
            veil_of.setdefault(s.block, s.veil)
    fa2_math = {s.op: (s.math, s.tex) for s in skeleton.steps}
    ops = {k: {**v, "note": OP_NOTES.get(k, v["note"])} for k, v in skeleton.ops.items()}
    kernel_ops = list(skeleton.kernels[kernel_name]["ops"])
    notes: list[list[Any]] = []
    steps: list[Step] = []
    block_phases: list[int] = []
    writes_at: dict[int, list[dict[str, Any]]] = {}
    cumulative: dict[int, dict[str, dict[str, int]]] = {}
    tensors = [t for t in skeleton.tensors if has_l or t != "L"]

    for p in programs:
        i = p["block"]
        r0, r1 = int(p["rows"][0]), int(p["rows"][1]) + 1
        tiles = p["tiles"]
        last_step_of_tile: dict[int, int] = {}
        for k, s in enumerate(p["steps"]):
            if s["tile"] is not None:
                last_step_of_tile[s["tile"]] = k
        held: int | None = None
        for k, s in enumerate(p["steps"]):
            op = s["op"]
            if op not in ops:
                kind = "write" if s["stores"] else "read" if s["loads"] else "compute"
                ops[op] = {
                    "kernel": kernel_name,
                    "kind": kind,
                    "note": f"Your kernel's `# step: {op}` region.",
                    "notes": {},
                    "notes_masked": {},
                    "after_loop": False,
                    "value_tex": {},
                    "online": None,
                }
                kernel_ops.append(op)
            tile = tiles[s["tile"]] if s["tile"] is not None and s["tile"] < len(tiles) else None
            j = None if tile is None else int(tile["j"])
            keys = None if tile is None or tile["keys"] is None else (int(tile["keys"][0]), int(tile["keys"][1]) + 1)
            transfers: list[Transfer] = []
            sram: dict[str, np.ndarray] = {}
            moved: list[str] = []
            for e in s["loads"]:
                t = e["tensor"]
                if t not in ("Q", "K", "V"):
                    continue
                rows = (r0, r1) if t == "Q" else keys if keys is not None else (0, max(1, e["elements"] // d))
                transfers.append(Transfer(t, "read", rows, (0, d), (TILE_OF[t],)))  # type: ignore[arg-type]
                size = br if t == "Q" else bc
                sram[TILE_OF[t]] = _pad(arrays[t][rows[0] : rows[1]], size)  # type: ignore[index]
                moved.append(f"{TILE_OF[t]} \u2190 {t}[{rows[0]}:{rows[1]}]")
            carries: dict[str, np.ndarray] | None = None
            note: list[Any] | None = None
            for e in s["stores"]:
                t = e["tensor"]
                if t == "O":
                    transfers.append(Transfer("O", "write", (r0, r1), (0, d), ("Oi",), {"buffer": "Oi"}))
                    sram["Oi"] = _pad(arrays["O"][r0:r1], br)
                    moved.append(f"O[{r0}:{r1}] \u2190 Oi")
                elif t == "L" and has_l:
                    transfers.append(Transfer("L", "write", (r0, r1), (0, 1), ("mi", "li"), {"carry": "L"}))
                    moved.append(f"L[{r0}:{r1}] \u2190 mi, li")
                    carries = _l_carries(arrays, ref_l, r0, r1, br, units["L"])
            if tile is not None and last_step_of_tile.get(s["tile"]) == k:
                c, sr, note = _tile_carries(tile, names, d)
                carries = {**(carries or {}), **c}
                sram.update(sr)
            if carries is not None and "L" in carries and note is None:
                note = _out_note(p)
            if j is not None:
                held = j
            first, last = _highlight(s, regions)
            header = f"# block i = {i}" + ("" if j is None else f", tile j = {j}") + f" (lines {first}-{last})"
            math, tex = _math(op, s, fa2_math)
            carries_note = None
            if note is not None:
                if note not in notes:
                    notes.append(note)
                carries_note = notes.index(note)
            step = Step(
                index=len(steps),
                block=i,
                j=j,
                phase=k,
                indices={"i": i} if j is None else {"i": i, "j": j},
                op=op,
                math=math,
                tex=tex,
                code=_code(s, text, header),
                lines=(first, last),
                transfers=tuple(transfers),
                sram=sram,
                carries=carries,
                substeps=None,
                text=_sentence(i, j, s, tile, names, doc["tolerance"], text),
                kernel=kernel_name,
                tile=held,
                veil=veil_of.get(i) if cfg.causal else None,
                action="; ".join(moved) or _dots(s),
                carries_note=carries_note,
            )
            steps.append(step)
            for t in transfers:
                here = cumulative.setdefault(k, {name: {"read": 0, "written": 0} for name in tensors})
                here[t.tensor]["read" if t.kind == "read" else "written"] += t.elements
                if t.kind == "write":
                    writes_at.setdefault(k, []).append(
                        {
                            "tensor": t.tensor,
                            "rows": list(t.rows),
                            "cols": list(t.cols),
                            "op": op,
                            "kernel": kernel_name,
                            "block": i,
                            "step": step.index,
                        }
                    )
        block_phases.append(len(p["steps"]))

    longest = max(range(len(programs)), key=lambda q: block_phases[q])
    by_phase = [s for s in steps if s.block == programs[longest]["block"]]
    total = {name: {"read": 0, "written": 0} for name in tensors}
    phases = []
    for ph in range(max(block_phases)):
        for name, count in cumulative.get(ph, {}).items():
            total[name]["read"] += count["read"]
            total[name]["written"] += count["written"]
        lead = by_phase[ph]
        phases.append(
            {
                "phase": ph,
                "op": lead.op,
                "j": lead.j,
                "hbm": {k: dict(v) for k, v in total.items()},
                "writes": writes_at.get(ph, []),
            }
        )
    hbm = {k: dict(v) for k, v in total.items()}
    model: dict[str, Any] = {k: v for k, v in skeleton.model.items() if k in tensors}
    outputs = {"O": arrays["O"].astype(np.float32)}
    if has_l:
        outputs["L"] = (arrays["L"] / units["L"]).astype(np.float32)
    reference = _reference(algo, inputs, outputs, doc["tolerance"], cfg)
    buffers = {k: v for k, v in skeleton.buffers.items() if k not in LEFT_OUT}
    sram_rows = [[b for b in row if b not in LEFT_OUT] for row in skeleton.picture["sram_rows"]]
    for name, op in ops.items():
        ops[name] = {
            **op,
            "notes": {},  # fa2's ("Oi rescaled + PV") would say what the kernel may not do: its values show it
            "notes_masked": {},
        }
    sram_fp, titles = _footprint(skeleton, kernel_name, buffers, low_bytes)
    kernels = {kernel_name: {**skeleton.kernels[kernel_name], "ops": kernel_ops, "sram_title": titles}}
    blocks = [{**b, "phases": block_phases[q], "idle": [], "recorded": True} for q, b in enumerate(skeleton.blocks)]
    file = Path(doc["kernel"]["file"]).name
    tensor_view = {}
    for name in tensors:
        t = dict(skeleton.tensors[name])
        if name != "L":
            t["dtype"], t["element_bytes"] = low, low_bytes
        tensor_view[name] = t
    return Trace(
        config={
            **skeleton.config,
            "seed": launch.get("seed"),
            "dtype": low,
            "element_bytes": low_bytes,
            "recorded_blocks": list(range(tr)),
        },
        kernel={"file": file, "name": doc["kernel"]["function"], "source": doc["code"]},
        idea=_idea(doc, file),
        inputs=inputs,
        outputs=outputs,
        reference=reference,
        hbm=hbm,
        model={**model, "matches": hbm == model},  # type: ignore[dict-item]  # as tracer.py: counts and a flag
        sram=sram_fp,
        flops=None,  # type: ignore[arg-type]  # not counted for a user's kernel: the view is left out
        tensors=tensor_view,
        blocks=blocks,
        phases=phases,
        steps=steps,
        hardware=None,
        title=f"Your kernel: {doc['kernel']['function']} ({file})",
        tagline=doc["message"],
        kernels=kernels,
        picker=skeleton.picker,
        buffers=buffers,
        picture={"sram_rows": [r for r in sram_rows if r]},
        ops=ops,
        carries={"view": "table", "labels": _labels(names, has_l), "notes": notes},
        substeps_note=["your kernel's steps are its own statements: they have no sub-operations"],
        counting=_counting(doc),
        tiling=skeleton.tiling,
        veils=skeleton.veils,
        tensor_cores=None,
    )


def _footprint(
    skeleton: Trace, kernel: str, buffers: dict[str, Any], low_bytes: int
) -> tuple[dict[str, Any], list[str]]:
    """The picture's buffers at the kernel's dtypes (tiles of Q, K, V in the low type; acc, m, l float32), and the
    SRAM titles with that total in place of fa2's."""
    fp = dict(skeleton.sram)
    sizes: dict[str, dict[str, Any]] = {}
    for name in buffers:
        shape = [int(x) for x in fp["buffers"][name]["shape"]]
        width = low_bytes if name in ("Qi", "Kj", "Vj") else 4
        sizes[name] = {"shape": shape, "bytes": int(np.prod(shape)) * width}
    total = sum(b["bytes"] for b in sizes.values())
    old = f"{fp['bytes']:,} bytes"
    titles = [t.replace(old, f"{total:,} bytes") for t in skeleton.kernels[kernel]["sram_title"]]
    fp.update(buffers=sizes, bytes=total, fits=total <= fp["budget_bytes"])
    fp["needs_opt_in"] = total > fp["static_limit_bytes"]
    return fp, titles


def _units(doc: dict[str, Any]) -> dict[str, float]:
    from .carries import L_UNITS

    return {"L": L_UNITS.get(doc["carries"].get("L") or "natural", 1.0)}


def _labels(names: dict[str, str], has_l: bool) -> dict[str, str]:
    out: dict[str, str] = {}
    for role in ("m", "l", "acc"):
        if role in names:
            x = names[role]
            if role != "acc":
                out[x] = f"{x} (your kernel)"
                out[f"{x}.float64"] = f"{x} (float64)"
            out[f"{x}.error"] = f"|{x} \u2212 float64|" + (" (row max)" if role == "acc" else "")
    if has_l:
        out["L"] = "L (your kernel)"
        out["L.float64"] = "L (float64)"
        out["L.error"] = "|L \u2212 float64|"
    return out


def _tile_carries(
    tile: dict[str, Any], names: dict[str, str], d: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[Any]]:
    carries: dict[str, np.ndarray] = {}
    sram: dict[str, np.ndarray] = {}
    for role, buf in (("acc", "Oi"), ("m", "mi"), ("l", "li")):  # acc's error first: the table's widest carry
        values = tile.get("values", {}).get(role)
        if role not in names or values is None:
            continue
        width = d if role == "acc" else None
        got, want = _vec(values["kernel"], width), _vec(values["float64"], width)
        diff = np.abs(got.astype(np.float64) - want)
        err = diff if width is None else diff.max(axis=1)
        x = names[role]
        if role == "acc":  # its rows are the SRAM picture's Oi; the table (one number a cell) holds their errors
            carries[f"{x}.error"] = err.astype(np.float32)
        else:
            carries[x], carries[f"{x}.float64"], carries[f"{x}.error"] = got, want, err.astype(np.float32)
        sram[buf] = got
    checks = tile["checks"]
    parts: list[Any] = [f"After tile j = {tile['j']}, against float64 (max-norm relative): "]
    for q, c in enumerate(checks.values()):
        err = _sci(c["error"] if c["finite"] else None)
        parts += [", " if q else "", {"code": c["name"]}, f" {err} against {_sci(c['tolerance'])}"]
        if not c["ok"]:
            parts.append({"b": " (diverges)"})
    return carries, sram, parts


def _l_carries(arrays: dict[str, np.ndarray], want: np.ndarray, r0: int, r1: int, br: int, unit: float):
    """L as the kernel stored it (in natural units), beside float64's, for the write-back's carries."""
    got = arrays["L"][r0:r1] / unit
    return {
        "L": _pad(got, br),
        "L.float64": _pad(want[r0:r1], br),
        "L.error": _pad(np.abs(got - want[r0:r1]), br),
    }


def _out_note(p: dict[str, Any]) -> list[Any]:
    parts: list[Any] = ["At the write-back, against float64: "]
    for q, c in enumerate(p["out"].values()):
        err = _sci(c["error"] if c["finite"] else None)
        parts += [", " if q else "", {"code": c["name"]}, f" {err} against {_sci(c['tolerance'])}"]
        if not c["ok"]:
            parts.append({"b": " (diverges)"})
    return parts


def _math(op: str, s: dict[str, Any], fa2: dict[str, tuple[str, str]]) -> tuple[str, str]:
    loaded = [e["tensor"] for e in s["loads"] if e["tensor"] in LOAD_MATH]
    if loaded and not s["stores"] and not s["dots"]:
        uniq = list(dict.fromkeys(loaded))
        return "; ".join(LOAD_MATH[t][0] for t in uniq), r";\; ".join(LOAD_MATH[t][1] for t in uniq)
    if op in fa2:
        return fa2[op]
    return op, r"\texttt{" + op.replace("_", r"\_") + "}"


def _dots(s: dict[str, Any]) -> str:
    shapes = ((x["a"], x["b"]) for x in s["dots"])
    return "; ".join(f"tl.dot ({a[0]}\u00d7{a[1]})\u00b7({b[0]}\u00d7{b[1]})" for a, b in shapes)


def _sentence(
    i: int,
    j: int | None,
    s: dict[str, Any],
    tile: dict[str, Any] | None,
    names: dict[str, str],
    tolerance: dict[str, float],
    text: list[str],
) -> str:
    from flashviz.model.units import human_bytes

    where = f"Block {i}" + ("" if j is None else f", tile {j}")
    did = []
    for e in s["loads"]:
        did.append(f"loads {e['elements']} elements of {e['tensor']} ({human_bytes(e['bytes'])}, line {e['line']})")
    for e in s["stores"]:
        did.append(f"stores {e['elements']} elements of {e['tensor']} ({human_bytes(e['bytes'])}, line {e['line']})")
    for e in s["dots"]:
        a, b = e["a"], e["b"]
        did.append(f"runs tl.dot of ({a[0]}\u00d7{a[1]}) by ({b[0]}\u00d7{b[1]}) (line {e['line']})")
    if not did:
        did.append(f"runs {len(set(s['lines']))} statements with no load, store or dot")
    out = f"{where}: your kernel {', '.join(did)}."
    if tile is not None and tile.get("checks"):
        bad = [c for c in tile["checks"].values() if not c["ok"]]
        if bad:
            c = bad[0]
            out += f" By the end of this tile {c['name']} is off by {_sci(c['error'] if c['finite'] else None)}"
            out += f" (tolerance {_sci(c['tolerance'])})."
    return out


def _reference(
    algo: Any, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray], tol: dict[str, float], cfg: Any
) -> dict[str, Any]:
    from flashviz.model import reference

    expect = algo.expect
    refs = expect.expected(cfg, {k: v.astype(np.float64) for k, v in inputs.items()})
    refs = {k: v for k, v in refs.items() if k in outputs}
    checked = reference.check(outputs, refs, {k: tol[k] for k in refs}, expect.LOG_DOMAIN, None)
    return {**checked, "headline": list(refs), "against": "plain softmax attention, in float64"}


def _idea(doc: dict[str, Any], file: str) -> dict[str, Any]:
    fn = doc["kernel"]["function"]
    how = (
        "its `# step:` regions"
        if doc["kernel"]["markers"]
        else "what each statement did (the loads of Q, of K and V, the first dot of a tile, the online softmax, "
        "the stores)"
    )
    return {
        "summary": doc["message"],
        "body": [
            doc["message"],
            f"{fn} from {file}, run under Triton's interpreter and held to float64 tile by tile.",
            f"The steps are cut from {how}; the highlighted lines are the kernel's own. The tiles in SRAM are the "
            "rows of Q, K and V it loaded, and the carries are its values at the end of every tile, beside the exact "
            "online-softmax state after the same keys in float64.",
            "The traffic is what the kernel loaded and stored (head 0 here), beside FlashAttention-2's closed form at "
            "the same tiles. FLOPs, the H200 launch and the scores tile are not drawn: they have no recorded value "
            "for your kernel.",
        ],
    }


def _counting(doc: dict[str, Any]) -> list[Any]:
    t = doc["traffic"]
    out: list[Any] = [[f"Counted from your kernel's tl.load and tl.store, beside the {t['model']}."]]
    for row in t["tensors"]:
        out.append([{"b": row["tensor"]}, f": {row['why']}"])
    return out


def trace_document(doc: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """The compact Trace JSON of a kernel-trace document, parsed and as bytes."""
    import orjson

    data = to_trace(doc).to_json(compact=True)
    return orjson.loads(data), data
