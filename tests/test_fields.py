"""The table of launch fields (flashviz.model.fields) is the one place each field is declared (issue 18): the CLI's
options, the server's typed queries and their OpenAPI schema, /api/limits (what the page's form and URL parser
accept: web/test/fields.test.ts reads the real app's /api/limits), the page's bundled copy, Config's bounds and
defaults, and each algorithm's own defaults at every front door all come from it. A row added to the table reaches
every door; a bad value is cut in one place."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from fastapi.testclient import TestClient

import flashviz
from flashviz import server
from flashviz.algos import ALGOS, REGISTRY
from flashviz.cli.main import cli
from flashviz.cli.options import Bounded, Number, OneOf
from flashviz.cli.yourkernel import KERNEL_ONLY
from flashviz.model import fields
from flashviz.model.config import API_LIMITS, CONFIG_FIELDS, COUNT_LIMITS, LIMITS, SCALE_RANGE, Config
from flashviz.server.params import ArraysQuery, CompareQuery, TraceQuery, TraceRoute

ROOT = Path(__file__).resolve().parents[1]

# the commands that take a launch, and the scope of the table their options come from (and the fields they leave out)
COMMANDS = {
    ("trace",): ("engine", ()),
    ("steps",): ("engine", ()),
    ("export",): ("engine", ("algo",)),  # its --algo takes several (fa1,fa2): its own option
    ("count",): ("count", ()),
    ("compare",): ("count", ("algo",)),  # every algorithm
    ("gpu", "run"): ("gpu", ()),
    ("gpu", "profile"): ("gpu", ()),
    ("gpu", "sanitize"): ("gpu", ()),
}


def command(path: tuple[str, ...]) -> click.Command:
    c: click.Command = cli
    for name in path:
        assert isinstance(c, click.Group)
        c = c.commands[name]
    return c


@pytest.mark.parametrize("path", list(COMMANDS), ids=" ".join)
def test_the_click_options_are_the_tables(path):
    scope, skip = COMMANDS[path]
    options = {p.name: p for p in command(path).params if isinstance(p, click.Option)}
    if path == ("trace",):  # --heads, --batch of `trace --kernel` are your kernel's (1..64), not a launch's fields
        options = {k: v for k, v in options.items() if k not in KERNEL_ONLY}
    expected = [f for f in fields.at(scope) if f.name not in skip]
    assert [f.name for f in expected] == [n for n in options if n in fields.BY_NAME], path
    for f in expected:
        option = options[f.name]
        assert option.opts == ["--" + f.name.replace("_", "-")]  # seqlens_k: --seqlens-k
        assert option.default == f.default, f.name
        if f.kind == "ints":  # the text, read into Config's tuple (model.config.option_values)
            assert option.type is click.STRING
        elif f.kind in ("int", "pick"):
            assert isinstance(option.type, Bounded) and (option.type.lo, option.type.hi) == f.bounds_at(scope)
        elif f.kind == "number":
            assert isinstance(option.type, Number)
        elif f.kind == "choice":
            assert isinstance(option.type, OneOf) and tuple(option.type.choices) == (f.choices or ALGOS)
        else:
            assert option.is_flag


def schema_bounds(model) -> dict[str, tuple[int, int]]:
    """Each integer parameter's bounds as the OpenAPI schema says them (pydantic's ge/le)."""
    out = {}
    for name, info in model.model_fields.items():
        ge = [m.ge for m in info.metadata if getattr(m, "ge", None) is not None]
        le = [m.le for m in info.metadata if getattr(m, "le", None) is not None]
        if ge and le:
            out[name] = (ge[0], le[0])
    return out


def test_the_servers_queries_are_the_tables():
    api = fields.at("api")
    assert list(TraceQuery.model_fields) == [f.name for f in api]
    assert list(TraceRoute.model_fields) == [*(f.name for f in api), "arrays"]
    assert list(ArraysQuery.model_fields) == [*(f.name for f in api), "step", "steps"]
    bounds = schema_bounds(TraceQuery)
    for f in api:
        if f.kind in ("int", "pick"):
            assert bounds[f.name] == f.bounds_at("api"), f.name
    assert {n: b for n, b in bounds.items() if fields.BY_NAME[n].kind == "int"} == API_LIMITS
    assert bounds["scale"] == (-SCALE_RANGE[1], SCALE_RANGE[1])
    # /api/compare: plain attention's closed forms (the options of real models are `flashviz compare`'s)
    count = [f for f in fields.at("count") if f.name != "algo" and not f.optional]
    assert list(CompareQuery.model_fields) == [f.name for f in count]
    assert schema_bounds(CompareQuery) == {k: v for k, v in COUNT_LIMITS.items() if not fields.BY_NAME[k].optional}
    # what an error says a field accepts: the table's words
    assert {f.name: f.accepted("api", ALGOS) for f in api if f.kind != "pick"} == TraceQuery.ACCEPTED
    assert TraceQuery.ACCEPTED["scale"] == "a finite number with 1e-06 <= |scale| <= 1e+06, or empty for 1/sqrt(D)"


def test_the_openapi_schema_and_api_limits_are_the_tables():
    client = TestClient(server.create_app())
    doc = client.get("/api/openapi.json").json()
    params = {p["name"]: p["schema"] for p in doc["paths"]["/api/trace"]["get"]["parameters"]}
    for f in fields.at("api"):
        if f.kind in ("int", "pick"):
            assert (params[f.name]["minimum"], params[f.name]["maximum"]) == f.bounds_at("api"), f.name
    limits = client.get("/api/limits").json()
    assert limits["fields"] == fields.document("api")
    assert [e["name"] for e in limits["fields"]] == [f.name for f in fields.at("api")]
    assert {k: tuple(limits[k]) for k in API_LIMITS} == API_LIMITS  # the ranges the page read before `fields`
    # each algorithm's own defaults, beside the fields they are defaults of
    for entry in limits["algos"]:
        assert entry["example"] == (dict(REGISTRY[entry["name"]].example) if REGISTRY[entry["name"]].example else None)


def test_the_pages_bundled_fields_are_the_tables():
    """web/src/validate.ts reads data/launch_fields.json until /api/limits answers."""
    text = (ROOT / "src" / "flashviz" / fields.PAGE_FILE).read_text()
    assert text == fields.page_file_text(), "regenerate it: PYTHONPATH=src python -m flashviz.model.fields"
    # and the web unit tests' /api/limits (generated from the real app) carries the same rows
    fixture = json.loads((ROOT / "web" / "test" / "fixtures" / "limits.json").read_text())
    assert fixture["fields"] == json.loads(text)


def test_config_holds_the_tables_bounds_and_defaults():
    assert (fields.limits("engine"), fields.limits("api"), fields.limits("count")) == (LIMITS, API_LIMITS, COUNT_LIMITS)
    assert fields.BY_NAME["scale"].magnitude == SCALE_RANGE
    defaults = fields.defaults()
    # the window's default is None in the table (no window: empty), (-1, -1) as Config holds it (option_values)
    assert {k: getattr(Config(), k) for k in CONFIG_FIELDS - {"window"}} == {
        k: defaults[k] for k in CONFIG_FIELDS - {"window"}
    }
    assert defaults["window"] is None and Config.of(defaults).window == Config().window == (-1, -1)
    # every field the engine's front doors take is a Config attribute; the block is `record`, heads and batch a GPU's
    engine = {f.name for f in fields.at("engine")} | {f.name for f in fields.at("api")}
    assert engine - CONFIG_FIELDS == {"block"}
    assert set(fields.BY_NAME) - CONFIG_FIELDS == {"block", "heads", "batch"}
    assert Config.of({**defaults, "block": 1, "heads": 4}) == Config(record=(1,))


def test_the_python_api_takes_every_field_of_the_engine():
    """flashviz.trace keeps its typed, documented signature: a field added to the table at "engine" is added there
    too (this test names it)."""
    from flashviz.api import trace

    params = inspect.signature(trace).parameters
    assert {f.name for f in fields.at("engine")} <= set(params)
    from flashviz.share.widget import CONFIG_KEYS

    assert tuple(f.name for f in fields.at("api") if f.kind != "pick") == CONFIG_KEYS


@pytest.mark.parametrize("algo", [a for a in REGISTRY.values() if a.example], ids=lambda a: a.name)
def test_each_algorithms_own_defaults_are_fields_it_runs(algo):
    """`example` names only fields that take an algorithm's own default, and the launch they make runs, at the CLI's
    bounds and at the API's (issue 18: defaults that do not work)."""
    assert set(algo.example) <= {f.name for f in fields.FIELDS if f.own}
    values = {**fields.defaults(algo.example), "algo": algo.name}
    cfg = Config.of(values)
    assert algo.validated(cfg) == cfg and algo.api_validated(cfg) == cfg


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flashviz", *args], capture_output=True, text=True, env={**os.environ, "CI": "1"}
    )


