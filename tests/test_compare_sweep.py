"""The traffic chart's sweep reaches the current config (issue 8, item 20: the chart's lines started at N=64
while the current config's dot sat at N=8)."""

from __future__ import annotations

import random

import pytest
from fastapi.testclient import TestClient

from flashviz import server
from flashviz.reports.compare import compare


@pytest.fixture(scope="module")
def client():
    return TestClient(server.create_app())


def test_the_seeds_n_is_a_point_of_every_line(client):
    doc = client.get("/api/compare", params={"n": 8, "d": 4, "br": 4, "bc": 4}).json()
    sweep = doc["sweep"]
    assert sweep["n"][0] == 8
    k = sweep["n"].index(8)
    for name, series in sweep["bytes"].items():
        # the dot the page draws at N=8 (the config's own total) is the line's point there
        assert series[k] == doc["algorithms"][name]["total"]["bytes"]


def test_any_n_lies_on_the_lines_between_powers_of_two(client):
    rng = random.Random()
    for n in [1, 3, 10, 100, 1000, 4095, *(rng.randint(1, 70_000) for _ in range(4))]:
        d, br, bc = rng.choice([4, 16, 64]), rng.choice([1, 4, 16, 64]), rng.choice([1, 4, 16, 64])
        doc = client.get("/api/compare", params={"n": n, "d": d, "br": br, "bc": bc}).json()
        ns = doc["sweep"]["n"]
        assert n in ns and ns == sorted(set(ns)), (n, ns)
        # from the largest power of two at most N (or 64) up to 65536 (or N)
        assert ns[0] == min(64, 2 ** (n.bit_length() - 1)) and ns[-1] == max(65536, n)
        k = ns.index(n)
        for name, series in doc["sweep"]["bytes"].items():
            assert series[k] == compare(n, d, br, bc, False)["algorithms"][name]["total"]["bytes"]
