"""Each algorithm's idea (issue 8 item 18): written in Python, carried by the Trace, one per algorithm."""

from __future__ import annotations

import json

import pytest

from flashviz.algos import REGISTRY
from flashviz.model.config import Config
from flashviz.tracing.build import make_trace
from helpers import runnable


@pytest.mark.parametrize("algo", sorted(REGISTRY))
def test_the_trace_carries_its_algorithms_own_idea(algo):
    t = json.loads(make_trace(runnable(Config(algo=algo, n=8, d=4, br=4, bc=4, seed=0))).to_json())
    idea = t["idea"]
    assert idea == REGISTRY[algo].idea.to_dict()
    assert isinstance(idea["summary"], str) and idea["summary"]
    assert idea["body"] and all(isinstance(p, str) and p for p in idea["body"])
    for p in idea["body"]:
        assert p.count("$") % 2 == 0, p  # every inline formula closed
        assert not any(c in p for c in "\t\x07\x08\x0c\r"), p  # no escape sequence lost in a non-raw string


def test_no_two_algorithms_share_an_idea():
    ideas = [json.dumps(a.idea.to_dict()) for a in REGISTRY.values()]
    assert len(set(ideas)) == len(ideas)
    # fa2's forward words are fa2's alone
    for name, a in REGISTRY.items():
        text = " ".join(a.idea.body)
        assert ("L = m + \\log \\ell" in text) == (name == "fa2"), name
        assert ("block $i$ owns $Q_i$" in text) == (name == "fa2"), name
