"""A launch configuration and its limits, as plain data: the fields of one launch, the bounds every front door holds
them to, and the checks that need no algorithm. What depends on the algorithm (its blocks, its N limit, the tiles its
kernel runs, the API's cost) is the Algorithm's (`flashviz.algos.base.Algorithm.validated`): the front door resolves
the name once (`flashviz.algos.resolve`) and validates the Config with that object. This module imports no algorithm."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from flashviz.model import tiling
from flashviz.model.ring_layout import LAYOUTS

DEFAULT = "fa2"  # the algorithm a launch runs when none is named: the seed's example (flashviz.algos.DEFAULT)

# Safety limits for running the engine (the traffic model in `count` has its own, far larger).
# They bound the work one trace can cause: N*N*D multiply-adds and an N x D JSON per input.
LIMITS = {
    "n": (1, 16384),
    "d": (1, 256),
    "br": (1, 256),
    "bc": (1, 256),
    "seed": (0, 2**32 - 1),
}
COUNT_LIMITS = {"n": (1, 2**31 - 1), "d": (1, 4096), "br": (1, 4096), "bc": (1, 4096)}
# The engine spends ~60 us of Python per (block, tile) pair plus the math: this many pairs is about 15-30 s on one core.
MAX_TILES = 2**18  # Tr*Tc (N=16384 at Br=Bc=32)
# The web API answers anyone who can reach it, so one request is bounded to about 1-2 s of engine time
# and ~60 MB of JSON on one core. An algorithm whose engine is slower per pair (its `api_cost`) gets less.
API_LIMITS = {**LIMITS, "n": (1, 4096)}
API_MAX_WORK = 2**30  # N*N*D multiply-adds in all the Sij = Qi @ Kj.T (N=4096, D=64)
API_MAX_TILES = 2**14  # Tr*Tc (block, tile) pairs (N=4096 at Br=Bc=32)
API_MAX_VALUES = 5_000_000  # numbers in the JSON: inputs, outputs and the recorded blocks' snapshots
# Above this many Q blocks only one block's values are recorded (counters are kept for all).
RECORD_ALL_MAX_BLOCKS = 8
SCALE_RANGE = (1e-6, 1e6)
DEVICES = (2, 8)  # ring attention's P (Config.devices): a ring of one is no ring; the page draws up to 8 round it


ECHO_MAX = 40  # characters of a bad value an error message echoes


def shown(value: object) -> str:
    """A bad value as an error message echoes it: strings quoted (control characters escaped), anything cut to
    about ECHO_MAX characters with an ellipsis, so that a 10,000-character value stays a short line."""
    try:
        text = repr(value) if isinstance(value, str) else str(value)
    except ValueError:  # an int past Python's 4300-digit limit on str()
        text = f"an integer of {value.bit_length()} bits" if isinstance(value, int) else type(value).__name__
    return text if len(text) <= ECHO_MAX else text[: ECHO_MAX - 1] + "…"


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
    """One launch. Defaults are the seed's example: two blocks of Q, two tiles of K and V."""

    algo: str = DEFAULT
    n: int = 8  # sequence length N
    d: int = 4  # head dimension D
    br: int = 4  # rows of Q per block (Br)
    bc: int = 4  # columns of K/V per tile (Bc)
    seed: int = 0  # random inputs are drawn from this seed
    scale: float | None = None  # softmax scale; None means 1/sqrt(D)
    causal: bool = False  # mask key columns after the query row; skip K/V tiles wholly above the diagonal
    record: tuple[int, ...] | None = field(default=None)  # blocks whose values are recorded
    # -- ring attention's launch (algos/ring; every other algorithm ignores them): the sequence is split across P
    # devices in a ring, laid out "zigzag" (device r holds chunks r and 2P-1-r of 2P) or "contiguous" (chunk r of P)
    devices: int = 4  # P, in DEVICES: 4 show the ring's rotation and the zigzag's balance (its example, N = 16)
    layout: str = "zigzag"  # flashviz.model.ring_layout.LAYOUTS

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
        """`causal` a bool and every integer field within `limits` (ConfigError naming the first that is not)."""
        if not isinstance(self.causal, bool):
            raise ConfigError("causal", f"must be true or false (got {shown(self.causal)})")
        lo, hi = DEVICES
        if isinstance(self.devices, bool) or not isinstance(self.devices, int) or not lo <= self.devices <= hi:
            raise ConfigError("devices", f"must be an integer in {lo}..{hi} (got {shown(self.devices)})")
        if self.layout not in LAYOUTS:
            raise ConfigError("layout", f"must be one of {', '.join(LAYOUTS)} (got {shown(self.layout)})")
        for name, (lo, hi) in limits.items():
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
