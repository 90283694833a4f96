"""The API's query parameters: typed and bounded (the OpenAPI schema at /api/openapi.json says so), parsed
strictly (ASCII digits only: no `²`, `①`, `+-5` or control bytes), and every error one line naming the field
and what it accepts: `{"detail": "n: must be an integer in 1..4096 (got 'abc')", "field": "n"}`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema

from flashviz.model.config import (
    API_LIMITS,
    COUNT_LIMITS,
    OPTION_LIMITS,
    SCALE_RANGE,
    Config,
    ConfigError,
    option_values,
)

from ..algos import ALGOS, DEFAULT, resolve

INTEGER = re.compile(r"[+-]?[0-9]{1,30}")  # [0-9] is ASCII: str.isdigit() and int() also take other digits
NUMBER = re.compile(r"[+-]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,4})?")
BOOLEANS = {"true": True, "1": True, "false": False, "0": False}
ECHO = 40  # at most this many characters of a bad value are echoed back
NAME = re.compile(r"[A-Za-z0-9_.-]{1,40}")


def clip(text: str, limit: int = ECHO) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(value: Any) -> str:
    """A bad value as an error line echoes it: quoted and escaped (one line), cut to ECHO characters."""
    return repr(clip(value)) if isinstance(value, str) else clip(str(value))


def field_name(name: str) -> str:
    """How an error line names a parameter: as it is when it is a plain name, else quoted and escaped."""
    return name if NAME.fullmatch(name) else repr(clip(name))


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


def blank_none_int(value: Any) -> Any:
    return None if value == "" else ascii_int(value)


def integer(lo: int, hi: int, about: str, parse=ascii_int) -> Any:
    # Field before the validator: pydantic writes ge/le into the JSON schema as minimum/maximum only in this order
    return Annotated[int, Field(ge=lo, le=hi, description=f"{about}: an integer in {lo}..{hi}"), BeforeValidator(parse)]


Causal = Annotated[
    bool,
    Field(description="causal attention: true or false (also 1 or 0; empty: false)"),
    BeforeValidator(boolean),
]
LO, HI = SCALE_RANGE
_G, _NK = OPTION_LIMITS["group"], OPTION_LIMITS["nk"]


class Query(BaseModel):
    """A strict query: unknown parameters are refused (by name), every value is checked."""

    model_config = ConfigDict(extra="forbid")
    ACCEPTED: ClassVar[dict[str, str]] = {}

    @classmethod
    def accepted(cls, field: str, params) -> str:
        return cls.ACCEPTED[field]


class TraceQuery(Query):
    """GET /api/trace: one launch of one algorithm, its values recorded for some blocks."""

    algo: Literal[ALGOS] = Field(DEFAULT, description="the algorithm")
    n: integer(*API_LIMITS["n"], "sequence length N") = 8
    d: integer(*API_LIMITS["d"], "head dimension D") = 4
    br: integer(*API_LIMITS["br"], "rows of Q per block, Br") = 4
    bc: integer(*API_LIMITS["bc"], "columns of K/V per tile, Bc") = 4
    seed: integer(*API_LIMITS["seed"], "random inputs are drawn from this seed") = 0
    scale: Annotated[
        float | None,
        Field(
            ge=-HI,
            le=HI,
            allow_inf_nan=False,
            description=f"softmax scale, {LO:g} <= |scale| <= {HI:g} (empty: 1/sqrt(D))",
        ),
        BeforeValidator(ascii_number),
        WithJsonSchema({"type": "number", "minimum": -HI, "maximum": HI}),  # a query has no null: empty is None
    ] = None
    causal: Causal = False
    block: Annotated[
        int | None,
        Field(
            ge=0,
            le=API_LIMITS["n"][1] - 1,
            description="record this block only: blockIdx.x of the main kernel, 0..Tr-1 (fa2-backward: 0..Tc-1; "
            "fa1, one block per head: the block of Q it visits) (empty: the default)",
        ),
        BeforeValidator(blank_none_int),
        WithJsonSchema({"type": "integer", "minimum": 0, "maximum": API_LIMITS["n"][1] - 1}),
    ] = None

    # the options of real models (flashviz.model.config.OPTION_LIMITS), as text: Config.check_options bounds them
    group: integer(*_G, "q heads per K/V head (grouped-query attention)", blank_or(1)) = 1
    nk: Annotated[
        int | None,
        Field(ge=_NK[0], le=_NK[1], description=f"keys Nk when not N: an integer in {_NK[0]}..{_NK[1]} (empty: N)"),
        BeforeValidator(blank_none_int),
        WithJsonSchema({"type": "integer", "minimum": _NK[0], "maximum": _NK[1]}),
    ] = None
    window: Annotated[str, Field(description="left,right: each -1 (unbounded) or a number of keys")] = ""
    softcap: Annotated[float | None, Field(description="soft-capping (0: none)"), BeforeValidator(ascii_number)] = None
    seqlens: Annotated[str, Field(description="packed sequences' lengths, e.g. 50,30,48 (N is their sum)")] = ""
    seqlens_k: Annotated[str, Field(description="their keys' lengths (empty: seqlens)")] = ""

    ACCEPTED: ClassVar[dict[str, str]] = {
        "algo": f"one of {', '.join(ALGOS)}",
        **{name: f"an integer in {lo}..{hi}" for name, (lo, hi) in API_LIMITS.items()},
        "scale": f"a finite number with {LO:g} <= |scale| <= {HI:g}, or empty for 1/sqrt(D)",
        "causal": "true or false",
        "group": f"an integer in {_G[0]}..{_G[1]}",
        "nk": f"an integer in {OPTION_LIMITS['nk'][0]}..{OPTION_LIMITS['nk'][1]}, or empty for N",
        "softcap": "a number, 0 for none",
    }

    @classmethod
    def accepted(cls, field: str, params) -> str:
        if field == "block":
            return f"an integer in {block_range(params)}"
        return cls.ACCEPTED[field]

    def options(self) -> dict[str, Any]:
        """The options of real models the query asks for, as Config's fields (text read by option_values)."""
        return option_values(
            group=self.group,
            nk=self.nk,
            window=self.window or (-1, -1),
            softcap=0.0 if self.softcap is None else self.softcap,
            seqlens=self.seqlens or None,
            seqlens_k=self.seqlens_k or None,
        )

    def config(self) -> Config:
        """The launch, checked against the API's bounds on work (a ConfigError names the field)."""
        options = self.options()
        lens = options["seqlens"]
        cfg = Config(
            **options,
            algo=self.algo,
            n=sum(lens) if isinstance(lens, tuple) and "n" not in self.model_fields_set else self.n,
            d=self.d,
            br=self.br,
            bc=self.bc,
            seed=self.seed,
            scale=self.scale,
            causal=self.causal,
            record=None if self.block is None else (self.block,),
        )
        return resolve(cfg.algo).api_validated(cfg)


