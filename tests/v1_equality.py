"""Issue 10, phase 2: the Trace moved from schema /1 to /2 without changing what the engine computes. This script holds
it to that: it dumps traces of a set of launches with whatever flashviz is importable, and compares a dump made by
the old code (main at 7c04abd, schema /1) with the traces the code makes now, after dropping the keys /2 adds and
mapping its renames back (the backward's tensor D is Delta in /2, its SRAM buffer Di is Deltai; Step.block is
blockIdx.x in /2: fa1's block of Q moved to indices.i; one substep label was corrected).

    git archive 7c04abd src | tar -x -C /tmp/v1                       # the old code, once
    PYTHONPATH=/tmp/v1/src python tests/v1_equality.py dump /tmp/v1-traces
    PYTHONPATH=src python tests/v1_equality.py check /tmp/v1-traces   # exit 1 naming every difference

Not a pytest module (it needs the old code); tests/test_trace_picture.py holds the /2 additions to the run.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

# (name, config): every algorithm, causal and not, even and ragged N, all blocks recorded and one of many
SIZES = {
    "n8": {"n": 8, "d": 4, "br": 4, "bc": 4},
    "n11_ragged": {"n": 11, "d": 3, "br": 4, "bc": 3, "seed": 5},
    "n13_br2_bc5": {"n": 13, "d": 2, "br": 2, "bc": 5, "seed": 7, "scale": 0.7},
    "n40_block0": {"n": 40, "d": 4, "br": 4, "bc": 4, "seed": 2},
    "n40_block3": {"n": 40, "d": 4, "br": 4, "bc": 4, "seed": 3, "record": (3,)},
    "n30_br8_bc4": {"n": 30, "d": 5, "br": 8, "bc": 4, "seed": 11},
    "n30_br4_bc8": {"n": 30, "d": 5, "br": 4, "bc": 8, "seed": 12},
}
ALGOS = ("fa2", "fa1", "standard", "fa2-backward")

RENAME_TENSOR = {"Delta": "D"}  # /2 name -> /1 name
RENAME_KEY = {"Deltai": "Di", "Delta": "D"}  # buffers, carries, transfers' tensors
NEW_TOP = {"title", "tagline", "kernels", "buffers", "picture", "ops", "tiling", "veils", "counting", "picker"}
NEW_TOP |= {"carries", "substeps_note", "scopes"}
NEW_STEP = {"kernel", "tile", "veil", "action", "carries_note"}
# labels corrected in /2 (the /1 text said what the step does not compute)
LABEL_FIXES = {"Oi = rescale(Oi) + exp(Sij - mi) @ Vj": "Oi = rescale(Oi) + softmax(Sij) @ Vj"}


def launches():
    for algo in ALGOS:
        for causal in (False, True):
            for size, kw in SIZES.items():
                yield f"{algo}_{'causal_' if causal else ''}{size}", {"algo": algo, "causal": causal, **kw}


def make(kw: dict[str, Any]) -> dict[str, Any]:
    from flashviz.model.config import Config
    from flashviz.tracing.build import make_trace

    return json.loads(make_trace(Config(**kw)).to_json())


def dump(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, kw in launches():
        (folder / f"{name}.json").write_text(json.dumps(make(kw)))
        print("dumped", name)


def _rename(d: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if d is None else {RENAME_KEY.get(k, k): v for k, v in d.items()}


def as_v1(t: dict[str, Any]) -> dict[str, Any]:
    """A /2 trace as /1 wrote it: the keys /2 adds dropped, its renames mapped back."""
    t = {k: v for k, v in t.items() if k not in NEW_TOP}
    t["schema"] = "flashviz.trace/1"
    for key in ("hbm", "model", "tensors", "outputs"):
        t[key] = _rename(t[key])
    t["tensors"] = {
        k: {f: v for f, v in spec.items() if f in ("shape", "dtype", "role")} for k, spec in t["tensors"].items()
    }
    t["reference"] = {k: v for k, v in _rename(t["reference"]).items() if k not in ("headline", "against")}
    t["config"] = {k: v for k, v in t["config"].items() if k != "element_bytes"}
    t["sram"] = {**t["sram"], "buffers": _rename(t["sram"]["buffers"])}
    if "kernels" in t["sram"]:
        t["sram"]["kernels"] = {
            k: {**v, "buffers": _rename(v["buffers"])} if k != "fa2_bwd_preprocess" else v
            for k, v in t["sram"]["kernels"].items()
        }
    one_block = t["config"]["algo"] == "fa1"
    t["blocks"] = [{k: v for k, v in b.items() if k not in ("idle", "label", "block")} for b in t["blocks"]]
    t["blocks"] = [{"block": k, **b} for k, b in enumerate(t["blocks"])]
    t["phases"] = [{"phase": p["phase"], "op": p["op"], "j": p["j"], "hbm": _rename(p["hbm"])} for p in t["phases"]]
    steps = []
    for s in t["steps"]:
        s = {k: v for k, v in s.items() if k not in NEW_STEP}
        if one_block:  # /1: fa1's block was its block of Q (None on the outer loop's load_kv)
            s["block"] = s["indices"].get("i")
        s["transfers"] = [
            {
                "tensor": RENAME_TENSOR.get(x["tensor"], x["tensor"]),
                "kind": x["kind"],
                "rows": x["rows"],
                "cols": x["cols"],
                "elements": x["elements"],
            }
            for x in s["transfers"]
        ]
        s["sram"], s["carries"] = _rename(s["sram"]), _rename(s["carries"])
        if s["substeps"] is not None:
            s["substeps"] = [{**x, "math": LABEL_FIXES.get(x["math"], x["math"])} for x in s["substeps"]]
        steps.append(s)
    t["steps"] = steps
    return v1_words(t) if t["config"]["algo"] == "fa2-backward" else t


# The backward's renames inside its texts, /2 -> /1: labels and sentences say Delta where /1 said D; the kernel file
# (its code regions and source) only renamed its SRAM buffer Di and the step write_d, and reworded one comment.
WORDS = (
    (re.compile(r"\bDeltai\b"), "Di"),
    (re.compile(r"\\Delta_i\b"), "D_i"),
    (re.compile(r"\\Delta\["), "D["),
    (re.compile(r"\bDelta\["), "D["),
    (re.compile(r"\bwrite_delta\b"), "write_d"),
)
CODE = ((re.compile(r"\bDeltai\b"), "Di"), (re.compile(r"\bwrite_delta\b"), "write_d"))
COMMENT = (
    "// 1. fa2_bwd_preprocess (grid Tr): Deltai = rowsum(dOi * Oi) per row, written to the HBM array Delta (the\n"
    "//    FA2 paper's D; Delta here and in the trace, because D is the head dimension), and dQ zeroed, since the main",
    "// 1. fa2_bwd_preprocess (grid Tr): Di = rowsum(dOi * Oi) per row, written to the HBM array the\n"
    "//    trace calls D (named Delta here, because D is the head dimension), and dQ zeroed, since the main",
)


def _sub(text: str, rules) -> str:
    for pattern, now in rules:
        text = pattern.sub(now, text)
    return text


def v1_words(t: dict[str, Any]) -> dict[str, Any]:
    """The backward's texts in /1's names."""
    t["kernel"]["source"] = _sub(t["kernel"]["source"].replace(*COMMENT), CODE)
    t["idea"]["body"] = [_sub(x.replace("\\Delta = ", "D = "), WORDS) for x in t["idea"]["body"]]
    for p in t["phases"]:
        p["op"] = _sub(p["op"], WORDS)
    for s in t["steps"]:
        for key in ("math", "tex", "text", "op"):
            s[key] = _sub(s[key], WORDS)
        s["code"] = _sub(s["code"], CODE)
    return t


def diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}.{k}: only in v1" for k in a.keys() - b.keys()]
        out += [f"{path}.{k}: only in v2" for k in b.keys() - a.keys()]
        if list(k for k in a if k in b) != list(k for k in b if k in a):
            out.append(f"{path}: key order differs")
        for k in a.keys() & b.keys():
            out += diff(a[k], b[k], f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [x for k, (p, q) in enumerate(zip(a, b, strict=True)) for x in diff(p, q, f"{path}[{k}]")]
    if a != b and not (isinstance(a, float) and isinstance(b, float) and a != a and b != b):
        return [f"{path}: {str(a)[:60]!r} != {str(b)[:60]!r}"]
    return []


def check(folder: Path) -> int:
    bad = 0
    for name, kw in launches():
        old = json.loads((folder / f"{name}.json").read_text())
        new = as_v1(make(kw))
        problems = diff(old, new)
        if problems:
            bad += 1
            print(f"{name}: {len(problems)} differences", *problems[:12], sep="\n  ")
        else:
            print(f"{name}: equal")
    print(f"{bad} of {len(list(launches()))} launches differ")
    return 1 if bad else 0


if __name__ == "__main__":
    command, folder = sys.argv[1], Path(sys.argv[2])
    if command == "dump":
        dump(folder)
    else:
        sys.exit(check(folder))
