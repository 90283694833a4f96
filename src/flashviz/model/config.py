"""A launch configuration and its limits, as plain data: the fields of one launch, the bounds every front door holds
them to, and the checks that need no algorithm. What depends on the algorithm (its blocks, its N limit, the tiles its
kernel runs, the API's cost) is the Algorithm's (`flashviz.algos.base.Algorithm.validated`): the front door resolves
the name once (`flashviz.algos.resolve`) and validates the Config with that object. This module imports no algorithm."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from dataclasses import fields as dataclass_fields
from typing import Any

from flashviz.model import band, fields, tiling
from flashviz.model.echo import ECHO_MAX as ECHO_MAX  # re-exported: the modules that echo a bad value import
from flashviz.model.echo import shown as shown  # them from here

DEFAULT: str = fields.BY_NAME["algo"].default  # the algorithm a launch runs when none is named (flashviz.algos)

# Safety limits for running the engine, from the table of launch fields (flashviz.model.fields; the traffic model in
# `count` has its own, far larger). They bound the work one trace can cause: N*N*D multiply-adds and an N x D JSON per
# input.
LIMITS = fields.limits("engine")
COUNT_LIMITS = fields.limits("count")
# The engine spends ~60 us of Python per (block, tile) pair plus the math: this many pairs is about 15-30 s on one core.
MAX_TILES = 2**18  # Tr*Tc (N=16384 at Br=Bc=32)
# The web API answers anyone who can reach it, so one request is bounded to about 1-2 s of engine time
# and ~60 MB of JSON on one core. An algorithm whose engine is slower per pair (its `api_cost`) gets less.
API_LIMITS = fields.limits("api")
API_MAX_WORK = 2**30  # N*N*D multiply-adds in all the Sij = Qi @ Kj.T (N=4096, D=64)
API_MAX_TILES = 2**14  # Tr*Tc (block, tile) pairs (N=4096 at Br=Bc=32)
API_MAX_VALUES = 5_000_000  # numbers in the JSON: inputs, outputs and the recorded blocks' snapshots
# Above this many Q blocks only one block's values are recorded (counters are kept for all).
RECORD_ALL_MAX_BLOCKS = 8
SCALE_RANGE = fields.SCALE_RANGE
DEVICES = fields.DEVICES  # ring attention's P (Config.devices)
_DEFAULTS = fields.defaults()

# The options of real models (issue 22): their rows of the table (flashviz.model.fields: group, nk, window, softcap,
# seqlens, seqlens_k) bound them at every front door; `Config.check_options` holds a launch to them.
OPTIONS = ("group", "nk", "window", "softcap", "seqlens", "seqlens_k")
LISTS = ("window", "seqlens", "seqlens_k")  # comma-separated integers (the table's kind "ints")
MAX_SEQS = fields.MAX_SEQS
SOFTCAP_RANGE = fields.SOFTCAP_RANGE


def finite_number(value: object) -> bool:
    """A Python int or float (not a bool: True is no scale) of finite value."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int past a float's range
        return False


