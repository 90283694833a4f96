"""The profile schema (`flashviz.profile/1`, docs/profile-schema.md) as pydantic models: what the viewer's
profile panel (web/src/render/profile.ts) reads, with the types it needs. `flashviz serve --profile` checks a
file against it at start, so a trace, a truncated file or a crafted one (a string where a number goes) is
refused with one line instead of reaching the page. Keys the panel does not read are kept as they are."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AllowInfNan,
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    field_validator,
    model_validator,
)

from flashviz.algos import ALGOS
from flashviz.model.schema_errors import describe, shown

SCHEMA = "flashviz.profile/1"

Number = Annotated[float, Strict(), AllowInfNan(False)]  # a finite JSON number (an int is one too), never a string
Size = Annotated[int, Strict(), Field(ge=1)]


class Part(BaseModel):
    """Every part is strict (no "64" for 64) and keeps the keys it does not name."""

    model_config = ConfigDict(extra="allow", strict=True)


class LaunchConfig(Part):
    algo: str
    n: Size
    d: Size
    br: Size
    bc: Size
    causal: bool = False
    heads: Size = 1
    batch: Size = 1
    scale: Number | None = None
    seed: Annotated[int, Strict()] | None = None

    @field_validator("algo")
    @classmethod
    def known(cls, algo: str) -> str:
        if algo not in ALGOS:
            raise ValueError(f"must be one of {', '.join(ALGOS)}")
        return algo


class TensorBytes(Part):
    read_bytes: Number
    written_bytes: Number
    read_elements: Number | None = None
    written_elements: Number | None = None


class TrafficModel(Part):
    tensors: dict[str, TensorBytes]
    load_bytes: Number
    store_bytes: Number
    sector_load_bytes: Number | None = None
    sector_store_bytes: Number | None = None
    unique_input_bytes: Number | None = None
    unique_output_bytes: Number | None = None
    reread: str | None = None  # what the loads the caches served mostly are, in the algorithm's words


class Verdict(Part):
    measured: Number
    model: Number
    sector_model: Number | None = None
    measured_over_model: Number | None = None
    verdict: Literal["exact", "sector-rounded", "mismatch"]


class Comparison(Part):
    load: Verdict
    store: Verdict
    atomic_bytes: Number | None = None
    caches: dict[str, Number | None] | None = None
    ok: bool | None = None


Measured = dict[str, Number | None]


class Kernel(Part):
    name: str
    measured: Measured
    counted: bool | None = None
    id: Annotated[int, Strict()] | None = None
    grid: str | None = None
    block: str | None = None
    comparison: Comparison | None = None  # profiles from before several kernels: per kernel
    summary: list[str] | None = None


class Profile(Part):
    schema_: Literal["flashviz.profile/1"] = Field(alias="schema")
    date: str | None = None
    config: LaunchConfig
    launch: dict[str, Any] | None = None
    device: dict[str, Any] | None = None
    tool: dict[str, Any] | None = None
    bytes_per_element: Size | None = None
    model: TrafficModel
    kernels: Annotated[list[Kernel], Field(min_length=1)]
    measured: Measured | None = None
    comparison: Comparison | None = None
    summary: list[str] | None = None
    ok: bool | None = None

    @model_validator(mode="after")
    def compared(self) -> Profile:
        if self.comparison is None and self.kernels[0].comparison is None:
            raise ValueError("has no comparison with the model (neither `comparison` nor `kernels[0].comparison`)")
        return self


class ProfileError(ValueError):
    """Why a document is not a profile the viewer can show: one line, naming the key."""


def check(doc: Any) -> None:
    """Raise ProfileError unless `doc` (parsed JSON) is a `flashviz.profile/1` document the viewer can show."""
    if not isinstance(doc, dict):
        raise ProfileError(f"must hold a JSON object (got {type(doc).__name__})")
    schema = doc.get("schema")
    if schema != SCHEMA:
        what = "a trace" if isinstance(schema, str) and schema.startswith("flashviz.trace/") else "not a profile"
        raise ProfileError(
            f"schema must be {SCHEMA!r} (got {shown(schema)}): {what}; `flashviz gpu profile -o FILE.json` writes one"
        )
    try:
        Profile.model_validate(doc)
    except ValidationError as exc:
        raise ProfileError(describe(exc.errors()[0])) from None