def test_every_front_door_takes_an_algorithms_own_defaults():
    """fa2-triton's kernel runs no D = 4: picked with no sizes, every door runs its own (N=128, D=32, Br=64, Bc=32);
    a size given is kept. The page's URL parser does the same (web/test/fields.test.ts), its form switches to them
    (tests/browser/test_phone_tables.py) and so does a URL naming it (tests/browser/test_fields_page.py)."""
    own = dict(REGISTRY["fa2-triton"].example)
    out = run_cli("trace", "--algo", "fa2-triton", "--n", "64")
    assert out.returncode == 0, out.stderr
    assert {k: json.loads(out.stdout)["config"][k] for k in own} == {**own, "n": 64}
    out = run_cli("count", "--algo", "fa2-triton", "--json")
    assert {k: json.loads(out.stdout)["config"][k] for k in own} == own
    # no GPU here: `gpu run` gets past the launch's checks to the GPU's (it used to stop at --d 4)
    out = run_cli("gpu", "run", "--algo", "fa2-triton")
    assert out.returncode == 2 and "--d" not in out.stderr and "GPU" in out.stderr, out.stderr
    trace = flashviz.trace(algo="fa2-triton", n=16)
    assert {k: trace.config[k] for k in own} == {**own, "n": 16}
    client = TestClient(server.create_app())
    r = client.get("/api/trace?algo=fa2-triton&bc=16")
    assert r.status_code == 200, r.text
    assert {k: r.json()["config"][k] for k in own} == {**own, "bc": 16}
    r = client.get("/api/trace?algo=fa2-triton&block=2")  # the picks of its own launch: 2 blocks of Q
    assert r.json() == {"detail": "block: must be an integer in 0..1 for N=128, Br=64 (got 2)", "field": "block"}
    pytest.importorskip("anywidget")
    from flashviz.share.widget import config_of

    _, cfg = config_of({"algo": "fa2-triton"}, api=True)
    assert {k: getattr(cfg, k) for k in own} == own


