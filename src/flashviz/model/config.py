"""A launch configuration and its limits, as plain data: the fields of one launch, the bounds every front door holds
them to, and the checks that need no algorithm. What depends on the algorithm (its blocks, its N limit, the tiles its
kernel runs, the API's cost) is the Algorithm's (`flashviz.algos.base.Algorithm.validated`): the front door resolves
the name once (`flashviz.algos.resolve`) and validates the Config with that object. This module imports no algorithm."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from dataclasses import fields as dataclass_fields
from typing import Any

from flashviz.model import fields, tiling
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


def finite_number(value: object) -> bool:
    """A Python int or float (not a bool: True is no scale) of finite value."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int past a float's range
        return False


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
    # -- ring attention's launch (algos/ring; every other algorithm ignores them): the sequence is split across P
    # devices in a ring, laid out "zigzag" (device r holds chunks r and 2P-1-r of 2P) or "contiguous" (chunk r of P)
    devices: int = _DEFAULTS["devices"]  # P, in DEVICES: 4 show the ring's rotation and the zigzag's balance
    layout: str = _DEFAULTS["layout"]  # flashviz.model.ring_layout.LAYOUTS

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> Config:
        """The Config of a launch's field values (flashviz.model.fields): the fields it has an attribute for, and
        `block` as the one block recorded (None: the default); the others (a GPU's heads, batch) are not the
        engine's."""
        kept = {k: v for k, v in values.items() if k in CONFIG_FIELDS}
        block = values.get("block")
        return cls(**kept, record=None if block is None else (block,))

    @property
    def tr(self) -> int:
        return tiling.count(self.n, self.br)

    @property
    def tc(self) -> int:
        return tiling.count(self.n, self.bc)

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
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(name, f"must be an integer in {lo}..{hi} (got {shown(value)})")
            if not lo <= value <= hi:
                raise ConfigError(name, f"must be an integer in {lo}..{hi} (got {shown(value)})")

    def check_tiles(self, max_tiles: int | None = MAX_TILES) -> None:
        """At most `max_tiles` (block, tile) pairs (None: no bound)."""
        if max_tiles is not None and self.tr * self.tc > max_tiles:
            raise ConfigError(
                "br" if self.br <= self.bc else "bc",
                f"Tr*Tc (block, tile) pairs must be at most {max_tiles:,} (got {self.tr}*{self.tc} for N={self.n}); "
                "raise br or bc",
            )

    def check_scale(self) -> None:
        if self.scale is not None:
            least, most = SCALE_RANGE
            if not (finite_number(self.scale) and least <= abs(self.scale) <= most):
                raise ConfigError(
                    "scale", f"must be a finite number with {least:g} <= |scale| <= {most:g} (got {shown(self.scale)})"
                )

    def replace(self, **changes) -> Config:
        return replace(self, **changes)


CONFIG_FIELDS = frozenset(f.name for f in dataclass_fields(Config)) - {"record"}  # the launch fields it holds
