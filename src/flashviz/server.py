"""The local web server: the built viewer, and the Trace it draws from `GET /api/trace`.

Python computes, the browser draws: the page asks for a Trace and renders it, nothing more. The server
binds to loopback by default, answers only its own assets and API, and tells the browser (CSP) that
no request may leave it.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.staticfiles import StaticFiles

from . import __version__
from .config import (
    API_LIMITS,
    API_MAX_TILES,
    API_MAX_VALUES,
    API_MAX_WORK,
    SCALE_RANGE,
    Config,
    ConfigError,
)

INTEGER = re.compile(r"[+-]?[0-9]{1,30}")
TRACE_PARAMS = ("algo", "n", "d", "br", "bc", "seed", "scale", "causal", "block")
BOOLEANS = {"true": True, "1": True, "false": False, "0": False}
MAX_COMPUTING = 2  # traces computed at once; more requests wait their turn
MAX_WAITING = 16  # beyond this many queued requests the server answers 503 at once
CACHE_ENTRIES = 16
CACHE_BYTES = 256 * 2**20

# Everything from this server; KaTeX and CodeMirror inject styles and may inline fonts/images as data:.
CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "font-src 'self' data:",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")

NO_BUNDLE = """\
flashviz: the viewer is not built, so there is no page to show (the API at /api/trace works).
Build it from a source checkout:  cd web && npm ci && npm run build
or reinstall the package, which builds it:  pip install .   (needs Node.js and npm)
"""


def static_dir() -> Path:
    """Where the built viewer lives: flashviz/viewer/static/ inside the installed package."""
    return Path(str(resources.files("flashviz") / "viewer" / "static"))


def create_app(profile: dict[str, Any] | None = None, allowed_hosts: tuple[str, ...] | None = None) -> FastAPI:
    """The viewer's app. `profile` is served as-is at /api/profile. With `allowed_hosts`, requests whose
    Host header names another host are refused (a page elsewhere cannot reach a loopback server by
    DNS rebinding)."""
    app = FastAPI(title="flashviz", version=__version__, docs_url=None, redoc_url=None, openapi_url=None)
    traces = TraceService()
    app.state.traces = traces  # `flashviz serve` warms it (TraceService.warm) while the browser starts

    @app.get("/api/trace")
    async def get_trace(request: Request) -> Response:
        try:
            cfg = parse_config(request.query_params)
        except ConfigError as exc:
            return config_error(exc)
        return await traces.json(cfg)

    @app.get("/api/limits")
    def get_limits() -> dict[str, Any]:
        from .compare_api import api_algos

        return {
            **{name: list(API_LIMITS[name]) for name in ("n", "d", "br", "bc", "seed")},
            "scale": list(SCALE_RANGE),
            "work": {"n*n*d": API_MAX_WORK, "tr*tc": API_MAX_TILES, "values": API_MAX_VALUES},
            "algos": api_algos(),
            "profile": profile is not None,  # whether GET /api/profile has one (the page asks only then: no 404)
        }

    @app.get("/api/compare")
    async def get_compare(request: Request) -> Response:
        from .compare_api import parse

        try:
            params = parse(request.query_params)
        except ConfigError as exc:
            return config_error(exc)
        return await traces.compare(params)

    @app.get("/api/profile")
    def get_profile() -> Response:
        if profile is None:
            return JSONResponse(
                {"detail": "no profile was given: start the server with `flashviz serve --profile FILE.json`"},
                status_code=404,
            )
        return JSONResponse(profile)

    @app.api_route("/api/{rest:path}", methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"])
    def api_not_found(rest: str) -> Response:
        return JSONResponse({"detail": f"no such API: /api/{rest}"}, status_code=404)

    root = static_dir()
    if (root / "index.html").is_file():
        app.mount("/", StaticFiles(directory=root, html=True), name="viewer")
    else:

        @app.get("/{rest:path}")
        def no_bundle(rest: str) -> Response:
            return PlainTextResponse(NO_BUNDLE, status_code=503)

    app.add_middleware(SecurityHeaders, allowed_hosts=allowed_hosts)
    return app


def parse_config(params) -> Config:
    """A validated Config from query parameters; every problem is a ConfigError naming the parameter."""
    unknown = sorted(set(params) - set(TRACE_PARAMS))
    if unknown:
        raise ConfigError(unknown[0], f"unknown parameter; accepted: {', '.join(TRACE_PARAMS)}")
    fields: dict[str, Any] = {}
    if "algo" in params:
        fields["algo"] = params["algo"]
    for name in ("n", "d", "br", "bc", "seed"):
        if name in params:
            lo, hi = API_LIMITS[name]
            fields[name] = parse_int(name, params[name], f"an integer in {lo}..{hi}")
    if params.get("scale", ""):  # empty means the default, 1/sqrt(D)
        try:
            fields["scale"] = float(params["scale"])
        except ValueError:
            lo, hi = SCALE_RANGE
            raise ConfigError("scale", f"must be a finite number with {lo:g} <= |scale| <= {hi:g}") from None
    if params.get("causal", ""):  # empty means the default, not causal
        if params["causal"].lower() not in BOOLEANS:
            raise ConfigError("causal", f"must be true or false (got {params['causal'][:40]!r})")
        fields["causal"] = BOOLEANS[params["causal"].lower()]
    if params.get("block", ""):  # empty means the default: every block when Tr <= 8, else block 0
        fields["record"] = (parse_int("block", params["block"], "an integer in 0..Tr-1"),)
    return Config(**fields).api_validated()  # ranges and work bounds: the same checks as everywhere


def parse_int(name: str, text: str, accepted: str) -> int:
    if not INTEGER.fullmatch(text.strip()):
        raise ConfigError(name, f"must be {accepted} (got {text[:40]!r})")
    return int(text)


def config_error(exc: ConfigError) -> JSONResponse:
    return JSONResponse({"detail": f"{exc.field}: {exc.message}", "field": exc.field}, status_code=422)


class TraceService:
    """Computes traces off the event loop, at most MAX_COMPUTING at once, and keeps recent ones (LRU)."""

    def __init__(self) -> None:
        self.gate = anyio.Semaphore(MAX_COMPUTING)
        self.waiting = 0
        self.cache: OrderedDict[Config, bytes] = OrderedDict()
        self.lock = threading.Lock()

    async def json(self, cfg: Config) -> Response:
        body = self.cached(cfg)
        if body is None:
            if self.waiting >= MAX_WAITING:
                return JSONResponse(
                    {"detail": "busy: too many traces are being computed; try again in a moment"},
                    status_code=503,
                    headers={"Retry-After": "2"},
                )
            self.waiting += 1
            try:
                async with self.gate:
                    body = self.cached(cfg)  # a request ahead of this one may have made it
                    if body is None:
                        body = await run_in_threadpool(compute_json, cfg)
                        self.keep(cfg, body)
            finally:
                self.waiting -= 1
        return Response(content=body, media_type="application/json")

    async def compare(self, params: dict[str, Any]) -> Response:
        """GET /api/compare: the closed forms, the sweep and the phase curves (engine runs, so gated and cached)."""
        key = ("compare", *sorted(params.items()))
        body = self.cached(key)
        if body is None:
            async with self.gate:
                body = self.cached(key)
                if body is None:
                    body = await run_in_threadpool(compare_json, params)
                    self.keep(key, body)
        return Response(content=body, media_type="application/json")

    def warm(self) -> None:
        """Import the engine and compute the seed's trace into the cache: the page's first request finds it
        ready (`flashviz serve` runs this in a thread while the browser loads the page)."""
        cfg = Config().api_validated()
        if self.cached(cfg) is None:
            self.keep(cfg, compute_json(cfg))

    def cached(self, cfg: Config) -> bytes | None:
        with self.lock:
            body = self.cache.get(cfg)
            if body is not None:
                self.cache.move_to_end(cfg)
            return body

    def keep(self, cfg: Config, body: bytes) -> None:
        with self.lock:
            self.cache[cfg] = body
            while len(self.cache) > CACHE_ENTRIES or sum(map(len, self.cache.values())) > CACHE_BYTES:
                self.cache.popitem(last=False)


def compare_json(params: dict[str, Any]) -> bytes:
    import orjson

    from .compare_api import compare_document

    return orjson.dumps(compare_document(**params))


def compute_json(cfg: Config) -> bytes:
    from .tracer import make_trace

    return make_trace(cfg).to_json()


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


class SecurityHeaders:
    """Adds the CSP and friends to every response; refuses Host headers outside `allowed_hosts`."""

    def __init__(self, app, allowed_hosts: tuple[str, ...] | None = None) -> None:
        self.app = app
        self.allowed_hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.allowed_hosts is not None and host_name(scope) not in self.allowed_hosts:
            response = PlainTextResponse("flashviz: unknown Host header\n", status_code=421)
            await response(scope, receive, self.send_with_headers(send))
            return
        await self.app(scope, receive, self.send_with_headers(send))

    @staticmethod
    def send_with_headers(send):
        async def wrapped(message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        return wrapped


def host_name(scope) -> str:
    """The Host header without its port: `127.0.0.1:8000` -> `127.0.0.1`, `[::1]:8000` -> `::1`."""
    host = dict(scope.get("headers", [])).get(b"host", b"").decode("latin-1").lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
