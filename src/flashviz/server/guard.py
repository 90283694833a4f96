"""The outermost layer of the app: the CSP and friends on every response (500s included), the Host
allow-list (a page elsewhere cannot reach the server by DNS rebinding), and no cross-origin requests to
/api (a page on another origin, even another loopback port, cannot make the server compute with `<img>`)."""

from __future__ import annotations

import ipaddress
import re

from fastapi.responses import JSONResponse

from flashviz.model.echo import cut

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
SAME_ORIGIN = (b"same-origin", b"none")  # Sec-Fetch-Site of the page's own fetches, and of a typed-in URL


class Guard:
    """Wraps the whole app (outside Starlette's error middleware, so its 500s pass through here too)."""

    def __init__(self, app, allowed_hosts: tuple[str, ...] | None = None) -> None:
        self.app = app
        self.allowed_hosts = None if allowed_hosts is None else {canonical(h) for h in allowed_hosts}

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = with_headers(send)
        refusal = self.refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def refusal(self, scope) -> JSONResponse | None:
        headers = dict(scope.get("headers", []))
        raw = headers.get(b"host", b"")
        host = host_name(raw)
        if self.allowed_hosts is not None and host is None:
            return JSONResponse(
                {
                    "detail": f"Host {cut(raw.decode('latin-1'))!r} is not a host name and an optional port",
                    "field": "Host",
                },
                status_code=400,
            )
        if self.allowed_hosts is not None and host not in self.allowed_hosts:
            return JSONResponse(
                {
                    "detail": f"Host {cut(host or '')!r} is not a name this server answers to; "
                    "add it with `flashviz serve --allow-host NAME`",
                    "field": "Host",
                },
                status_code=421,
            )
        if scope["path"] == "/api" or scope["path"].startswith("/api/"):
            site = headers.get(b"sec-fetch-site")
            origin = headers.get(b"origin")
            if site is not None and site not in SAME_ORIGIN:
                why = f"Sec-Fetch-Site: {cut(site.decode('latin-1'))}"
            elif origin is not None and origin != b"http://" + headers.get(b"host", b""):
                why = f"Origin: {cut(origin.decode('latin-1'))}"
            else:
                return None
            return JSONResponse(
                {"detail": f"cross-origin request refused ({why}): the API answers its own page only"},
                status_code=403,
            )
        return None


def with_headers(send):
    async def wrapped(message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
        await send(message)

    return wrapped


# RFC 9110's Host: uri-host [ ":" port ]; uri-host an IP literal in brackets, or a reg-name / IPv4 address
BRACKETED = re.compile(r"\[([0-9a-f:.]+)\](?::[0-9]{0,5})?")
PLAIN = re.compile(r"([a-z0-9._~-]+)(?::[0-9]{0,5})?")


def canonical(name: str) -> str:
    """An allowed host as host_name gives it: lower case, an IPv6 address in its short form."""
    name = name.lower().strip("[]")
    try:
        return str(ipaddress.IPv6Address(name))
    except ValueError:
        return name


def host_name(header: bytes) -> str | None:
    """The Host header without its port: `127.0.0.1:8000` -> `127.0.0.1`, `[::1]:8000` -> `::1`; None when the
    header is not a host and an optional port, whole (`[::1]evil.example.com`, `[::1].evil.example.com:80`,
    `a:b:c`, a space): such a request is refused, never read as the name in front."""
    host = header.decode("latin-1").lower()
    bracketed = BRACKETED.fullmatch(host)
    if bracketed:
        try:
            return str(ipaddress.IPv6Address(bracketed.group(1)))
        except ValueError:
            return None
    plain = PLAIN.fullmatch(host)
    return plain.group(1) if plain else None
