"""The recorded schedule run's schema (`flashviz.schedule_run/1`, docs/trace-schema.md "the recorded schedule run")
as pydantic models: what `measured.load` accepts before a trace draws a bar from it. One H200 run of
bench/fa3_schedule_gpu.sh, installed by bench/fa3_schedule_install.py: the timestamped fa3 forward's events per lane
(`timestamps`) and ncu's tensor pipe of fa2-triton and fa3 (`tensor_pipe`). Besides the types, the checks tie the
events to the launch they were read in: each lane holds only its own events, in time order, and each tile j is one
its block visits. Unknown keys are refused (a misspelt key would otherwise vanish silently)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AllowInfNan, BaseModel, ConfigDict, Field, Strict, ValidationError, model_validator

from flashviz.model.schema_errors import RecordError, describe, shown
from flashviz.model.tiling import count, tiles_of_block

from .schedule import LANES

SCHEMA = "flashviz.schedule_run/1"

Number = Annotated[float, Strict(), AllowInfNan(False)]  # a finite JSON number (an int is one too), never a string
Positive = Annotated[float, Strict(), AllowInfNan(False), Field(gt=0)]
Size = Annotated[int, Strict(), Field(ge=1)]
Count = Annotated[int, Strict(), Field(ge=0)]
Text = Annotated[str, Strict(), Field(min_length=1, max_length=2000)]
Percent = Annotated[float, Strict(), AllowInfNan(False), Field(ge=0, le=100)]

# the events kernel.py stamps (bench/fa3_schedule_record.py names them), per kind of lane; j: None for the block's own
WG_EVENTS = {"block_start": False, "q_arrived": False, "k_wait": True, "k_arrived": True, "s_done": True,
             "softmax_done": True, "pv_done": True, "block_end": False}  # fmt: skip
PRODUCER_EVENTS = {"block_start": False, "q_issued": False, "kv_wait": True, "kv_issued": True, "block_end": False}


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Event(Part):
    event: Annotated[str, Strict(), Field(max_length=40)]
    j: Count | None
    t_ns: Count  # ns from the program's first event


class Lanes(Part):
    wg0: Annotated[list[Event], Field(min_length=1)]
    wg1: Annotated[list[Event], Field(min_length=1)]
    producer: Annotated[list[Event], Field(min_length=1)]

    @model_validator(mode="after")
    def its_own_events_in_order(self) -> Lanes:
        for lane in LANES:
            names = PRODUCER_EVENTS if lane == "producer" else WG_EVENTS
            last = -1
            for k, e in enumerate(getattr(self, lane)):
                if e.event not in names:
                    raise ValueError(f"{lane}[{k}].event: must be one of {', '.join(names)} (got {shown(e.event)})")
                if names[e.event] != (e.j is not None):
                    want = "a tile j" if names[e.event] else "j null (an event of the block, not of a tile)"
                    raise ValueError(f"{lane}[{k}].j: {e.event} has {want} (got {shown(e.j)})")
                if e.t_ns < last:
                    raise ValueError(f"{lane}[{k}].t_ns: the events of a lane are in time order ({e.t_ns} < {last})")
                last = e.t_ns
        return self


class Program(Part):
    program: Count
    lanes: Lanes


class Shape(Part):
    n: Size
    d: Size
    br: Size
    bc: Size
    heads: Size
    batch: Size
    causal: bool


class Check(Part):
    o_same_bits_as_plain: bool
    max_abs_err_plain_vs_float64: Number
    max_abs_err_timestamped_vs_float64: Number
    tolerance: Positive
    ok: bool


class TimeUs(Part):
    plain: Positive
    timestamped: Positive


def block_of(program: int, shape: Shape) -> int:
    """The block of Q that `program` runs first (kernel.py's _fwd_tile_coords): causal, the blocks with the most
    tiles first across heads (Tr − 1 − program // (B·H)); otherwise head by head (program mod Tr)."""
    tr = count(shape.n, shape.br)
    return tr - 1 - program // (shape.heads * shape.batch) if shape.causal else program % tr


class Run(Part):
    shape: Shape
    config: Text
    check: Check
    time_us: TimeUs
    programs: Annotated[list[Program], Field(min_length=1)]

    @model_validator(mode="after")
    def tiles_of_its_blocks(self) -> Run:
        s = self.shape
        for k, p in enumerate(self.programs):
            i = block_of(p.program, s)
            if not 0 <= i < count(s.n, s.br):
                raise ValueError(f"programs[{k}].program: runs no block of Q at N={s.n}, Br={s.br}")
            tiles = tiles_of_block(s.n, s.br, s.bc, i, s.causal)
            for lane in LANES:
                for m, e in enumerate(getattr(p.lanes, lane)):
                    if e.j is not None and e.j >= tiles:
                        raise ValueError(
                            f"programs[{k}].lanes.{lane}[{m}].j: block {i} visits tiles 0..{tiles - 1} (got {e.j})"
                        )
        return self


class Events(Part):
    wg0: list[Text]
    wg1: list[Text]
    producer: list[Text]
    note: Text


class Timestamps(Part):
    date: Text
    command: Text
    clock: Text
    events: Events
    runs: Annotated[list[Run], Field(min_length=1)]


class PipeRun(Part):
    algo: Text
    kernel: Text
    n: Size
    d: Size
    br: Size
    bc: Size
    heads: Size
    batch: Size
    causal: bool
    time_ns: Positive
    metrics: dict[str, Number]
    not_listed: list[Text]
    profile: Text

    @model_validator(mode="after")
    def percentages(self) -> PipeRun:
        for name in ("tensor_active_pct", "issue_active_pct"):
            if name not in self.metrics:
                raise ValueError(f"metrics.{name}: missing")
            if not 0 <= self.metrics[name] <= 100:
                raise ValueError(f"metrics.{name}: must be a percentage in 0..100 (got {shown(self.metrics[name])})")
        return self


class TensorPipe(Part):
    date: Text
    ncu: Text
    metrics: dict[str, Text]  # our name -> the ncu metric (docs/profile-schema.md, `pipe`)
    runs: Annotated[list[PipeRun], Field(min_length=1)]

    @model_validator(mode="after")
    def named(self) -> TensorPipe:
        for k, r in enumerate(self.runs):
            unknown = sorted(set(r.metrics) - set(self.metrics))
            if unknown:
                raise ValueError(f"runs[{k}].metrics.{unknown[0]}: not one of `metrics` (the ncu names asked)")
        return self


class ScheduleRun(Part):
    schema_: Literal["flashviz.schedule_run/1"] = Field(alias="schema")
    date: Annotated[str, Strict(), Field(pattern=r"^\d{4}-\d{2}-\d{2}$")]
    gpu: Text
    driver: Text
    command: Text
    results: Text  # the folder of bench/results it was installed from
    install: Text
    timestamps: Timestamps
    tensor_pipe: TensorPipe


def check(doc: Any, name: str) -> ScheduleRun:
    """`doc` (parsed JSON) as a ScheduleRun, or RecordError: one line naming the file `name` and the key."""
    if not isinstance(doc, dict):
        raise RecordError(f"{name}: must hold a JSON object (got {type(doc).__name__})")
    if doc.get("schema") != SCHEMA:
        raise RecordError(
            f"{name}: schema must be {SCHEMA!r} (got {shown(doc.get('schema'))}); bench/fa3_schedule_install.py "
            "writes one"
        )
    try:
        return ScheduleRun.model_validate(doc)
    except ValidationError as exc:
        raise RecordError(f"{name}: {where(exc.errors()[0])}") from None


def where(err: Any) -> str:
    """A pydantic error in one line. A check of a part as a whole (a model validator) names a key inside that part:
    the two paths are joined, and the part itself (the whole object) is not echoed."""
    msg = " ".join(str(err.get("msg", "invalid")).split()).removeprefix("Value error, ")
    m = re.match(r"^(\w[\w.\[\]]*): (.*)$", msg)
    if err["type"] != "value_error" or m is None:
        return describe(err)
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.get("loc", ())).lstrip(".")
    return f"{loc}.{m[1]}: {m[2]}" if loc else f"{m[1]}: {m[2]}"