ROW = """
import dataclasses, json, sys
from flashviz.model import fields as F
row = F.Field("sinks", "int", "keys each query sees", 0, frozenset(("engine", "api")), {"engine": (0, 64)}, label="W")
F.FIELDS = (*F.FIELDS, row)
F.BY_NAME[row.name] = row
from click.testing import CliRunner
from fastapi.testclient import TestClient
from flashviz import server
from flashviz.cli.main import cli
from flashviz.share.widget import CONFIG_KEYS
client = TestClient(server.create_app())
trace = client.get("/api/openapi.json").json()["paths"]["/api/trace"]["get"]
params = {p["name"]: p["schema"] for p in trace["parameters"]}
print(json.dumps({
    "help": CliRunner().invoke(cli, ["trace", "--help"]).output,
    "bad": CliRunner().invoke(cli, ["count", "--sinks", "1"]).output,
    "refused": CliRunner().invoke(cli, ["trace", "--sinks", "65"]).output,
    "schema": params.get("sinks"),
    "api": client.get("/api/trace?sinks=65").json(),
    "limits": [f["name"] for f in client.get("/api/limits").json()["fields"]],
    "widget": CONFIG_KEYS,
}))
"""


def test_a_row_added_to_the_table_reaches_every_door():
    """Adding a launch field is one row: with a row `sinks` added (before anything reads the table), `flashviz trace`
    has --sinks within its bounds (and `count`, whose scope it is not in, has none), /api/trace takes it typed and
    bounded in its OpenAPI schema, /api/limits lists it for the page (whose form and URL then take it:
    web/test/fields.test.ts) and the widget's config takes it."""
    out = subprocess.run([sys.executable, "-c", ROW], capture_output=True, text=True, env={**os.environ, "CI": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    assert re.search(r"--sinks INTEGER\s+keys each query sees", got["help"]), got["help"]
    assert "No such option '--sinks'" in got["bad"]
    assert "must be an integer in 0..64 (got 65)" in got["refused"]
    assert (got["schema"]["minimum"], got["schema"]["maximum"]) == (0, 64)
    assert got["api"] == {"detail": "sinks: must be an integer in 0..64 (got 65)", "field": "sinks"}
    assert got["limits"][-1] == "sinks" and got["widget"][-1] == "sinks"


# ---- one helper cuts a shown value ----

PY_CUTS = [
    re.compile(r"\[:\s*(?:39|40)\]"),  # text[:40]
    re.compile(r"\[:\s*[\w.]+\s*-\s*[13]\]\s*\+\s*\"(?:…|\.\.\.)\""),  # text[: LIMIT - 1] + "…": cut() again
    re.compile(r"if len\([^)]*\)\s*<=\s*(?:40|ECHO\w*)\s+else"),  # text if len(text) <= 40 else ...
    re.compile(r"^ECHO\w*\s*=", re.M),  # a limit of its own
]
WEB_CUTS = [
    re.compile(r"\.slice\(0,\s*(?:39|40)\)"),
    re.compile(r"\.length\s*(?:<=|>)\s*40\b"),
    re.compile(r"\.slice\(0,\s*\w+\s*-\s*1\)\}(?:…|\\u2026)"),
]


def test_a_shown_value_is_cut_in_one_place():
    """'Cut a bad value to 40 characters' was written nine times, one of them at 60 (issue 18): now flashviz.model.echo
    (ECHO_MAX, cut, shown) in Python and web/src/echo.ts in the page, nowhere else."""
    found = []
    for path in sorted((ROOT / "src" / "flashviz").rglob("*.py")):
        if path.name != "echo.py":
            text = path.read_text()
            found += [f"{path.relative_to(ROOT)}: {m[0]}" for p in PY_CUTS for m in p.finditer(text)]
    for path in sorted((ROOT / "web" / "src").rglob("*.ts")):
        if path.name != "echo.ts":
            text = path.read_text()
            found += [f"{path.relative_to(ROOT)}: {m[0]}" for p in WEB_CUTS for m in p.finditer(text)]
    assert found == []
    from flashviz.model.echo import ECHO_MAX, cut, shown

    assert cut("x" * ECHO_MAX) == "x" * ECHO_MAX and cut("x" * 41) == "x" * 39 + "…"
    assert shown("x" * 100) == "'" + "x" * 37 + "…'"  # quoted, cut, its closing quote kept
    assert shown(10**5000) == "an integer of 16610 bits"


@pytest.mark.parametrize("text", ["\x1f5", "5,\x1c0", "\u20035", "5,,0", "0x10", "1e3"])
def test_a_list_field_refuses_what_int_would_not_read(text):
    # str.strip() takes \x1c-\x1f and U+2003 as whitespace, int() does not: such a value is refused with the field's
    # one-line message, never a ValueError from int() (the CLI fuzzer found `compare --window '\x1f5'`)
    from flashviz.model.config import ConfigError, option_values

    with pytest.raises(ConfigError, match="window: must be comma-separated integers"):
        option_values({"window": text})


def test_a_list_field_reads_spaces_around_its_numbers():
    from flashviz.model.config import option_values

    assert option_values({"window": " 16 , 0"})["window"] == (16, 0)
