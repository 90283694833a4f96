"""A launch configuration and its limits: the one place every front door (CLI, API) validates."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from . import tiling
from .algos import ALGOS, DEFAULT
from .algos import get as algorithm

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
    def blocks(self) -> int:
        """What --block and the API's `block` choose among, and a trace's `blocks` lists (its picks): the blocks of the
        main kernel, one per block of Q (Tr) or per tile of K/V (Tc); for fa1, whose one block per head visits the
        blocks of Q in turn, the Tr blocks of Q (docs/trace-schema.md, `picker`)."""
        return self.tc if algorithm(self.algo).grid == "Tc" else self.tr

    @property
    def block_size(self) -> str:
        """What sets the number of blocks, as an error message names it: `Br=4` (blocks of Q) or `Bc=4` (tiles)."""
        return f"Bc={self.bc}" if algorithm(self.algo).grid == "Tc" else f"Br={self.br}"

    @property
    def softmax_scale(self) -> float:
        return 1.0 / math.sqrt(self.d) if self.scale is None else float(self.scale)

    def recorded_blocks(self) -> tuple[int, ...]:
        if self.record is not None:
            return self.record
        return tuple(range(self.blocks)) if self.blocks <= RECORD_ALL_MAX_BLOCKS else (0,)

    def validated(self, limits: dict[str, tuple[int, int]] = LIMITS, max_tiles: int | None = MAX_TILES) -> Config:
        if self.algo not in ALGOS:  # the registry's names
            raise ConfigError("algo", f"must be one of {', '.join(ALGOS)} (got {shown(self.algo)})")
        if not isinstance(self.causal, bool):
            raise ConfigError("causal", f"must be true or false (got {shown(self.causal)})")
        for name, (lo, hi) in limits.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(name, f"must be an integer in {lo}..{hi} (got {shown(value)})")
            if not lo <= value <= hi:
                raise ConfigError(name, f"must be an integer in {lo}..{hi} (got {shown(value)})")
        max_n = algorithm(self.algo).max_n
        if max_n is not None and self.n > max_n:
            raise ConfigError(
                "n",
                f"must be at most {max_n} for {self.algo}, which {algorithm(self.algo).max_n_reason} "
                f"(got {self.n}); `flashviz compare` counts larger N without running the engine",
            )
        if max_tiles is not None and self.tr * self.tc > max_tiles:
            raise ConfigError(
                "br" if self.br <= self.bc else "bc",
                f"Tr*Tc (block, tile) pairs must be at most {max_tiles:,} (got {self.tr}*{self.tc} for N={self.n}); "
                "raise br or bc",
            )
        if self.scale is not None:
            least, most = SCALE_RANGE
            if not (finite_number(self.scale) and least <= abs(self.scale) <= most):
                raise ConfigError(
                    "scale", f"must be a finite number with {least:g} <= |scale| <= {most:g} (got {shown(self.scale)})"
                )
        if self.record is not None:
            where = f"0..{self.blocks - 1} for N={self.n}, {self.block_size}"
            if not isinstance(self.record, tuple):
                raise ConfigError("block", f"must be an integer in {where} (got {shown(self.record)})")
            for b in self.record:  # True is no block (bool is an int to Python)
                if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b < self.blocks:
                    raise ConfigError("block", f"must be an integer in {where} (got {shown(b)})")
        algorithm(self.algo).check_launch(self)  # its own rules: the tiles a kernel can run, say
        return self

    def api_validated(self) -> Config:
        """`validated` under API_LIMITS, plus the API's bounds on work and on the size of the trace."""
        self.validated(API_LIMITS, max_tiles=None)  # the API's own, tighter bounds on work follow
        cost = algorithm(self.algo).api_cost  # e.g. 3 for a backward that runs the forward first
        if self.n * self.n * self.d > API_MAX_WORK // cost:
            raise ConfigError(
                "n",
                f"N*N*D must be at most {API_MAX_WORK // cost:,} for {self.algo} (got {self.n}*{self.n}*{self.d}); "
                "lower n or d",
            )
        if self.tr * self.tc > API_MAX_TILES // cost:
            raise ConfigError(
                "br" if self.br <= self.bc else "bc",
                f"Tr*Tc must be at most {API_MAX_TILES // cost:,} for {self.algo} (got {self.tr}*{self.tc} for "
                f"N={self.n}); raise br or bc",
            )
        values = algorithm(self.algo).trace_values(self)  # inputs, outputs and the recorded blocks' snapshots
        if values > API_MAX_VALUES:
            many = len(self.recorded_blocks()) > 1
            raise ConfigError(
                "block" if many else "n",
                f"the trace would hold ~{values:,} numbers, at most {API_MAX_VALUES:,}: "
                + ("record one block (block=0) or use " if many else "use ")
                + "smaller n, d, br or bc",
            )
        return self

    def replace(self, **changes) -> Config:
        return replace(self, **changes)
