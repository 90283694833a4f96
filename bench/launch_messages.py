"""Every front door's answer to the same random launches, written one JSON line each, so that two versions of flashviz
can be compared answer by answer (issue 18: "random launches give word-for-word the old messages").

The launches are drawn from a fixed seed: good values, edges of the ranges and garbage, for the fields algo, n, d, br,
bc, seed, scale, causal and block. Each goes through
- the CLI in this process (`flashviz.cli.main.main`): trace, count, steps, compare, export (its engine runs, --algo
  fa2 only, never its writer) and gpu run: the exit code and stderr's last line;
- the server (FastAPI's TestClient, the engine replaced by a recorder, its cache emptied before each request):
  /api/trace and /api/compare, the status and the body or the Config it would have run;
- the Python API (`flashviz.trace`, the engine replaced by a recorder) and the notebook widget's `config_of`: the
  error line, or the Config.

Run it under each version (PYTHONPATH picks the source tree) and compare:

    PYTHONPATH=OLD/src python bench/launch_messages.py --out old.jsonl
    PYTHONPATH=NEW/src python bench/launch_messages.py --out new.jsonl
    python bench/launch_messages.py --compare old.jsonl new.jsonl

The comparison prints per door how many answers are equal, how many changed because the launch names an algorithm that
brings defaults of its own and leaves one of those fields out (issue 18: the API, the widget and `flashviz gpu` take
them too now, as `flashviz trace` did), and every other difference (first 40 by default; exit code 1 if any).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ALGOS = ["fa2", "fa1", "standard", "fa2-backward", "fa2-triton", "fa3", "fa2-splitkv", "ring"]
COMPARE = ("n", "d", "br", "bc", "causal")
GARBAGE = ["²", "+-5", "abc", "x" * 100, "", " 5", "1e3", "5.0", "0x10", "9" * 50, "-", "nan"]


def integer(r: random.Random, hi: int = 64) -> str:
    k = r.random()
    if k < 0.55:
        return str(r.choice([1, 2, 3, 4, 8, 12, 16, 32, 64, r.randint(1, hi)]))
    if k < 0.7:
        return str(r.choice([16, 32, 64, 128]))
    if k < 0.85:
        return str(r.choice([0, -1, 257, 4097, 16385, 2**32, 2**64]))
    return r.choice(GARBAGE)


def number(r: random.Random) -> str:
    return r.choice(["0.5", "0.125", "1", "-2", "1e-7", "1e7", "nan", "inf", "", "x" * 60, "1e400", "abc"])


def launch(r: random.Random) -> dict[str, str]:
    """Some of the fields, each a string as a command line or a query would give it."""
    out: dict[str, str] = {}
    if r.random() < 0.7:
        out["algo"] = r.choice([*ALGOS, *ALGOS, "fa9", "x" * 60, ""])
    for name in ("n", "d", "br", "bc"):
        if r.random() < 0.5:
            out[name] = integer(r)
    if r.random() < 0.2:
        out["seed"] = r.choice(["0", "7", "4294967295", "4294967296", "-1", "x"])
    if r.random() < 0.2:
        out["scale"] = number(r)
    if r.random() < 0.3:
        out["causal"] = r.choice(["true", "false", "1", "0", "yes", ""])
    if r.random() < 0.2:
        out["block"] = r.choice(["0", "1", "2", "5", "-1", "x"])
    if r.random() < 0.15:
        out["devices"] = r.choice(["2", "4", "8", "1", "9", "x"])
    if r.random() < 0.1:
        out["layout"] = r.choice(["zigzag", "contiguous", "spiral", "x" * 60])
    return out


# ---- the doors ----


def cli_answer(argv: list[str]) -> dict[str, Any]:
    from flashviz.cli.main import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    lines = err.getvalue().strip().splitlines()
    return {"code": code, "line": lines[-1] if lines else ""}


def cli_argv(r: random.Random, fields: dict[str, str]) -> list[str]:
    command = r.choice(["trace", "trace", "count", "steps", "compare", "export", "gpu run"])
    argv = command.split()
    for name, value in fields.items():
        if name == "causal":
            if value in ("true", "1"):
                argv.append("--causal")
            continue
        if name in ("devices", "layout") and command not in ("trace", "steps"):
            continue  # ring's fields: `trace` and `steps` took them before the table
        if command == "compare" and name in ("algo", "seed", "scale", "block"):
            continue
        if command == "count" and name in ("seed", "scale", "block"):
            continue
        if command == "steps" and name == "scale":
            continue
        if command == "export" and name == "algo":
            value = "fa2"  # the engine runs and the page is never written: see below
        argv += [f"--{name}", value]
    if command == "trace":
        argv += ["-o", "/dev/null"]
    if command == "export":
        argv += ["--no-compare", "--", "/nonexistent/dir/out.html"]  # fails at the write, after every check
    return argv


def api_answers(queries: list[str]) -> list[dict[str, Any]]:
    from urllib.parse import quote

    from fastapi.testclient import TestClient

    from flashviz import server

    recorded: dict[str, Any] = {}

    def record(what):
        recorded["what"] = what
        return b"{}"

    server.compute_json = record
    server.compare_json = record
    app = server.create_app()
    client = TestClient(app)
    out = []
    for path, fields in queries:
        recorded.clear()
        app.state.gate.cache.items.clear()  # every answer computed: `ran` is the Config each query asks for
        query = "&".join(f"{k}={quote(v, safe='')}" for k, v in fields.items())
        r = client.get(f"{path}?{query}")
        what = recorded.get("what")
        ran = None if what is None else (what.__dict__ if hasattr(what, "__dict__") else what)
        body = r.json() if r.status_code != 200 else None
        out.append({"status": r.status_code, "body": body, "ran": _plain(ran)})
    return out


def python_value(r: random.Random, name: str, text: str) -> Any:
    """The Python API's argument for a drawn string: an int or float where it is one, else the string itself."""
    if name == "causal":
        return {"true": True, "1": True, "false": False, "0": False}.get(text, text)
    if name == "algo":
        return text
    try:
        return int(text)
    except ValueError:
        try:
            return float(text) if name == "scale" else text
        except ValueError:
            return text


