"""The flags `flashviz` and `flashviz gpu` share: bounded integers, numbers, choices and file names whose errors
name the accepted range and echo at most ~40 characters of a bad value, and the --algo, size and --causal options."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from flashviz.algos import ALGOS, DEFAULT
from flashviz.model.config import DEVICES, Config, shown
from flashviz.model.ring_layout import LAYOUTS

F = TypeVar("F", bound=Callable[..., Any])

_INTEGER = re.compile(r"[+-]?[0-9]+")  # ASCII digits only: int() would take '٥' and ' 5', and strip '\x1f'
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)", re.I)


class Bounded(click.ParamType):
    """An integer flag whose error names its accepted range (click's own message does not)."""

    name = "integer"

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and _INTEGER.fullmatch(value) and len(value) <= 40:
            number = int(value)
        else:  # not an integer, or one of more than 40 digits: far outside any range here
            self.fail(f"must be an integer in {self.lo}..{self.hi} (got {shown(value)})", param, ctx)
        if not self.lo <= number <= self.hi:
            self.fail(f"must be an integer in {self.lo}..{self.hi} (got {shown(number)})", param, ctx)
        return number


class Number(click.ParamType):
    """A decimal number (nan and inf are let through for the config's own message); the error echoes ~40 chars."""

    name = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, float):
            return value
        if isinstance(value, str) and _NUMBER.fullmatch(value) and len(value) <= 40:
            return float(value)
        self.fail(f"must be a number such as 0.125 or 1e-3 (got {shown(value)})", param, ctx)


class OneOf(click.Choice):
    """click.Choice whose error echoes at most ~40 characters of the bad value."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value in self.choices:
            return value
        self.fail(f"must be one of {', '.join(map(str, self.choices))} (got {shown(value)})", param, ctx)


class FilePath(click.ParamType):
    """A file name, as a Path; whether it can be read or written is told where it is used."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, Path):
            return value
        if not value:
            self.fail("must name a file (got '')", param, ctx)
        return Path(value)


def size_options(limits: dict[str, tuple[int, int]]) -> Callable[[F], F]:
    """--n --d --br --bc, bounded by `limits`; defaults are the seed's example (an algorithm with defaults of its own,
    `Algorithm.example`, takes those where a command calls `algorithm_sizes`)."""
    defaults = Config()

    def decorate(f: F) -> F:
        for flag, key, help_ in reversed(
            (
                ("--n", "n", "sequence length N"),
                ("--d", "d", "head dimension D"),
                ("--br", "br", "rows of Q per block, Br"),
                ("--bc", "bc", "columns of K/V per tile, Bc"),
            )
        ):
            lo, hi = limits[key]
            f = click.option(
                flag,
                key,
                type=Bounded(lo, hi),
                default=getattr(defaults, key),
                show_default=True,
                help=f"{help_} ({lo}..{hi}; an algorithm with defaults of its own runs those unless given)",
            )(f)
        return f

    return decorate


def algorithm_sizes(ctx: click.Context, algo: str, sizes: dict[str, int | None]) -> dict[str, int | None]:
    """`sizes` (n, d, br, bc) with each one not given on the command line taken from the algorithm's own defaults,
    where it has them (`Algorithm.example`), so that an algorithm whose kernel runs no D = 4 runs with no size flags;
    a flag given is kept."""
    from flashviz.algos import get

    own = get(algo).example or {}
    given = click.core.ParameterSource.COMMANDLINE
    return {k: (own[k] if k in own and ctx.get_parameter_source(k) != given else v) for k, v in sizes.items()}


algo_option = click.option("--algo", type=OneOf(ALGOS), default=DEFAULT, show_default=True, help="algorithm")
causal_option = click.option(
    "--causal", is_flag=True, help="causal attention: skip K/V tiles above the diagonal, mask the diagonal ones"
)


def ring_options(f: F) -> F:
    """--devices P and --layout: ring attention's launch (`--algo ring`; other algorithms ignore them)."""
    defaults = Config()
    f = click.option(
        "--layout",
        type=OneOf(LAYOUTS),
        default=defaults.layout,
        show_default=True,
        help="--algo ring: how the sequence is laid out on the devices (zigzag: device r holds chunks r and 2P-1-r)",
    )(f)
    return click.option(
        "--devices",
        type=Bounded(*DEVICES),
        default=defaults.devices,
        show_default=True,
        help=f"--algo ring: P, the devices in the ring ({DEVICES[0]}..{DEVICES[1]}; Br = Bc = N/P)",
    )(f)
