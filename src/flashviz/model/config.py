"""A launch configuration and its limits, as plain data: the fields of one launch, the bounds every front door holds
them to, and the checks that need no algorithm. What depends on the algorithm (its blocks, its N limit, the tiles its
kernel runs, the API's cost) is the Algorithm's (`flashviz.algos.base.Algorithm.validated`): the front door resolves
the name once (`flashviz.algos.resolve`) and validates the Config with that object. This module imports no algorithm."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any

from flashviz.model import band, tiling
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

# The options of real models (issue 22): grouped-query heads, keys != queries, a sliding window, soft-capping, packed
# sequences. An algorithm runs those its record lists (`Algorithm.options`). Each field's bounds, for every front door
# (`Config.check_options`); what each means is at its field below.
OPTION_LIMITS = {
    "group": (1, 8),  # q heads per K/V head: a trace runs one K/V head and its group
    "nk": (1, 16384),  # keys Nk
    "window": (-1, 16384),  # each side (left, right); -1 unbounded
    "seqlens": (1, 16384),  # one packed sequence's rows (seqlens: of Q; seqlens_k: of K and V)
}
# the closed forms alone (`flashviz count`, `compare`) run far larger launches: a KV cache of 128k keys, say
COUNT_OPTION_LIMITS = {**OPTION_LIMITS, "nk": (1, 2**31 - 1), "window": (-1, 1 << 28), "seqlens": (1, 2**31 - 1)}
SOFTCAP_RANGE = (0.0, 1e4)  # 0: no soft-capping
MAX_SEQS = 16  # packed sequences in one launch
OPTIONS = ("group", "nk", "window", "softcap", "seqlens", "seqlens_k")


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


def option_values(
    group: object = 1,
    nk: object = None,
    window: object = (-1, -1),
    softcap: object = 0.0,
    seqlens: object = None,
    seqlens_k: object = None,
) -> dict[str, Any]:
    """The option fields as Config holds them, from any front door: a list becomes a tuple, and text ("16,0" of
    --window or ?window=, "50,30,48" of --seqlens) its integers; what is not read goes on to `check_options`, whose
    message names the field and its range."""

    def ints(name: str, value: object) -> object:
        if isinstance(value, str):
            parts = value.split(",")
            if not value or not all(_INTEGER.fullmatch(p.strip()) for p in parts):
                raise ConfigError(
                    name, f"must be comma-separated integers such as {_EXAMPLE[name]} (got {shown(value)})"
                )
            return tuple(int(p) for p in parts)
        return tuple(value) if isinstance(value, list) else value

    return {
        "group": group,
        "nk": nk,
        "window": ints("window", window),
        "softcap": softcap,
        "seqlens": None if seqlens is None else ints("seqlens", seqlens),
        "seqlens_k": None if seqlens_k is None else ints("seqlens_k", seqlens_k),
    }


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
    # the options of real models (OPTION_LIMITS); the defaults are plain attention
    group: int = 1  # q heads per K/V head (grouped-query attention; 1: one q head per K/V head)
    nk: int | None = None  # keys Nk (None: N); causal is aligned to the bottom-right: row r sees keys <= r + Nk - N
    window: tuple[int, int] = (-1, -1)  # (left, right): row r sees keys c, -left <= c - (r + Nk - N) <= right
    softcap: float = 0.0  # > 0: every scaled score s becomes softcap * tanh(s / softcap)
    seqlens: tuple[int, ...] | None = None  # packed sequences: each one's rows of Q (N is their sum)
    seqlens_k: tuple[int, ...] | None = None  # ... and of K and V (None: seqlens; Nk is their sum)
    # -- ring attention's launch (algos/ring; every other algorithm ignores them): the sequence is split across P
    # devices in a ring, laid out "zigzag" (device r holds chunks r and 2P-1-r of 2P) or "contiguous" (chunk r of P)
    devices: int = 4  # P, in DEVICES: 4 show the ring's rotation and the zigzag's balance (its example, N = 16)
    layout: str = "zigzag"  # flashviz.model.ring_layout.LAYOUTS

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

    def check_options(
        self, runs: frozenset[str], algo: str, limits: dict[str, tuple[int, int]] = OPTION_LIMITS
    ) -> None:
        """The option fields of types and within `limits` (OPTION_LIMITS; COUNT_OPTION_LIMITS for the closed forms
        alone), those set among `runs` (what `algo` runs), N and Nk the sums of packed sequences: ConfigError naming
        the first field that is not."""

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