def python_answer(kwargs: dict[str, Any]) -> dict[str, Any]:
    import flashviz
    from flashviz.tracing import build

    seen: dict[str, Any] = {}

    def record(algorithm, cfg, inputs=None):
        seen["cfg"] = cfg
        raise _Ran

    build.trace_of = record
    try:
        flashviz.trace(**kwargs)
    except _Ran:
        return {"ok": _plain(seen["cfg"].__dict__)}
    except (ValueError, TypeError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"ok": None}


def widget_answer(params: dict[str, Any], block: Any) -> dict[str, Any]:
    from flashviz.share.widget import config_of

    try:
        _, cfg = config_of(params, block, api=True)
    except (ValueError, TypeError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"ok": _plain(cfg.__dict__)}


class _Ran(Exception):
    pass


def _plain(x: Any) -> Any:
    return json.loads(json.dumps(x, default=str)) if x is not None else None


def run(count: int, seed: int, out: Path) -> None:
    r = random.Random(seed)
    launches = [launch(r) for _ in range(count)]
    lines = []
    for k, fields in enumerate(launches):
        argv = cli_argv(r, fields)
        lines.append({"door": "cli", "k": k, "asked": argv, "answer": cli_answer(argv)})
    queries = [("/api/trace" if r.random() < 0.8 else "/api/compare", f) for f in launches]
    api = {"/api/trace": ("algo", "n", "d", "br", "bc", "seed", "scale", "causal", "block"), "/api/compare": COMPARE}
    queries = [(p, {k: v for k, v in f.items() if k in api[p]}) for p, f in queries]
    for k, ((path, fields), answer) in enumerate(zip(queries, api_answers(queries), strict=True)):
        lines.append({"door": "api", "k": k, "asked": [path, fields], "answer": answer})
    for k, fields in enumerate(launches):  # ring's fields are flashviz.trace's since the table (not the widget's)
        kwargs = {n: python_value(r, n, v) for n, v in fields.items() if n not in ("devices", "layout")}
        lines.append({"door": "python", "k": k, "asked": repr(kwargs), "answer": python_answer(kwargs)})
        block = kwargs.pop("block", None)
        lines.append({"door": "widget", "k": k, "asked": repr(kwargs), "answer": widget_answer(kwargs, block)})
    with out.open("w") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    print(f"wrote {out}: {len(lines)} answers to {count} launches")


def asked_fields(line: dict[str, Any]) -> dict[str, Any]:
    """The fields a launch named, from any door's `asked`."""
    asked = line["asked"]
    if line["door"] == "cli":
        return {a[2:]: v for a, v in zip(asked, [*asked[1:], ""], strict=True) if a.startswith("--")}
    if line["door"] == "api":
        return asked[1]
    import ast

    return ast.literal_eval(asked) if "object at" not in asked else {}


def own_defaults_left_out(line: dict[str, Any]) -> bool:
    """Whether the launch names an algorithm that brings defaults of its own and leaves one of those fields out: its
    answer changes with issue 18 (each algorithm brings its own defaults, also to the API, the widget and `gpu`)."""
    from flashviz.algos import REGISTRY

    given = asked_fields(line)
    algo = REGISTRY.get(given.get("algo") if isinstance(given.get("algo"), str) else "")
    return algo is not None and bool(algo.example) and any(k not in given for k in algo.example)


def compare(old: Path, new: Path, show: int) -> int:
    a = [json.loads(x) for x in old.read_text().splitlines()]
    b = [json.loads(x) for x in new.read_text().splitlines()]
    if [(x["door"], x["k"], x["asked"]) for x in a] != [(x["door"], x["k"], x["asked"]) for x in b]:
        print("the two files asked different launches (another --count or --seed?)")
        return 2
    same, own, differ = Counter(), Counter(), []
    for x, y in zip(a, b, strict=True):
        if x["answer"] == y["answer"]:
            same[x["door"]] += 1
        elif own_defaults_left_out(x):
            own[x["door"]] += 1
        else:
            differ.append((x, y))
    by_door = Counter(x["door"] for x, _ in differ)
    print("| door | answers | equal | changed by an algorithm's own defaults | other differences |")
    print("|---|---|---|---|---|")
    for door in ("cli", "api", "python", "widget"):
        total = same[door] + own[door] + by_door[door]
        print(f"| {door} | {total} | {same[door]} | {own[door]} | {by_door[door]} |")
    for x, y in differ[:show]:
        print(f"\n{x['door']} {x['asked']}\n  old: {json.dumps(x['answer'], ensure_ascii=False)[:400]}")
        print(f"  new: {json.dumps(y['answer'], ensure_ascii=False)[:400]}")
    return 1 if differ else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=1000, help="random launches (each through every door)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("launch_messages.jsonl"))
    p.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    p.add_argument("--show", type=int, default=40, help="differing answers printed by --compare")
    args = p.parse_args()
    if args.compare:
        return compare(*args.compare, args.show)
    run(args.count, args.seed, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
