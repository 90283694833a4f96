"""The launch fields, one row each: the one table behind every front door of a launch. From it come the CLI's options
(`flashviz.cli.options.launch_options`), the server's typed queries and their OpenAPI schema
(`flashviz.server.params`), `/api/limits`' `fields` (what the page's form and URL parser accept, web/src/validate.ts
and state.ts), the Python API's and the widget's defaults (`flashviz.share.launch_args`), and Config's bounds and
defaults (`flashviz.model.config`: LIMITS, API_LIMITS, COUNT_LIMITS).

A field is offered where its `at` says:
- "engine": a run of the engine from the command line or Python (`flashviz trace`, `steps`, `export`, `flashviz.trace`)
- "api": a run of the engine for anyone who can reach the server (`/api/trace`, the widget, the page's form and URL)
- "gpu": a run on a GPU (`flashviz gpu run | profile | sanitize`)
- "count": the closed forms, no engine (`flashviz count`, `flashviz compare`, `/api/compare`)
and bounded there by `bounds[scope]`, else by `bounds["engine"]`.

Defaults: each field's `default`, except that an algorithm may bring its own for a field marked `own` (its record's
`example`, `flashviz.algos.base.Algorithm`: fa2-triton's N=128, D=32, Br=64, Bc=32, where the seed's D=4 is no head
dimension its kernel runs). `defaults(algorithm.example)` is the one place the two are merged; the front door that
resolved the algorithm calls it. This module is plain data and imports no algorithm.

Adding a field is one row below (and, when the engine reads it, the attribute of the same name on Config).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from flashviz.model.ring_layout import LAYOUTS

Scope = Literal["engine", "api", "gpu", "count"]
Kind = Literal["choice", "int", "number", "flag", "pick", "ints"]
# choice: one of a list of names (`choices`; the algorithm: the registry's names, which the front door passes in)
# int:    an integer within bounds (None for its default, where it has an `empty`: an empty query value is that)
# number: a finite real number whose magnitude is within `magnitude`, or None for what `empty` says
# flag:   true or false
# pick:   an integer naming one of the launch's blocks: bounded by `bounds` as an integer, then by the algorithm
#         (its blocks for this launch), None for its default (`empty`)
# ints:   comma-separated integers ("16,0", "50,30,48"), as many as `items` says, each within bounds; as text from
#         the command line, the query and the URL, or a list or tuple from Python (Config holds a tuple), None for its
#         default (`empty`)

EVERYWHERE: frozenset[Scope] = frozenset(("engine", "api", "gpu", "count"))
RUNS: frozenset[Scope] = frozenset(("engine", "api", "gpu"))  # the engine or a kernel runs: inputs are drawn


@dataclass(frozen=True)
class Field:
    """One launch field: its name everywhere (Config's attribute, the flag `--name`, the query parameter, the URL's
    key), its kind, its help in one line, its default, where it is offered and its bounds there."""

    name: str
    kind: Kind
    help: str
    default: Any
    at: frozenset[Scope]
    bounds: Mapping[Scope, tuple[int, int]] = field(default_factory=dict)  # int, pick: inclusive; "engine" else
    magnitude: tuple[float, float] | None = None  # number: least and most |value|
    choices: tuple[str, ...] = ()  # choice: the names it takes (none for the algorithm: the registry's, at the door)
    own: bool = False  # an algorithm may bring its own default (Algorithm.example)
    label: str = ""  # how the page's form and its messages name it ("Br"); "" where the page has no input for it
    empty: str = ""  # what leaving it out means, where the default is None ("1/sqrt(D)")
    items: tuple[int, int] = (1, 1)  # ints: how many integers it takes, least and most
    # the page holds it in a launch only where it is given (its default, the field left out: the options of real
    # models, absent from plain attention's launches and URLs)
    optional: bool = False

    def bounds_at(self, scope: Scope) -> tuple[int, int]:
        return self.bounds[scope] if scope in self.bounds else self.bounds["engine"]

    def accepted(self, scope: Scope, choices: tuple[str, ...] = ()) -> str:
        """What it accepts, as every error about it says it: `an integer in 1..4096`."""
        if self.kind == "choice":
            return f"one of {', '.join(self.choices or choices)}"
        if self.kind in ("int", "pick"):
            lo, hi = self.bounds_at(scope)
            return f"an integer in {lo}..{hi}" + (f", or empty for {self.empty}" if self.empty else "")
        if self.kind == "ints":
            lo, hi = self.bounds_at(scope)
            fewest, most_items = self.items
            count = str(fewest) if fewest == most_items else f"{fewest}..{most_items}"
            return f"{count} comma-separated integers, each in {lo}..{hi}, or empty for {self.empty}"
        if self.kind == "number":
            assert self.magnitude is not None
            least, most = self.magnitude
            return f"a finite number with {least:g} <= |{self.name}| <= {most:g}, or empty for {self.empty}"
        return "true or false"


N_MAX = 16384  # the engine's largest N (its work is N*N*D multiply-adds and an N x D JSON per input)
API_N_MAX = 4096  # the server's: one request is bounded to about 1-2 s of engine time on one core
MAX_HEADS = 65535  # gridDim.y
SCALE_RANGE = (1e-6, 1e6)  # the softmax scale's least and most magnitude
DEVICES = (2, 8)  # ring attention's P: a ring of one is no ring; the page draws up to 8 round it

TILE: dict[Scope, tuple[int, int]] = {"engine": (1, 256), "count": (1, 4096)}  # D, Br, Bc
N: dict[Scope, tuple[int, int]] = {"engine": (1, N_MAX), "api": (1, API_N_MAX), "count": (1, 2**31 - 1)}
BLOCK: dict[Scope, tuple[int, int]] = {"engine": (0, N_MAX - 1), "api": (0, API_N_MAX - 1)}
CAUSAL = "causal attention: skip K/V tiles above the diagonal, mask the diagonal ones"
BLOCK_HELP = (
    "record values for this block only: blockIdx.x of the main kernel (a block of Q; fa2-backward: a tile of K/V; "
    "fa1, one block per head: the block of Q it visits)"
)
RING_P = "--algo ring: P, the devices in the ring (Br = Bc = N/P)"
RING_LAYOUT = "--algo ring: how the sequence is laid out on the devices (zigzag: device r holds chunks r and 2P-1-r)"
# Fields that belong to the algorithms that list them (Algorithm.own_fields): any other refuses a value but the default
ALGORITHM_FIELDS = ("devices", "layout")
GPU: frozenset[Scope] = frozenset(("gpu",))
ENGINE: frozenset[Scope] = frozenset(("engine",))  # the command line and flashviz.trace only
TRACED: frozenset[Scope] = frozenset(("engine", "api"))  # a trace records values: --block picks whose
# The options of real models (issue 22): grouped-query heads, keys != queries, a sliding window, soft-capping, packed
# sequences. Offered wherever the engine runs or the closed forms count (not `gpu`: flashviz gpu runs plain launches);
# an algorithm runs those its record lists (`Algorithm.options`), and Config.check_options says the rest (the sums of
# packed sequences, "X does not run this option"). The closed forms alone take far larger launches: a KV cache of
# 128k keys, say.
OPTIONS_AT: frozenset[Scope] = frozenset(("engine", "api", "count"))
MAX_SEQS = 16  # packed sequences in one launch
GROUP: dict[Scope, tuple[int, int]] = {"engine": (1, 8)}  # q heads per K/V head: a trace runs one K/V head's group
NK: dict[Scope, tuple[int, int]] = {"engine": (1, N_MAX), "count": (1, 2**31 - 1)}
WINDOW: dict[Scope, tuple[int, int]] = {"engine": (-1, N_MAX), "count": (-1, 1 << 28)}  # each side; -1 unbounded
SEQLEN: dict[Scope, tuple[int, int]] = {"engine": (1, N_MAX), "count": (1, 2**31 - 1)}  # one packed sequence's rows
SOFTCAP_RANGE = (0.0, 1e4)  # 0: no soft-capping
WINDOW_HELP = "LEFT,RIGHT: row r sees keys r-LEFT .. r+RIGHT (each -1 unbounded)"
SEQLENS_HELP = "packed sequences: their lengths, e.g. 50,30,48 (N is their sum)"

# fmt: off
FIELDS: tuple[Field, ...] = (
    Field("algo", "choice", "the algorithm", "fa2", EVERYWHERE),
    Field("n", "int", "sequence length N", 8, EVERYWHERE, N, own=True, label="N"),
    Field("d", "int", "head dimension D", 4, EVERYWHERE, TILE, own=True, label="D"),
    Field("br", "int", "rows of Q per block, Br", 4, EVERYWHERE, TILE, own=True, label="Br"),
    Field("bc", "int", "columns of K/V per tile, Bc", 4, EVERYWHERE, TILE, own=True, label="Bc"),
    Field("seed", "int", "random inputs are drawn from this seed", 0, RUNS, {"engine": (0, 2**32 - 1)}, label="seed"),
    Field("scale", "number", "softmax scale", None, RUNS, magnitude=SCALE_RANGE, label="scale", empty="1/sqrt(D)"),
    Field("causal", "flag", CAUSAL, False, EVERYWHERE, label="causal"),
    Field("devices", "int", RING_P, 4, TRACED, {"engine": DEVICES}, label="P", empty="4", optional=True),
    Field("layout", "choice", RING_LAYOUT, "zigzag", TRACED, choices=LAYOUTS),
    Field("block", "pick", BLOCK_HELP, None, TRACED, BLOCK, empty="all when there are at most 8, else 0"),
    Field("group", "int", "q heads per K/V head (GQA): the trace runs one K/V head and its group", 1, OPTIONS_AT,
          GROUP, label="group", empty="1", optional=True),
    Field("nk", "int", "keys Nk when not N (a KV cache); causal aligned to the bottom-right", None, OPTIONS_AT, NK,
          label="Nk", empty="N", optional=True),
    Field("window", "ints", WINDOW_HELP, None, OPTIONS_AT, WINDOW, label="window", empty="-1,-1", items=(2, 2),
          optional=True),
    Field("softcap", "number", "soft-capping: scores become C*tanh(s/C)", 0.0, OPTIONS_AT, magnitude=SOFTCAP_RANGE,
          label="softcap", empty="0 (none)", optional=True),
    Field("seqlens", "ints", SEQLENS_HELP, None, OPTIONS_AT, SEQLEN, label="seqlens", empty="one sequence",
          items=(1, MAX_SEQS), optional=True),
    Field("seqlens_k", "ints", "packed sequences' key lengths", None, OPTIONS_AT, SEQLEN, label="seqlens_k",
          empty="seqlens", items=(1, MAX_SEQS), optional=True),
    Field("heads", "int", "heads H", 1, GPU, {"gpu": (1, MAX_HEADS)}),
    Field("batch", "int", "batch B", 1, GPU, {"gpu": (1, MAX_HEADS)}),
)
# fmt: on
BY_NAME: dict[str, Field] = {f.name: f for f in FIELDS}


def at(scope: Scope) -> tuple[Field, ...]:
    """The fields offered at `scope`, in the table's order."""
    return tuple(f for f in FIELDS if scope in f.at)


