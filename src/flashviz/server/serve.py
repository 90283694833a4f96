"""`flashviz serve`: check the profile and the host names, listen, say where the page is (and warn when
other machines can reach it), then run uvicorn until Ctrl-C."""

from __future__ import annotations

import ipaddress
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flashviz.model.config import ConfigError
from flashviz.model.echo import cut
from flashviz.model.regular_file import read_regular

if TYPE_CHECKING:
    import socket

PROFILE_MAX_BYTES = 16 * 2**20  # the recorded profiles are 9-19 kB; ncu's CSV of many kernels stays far below
HOST_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,62})(\.[a-z0-9]([a-z0-9-]{0,62}))*\.?")


def run(
    host: str,
    port: int,
    no_browser: bool,
    profile_path: Path | None,
    allow_hosts: tuple[str, ...],
    documents: str | None = None,
    serving: str = "the FlashAttention-2 walkthrough",
) -> None:
    """Serve the page (`serving`: what the line that gives its URL says it is) until Ctrl-C."""
    import threading
    import webbrowser

    import uvicorn

    from flashviz.server import LOOPBACK_NAMES, WarmOnFirstRequest, create_app, warm_trace

    profile = load_profile(profile_path) if profile_path is not None else None
    extra = tuple(host_name_flag(name) for name in allow_hosts)
    sock = listen(host, port)
    bound, port = sock.getsockname()[:2]
    names = (*LOOPBACK_NAMES, host.lower().strip("[]"), bound, *extra)
    app = create_app(profile, allowed_hosts=tuple(dict.fromkeys(names)), documents=documents)
    url, local = url_of(host, bound, port), url_of(local_name(bound), bound, port)
    if not is_loopback(bound):
        click.echo(warning(host, bound, names, local), err=True)
    click.echo(f"flashviz: serving {serving} at {url} (Ctrl-C to stop)")
    if not no_browser and browser_available():
        # The socket already listens, so the browser's first request waits in its backlog.
        threading.Thread(target=webbrowser.open, args=(local,), daemon=True).start()
    warm = WarmOnFirstRequest(app, lambda: warm_trace(app.state.gate))  # the first trace is ready when the page asks
    config = uvicorn.Config(warm, log_level="warning", access_log=False, lifespan="off", server_header=False)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])  # uvicorn stops on Ctrl-C, then raises the signal again
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    click.echo("flashviz: stopped")


def warning(host: str, bound: str, names: tuple[str, ...], local: str) -> str:
    where = "every network interface" if ipaddress.ip_address(bound).is_unspecified else bound
    accepted = ", ".join(dict.fromkeys(n for n in names if n))
    return (
        f"flashviz: warning: --host {cut(host)} listens on {where}: anyone who can reach this machine can use the "
        f"page and its API (no password). Host names answered: {accepted}; add others with --allow-host NAME. "
        f"On this machine: {local}"
    )


def url_of(name: str, bound: str, port: int) -> str:
    """The URL of the page: the name as given (a name or address), else the bound address."""
    shown = name or bound
    return f"http://[{shown}]:{port}/" if ":" in shown else f"http://{shown}:{port}/"


def local_name(bound: str) -> str:
    """Where a browser on this machine finds a server bound to `bound` (a wildcard: loopback)."""
    address = ipaddress.ip_address(bound)
    if address.is_unspecified:
        return "::1" if address.version == 6 else "127.0.0.1"
    return bound


def is_loopback(bound: str) -> bool:
    return ipaddress.ip_address(bound).is_loopback


def host_name_flag(name: str) -> str:
    """An --allow-host value: a DNS name or an IP address (lower case, no port)."""
    text = name.strip().lower().strip("[]")
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        pass
    if len(text) <= 253 and HOST_NAME.fullmatch(text):
        return text.rstrip(".")
    raise ConfigError("--allow-host", f"must be a host name or an IP address, without a port (got {cut(name)!r})")


def load_profile(path: Path) -> dict:
    """The profile at `path`, read (a regular file of at most PROFILE_MAX_BYTES) and checked against the
    schema; every problem is a ConfigError naming --profile."""
    import orjson

    from flashviz.gpu.profile_schema import ProfileError, check

    shown = cut(str(path))
    data = read_regular(path, "--profile", shown, PROFILE_MAX_BYTES, "a profile", "give a JSON file")
    try:
        profile = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ConfigError("--profile", f"{shown} is not valid JSON: {cut(' '.join(str(exc).split()), 120)}") from None
    try:
        check(profile)
    except ProfileError as exc:
        raise ConfigError("--profile", f"{shown} is not a flashviz profile: {exc}") from None
    return profile


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port (port 0: the system picks a free one)."""
    import errno
    import socket

    if not host.strip():
        raise ConfigError("--host", "must be an address or a name, e.g. 127.0.0.1 (got '')")
    try:
        family, kind_, proto, _, address = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError, ValueError) as exc:
        raise ConfigError("--host", f"cannot resolve {cut(host)!r}: {exc}") from None
    sock = socket.socket(family, kind_, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            raise ConfigError("--port", f"cannot listen on {cut(host)} port {port}: {exc.strerror}") from None
        raise ConfigError("--host", f"cannot listen on {cut(host)} port {port}: {exc.strerror}") from None
    return sock


def browser_available() -> bool:
    """Not in CI, and on Linux only with a display or a $BROWSER to open."""
    if os.environ.get("CI"):
        return False
    if sys.platform.startswith("linux"):
        return any(os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"))
    return True
