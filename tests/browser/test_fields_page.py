"""The page's form and URL take the launch fields /api/limits lists (the table flashviz.model.fields) and an
algorithm's own defaults (issue 18): a URL that names fa2-triton and no sizes opens its own launch, and a field the
table adds gets an input, is read from the URL and sent to the server with no change to the page's code."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest
from pageutil import api, assert_clean, open_viewer

pytestmark = pytest.mark.browser
expect = pytest.importorskip("playwright.sync_api").expect


def test_a_url_naming_an_algorithm_opens_its_own_launch(page, server_url, log):
    """`?algo=fa2-triton` (no sizes) asked for N=8, D=4, Br=Bc=4, which its kernel does not run: the page showed the
    server's error. The sizes it leaves out are now fa2-triton's own (N=128, D=32, Br=64, Bc=32); a size it gives is
    kept."""
    own = next(a for a in api(page, server_url, "/api/limits")["algos"] if a["name"] == "fa2-triton")["example"]
    open_viewer(page, server_url, "algo=fa2-triton&bc=16")
    want = {**own, "bc": 16}
    for field, value in want.items():
        expect(page.locator(f"[data-testid=cfg-{field}]")).to_have_value(str(value))
    config = page.evaluate("window.flashviz.trace().config")
    assert {k: config[k] for k in want} == want and config["algo"] == "fa2-triton"
    expect(page.locator("[data-testid=config-error]")).to_be_hidden()
    assert {k: int(v[0]) for k, v in parse_qs(urlsplit(page.url).query).items() if k in want} == want
    assert_clean(log)


SINKS = {
    "name": "sinks",
    "kind": "int",
    "label": "W",
    "help": "keys each query sees",
    "default": 0,
    "min": 0,
    "max": 64,
    "own": False,
    "empty": "",
}


def test_a_field_the_table_adds_is_in_the_form_and_the_url(page, server_url, log):
    """/api/limits with one more row (as a server whose table has one more field answers): the form gets an input for
    it, the URL's value fills it and goes to /api/trace (here taken off again before the real server, which has no
    such field), and a value past its bounds is refused in place in the table's words."""
    sent: list[dict[str, list[str]]] = []

    def limits(route):
        doc = route.fetch().json()
        route.fulfill(
            status=200, content_type="application/json", body=json.dumps({**doc, "fields": [*doc["fields"], SINKS]})
        )

    def trace(route):
        url = urlsplit(route.request.url)
        query = parse_qs(url.query)
        sent.append(query)
        rest = urlencode({k: v[0] for k, v in query.items() if k != "sinks"})
        route.continue_(url=urlunsplit(url._replace(query=rest)))

    page.route("**/api/limits", limits)
    page.route("**/api/trace?*", trace)
    open_viewer(page, server_url, "n=16&sinks=3")
    field = page.locator("#config [name=sinks]")
    expect(field).to_have_value("3")
    assert any(q.get("sinks") == ["3"] and q.get("n") == ["16"] for q in sent), sent
    assert "sinks=3" in page.url
    field.fill("65")
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#cfg-sinks-err")).to_have_text("W must be an integer in 0..64 (got 65)")
    field.fill("5")
    with page.expect_request(lambda r: "/api/trace?" in r.url and "sinks=5" in r.url):
        page.click("[data-testid=cfg-apply]")
    assert_clean(log)