def limits(scope: Scope) -> dict[str, tuple[int, int]]:
    """The integer fields at `scope` and their bounds there: what Config.check_fields holds a launch to."""
    return {f.name: f.bounds_at(scope) for f in at(scope) if f.kind == "int"}


def defaults(own: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every field's default: the algorithm's own (`own`, its record's `example`) where the field takes one, else
    the table's."""
    own = own or {}
    return {f.name: own[f.name] if f.own and f.name in own else f.default for f in FIELDS}


def filled(given: Mapping[str, Any], own: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every field: as `given` (the fields a front door was given), else its default (`defaults(own)`)."""
    return {**defaults(own), **{k: v for k, v in given.items() if k in BY_NAME}}


def document(scope: Scope) -> list[dict[str, Any]]:
    """The fields at `scope` as `/api/limits` lists them for the page: name, kind, label, help, default and bounds
    (`min`/`max` for an integer, `least`/`most` for a number's magnitude), `own` and `empty`."""
    out = []
    for f in at(scope):
        entry: dict[str, Any] = {"name": f.name, "kind": f.kind, "label": f.label, "help": f.help, "default": f.default}
        if f.kind in ("int", "pick", "ints"):
            entry["min"], entry["max"] = f.bounds_at(scope)
        if f.kind == "ints":
            entry["items"] = list(f.items)
        if f.magnitude is not None:
            entry["least"], entry["most"] = f.magnitude
        if f.choices:
            entry["choices"] = list(f.choices)
        entry["own"] = f.own
        entry["empty"] = f.empty
        if f.optional:
            entry["optional"] = True
        out.append(entry)
    return out


PAGE_FILE = "data/launch_fields.json"  # the page's fields until /api/limits answers (web/src/validate.ts imports it)


def page_file_text() -> str:
    """What data/launch_fields.json holds: `document("api")`, the fields the page's form and URL parser accept
    (tests/test_fields.py holds the file to it; `python -m flashviz.model.fields` writes it)."""
    import json

    return json.dumps(document("api"), indent=1) + "\n"


if __name__ == "__main__":
    from importlib import resources

    target = resources.files("flashviz").joinpath(PAGE_FILE)
    with resources.as_file(target) as path:
        path.write_text(page_file_text())
        print(f"wrote {path}")
