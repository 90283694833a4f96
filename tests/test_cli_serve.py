"""`flashviz serve` (and plain `flashviz`) as a person runs it: a real process on a free loopback port."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from flashviz import cli

URL = re.compile(r"flashviz: serving the FlashAttention-2 walkthrough at (http://127\.0\.0\.1:\d+/) \(Ctrl-C to stop\)")
ESCAPES = ("/../pyproject.toml", "/%2e%2e/pyproject.toml", "/../../../../etc/passwd", "/..%2f..%2fREADME.md")


def flashviz(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "flashviz", *args], capture_output=True, text=True, timeout=60, env=env(), **kwargs
    )


def env() -> dict[str, str]:
    # CI set and no display: the server must never try to open a browser here
    return {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")} | {"CI": "1"}


@contextmanager
def serving(*args: str):
    """Start `flashviz ARGS`, wait for its URL line, yield (process, url); Ctrl-C it afterwards."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "flashviz", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env()
    )
    try:
        line = proc.stdout.readline().rstrip("\n")  # click.echo flushes: no PYTHONUNBUFFERED needed
        match = URL.match(line)
        assert match, f"no URL line: {line!r}; stderr: {proc.stderr.read() if proc.poll() is not None else ''}"
        yield proc, match.group(1)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def raw_get(port: int, target: str) -> bytes:
    """An HTTP request with the path exactly as written (no client normalises `..` away)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_serve_answers_and_stops_cleanly_on_ctrl_c(tmp_path):
    profile = {"device": "NVIDIA H200", "note": "made up for the test"}
    (tmp_path / "profile.json").write_text(json.dumps(profile))
    with serving("serve", "--no-browser", "--port", "0", "--profile", str(tmp_path / "profile.json")) as (proc, url):
        status, body = get(url + "api/trace?n=16&d=8&br=4&bc=8")
        assert status == 200
        trace = json.loads(body)
        assert trace["schema"] == "flashviz.trace/1" and trace["config"]["n"] == 16 and trace["reference"]["ok"]
        status, body = get(url + "api/trace?n=0")
        assert status == 422 and json.loads(body)["field"] == "n"
        assert json.loads(get(url + "api/profile")[1]) == profile
        port = int(url.rsplit(":", 1)[1].rstrip("/"))
        for target in ESCAPES:
            head, _, body = raw_get(port, target).partition(b"\r\n\r\n")
            assert head.split()[1] in (b"400", b"404", b"503"), (target, head)
            assert b"[project]" not in body and b"root:" not in body and b"# flashviz" not in body
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0
        assert "Traceback" not in err and "KeyboardInterrupt" not in err
        assert "stopped" in out


def test_plain_flashviz_serves_the_seeds_example():
    with serving() as (_, url):
        config = json.loads(get(url + "api/trace")[1])["config"]
        assert (config["n"], config["d"], config["br"], config["bc"]) == (8, 4, 4, 4)


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_bad_port_is_one_line_and_exit_2(port):
    r = flashviz("serve", "--no-browser", "--port", port)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "--port" in r.stderr and "0..65535" in r.stderr


def test_port_in_use_is_one_line_and_exit_2():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = flashviz("serve", "--no-browser", "--port", str(port))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and "--port" in r.stderr and str(port) in r.stderr


@pytest.mark.parametrize(
    ("content", "says"),
    [(None, "cannot read"), ("{not json", "not valid JSON"), ("[1, 2]", "JSON object")],
)
def test_bad_profile_is_one_line_naming_the_flag(tmp_path, content, says):
    path = tmp_path / "profile.json"
    if content is not None:
        path.write_text(content)
    r = flashviz("serve", "--no-browser", "--profile", str(path))
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "--profile" in r.stderr and says in r.stderr


def test_steps_is_still_its_own_command():
    r = flashviz("steps")
    assert r.returncode == 0 and "Sij" in r.stdout


@pytest.mark.parametrize(
    ("environ", "platform", "expected"),
    [
        ({"DISPLAY": ":0"}, "linux", True),
        ({"WAYLAND_DISPLAY": "wayland-0"}, "linux", True),
        ({"BROWSER": "firefox"}, "linux", True),
        ({}, "linux", False),
        ({"DISPLAY": ":0", "CI": "true"}, "linux", False),
        ({}, "darwin", True),
        ({"CI": "1"}, "win32", False),
    ],
)
def test_browser_opens_only_where_there_is_one(monkeypatch, environ, platform, expected):
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER", "CI"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "platform", platform)
    assert cli.browser_available() is expected


def test_readme_holds_the_commands_ci_runs():
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert 'pip install -e ".[test]" && pytest' in readme
    assert "pip install . && flashviz" in readme
