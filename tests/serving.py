"""Real servers for the API tests: `flashviz serve` as a subprocess (the real entry point), or the app on
uvicorn in a thread of the test process (so a test can read its gate's counters), and raw sockets that send a
request and then leave, as an abandoned browser request does. Waits are for states; the limits on them only
stop a hung test."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager

URL_LINE = re.compile(r"flashviz: serving the FlashAttention-2 walkthrough at (http://(.+):(\d+)/) \(Ctrl-C to stop\)")
HANG_S = 300  # a state not reached in this long means the test hangs (not that it is slow)


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + HANG_S
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.01)


def quiet_env() -> dict[str, str]:
    """CI set and no display: the server must never try to open a browser here."""
    return {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")} | {"CI": "1"}


@contextmanager
def serving(*args: str, **popen) -> Iterator[tuple[subprocess.Popen, str, int]]:
    """Start `flashviz ARGS`, wait for its URL line, yield (process, url, port); Ctrl-C it afterwards."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "flashviz", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=quiet_env(),
        **popen,
    )
    try:
        line = proc.stdout.readline().rstrip("\n")  # click.echo flushes: no PYTHONUNBUFFERED needed
        match = URL_LINE.match(line)
        assert match, f"no URL line: {line!r}; stderr: {proc.stderr.read() if proc.poll() is not None else ''}"
        yield proc, match.group(1), int(match.group(3))
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def in_thread(app) -> Iterator[tuple[str, int]]:
    """The app on uvicorn on a free loopback port, in a thread; yields (base URL, port)."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="flashviz-test", daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started or not thread.is_alive(), "the server started")
        assert server.started, "the server did not start"
        yield f"http://127.0.0.1:{port}", port
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=HANG_S) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def send(port: int, target: str, host: str | None = None) -> socket.socket:
    """Send `GET target` and return the open connection: close it to abandon the request, or `answer` it."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=HANG_S)
    sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host or f'127.0.0.1:{port}'}\r\nConnection: close\r\n\r\n".encode())
    return sock


def answer(sock: socket.socket) -> tuple[int, bytes]:
    """Read the whole response on `sock` (the server closes it): (status, body)."""
    chunks = []
    with sock:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    return int(head.split()[1]), body
