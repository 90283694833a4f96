"""The API under fuzzing, kept in CI (issue 8): schemathesis against a live `flashviz serve` (its OpenAPI
schema, positive and negative cases), and hypothesis over the raw query string (random bytes and unicode per
parameter). Both assert: no 5xx, and every error one line of JSON naming the field."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from urllib.parse import quote_from_bytes, unquote_to_bytes

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flashviz import server
from flashviz.algos import get
from flashviz.model.config import API_LIMITS, COUNT_LIMITS, Config
from flashviz.server.params import field_name
from serving import serving

SCHEMATHESIS_EXAMPLES = 300  # per operation and mode: about a minute on a loaded 2-core machine
TRACE = ("algo", "n", "d", "br", "bc", "seed", "scale", "causal", "block")
COMPARE = ("n", "d", "br", "bc", "causal")
INTEGER = re.compile(r"[+-]?[0-9]{1,30}")


def one_line_error(status: int, body: bytes) -> dict:
    """The body of a 4xx: one line of JSON, `detail` one line naming `field` when there is one."""
    assert b"\n" not in body.rstrip(b"\n"), body[:300]
    doc = json.loads(body)
    detail = doc["detail"]
    assert isinstance(detail, str) and "\n" not in detail and "Traceback" not in detail
    assert len(detail) <= 400, detail
    if "field" in doc and status == 422:
        assert detail.startswith(f"{field_name(doc['field'])}: "), doc
    return doc


# --- schemathesis against the live server ----------------------------------------------------------------


SENT: Counter[tuple[str, int]] = Counter()  # (operation, status) of every request schemathesis sent
PROFILE = Path(__file__).resolve().parents[1] / "bench" / "results" / "h200-2026-11-29" / "profile_seed.json"


@pytest.fixture(scope="module")
def live_schema():
    with serving("serve", "--no-browser", "--profile", str(PROFILE)) as (proc, url, _port):
        schema = schemathesis.openapi.from_url(url + "api/openapi.json")
        schema.config.generation.update(
            modes=[schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE],
            max_examples=SCHEMATHESIS_EXAMPLES,
        )
        yield schema
    by_status = Counter(status for (_, status) in SENT.elements())
    print(f"\nschemathesis: {sum(SENT.values())} requests, by status {dict(sorted(by_status.items()))}")
    # the run really fuzzed: every operation was called, and both accepted and refused requests were sent
    assert {op for op, _ in SENT} >= {"GET /api/trace", "GET /api/compare", "GET /api/limits", "GET /api/profile"}
    assert by_status[200] > 0 and by_status[422] > 0
    assert not any(status >= 500 for status in by_status)
    assert "Traceback" not in proc.stderr.read()


schema = schemathesis.pytest.from_fixture("live_schema")


@schemathesis.check
def errors_are_one_line_naming_the_field(ctx, response, case):
    SENT[(f"{case.method.upper()} {case.path}", response.status_code)] += 1
    if 400 <= response.status_code < 500:
        one_line_error(response.status_code, response.content)
    return None


@schema.parametrize()
@settings(max_examples=SCHEMATHESIS_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_schemathesis_finds_no_5xx_and_only_one_line_errors(case):
    response = case.call(timeout=300)
    case.validate_response(
        response,
        checks=[
            schemathesis.checks.not_a_server_error,
            errors_are_one_line_naming_the_field,
        ],
    )


# --- hypothesis over the raw query string ----------------------------------------------------------------

TRICKY = [
    "",
    "+5",
    "-0",
    " 5",
    "5 ",
    "\x1f5",
    "5\x00",
    "0x10",
    "1e3",
    "5.0",
    "1_0",
    "nan",
    "-inf",
    "²",
    "①",
    "٥",
    "５",
    "+-5",
    "--5",
    "true",
    "TRUE",
    "fa2",
    "9" * 40,
    "\u2028",
    "%",
    "&",
    "=",
]
VALUES = st.one_of(
    st.binary(max_size=12),
    st.text(max_size=12).map(str.encode),
    st.integers(-(2**40), 2**40).map(lambda v: str(v).encode()),
    st.integers(0, 300).map(lambda v: str(v).encode()),
    st.sampled_from(TRICKY).map(str.encode),
)


def queries(names: tuple[str, ...]):
    """A raw query string: some of the endpoint's parameters (and now and then an unknown one), each a random
    byte string, percent-encoded as a browser would send it."""
    keys = st.one_of(st.sampled_from(names), st.sampled_from(["nn", "", "N", "n\n"]), st.text(max_size=6))
    pairs = st.lists(st.tuples(keys, VALUES), max_size=5)
    return pairs.map(
        lambda ps: "&".join(f"{quote_from_bytes(k.encode(), safe='')}={quote_from_bytes(v, safe='')}" for k, v in ps)
    )


class Recorded:
    """Stands in for the engine: records what the parser let through."""

    def __init__(self) -> None:
        self.last = None

    def __call__(self, what) -> bytes:
        self.last = what
        return b"{}"


@pytest.fixture(scope="module")
def fuzz_client():
    recorded = Recorded()
    patch = pytest.MonkeyPatch()
    patch.setattr(server, "compute_json", recorded)
    patch.setattr(server, "compare_json", recorded)
    yield TestClient(server.create_app()), recorded
    patch.undo()


def sent(query: str) -> dict[str, str]:
    """What the server reads from `query` (the last value of a repeated name), decoded as it decodes it."""
    out: dict[str, str] = {}
    for pair in query.split("&") if query else []:
        k, _, v = pair.partition("=")
        out[unquote_to_bytes(k).decode("utf-8", "replace")] = unquote_to_bytes(v).decode("utf-8", "replace")
    return out


def check_answer(r, query: str, names: tuple[str, ...], limits: dict[str, tuple[int, int]]) -> dict[str, str] | None:
    """No 5xx; a 422 is one line naming a field of the query; a 200 means every integer was ASCII and in range."""
    assert r.status_code in (200, 422), (query, r.status_code, r.text[:300])
    params = sent(query)
    if r.status_code == 422:
        doc = one_line_error(422, r.content)
        assert doc["field"] in params or doc["field"] in names, (query, doc)
        return None
    assert set(params) <= set(names), query
    for name, (lo, hi) in limits.items():
        text = params.get(name, "")
        if text != "":
            assert INTEGER.fullmatch(text) and lo <= int(text) <= hi, (query, name, text)
    return params


@given(query=queries(TRACE))
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
def test_trace_query_parser_on_random_bytes(fuzz_client, query):
    client, recorded = fuzz_client
    recorded.last = None
    r = client.get(f"/api/trace?{query}")
    params = check_answer(r, query, TRACE, API_LIMITS)
    if params is not None:
        cfg: Config | None = recorded.last  # None: the answer came from the cache
        if cfg is not None:
            for name in ("n", "d", "br", "bc", "seed"):
                if params.get(name, "") != "":
                    assert getattr(cfg, name) == int(params[name]), (query, name)
            assert get(cfg.algo).api_validated(cfg) == cfg


@given(query=queries(COMPARE))
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
def test_compare_query_parser_on_random_bytes(fuzz_client, query):
    client, recorded = fuzz_client
    recorded.last = None
    r = client.get(f"/api/compare?{query}")
    params = check_answer(r, query, COMPARE, COUNT_LIMITS)
    if params is not None and recorded.last is not None:
        defaults = {"n": 8, "d": 4, "br": 4, "bc": 4}  # an empty or absent value means the default
        for name, default in defaults.items():
            given_ = params.get(name, "")
            assert recorded.last[name] == (int(given_) if given_ != "" else default), (query, name)