class TraceRoute(TraceQuery):
    """GET /api/trace: a TraceQuery and how the steps' arrays come (`arrays`)."""

    arrays: Literal["all", "on-demand"] = Field(
        "all",
        description="all: every array in the answer; on-demand: the steps' arrays left out (each as its dtype, shape, "
        "min and max), fetched per step from /api/trace/arrays",
    )

    ACCEPTED: ClassVar[dict[str, str]] = {**TraceQuery.ACCEPTED, "arrays": "all or on-demand"}


MAX_STEP = 2**31 - 1


class ArraysQuery(TraceQuery):
    """GET /api/trace/arrays: the stored arrays of one step of a trace the server answered (the same query as
    /api/trace, and `step`)."""

    step: integer(0, MAX_STEP, "the step whose arrays are sent, 0..len(steps)-1")

    ACCEPTED: ClassVar[dict[str, str]] = {
        **TraceQuery.ACCEPTED,
        "step": "an integer in 0..len(steps)-1 of the trace",
    }


class CompareQuery(Query):
    """GET /api/compare: every algorithm at one config (closed forms; N, D, Br, Bc up to `flashviz compare`'s
    limits). An empty value means the default."""

    n: integer(*COUNT_LIMITS["n"], "sequence length N", blank_or(8)) = 8
    d: integer(*COUNT_LIMITS["d"], "head dimension D", blank_or(4)) = 4
    br: integer(*COUNT_LIMITS["br"], "rows of Q per block, Br", blank_or(4)) = 4
    bc: integer(*COUNT_LIMITS["bc"], "columns of K/V per tile, Bc", blank_or(4)) = 4
    causal: Causal = False

    ACCEPTED: ClassVar[dict[str, str]] = {
        **{name: f"an integer in {lo}..{hi}" for name, (lo, hi) in COUNT_LIMITS.items()},
        "causal": "true or false",
    }


QUERIES: dict[str, type[Query]] = {
    "/api/trace": TraceRoute,
    "/api/trace/arrays": ArraysQuery,
    "/api/compare": CompareQuery,
    "/api/curves": CompareQuery,
}


def block_range(params: Mapping[str, str]) -> str:
    """The picks for the config the other parameters give (as far as they parse), e.g. `0..1 for N=8, Br=4` (a
    backward: `0..1 for N=8, Bc=4`)."""
    try:
        fields = {k: ascii_int(params[k]) for k in ("n", "br", "bc") if params.get(k, "") != ""}
        algo = resolve(params.get("algo", DEFAULT))
        cfg = algo.validated(Config(algo=algo.name, **fields), API_LIMITS, max_tiles=None)
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
        return api_error(field, clip(" ".join(str(error.get("msg", "invalid")).split()), 200))
    if error.get("type") == "extra_forbidden" or field not in query.model_fields:
        return api_error(field, f"unknown parameter; accepted: {', '.join(query.model_fields)}")
    return api_error(field, f"must be {query.accepted(field, request.query_params)} (got {shown(error.get('input'))})")
