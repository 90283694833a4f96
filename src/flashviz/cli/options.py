"""The flags `flashviz` and `flashviz gpu` share: bounded integers, numbers, choices and file names whose errors
name the accepted range and echo at most ~40 characters of a bad value, and the launch fields as options, made from
their table (flashviz.model.fields: --algo, --n, --d, --br, --bc, --seed, --scale, --causal, --block, --heads,
--batch, each where its scope offers it)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from flashviz.algos import ALGOS
from flashviz.model import fields
from flashviz.model.config import shown, with_seqlens
from flashviz.model.fields import Scope

if TYPE_CHECKING:
    from flashviz.algos.base import Algorithm

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


def field_option(f: fields.Field, scope: Scope, help: str | None = None) -> Callable[[F], F]:
    """One launch field as a click option (`--name`) with its bounds at `scope`, its default and its help
    (flashviz.model.fields); `help` in place of the table's, where a command says more."""
    about, flag = (f.help if help is None else help), "--" + f.name.replace("_", "-")  # seqlens_k: --seqlens-k
    if f.kind == "choice":
        return click.option(flag, type=OneOf(f.choices or ALGOS), default=f.default, show_default=True, help=about)
    if f.kind == "flag":
        return click.option(flag, is_flag=True, default=f.default, help=about)
    if f.kind == "number":
        return click.option(flag, f.name, type=Number(), default=f.default, help=f"{about}  [default: {f.empty}]")
    lo, hi = f.bounds_at(scope)
    if f.kind == "ints":  # comma-separated integers, read into Config's tuple (model.config.option_values)
        least, most = f.items
        count = str(least) if least == most else f"{least}..{most}"
        about = f"{about} ({count} integers, each {lo}..{hi})  [default: {f.empty}]"
        return click.option(flag, f.name, type=click.STRING, default=f.default, help=about)
    if f.kind == "pick":
        return click.option(flag, type=Bounded(lo, hi), default=f.default, help=f"{about} (default: {f.empty})")
    if f.own:
        about = f"{about} ({lo}..{hi}; an algorithm with defaults of its own runs those unless given)"
    if f.default is None:  # left out: what `empty` says (nk: N)
        return click.option(flag, type=Bounded(lo, hi), default=None, help=f"{about}  [default: {f.empty}]")
    return click.option(flag, type=Bounded(lo, hi), default=f.default, show_default=True, help=about)


def launch_options(scope: Scope, skip: tuple[str, ...] = (), help: Mapping[str, str] | None = None) -> Callable[[F], F]:
    """The launch fields offered at `scope` (flashviz.model.fields), in the table's order, as click options; `skip`
    leaves some out (a command that declares its own), `help` says more of some."""

    def decorate(f: F) -> F:
        for field in reversed(fields.at(scope)):
            if field.name not in skip:
                f = field_option(field, scope, (help or {}).get(field.name))(f)
        return f

    return decorate


def take_launch(options: dict[str, Any], scope: Scope) -> dict[str, Any]:
    """The launch fields at `scope` among a command's options, taken out of `options` (what is left is the command's
    own: `trace --kernel`'s --heads, say)."""
    names = {f.name for f in fields.at(scope)}
    return {k: options.pop(k) for k in list(options) if k in names}


def own_defaults(ctx: click.Context, algorithm: Algorithm, values: dict[str, Any]) -> dict[str, Any]:
    """`values` with each field not given on the command line the algorithm's own default, where it brings one
    (flashviz.model.fields.defaults of its `example`), so that an algorithm whose kernel runs no D = 4 runs with no
    size flags; a flag given is kept."""
    own = fields.defaults(algorithm.example)
    given = click.core.ParameterSource.COMMANDLINE
    out = {k: (v if ctx.get_parameter_source(k) == given else own[k]) for k, v in values.items()}
    # packed sequences: N is their sum unless --n is given (then it must be: Config.check_options)
    return with_seqlens(out, ctx.get_parameter_source("n") == given)
