"""The local web server: the built viewer, and the Trace it draws from `GET /api/trace`.

Python computes, the browser draws: the page asks for a Trace and renders it, nothing more. The server
binds to loopback by default, answers only its own assets and API (typed and bounded: /api/openapi.json),
and tells the browser (CSP) that no request may leave it. Its parts: `params` (the query parameters and
their one-line errors), `gate` (the engine's bounded queue), `guard` (headers, Host and origin checks).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.staticfiles import StaticFiles

from flashviz.model.config import Config, ConfigError
from flashviz.model.echo import cut

from .. import __version__
from .gate import Cache, Gate
from .guard import CSP, SECURITY_HEADERS, Guard, host_name
from .params import ArraysQuery, CompareQuery, TraceRoute, api_error, config_error, validation_error

if TYPE_CHECKING:
    from flashviz.tracing.trace import Trace

__all__ = ["CSP", "LOOPBACK_NAMES", "SECURITY_HEADERS", "WarmOnFirstRequest", "create_app", "host_name", "static_dir"]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
log = logging.getLogger("flashviz.server")

NO_BUNDLE = """\
flashviz: the viewer is not built, so there is no page to show (the API at /api/trace works).
Build it from a source checkout:  cd web && npm ci && npm run build
or reinstall the package, which builds it:  pip install .   (needs Node.js and npm)
"""

ERROR = {
    "description": "a bad parameter: one line naming it and what it accepts",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["detail", "field"],
                "properties": {"detail": {"type": "string"}, "field": {"type": "string"}},
            }
        }
    },
}
BUSY = {
    "description": "too many requests are waiting for the engine; try again after Retry-After seconds",
    "headers": {"Retry-After": {"schema": {"type": "integer"}}},
}
DOCUMENT = {"description": "a JSON document", "content": {"application/json": {"schema": {"type": "object"}}}}


def static_dir() -> Path:
    """Where the built viewer lives: flashviz/viewer/static/ inside the installed package."""
    return Path(str(resources.files("flashviz") / "viewer" / "static"))


class App(FastAPI):
    """FastAPI with the Guard outside everything, Starlette's error middleware included."""

    allowed_hosts: tuple[str, ...] | None = None

    def build_middleware_stack(self):
        return Guard(HeadAsGet(super().build_middleware_stack(), self), self.allowed_hosts)

    def get_apis(self) -> frozenset[str]:
        """The paths under /api/ that answer GET (and so HEAD): every other method on them is a 405."""
        return frozenset(
            path
            for route in self.routes
            if (path := getattr(route, "path", "")).startswith("/api/")
            and "{" not in path
            and "GET" in (getattr(route, "methods", None) or ())
        )


ALLOW = "GET, HEAD"


