"""Issue 18: one step's words come from one place, its algorithm's words.py, said once after the run. The engine
records a step without words; `assemble(run, picture, words)` makes the trace's frozen steps and changes nothing it is
given; other words given to it change the words and nothing else."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from flashviz.algos import FOLDERS, ORDER, get
from flashviz.algos.base import Algorithm
from flashviz.algos.words import Said, rich
from flashviz.engine.steps import Record
from flashviz.model.config import Config
from flashviz.tracing.assemble import assemble
from flashviz.tracing.build import run_of

SRC = Path(__file__).resolve().parents[1] / "src" / "flashviz" / "algos"
WORDS = ("text", "action", "math", "tex", "carries_note")


def launch(algo: Algorithm, seed: int) -> Config:
    """A small launch of `algo`, causal where it can be, every block recorded: its own example, else N=11 ragged."""
    size = dict(algo.example) if algo.example is not None else {"n": 11, "d": 3, "br": 4, "bc": 3}
    return Config(algo=algo.name, causal=algo.causal, seed=seed, **size)


@pytest.mark.parametrize("algo", ORDER, ids=lambda a: a.name)
def test_assemble_is_pure_and_its_steps_are_frozen(algo, rng):
    run = run_of(algo, launch(algo, int(rng.integers(2**31))))
    records = run.recorder.steps
    assert records and not any(hasattr(r, name) for r in records for name in WORDS)  # the engine says nothing
    kept = [(r.op, list(r.transfers), {k: v.copy() for k, v in r.sram.items()}) for r in records]
    first = assemble(run, algo.picture, algo.words)
    again = assemble(run, algo.picture, algo.words)
    assert first.to_json() == again.to_json()  # the same run said twice: the same trace
    for r, (op, transfers, sram) in zip(records, kept, strict=True):  # and the run is as it was
        assert r.op == op and r.transfers == transfers and all(t.buffers == () for t in r.transfers)
        assert r.sram.keys() == sram.keys()
        assert all(np.array_equal(r.sram[k], v, equal_nan=True) for k, v in sram.items())
    step = next(s for s in first.steps if any(t.kind == "read" for t in s.transfers))
    assert step.text and step.action and all(t.buffers for t in step.transfers)  # said; its SRAM ends placed
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.text = "changed later"  # type: ignore[misc]
    with pytest.raises(AttributeError):  # a Transfer is a named tuple
        step.transfers[0].buffers = ()  # type: ignore[misc]


class Loud:
    """fa2's words, shouted: every sentence and Action in capitals, every label too."""

    def __init__(self, words):
        self.words = words
        self.LABELS = {op: (math.upper(), tex) for op, (math, tex) in words.LABELS.items()}
        self.PARTS = words.PARTS

    def say(self, cfg: Config, step: Record, state: Mapping[str, np.ndarray]) -> Said:
        said = self.words.say(cfg, step, state)
        return Said(said.text.upper(), said.action.upper(), said.carries_note)


@pytest.mark.parametrize("name", ["fa2", "fa2-backward"])
def test_other_words_change_the_words_and_nothing_else(name, rng):
    algo = get(name)
    run = run_of(algo, launch(algo, int(rng.integers(2**31))))
    plain = assemble(run, algo.picture, algo.words)
    loud = assemble(run, algo.picture, Loud(algo.words))
    assert len(plain.steps) == len(loud.steps) > 0
    for a, b in zip(plain.steps, loud.steps, strict=True):
        assert (b.text, b.action, b.math) == (a.text.upper(), a.action.upper(), a.math.upper())
        assert a.text != b.text  # every sentence has a lower-case letter to shout
        same = {f.name for f in dataclasses.fields(a)} - {"text", "action", "math", "sram", "carries", "substeps"}
        assert all(getattr(a, f) == getattr(b, f) for f in same)
    for f in dataclasses.fields(plain):  # the rest of the trace is the run's and the picture's
        if f.name not in ("steps", "inputs", "outputs"):
            assert getattr(plain, f.name) == getattr(loud, f.name), f.name


def test_a_notes_markup_becomes_the_pages_runs():
    assert rich("Lᵢ on `load_q`, **dQ** and L_{i}, Δ_{i}.") == [
        "Lᵢ on ",
        {"code": "load_q"},
        ", ",
        {"b": "dQ"},
        " and ",
        {"sub": ["L", "i"]},
        ", ",
        {"sub": ["Δ", "i"]},
        ".",
    ]
    assert rich("plain") == ["plain"] and rich("") == []


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_words_are_written_as_they_read(folder):
    """STYLE.md's plain words: a words.py writes its characters (Kⱼ, −∞), never escapes that hide them."""
    source = (SRC / folder / "words.py").read_text(encoding="utf-8")
    assert "\\u" not in source.replace("\\\\u", ""), folder
