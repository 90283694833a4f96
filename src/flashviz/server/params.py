"""The API's query parameters: typed and bounded (the OpenAPI schema at /api/openapi.json says so), parsed
strictly (ASCII digits only: no `²`, `①`, `+-5` or control bytes), and every error one line naming the field
and what it accepts: `{"detail": "n: must be an integer in 1..4096 (got 'abc')", "field": "n"}`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, create_model

from flashviz.model import fields
from flashviz.model.config import API_LIMITS, OPTIONS, Config, ConfigError, with_seqlens
from flashviz.model.echo import cut
from flashviz.model.fields import Scope

from ..algos import ALGOS, DEFAULT, resolve

INTEGER = re.compile(r"[+-]?[0-9]{1,30}")  # [0-9] is ASCII: str.isdigit() and int() also take other digits
NUMBER = re.compile(r"[+-]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,4})?")
BOOLEANS = {"true": True, "1": True, "false": False, "0": False}
NAME = re.compile(r"[A-Za-z0-9_.-]{1,40}")


def shown(value: Any) -> str:
    """A bad value as an error line echoes it: quoted and escaped (one line), cut to ECHO_MAX characters."""
    return repr(cut(value)) if isinstance(value, str) else cut(str(value))


def field_name(name: str) -> str:
    """How an error line names a parameter: as it is when it is a plain name, else quoted and escaped."""
    return name if NAME.fullmatch(name) else repr(cut(name))


def ascii_int(value: Any) -> Any:
    if isinstance(value, str):
        if not INTEGER.fullmatch(value):
            raise ValueError("not an integer")
        return int(value)
    return value


def ascii_number(value: Any) -> Any:
    if isinstance(value, str):
        if value == "":
            return None  # empty: the default
        if not NUMBER.fullmatch(value):
            raise ValueError("not a number")
        return float(value)
    return value


def boolean(value: Any) -> Any:
    if isinstance(value, str):
        if value == "":
            return False  # empty: the default
        if value.lower() not in BOOLEANS:
            raise ValueError("not true or false")
        return BOOLEANS[value.lower()]
    return value


def blank_or(default: int):
    """An integer parameter whose empty value means `default` (the comparison form's blank fields)."""

    def parse(value: Any) -> Any:
        return default if value == "" else ascii_int(value)

    return parse


def blank_none(value: Any) -> Any:
    return None if value == "" else value


def blank_none_int(value: Any) -> Any:
    return None if value == "" else ascii_int(value)


def integer(lo: int, hi: int, about: str, parse=ascii_int) -> Any:
    # Field before the validator: pydantic writes ge/le into the JSON schema as minimum/maximum only in this order
    return Annotated[int, Field(ge=lo, le=hi, description=f"{about}: an integer in {lo}..{hi}"), BeforeValidator(parse)]


def parameter(f: fields.Field, scope: Scope, blank: bool) -> tuple[Any, Any]:
    """One launch field as a typed, bounded query parameter at `scope`: (annotation, default). `blank`: an empty
    value means the default (the comparison's form), else an empty integer is refused. A field an algorithm brings
    its own default for (`own`) defaults to None here, the algorithm's (TraceQuery.config fills it)."""
    if f.kind == "choice":  # its own names, or the registry's algorithms
        return Literal[f.choices or ALGOS], Field(f.default, description=f.help)
    if f.kind == "flag":
        about = f"{f.help}: true or false (also 1 or 0; empty: false)"
        return Annotated[bool, Field(description=about), BeforeValidator(boolean)], f.default
    if f.kind == "number":
        assert f.magnitude is not None
        least, most = f.magnitude
        return Annotated[
            float | None,
            Field(
                ge=-most,
                le=most,
                allow_inf_nan=False,
                description=f"{f.help}, {least:g} <= |{f.name}| <= {most:g} (empty: {f.empty})",
            ),
            BeforeValidator(ascii_number),
            WithJsonSchema({"type": "number", "minimum": -most, "maximum": most}),  # a query has no null: empty is None
        ], f.default
    lo, hi = f.bounds_at(scope)
    if f.kind == "ints":  # the text as it came: Config reads it (model.config.option_values) and says what is wrong
        about = f"{f.help}: {f.accepted(scope)}"
        return Annotated[
            str | None, Field(description=about), BeforeValidator(blank_none), WithJsonSchema({"type": "string"})
        ], None
    if f.kind == "int" and f.empty and not f.own:  # empty: its default (group: 1; nk: None, which is N)
        about = f"{f.help}: an integer in {lo}..{hi} (empty: {f.empty})"
        return Annotated[
            int | None,
            Field(ge=lo, le=hi, description=about),
            BeforeValidator(blank_or(f.default) if f.default is not None else blank_none_int),
            WithJsonSchema({"type": "integer", "minimum": lo, "maximum": hi}),
        ], f.default
    if f.kind == "pick":
        about = f"{f.help}, 0..Tr-1 (empty: {f.empty})"
        return Annotated[
            int | None,
            Field(ge=lo, le=hi, description=about),
            BeforeValidator(blank_none_int),
            WithJsonSchema({"type": "integer", "minimum": lo, "maximum": hi}),
        ], f.default
    if blank:
        return integer(lo, hi, f.help, blank_or(f.default)), f.default
    if f.own:  # absent: the algorithm's own default
        about = f"{f.help}: an integer in {lo}..{hi} (absent: the algorithm's own, else {f.default})"
        return Annotated[
            int | None,
            Field(ge=lo, le=hi, description=about),
            BeforeValidator(ascii_int),
            WithJsonSchema({"type": "integer", "minimum": lo, "maximum": hi}),
        ], None
    return integer(lo, hi, f.help), f.default


def launch_query(name: str, base: type[Q], scope: Scope, blank: bool = False, skip: tuple[str, ...] = ()) -> type[Q]:
    """A query model whose parameters are the table's fields at `scope` (flashviz.model.fields), in its order."""
    params = {f.name: parameter(f, scope, blank) for f in fields.at(scope) if f.name not in skip}
    return create_model(name, __base__=base, **params)  # type: ignore[call-overload]


class Query(BaseModel):
    """A strict query: unknown parameters are refused (by name), every value is checked."""

    model_config = ConfigDict(extra="forbid")
    ACCEPTED: ClassVar[dict[str, str]] = {}

    @classmethod
    def accepted(cls, field: str, params) -> str:
        return cls.ACCEPTED[field]


Q = TypeVar("Q", bound=Query)


class Launch(Query):
    """A launch of one algorithm, its values recorded for some blocks: the table's fields at "api"."""

    ACCEPTED: ClassVar[dict[str, str]] = {
        f.name: f.accepted("api", ALGOS) for f in fields.at("api") if f.kind != "pick"
    }

    @classmethod
    def accepted(cls, field: str, params) -> str:
        if fields.BY_NAME.get(field) is fields.BY_NAME["block"]:
            return f"an integer in {block_range(params)}"
        return cls.ACCEPTED[field]

    def config(self) -> Config:
        """The launch, with the fields left out the algorithm's own defaults (flashviz.model.fields.filled), checked
        against the API's bounds on work (a ConfigError names the field)."""
        given = {k: v for k, v in self.model_dump().items() if k in fields.BY_NAME and v is not None}
        algorithm = resolve(given["algo"])
        # packed sequences with n left out: N is their sum (with_seqlens)
        values = with_seqlens(fields.filled(given, algorithm.example), "n" in given)
        return algorithm.api_validated(Config.of(values))


if TYPE_CHECKING:  # mypy reads the base; its parameters are the table's, made when this module is imported
    LaunchFields = Launch
    CountFields = Query
else:
    LaunchFields = launch_query("LaunchFields", Launch, "api")
    # /api/compare: plain attention's closed forms (the options of real models are `flashviz compare`'s; the page's
    # comparison is of plain launches)
    CountFields = launch_query("CountFields", Query, "count", blank=True, skip=("algo", *OPTIONS))


class TraceQuery(LaunchFields):
    """GET /api/trace: one launch of one algorithm, its values recorded for some blocks."""


class TraceRoute(TraceQuery):
    """GET /api/trace: a TraceQuery and how the steps' arrays come (`arrays`)."""

    arrays: Literal["all", "on-demand", "auto"] = Field(
        "all",
        description="all: every array in the answer; on-demand: the steps' arrays left out (each as its dtype, shape, "
        "min and max), fetched per step from /api/trace/arrays; auto: on-demand when the steps' arrays hold more "
        "than 2 MiB of values, else all (what the page asks)",
    )

    ACCEPTED: ClassVar[dict[str, str]] = {**TraceQuery.ACCEPTED, "arrays": "all, on-demand or auto"}


MAX_STEP = 2**31 - 1
MAX_STEPS = 256  # steps one request of /api/trace/arrays may name


def step_list(value: Any) -> Any:
    """`steps`: K,K,... (ASCII integers >= 0, at most MAX_STEPS of them, each once); empty: none given. Kept as the
    text it was (a list-typed query parameter would be a repeated one); `ArraysQuery.asked` reads it."""
    if not isinstance(value, str):
        return value
    if value == "":
        return None
    parts = value.split(",")
    if len(parts) > MAX_STEPS:
        raise ValueError("too many steps")
    if not all(re.fullmatch(r"[0-9]{1,10}", part) for part in parts):
        raise ValueError("not a list of integers")
    if len({int(part) for part in parts}) != len(parts):
        raise ValueError("a step named twice")
    return value


class ArraysQuery(TraceQuery):
    """GET /api/trace/arrays: the stored arrays of one step (`step`) or of several (`steps`) of a trace the server
    answered (the same query as /api/trace, and the steps)."""

    step: Annotated[
        int | None,
        Field(ge=0, le=MAX_STEP, description="the step whose arrays are sent, 0..len(steps)-1"),
        BeforeValidator(blank_none_int),
        WithJsonSchema({"type": "integer", "minimum": 0, "maximum": MAX_STEP}),
    ] = None
    steps: Annotated[
        str | None,
        Field(
            description=f"instead of step: K,K,... ({MAX_STEPS} at most, each 0..len(steps)-1 once); the answer is "
            '{"steps": [one answer per step, in this order]}'
        ),
        BeforeValidator(step_list),
        WithJsonSchema({"type": "string", "pattern": r"^[0-9]{1,10}(,[0-9]{1,10})*$"}),
    ] = None

    ACCEPTED: ClassVar[dict[str, str]] = {
        **TraceQuery.ACCEPTED,
        "step": "an integer in 0..len(steps)-1 of the trace",
        "steps": f"a list K,K,... of at most {MAX_STEPS} different steps of the trace (0..len(steps)-1)",
    }

    def asked(self) -> list[int] | None:
        """The steps asked for, in order; None when neither `step` nor `steps` was given, or both were."""
        if (self.step is None) == (self.steps is None):
            return None
        return [self.step] if self.step is not None else [int(k) for k in (self.steps or "").split(",")]

    def which(self) -> str:
        return "step" if self.step is not None else "steps"

    def unasked(self) -> tuple[str, str]:
        """(field, message) for a query `asked` answers None for: neither `step` nor `steps`, or both."""
        if self.step is None:
            return "step", "must be an integer in 0..len(steps)-1 (or give steps=K,K,...)"
        return "steps", "give step or steps, not both"


class CompareQuery(CountFields):
    """GET /api/compare: every algorithm at one config (closed forms; N, D, Br, Bc up to `flashviz compare`'s
    limits). An empty value means the default."""

    ACCEPTED: ClassVar[dict[str, str]] = {f.name: f.accepted("count") for f in fields.at("count") if f.name != "algo"}


QUERIES: dict[str, type[Query]] = {
    "/api/trace": TraceRoute,
    "/api/trace/arrays": ArraysQuery,
    "/api/compare": CompareQuery,
    "/api/curves": CompareQuery,
}


def block_range(params: Mapping[str, str]) -> str:
    """The picks for the config the other parameters give (as far as they parse; those left out the algorithm's
    own), e.g. `0..1 for N=8, Br=4` (a backward: `0..1 for N=8, Bc=4`)."""
    try:
        given = {k: ascii_int(params[k]) for k in ("n", "br", "bc") if params.get(k, "") != ""}
        algo = resolve(params.get("algo", DEFAULT))
        sizes = {k: v for k, v in fields.filled(given, algo.example).items() if k in ("n", "d", "br", "bc")}
        cfg = algo.validated(Config(algo=algo.name, **sizes), API_LIMITS, max_tiles=None)
    except ValueError:  # a ConfigError too: the others are wrong as well, and their errors say so
        return "0..Tr-1"
    return f"0..{algo.blocks(cfg) - 1} for N={cfg.n}, {algo.block_size(cfg)}"


def api_error(field: str, message: str, status: int = 422) -> JSONResponse:
    return JSONResponse({"detail": f"{field_name(field)}: {message}", "field": field}, status_code=status)


def config_error(request: Request, exc: ConfigError) -> JSONResponse:
    return api_error(exc.field, exc.message)


def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """FastAPI's validation errors as one line: the first bad parameter, what it accepts, what it got."""
    error = exc.errors()[0]
    loc = error.get("loc") or ("query",)
    field = str(loc[-1])
    query = QUERIES.get(request.url.path)
    if query is None:  # not one of the query models' routes: name the field, keep pydantic's words
        return api_error(field, cut(" ".join(str(error.get("msg", "invalid")).split()), 200))
    if error.get("type") == "extra_forbidden" or field not in query.model_fields:
        return api_error(field, f"unknown parameter; accepted: {', '.join(query.model_fields)}")
    return api_error(field, f"must be {query.accepted(field, request.query_params)} (got {shown(error.get('input'))})")