class HeadAsGet:
    """HEAD on an API answers as GET does, without the body (FastAPI's routes take GET only): the same status and
    headers, Content-Length included."""

    def __init__(self, app, routes: App) -> None:
        self.app = app
        self.routes = routes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD" or scope["path"] not in self.routes.get_apis():
            await self.app(scope, receive, send)
            return

        async def headers_only(message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


def create_app(
    profile: dict[str, Any] | None = None, allowed_hosts: tuple[str, ...] | None = None, documents: str | None = None
) -> FastAPI:
    """The viewer's app. `profile` (checked by `flashviz serve`) is served as-is at /api/profile. With
    `allowed_hosts`, requests whose Host header names another host are refused. `documents` (flashviz.share.page's
    elements: `flashviz view`'s trace file) go inside the page, which shows them first."""
    app = App(
        title="flashviz",
        version=__version__,
        description="The FlashAttention-2 walkthrough's API: traces, the comparison, limits, a GPU profile.",
        docs_url=None,
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    app.allowed_hosts = allowed_hosts
    gate = Gate()
    app.state.gate = gate  # `flashviz serve` warms its cache (warm_trace) while the browser starts
    # Starlette types a handler as taking any Exception; these take the one they are registered for
    app.add_exception_handler(RequestValidationError, validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(ConfigError, config_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, internal_error)

    @app.get("/api/trace", responses={200: DOCUMENT, 422: ERROR, 503: BUSY})
    async def get_trace(request: Request, query: Annotated[TraceRoute, Query()]) -> Response:
        """One launch as a Trace (docs/trace-schema.md); with `arrays=on-demand`, without the steps' arrays (docs/
        trace-schema.md, "Arrays on demand"); with `arrays=auto`, without them when they are large."""
        cfg = query.config()
        if query.arrays == "all":
            return await gate.answer(request, cfg, compute, cfg)
        key = (query.arrays, cfg)
        if traces.get(cfg) is None:
            # an answer without the steps' arrays is sent only while the Trace that holds them is at hand for
            # /api/trace/arrays: otherwise the engine makes it again (the same numbers: a page whose arrays came back
            # 404 asks this again, then the arrays)
            gate.cache.forget(key)
        return await gate.answer(request, key, compute_part, key)

    @app.get("/api/trace/arrays", responses={200: DOCUMENT, 404: ERROR, 422: ERROR})
    async def get_trace_arrays(request: Request, query: Annotated[ArraysQuery, Query()]) -> Response:
        """The stored arrays of one step (`step`), or of several (`steps`), of a trace this server answered at
        /api/trace with the same query (from its cache: the engine never runs here), each array stored on its own
        (docs/trace-schema.md, "Arrays on demand"). 404 when the trace is not (or no longer) in the cache: ask
        /api/trace again."""
        cfg = query.config()
        asked = query.asked()
        if asked is None:
            return api_error(*query.unasked())
        made = traces.get(cfg)
        if made is not None:
            steps = len(made.steps)
            bad = next((k for k in asked if k >= steps), None)
            if bad is not None:
                return api_error(query.which(), f"must be an integer in 0..{steps - 1} for this trace (got {bad})")
            answer = await run_in_threadpool(arrays_of_trace, made, asked, query.step is not None)
            return await gate.send(request, answer)
        body = gate.cache.get(cfg)
        if body is None:
            return api_error(
                "query", "no trace of this query in the server's cache: GET /api/trace with the same query first", 404
            )
        doc = await run_in_threadpool(parsed.get, cfg, body)
        steps = len(doc["steps"])
        bad = next((k for k in asked if k >= steps), None)
        if bad is not None:
            return api_error(query.which(), f"must be an integer in 0..{steps - 1} for this trace (got {bad})")
        answer = await run_in_threadpool(arrays_json, doc, asked, query.step is not None)
        return await gate.send(request, answer)

    parsed = Parsed()

    closed_forms = Cache(entries=64)  # the comparison's answers: no engine, so never behind the gate

    @app.get("/api/compare", responses={200: DOCUMENT, 422: ERROR})
    async def get_compare(query: Annotated[CompareQuery, Query()]) -> Response:
        """Every algorithm at one config from the closed forms, and a sweep of N: no engine runs, so it never waits
        behind traces (`curves` is null: GET /api/curves has the engine's counters per phase)."""
        params = query.model_dump()
        key = ("compare", *sorted(params.items()))
        body = closed_forms.get(key)
        if body is None:
            body = await run_in_threadpool(compare, params)
            closed_forms.put(key, body)
        return Response(content=body, media_type="application/json")

    @app.get("/api/curves", responses={200: DOCUMENT, 422: ERROR, 503: BUSY})
    async def get_curves(request: Request, query: Annotated[CompareQuery, Query()]) -> Response:
        """The comparison's animation: each algorithm's launch-wide counters per phase at one config, from counters-only
        engine runs (queued with traces; past the API's work bounds an algorithm says why it is skipped)."""
        params = query.model_dump()
        return await gate.answer(request, ("curves", *sorted(params.items())), phase_curves, params)

    @app.get("/api/limits", responses={200: DOCUMENT})
    async def get_limits() -> dict[str, Any]:
        """The API's bounds and the algorithms (never waits for the engine)."""
        from flashviz.reports.compare_api import limits_document

        return limits_document(profile=profile is not None)

    @app.get("/api/profile", responses={200: DOCUMENT, 404: {"description": "no profile was given"}})
    async def get_profile() -> Response:
        """The GPU profile `flashviz serve --profile FILE.json` was started with (docs/profile-schema.md)."""
        if profile is None:
            return JSONResponse(
                {"detail": "no profile was given: start the server with `flashviz serve --profile FILE.json`"},
                status_code=404,
            )
        return JSONResponse(profile)

    @app.get("/api/ladder", responses={200: DOCUMENT, 404: {"description": "no recorded ladder run ships"}})
    async def get_ladder() -> Response:
        """The recorded GPU run of the ladder that ships with flashviz (docs/ladder-schema.md): measured on the
        GPU it names, on the date it gives; never measured here."""
        from flashviz.hardware.ladder import LadderError, load

        try:
            return JSONResponse(load())
        except LadderError as exc:
            return JSONResponse({"detail": cut(str(exc), 300)}, status_code=404)

    @app.api_route(
        "/api/{rest:path}",
        methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        include_in_schema=False,
    )
    async def api_not_found(request: Request, rest: str) -> Response:
        if request.url.path in app.get_apis():  # an API of GET, asked with another method
            words = f"{request.method} is not answered here: {request.url.path} takes {ALLOW}"
            answer = api_error("method", words, 405)
            answer.headers["Allow"] = ALLOW
            return answer
        return api_error("path", f"no such API: /api/{clip_path(rest)}", status=404)

    root = static_dir()
    if (root / "index.html").is_file():
        if documents is not None:
            page = (root / "index.html").read_text().replace("</body>", f"{documents}\n</body>", 1)

            @app.get("/", include_in_schema=False)
            @app.get("/index.html", include_in_schema=False)
            async def page_with_documents() -> Response:
                return Response(page, media_type="text/html; charset=utf-8", headers={"Cache-Control": "no-store"})

        app.mount("/", StaticFiles(directory=root, html=True), name="viewer")
    else:

        @app.get("/{rest:path}", include_in_schema=False)
        async def no_bundle(rest: str) -> Response:
            return PlainTextResponse(NO_BUNDLE, status_code=503)

    return app


class Parsed:
    """The parsed documents of the last few traces /api/trace/arrays read (parsing 12 MB of JSON once, not per
    step), by the same key as the gate's cache and only while that holds the same bytes."""

    ENTRIES = 2

    def __init__(self) -> None:
        self.items: OrderedDict[Any, tuple[bytes, dict[str, Any]]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Any, body: bytes) -> dict[str, Any]:
        import orjson

        with self.lock:
            held = self.items.get(key)
            if held is not None and held[0] is body:
                self.items.move_to_end(key)
                return held[1]
        doc = orjson.loads(body)
        with self.lock:
            self.items[key] = (body, doc)
            while len(self.items) > self.ENTRIES:
                self.items.popitem(last=False)
        return doc


def arrays_json(doc: dict[str, Any], asked: list[int], one: bool) -> bytes:
    """The answer of /api/trace/arrays from a compact document: one step's holders, or {"steps": [...]}."""
    import orjson

    from flashviz.tracing.codec import step_arrays

    parts = [step_arrays(doc, k) for k in asked]
    return orjson.dumps(parts[0] if one else {"steps": parts}, option=orjson.OPT_SERIALIZE_NUMPY)


def arrays_of_trace(trace: Trace, asked: list[int], one: bool) -> bytes:
    """The answer of /api/trace/arrays from a Trace the server made."""
    import orjson

    from flashviz.tracing.on_demand import step_arrays

    parts = [step_arrays(trace, k) for k in asked]
    return orjson.dumps(parts[0] if one else {"steps": parts}, option=orjson.OPT_SERIALIZE_NUMPY, default=_default)


def _default(obj: Any) -> Any:
    from flashviz.tracing.trace import _default as default

    return default(obj)


def clip_path(rest: str) -> str:
    return cut(rest)


def internal_error(request: Request, exc: Exception) -> JSONResponse:
    """A bug: one line for the client (no traceback); the server's log keeps the details."""
    log.error("flashviz: %s on %s: %s", type(exc).__name__, request.url.path, exc)
    return JSONResponse({"detail": f"internal error ({type(exc).__name__}); the server's log has the details"}, 500)


def compute(cfg: Config) -> bytes:
    return compute_json(cfg)  # looked up at call time: tests replace compute_json


def compare(params: dict[str, Any]) -> bytes:
    return compare_json(params)


def compare_json(params: dict[str, Any]) -> bytes:
    from flashviz.reports.compare_api import compare_document

    # the stdlib's ints have no 64-bit limit: at N near 2^31, standard attention's byte counts pass 2^64
    doc = compare_document(**params, with_curves=False)
    return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()


def phase_curves(params: dict[str, Any]) -> bytes:
    return curves_json(params)


def curves_json(params: dict[str, Any]) -> bytes:
    from flashviz.reports.compare_api import curves

    return json.dumps(curves(**params), separators=(",", ":"), allow_nan=False).encode()


class Traces:
    """The Trace objects of the last few launches the engine ran for /api/trace (by Config): /api/trace/arrays answers
    a step's arrays from them, and a request of the same launch with other `arrays` makes its answer from them
    without running the engine again."""

    ENTRIES = 4
    BYTES = 256 * 2**20

    def __init__(self) -> None:
        self.items: OrderedDict[Config, Trace] = OrderedDict()
        self.sizes: dict[Config, int] = {}
        self.making: dict[Config, list[Any]] = {}  # [lock, holders]: one engine run per launch at a time
        self.lock = threading.Lock()

    def get(self, cfg: Config) -> Trace | None:
        with self.lock:
            t = self.items.get(cfg)
            if t is not None:
                self.items.move_to_end(cfg)
            return t

    def made(self, cfg: Config) -> Trace:
        """The launch's Trace: held, or made now by the engine (and held; two requests of one launch at once, with
        other `arrays`, run the engine once)."""
        t = self.get(cfg)
        if t is not None:
            return t
        with self.lock:
            making = self.making.setdefault(cfg, [threading.Lock(), 0])
            making[1] += 1
        try:
            with making[0]:
                t = self.get(cfg)
                if t is None:
                    t = self.make(cfg)
        finally:
            with self.lock:
                making[1] -= 1
                if not making[1]:
                    del self.making[cfg]
        return t

    def make(self, cfg: Config) -> Trace:
        from flashviz.tracing.build import make_trace

        t = make_trace(cfg)
        with self.lock:
            self.items[cfg] = t
            self.sizes[cfg] = trace_bytes(t)
            while len(self.items) > self.ENTRIES or sum(self.sizes[c] for c in self.items) > self.BYTES:
                gone, _ = self.items.popitem(last=False)
                del self.sizes[gone]
        return t


def trace_bytes(t: Trace) -> int:
    """The bytes of values a Trace holds (its arrays)."""
    from flashviz.tracing.on_demand import step_bytes

    return step_bytes(t) + sum(a.nbytes for g in (t.inputs, t.outputs) for a in g.values())


traces = Traces()


def compute_json(cfg: Config) -> bytes:
    return traces.made(cfg).to_json(compact=True)


def compute_part(key: tuple[str, Config]) -> bytes:
    return part_json(key)  # looked up at call time, as compute_json


def part_json(key: tuple[str, Config]) -> bytes:
    """/api/trace with `arrays` on-demand (the skeleton: on_demand.skeleton) or auto (the skeleton when the steps'
    arrays hold more than on_demand.AUTO_BYTES, else the whole trace)."""
    import orjson

    from flashviz.tracing import on_demand

    arrays, cfg = key
    t = traces.made(cfg)
    if arrays == "auto" and on_demand.step_bytes(t) <= on_demand.AUTO_BYTES:
        return t.to_json(compact=True)
    return orjson.dumps(on_demand.skeleton(t), option=orjson.OPT_SERIALIZE_NUMPY, default=_default)


def warm_trace(gate: Gate) -> None:
    """Import the engine and compute the seed's trace into the cache: the page's first request finds it ready
    (`flashviz serve` runs this in a thread while the browser loads the page)."""
    from ..algos import DEFAULT, resolve

    cfg = resolve(DEFAULT).api_validated(Config(algo=DEFAULT))
    if gate.cache.get(cfg) is None:
        gate.cache.put(cfg, compute_json(cfg))


class WarmOnFirstRequest:
    """Starts `warm` in a thread when the first request arrives (the browser asking for the page): the engine
    is imported and the seed's trace computed while the browser loads and runs the page's script, rather than
    while the server itself is still starting (one GIL: that slowed the page's first bytes)."""

    def __init__(self, app, warm) -> None:
        self.app = app
        self.warm = warm
        self.started = False

    async def __call__(self, scope, receive, send) -> None:
        if not self.started and scope["type"] == "http":
            self.started = True
            threading.Thread(target=self.warm, name="flashviz-warm", daemon=True).start()
        await self.app(scope, receive, send)
