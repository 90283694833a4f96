"""The ladder's schema (`flashviz.ladder/1`, docs/ladder-schema.md) as pydantic models.

One recorded GPU run of one attention shape, rung by rung: the seed's fp32 scalar kernel, the Triton kernel in
fp32 (CUDA cores, then tensor cores), in bf16, with its tuned tiles, and PyTorch's backends as the ceiling.
`bench/ladder_bench.py` writes it; `flashviz ladder` and the page read it. Besides the types, the checks tie the
numbers together, so that a hand-edited or half-written file is refused instead of shown: every rung's TFLOP/s is
the shape's FLOPs over its time, its share of peak is that over the named peak measured in the same run, and
the peak it names exists. Unknown keys are refused (a misspelt key would otherwise vanish silently).
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Annotated, Any, Literal

from pydantic import AllowInfNan, BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from flashviz.model.schema_errors import describe as describe_at
from flashviz.model.schema_errors import shown

SCHEMA = "flashviz.ladder/1"
REL = 2e-3  # how closely derived numbers must agree with what they are derived from (they are rounded to 6 digits)

Number = Annotated[float, Strict(), AllowInfNan(False)]  # a finite JSON number (an int is one too), never a string
Positive = Annotated[float, Strict(), AllowInfNan(False), Field(gt=0)]
Size = Annotated[int, Strict(), Field(ge=1)]
Count = Annotated[int, Strict(), Field(ge=0)]
Text = Annotated[str, Strict(), Field(min_length=1, max_length=2000)]


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Shape(Part):
    batch: Size
    heads: Size
    n: Size
    d: Size
    causal: bool
    tokens: Size  # batch * n
    flops: Positive  # 4 * batch * heads * n^2 * d (halved when causal)

    @model_validator(mode="after")
    def consistent(self) -> Shape:
        if self.tokens != self.batch * self.n:
            raise ValueError(f"tokens must be batch * n = {self.batch * self.n} (got {self.tokens})")
        flops = 4 * self.batch * self.heads * self.n**2 * self.d * (0.5 if self.causal else 1.0)
        if not math.isclose(self.flops, flops, rel_tol=1e-9):
            raise ValueError(f"flops must be 4*batch*heads*n^2*d{' / 2' if self.causal else ''} = {flops:.6g}")
        return self


class Peak(Part):
    tflops: Positive
    what: Text  # how it was measured


class Tiles(Part):
    br: Size
    bc: Size
    warps: Size
    stages: Size  # 1: each tile is loaded, then used (no software pipelining)


class Candidate(Part):
    tiles: Tiles
    ms: Positive | None  # None: it failed its check or did not launch (see why)
    max_rel_err: Number | None = None
    why: str | None = None


class Rung(Part):
    name: Annotated[str, Strict(), Field(pattern=r"^[a-z0-9][a-z0-9-]{0,39}$")]
    label: Text
    kernel: Text
    dtype: Literal["fp32", "bf16"]
    tensor_cores: bool
    mma: Literal["none", "mma.sync", "wgmma"] | None  # the matrix instructions in its compiled code; None: not seen
    tiles: Tiles | None  # None: the library does not say
    ms: Positive
    tflops: Positive
    share_of_peak: Positive
    peak: Text  # a key of peaks
    hbm_bytes: Count | None  # the traffic model's global loads + stores at its tiles; None: tiles unknown
    sram_bytes_per_block: Count | None
    registers: Count | None = None
    spill_bytes: Count | None = None
    max_rel_err: Annotated[float, Strict(), AllowInfNan(False), Field(ge=0)]
    what_changed: Text
    candidates: list[Candidate] | None = None  # the configurations it was chosen from, each measured


class Skipped(Part):
    name: str
    why: Text


class Ladder(Part):
    schema_: Literal["flashviz.ladder/1"] = Field(alias="schema")
    date: Annotated[str, Strict(), Field(pattern=r"^\d{4}-\d{2}-\d{2}$")]
    gpu: Text
    mode: Literal["full", "quick", "smoke"]
    complete: bool  # False: the budget ran out or a step failed before every rung was measured
    command: Text
    versions: dict[str, str | int | None]
    shape: Shape
    timing: Text
    check: Text
    peaks: dict[str, Peak]
    rungs: Annotated[list[Rung], Field(min_length=1)]
    skipped: list[Skipped]
    input_seed: Count | None = None  # torch's seed for Q, K, V (fresh each run)

    @model_validator(mode="after")
    def consistent(self) -> Ladder:
        dt.date.fromisoformat(self.date)
        names = [r.name for r in self.rungs]
        if len(set(names)) != len(names):
            raise ValueError(f"rung names must be unique (got {', '.join(names)})")
        for i, r in enumerate(self.rungs):
            where = f"rungs[{i}] ({r.name})"
            if r.peak not in self.peaks:
                raise ValueError(f"{where}: peak {shown(r.peak)} is not one of peaks ({', '.join(self.peaks)})")
            tflops = self.shape.flops / r.ms / 1e9
            if not math.isclose(r.tflops, tflops, rel_tol=REL):
                raise ValueError(f"{where}: tflops {r.tflops:.6g} is not shape.flops / ms = {tflops:.6g}")
            share = r.tflops / self.peaks[r.peak].tflops
            if not math.isclose(r.share_of_peak, share, rel_tol=REL):
                raise ValueError(f"{where}: share_of_peak {r.share_of_peak:.6g} is not tflops / peak = {share:.6g}")
        return self


class LadderError(ValueError):
    """Why a document is not a ladder: one line, naming the key."""


def check(doc: Any) -> Ladder:
    """The validated model of `doc` (parsed JSON); LadderError (one line) unless it is a flashviz.ladder/1 run."""
    if not isinstance(doc, dict):
        raise LadderError(f"must hold a JSON object (got {type(doc).__name__})")
    if doc.get("schema") != SCHEMA:
        raise LadderError(f"schema must be {SCHEMA!r} (got {shown(doc.get('schema'))}): not a ladder run")
    try:
        return Ladder.model_validate(doc)
    except ValidationError as exc:
        raise LadderError(describe(exc.errors()[0])) from None


def describe(error: Any) -> str:
    """A pydantic error as `rungs[2].ms: Input should be greater than 0 (got -1)`; the whole run's as `the run: ...`."""
    if error.get("loc"):
        return describe_at(error)
    return "the run: " + " ".join(str(error.get("msg", "invalid")).split()).removeprefix("Value error, ")