def option_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` (launch fields from any front door) with the options of real models as Config holds them: the
    comma-separated integers of a list field (the table's kind "ints": "16,0" of --window or ?window=, "50,30,48" of
    --seqlens; a list from Python) a tuple of ints, an empty one or None its default (no window: (-1, -1)); what is not
    read goes on to `check_options`, whose message names the field and its range."""

    def ints(name: str, value: object) -> object:
        if isinstance(value, str):
            parts = [p.strip(" \t") for p in value.split(",")]  # str.strip's whitespace (\x1f…) is not int()'s
            if not value or not all(_INTEGER.fullmatch(p) for p in parts):
                raise ConfigError(
                    name, f"must be comma-separated integers such as {_EXAMPLE[name]} (got {shown(value)})"
                )
            return tuple(int(p) for p in parts)
        return tuple(value) if isinstance(value, list) else value

    out = dict(values)
    for name in LISTS:
        if name not in out:
            continue
        value = out[name]
        if value is None or (isinstance(value, str) and value == ""):
            out[name] = (-1, -1) if name == "window" else None
        else:
            out[name] = ints(name, value)
    return out


def with_seqlens(values: Mapping[str, Any], n_given: bool) -> dict[str, Any]:
    """`values` with N the sum of the packed sequences' lengths where they are given and N is not (a given N must then
    be their sum: `check_options` says so)."""
    out = option_values(values)
    lens = out.get("seqlens")
    if not n_given and isinstance(lens, tuple) and all(isinstance(x, int) and not isinstance(x, bool) for x in lens):
        out["n"] = sum(lens)
    return out


_INTEGER = re.compile(r"[+-]?[0-9]{1,9}")
_EXAMPLE = {"window": "16,0 (left,right; -1 unbounded)", "seqlens": "50,30,48", "seqlens_k": "70,10,100"}


class ConfigError(ValueError):
    """A bad setting: `field` names the flag or parameter, the message says what is accepted."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Config:
    """One launch: the launch fields the engine reads (flashviz.model.fields, whose table gives each its default,
    here the seed's example: two blocks of Q, two tiles of K and V) and the blocks whose values are recorded."""

    algo: str = DEFAULT
    n: int = _DEFAULTS["n"]  # sequence length N
    d: int = _DEFAULTS["d"]  # head dimension D
    br: int = _DEFAULTS["br"]  # rows of Q per block (Br)
    bc: int = _DEFAULTS["bc"]  # columns of K/V per tile (Bc)
    seed: int = _DEFAULTS["seed"]  # random inputs are drawn from this seed
    scale: float | None = _DEFAULTS["scale"]  # softmax scale; None means 1/sqrt(D)
    causal: bool = _DEFAULTS["causal"]  # mask key columns after the query row; skip K/V tiles wholly above the diagonal
    record: tuple[int, ...] | None = field(default=None)  # blocks whose values are recorded (the field `block`)
    # the options of real models (their rows of flashviz.model.fields); the defaults are plain attention
    group: int = _DEFAULTS["group"]  # q heads per K/V head (grouped-query attention; 1: one q head per K/V head)
    nk: int | None = _DEFAULTS[
        "nk"
    ]  # keys Nk (None: N); causal is aligned to the bottom-right: row r sees keys <= r + Nk - N
    window: tuple[int, int] = (-1, -1)  # (left, right): row r sees keys c, -left <= c - (r + Nk - N) <= right
    softcap: float = _DEFAULTS["softcap"]  # > 0: every scaled score s becomes softcap * tanh(s / softcap)
    seqlens: tuple[int, ...] | None = _DEFAULTS["seqlens"]  # packed sequences: each one's rows of Q (N is their sum)
    seqlens_k: tuple[int, ...] | None = _DEFAULTS["seqlens_k"]  # ... and of K and V (None: seqlens; Nk their sum)
    # -- ring attention's launch (algos/ring; every other algorithm ignores them): the sequence is split across P
    # devices in a ring, laid out "zigzag" (device r holds chunks r and 2P-1-r of 2P) or "contiguous" (chunk r of P)
    devices: int = _DEFAULTS["devices"]  # P, in DEVICES: 4 show the ring's rotation and the zigzag's balance
    layout: str = _DEFAULTS["layout"]  # flashviz.model.ring_layout.LAYOUTS

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Config:
        """The Config of a launch's field values (flashviz.model.fields): the fields it has an attribute for, and
        `block` as the one block recorded (None: the default); the others (a GPU's heads, batch) are not the
        engine's."""
        kept = {k: v for k, v in option_values(values).items() if k in CONFIG_FIELDS}
        block = values.get("block")
        return cls(**kept, record=None if block is None else (block,))

    @property
    def tr(self) -> int:
        return tiling.count(self.n, self.br)

    @property
    def tc(self) -> int:
        return tiling.count(self.kv_n, self.bc)

    def tiles_of_block(self, i: int) -> int:
        """K/V tiles block i of Q streams: all Tc, or under causal those whose first column <= its last row."""
        return tiling.tiles_of_block(self.n, self.br, self.bc, i, self.causal)

    def first_block(self, j: int) -> int:
        """The first block of Q that tile j meets: 0, or under causal the block holding row j*Bc."""
        return tiling.first_block(j, self.br, self.bc, self.causal)

    @property
    def softmax_scale(self) -> float:
        return 1.0 / math.sqrt(self.d) if self.scale is None else float(self.scale)

    def recorded_blocks(self, blocks: int) -> tuple[int, ...]:
        """The blocks whose values a trace records, of the `blocks` its algorithm's picker chooses among
        (`Algorithm.blocks`): `record`, or all of them when there are at most RECORD_ALL_MAX_BLOCKS, else block 0."""
        if self.record is not None:
            return self.record
        return tuple(range(blocks)) if blocks <= RECORD_ALL_MAX_BLOCKS else (0,)

    def check_fields(self, limits: dict[str, tuple[int, int]] = LIMITS) -> None:
        """Its fields by their kinds in the table (flashviz.model.fields): each flag (`causal`) a bool, each choice but
        the algorithm (`layout`) one of its choices, every integer field within `limits` (ConfigError naming the first
        that is not)."""
        for f in fields.FIELDS:
            if f.name not in CONFIG_FIELDS:
                continue
            value = getattr(self, f.name)
            if f.kind == "flag" and not isinstance(value, bool):
                raise ConfigError(f.name, f"must be true or false (got {shown(value)})")
            if f.kind == "choice" and f.choices and value not in f.choices:
                raise ConfigError(f.name, f"must be one of {', '.join(f.choices)} (got {shown(value)})")
        for name, (lo, hi) in limits.items():
            if name not in CONFIG_FIELDS:  # a launch field the engine does not read (a GPU's heads)
                continue
            value = getattr(self, name)
            if value is None and fields.BY_NAME[name].default is None:  # left out: its default (nk: N)
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(name, f"must be an integer in {lo}..{hi} (got {shown(value)})")
            if not lo <= value <= hi:
                raise ConfigError(name, f"must be an integer in {lo}..{hi} (got {shown(value)})")

    def check_tiles(self, max_tiles: int | None = MAX_TILES) -> None:
        """At most `max_tiles` (block, tile) pairs (None: no bound); blocks of every q head and sequence."""
        if max_tiles is not None and self.q_blocks * self.tc > max_tiles:
            raise ConfigError(
                "br" if self.br <= self.bc else "bc",
                f"Tr*Tc (block, tile) pairs must be at most {max_tiles:,} (got {self.q_blocks}*{self.tc} for "
                f"N={self.n}); raise br or bc",
            )

    def check_scale(self) -> None:
        if self.scale is not None:
            least, most = SCALE_RANGE
            if not (finite_number(self.scale) and least <= abs(self.scale) <= most):
                raise ConfigError(
                    "scale", f"must be a finite number with {least:g} <= |scale| <= {most:g} (got {shown(self.scale)})"
                )

    # ---- the options of real models ----

    @property
    def kv_n(self) -> int:
        """The rows of K and V: Nk, or N."""
        if self.seqlens is not None:
            return sum(self.seqlens_k or self.seqlens)
        return self.n if self.nk is None else self.nk

    @property
    def has_options(self) -> bool:
        """Whether the launch asks for any option of real models beyond plain attention."""
        return (
            self.group != 1
            or self.kv_n != self.n
            or tuple(self.window) != (-1, -1)
            or self.softcap != 0
            or self.seqlens is not None
        )

    @property
    def options_set(self) -> tuple[str, ...]:
        """The options the launch asks for, by field name."""
        out = [
            name
            for name, on in (
                ("group", self.group != 1),
                ("nk", self.nk is not None and self.seqlens is None),
                ("window", tuple(self.window) != (-1, -1)),
                ("softcap", self.softcap != 0),
                ("seqlens", self.seqlens is not None),
                ("seqlens_k", self.seqlens_k is not None),
            )
            if on
        ]
        return tuple(out)

    @property
    def sides(self) -> tuple[int, int]:
        """(left, right) as the kernel takes them: unbounded sides as band.UNBOUNDED, causal's right at most 0."""
        return band.sides(self.window, self.causal)

    @property
    def masks_tiles(self) -> bool:
        """Whether some (block, tile) pairs are skipped or masked by the band (causal or a window)."""
        return self.causal or tuple(self.window) != (-1, -1)

    @property
    def seqs(self) -> list[tuple[int, int]]:
        """Each sequence's (Nq, Nk): the packed ones, or the one of N and Nk."""
        if self.seqlens is not None:
            return list(zip(self.seqlens, self.seqlens_k or self.seqlens, strict=True))
        return [(self.n, self.kv_n)]

    def segments(self) -> list[band.Segment]:
        """The (q head, sequence) segments of the K/V head a trace runs (flashviz.model.band)."""
        return band.segments(self.group, self.seqs)

    @property
    def q_rows(self) -> int:
        """The rows of Q (and O, L) a trace holds: its group of q heads, one above the other."""
        return self.group * self.n

    def input_rows(self) -> dict[str, int]:
        """The rows of each input the host puts in HBM: Q of the group's q heads, K and V of the keys."""
        return {"Q": self.q_rows, "K": self.kv_n, "V": self.kv_n, "dO": self.q_rows}

    @property
    def q_blocks(self) -> int:
        """The blocks of Q over every segment: Tr when there are no options."""
        return self.group * sum(tiling.count(nq, self.br) for nq, _ in self.seqs)

    def check_options(self, runs: frozenset[str], algo: str, scope: fields.Scope = "engine") -> None:
        """The option fields of types and within their bounds at `scope` (their rows of flashviz.model.fields:
        "count" for the closed forms alone), those set among `runs` (what `algo` runs), N and Nk the sums of packed
        sequences: ConfigError naming the first field that is not."""
        limits = {name: fields.BY_NAME[name].bounds_at(scope) for name in ("group", "nk", "window", "seqlens")}

        def bad_int(name: str, value: object) -> bool:
            lo, hi = limits[name]
            return isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi

        def span(name: str) -> str:
            return f"{limits[name][0]}..{limits[name][1]}"

        if bad_int("group", self.group):
            raise ConfigError("group", f"must be an integer in {span('group')} (got {shown(self.group)})")
        if self.nk is not None and bad_int("nk", self.nk):
            raise ConfigError("nk", f"must be an integer in {span('nk')} (got {shown(self.nk)})")
        w = self.window
        lo, hi = limits["window"]
        if (
            not isinstance(w, tuple)
            or len(w) != 2
            or not all(isinstance(x, int) and not isinstance(x, bool) and lo <= x <= hi for x in w)
        ):
            raise ConfigError(
                "window", f"must be two integers left,right, each -1 (unbounded) or 0..{hi} (got {shown(w)})"
            )
        least, most = SOFTCAP_RANGE
        if not (finite_number(self.softcap) and least <= self.softcap <= most):
            raise ConfigError(
                "softcap", f"must be a number in {least:g}..{most:g}, 0 for none (got {shown(self.softcap)})"
            )
        for name in ("seqlens", "seqlens_k"):
            lens = getattr(self, name)
            if lens is None:
                continue
            a, b = limits["seqlens"]
            if (
                not isinstance(lens, tuple)
                or not 1 <= len(lens) <= MAX_SEQS
                or not all(isinstance(x, int) and not isinstance(x, bool) and a <= x <= b for x in lens)
            ):
                raise ConfigError(
                    name, f"must be 1..{MAX_SEQS} comma-separated lengths, each {a}..{b} (got {shown(lens)})"
                )
        if self.seqlens_k is not None and (self.seqlens is None or len(self.seqlens_k) != len(self.seqlens)):
            count = "no seqlens" if self.seqlens is None else f"{len(self.seqlens)} in seqlens"
            raise ConfigError(
                "seqlens_k", f"must list as many sequences as seqlens ({count}, got {len(self.seqlens_k)})"
            )
        if self.seqlens is not None:
            if self.n != sum(self.seqlens):
                raise ConfigError("n", f"must be the sum of seqlens, {sum(self.seqlens)} (got {self.n})")
            if self.nk is not None and self.nk != self.kv_n:
                raise ConfigError("nk", f"must be the sum of seqlens_k, {self.kv_n} (got {self.nk})")
        for name in self.options_set:
            key = "seqlens" if name == "seqlens_k" else name
            if key not in runs:
                others = f"; it runs {', '.join(sorted(runs))}" if runs else ""
                raise ConfigError(name, f"{algo} does not run this option (fa2-triton runs them all){others}")

    def replace(self, **changes) -> Config:
        return replace(self, **changes)


CONFIG_FIELDS = frozenset(f.name for f in dataclass_fields(Config)) - {"record"}  # the launch fields it holds
