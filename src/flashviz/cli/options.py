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


# The options of real models (issue 22; flashviz.model.config.OPTION_LIMITS): one decorator for every command that
# takes a launch, and one function that turns the flags into Config's fields.
def real_model_options(limits: dict[str, tuple[int, int]]) -> Callable[[F], F]:
    """--group --nk --window --softcap --seqlens --seqlens-k, bounded by `limits` (OPTION_LIMITS for the engine,
    COUNT_OPTION_LIMITS for the closed forms alone)."""
    return lambda f: _model_flags(f, limits)


def _model_flags(f: F, limits: dict[str, tuple[int, int]]) -> F:
    from flashviz.model.config import MAX_SEQS

    w, s = limits["window"], limits["seqlens"]
    for flag, key, kind, help_ in reversed(
        (
            ("--group", "group", Bounded(*limits["group"]), "q heads per K/V head (GQA): the trace runs one "
             "K/V head and its group"),
            ("--nk", "nk", Bounded(*limits["nk"]), "keys Nk when not N (a KV cache); causal aligned to the "
             "bottom-right"),
            ("--window", "window", click.STRING, f"LEFT,RIGHT: row r sees keys r-LEFT .. r+RIGHT (each -1 unbounded "
             f"or 0..{w[1]})"),
            ("--softcap", "softcap", Number(), "soft-capping: scores become C*tanh(s/C) (0: none)"),
            ("--seqlens", "seqlens", click.STRING, f"packed sequences: their lengths, e.g. 50,30,48 (1..{MAX_SEQS} of "
             f"{s[0]}..{s[1]}); N is their sum"),
            ("--seqlens-k", "seqlens_k", click.STRING, "packed sequences' key lengths (default: --seqlens)"),
        )
    ):  # fmt: skip
        f = click.option(flag, key, type=kind, default=None, help=help_)(f)
    return f


def model_options(opts: dict[str, Any]) -> dict[str, Any]:
    """Config's option fields from the flags of `real_model_options` (popped from `opts`): those not given keep
    Config's defaults."""
    from flashviz.model.config import option_values

    given = {k: opts.pop(k) for k in ("group", "nk", "window", "softcap", "seqlens", "seqlens_k")}
    return option_values(**{k: v for k, v in given.items() if v is not None})


def size_with_seqlens(ctx: click.Context, n: int, options: dict[str, Any]) -> int:
    """N: the sum of --seqlens when they are given and --n is not (a given --n must then be their sum)."""
    lens = options.get("seqlens")
    given = ctx.get_parameter_source("n") == click.core.ParameterSource.COMMANDLINE
    if isinstance(lens, tuple) and not given and all(isinstance(x, int) for x in lens):
        return sum(lens)
    return n
