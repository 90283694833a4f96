"""GET /api/ladder: the recorded run that ships with flashviz, as `flashviz ladder` reads it; with none shipped, a
404 that says so (the page then shows no numbers)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from flashviz import server
from flashviz.hardware import ladder


def test_api_ladder_serves_the_shipped_run():
    r = TestClient(server.create_app()).get("/api/ladder")
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc == ladder.load()
    assert doc["schema"] == "flashviz.ladder/1" and doc["gpu"] and doc["date"]


def test_api_ladder_without_a_recorded_run_is_a_404_saying_so(monkeypatch):
    monkeypatch.setattr(ladder, "shipped", lambda: [])
    r = TestClient(server.create_app()).get("/api/ladder")
    assert r.status_code == 404
    assert "no recorded ladder run" in r.json()["detail"]
