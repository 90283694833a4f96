"""`flashviz serve` (and plain `flashviz`) as a person runs it: a real process on a free loopback port."""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from flashviz.gpu.profile_schema import ProfileError, check
from flashviz.server import serve
from serving import HANG_S, quiet_env, serving
from serving import get as fetch

ESCAPES = ("/../pyproject.toml", "/%2e%2e/pyproject.toml", "/../../../../etc/passwd", "/..%2f..%2fREADME.md")
RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"
RECORDED = sorted(RESULTS.glob("*/profile_*.json"))


def flashviz(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """A hang is a failure too (the timeout), not only a wrong exit code."""
    return subprocess.run(
        [sys.executable, "-m", "flashviz", *args],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        env=quiet_env(),
        **kwargs,
    )


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    status, _, body = fetch(url, headers)
    return status, body


def raw_get(port: int, target: str) -> bytes:
    """An HTTP request with the path exactly as written (no client normalises `..` away)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_serve_answers_and_stops_cleanly_on_ctrl_c():
    profile = json.loads(RECORDED[0].read_text())
    with serving("serve", "--no-browser", "--port", "0", "--profile", str(RECORDED[0])) as (proc, url, _):
        status, body = get(url + "api/trace?n=16&d=8&br=4&bc=8")
        assert status == 200
        trace = json.loads(body)
        assert trace["schema"] == "flashviz.trace/4" and trace["config"]["n"] == 16 and trace["reference"]["ok"]
        status, body = get(url + "api/trace?n=0")
        assert status == 422 and json.loads(body)["field"] == "n"
        assert json.loads(get(url + "api/profile")[1]) == profile
        port = int(url.rsplit(":", 1)[1].rstrip("/"))
        for target in ESCAPES:
            head, _, body = raw_get(port, target).partition(b"\r\n\r\n")
            assert head.split()[1] in (b"400", b"404", b"503"), (target, head)
            assert b"[project]" not in body and b"root:" not in body and b"# flashviz" not in body
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=HANG_S)
        assert proc.returncode == 0
        assert "Traceback" not in err and "KeyboardInterrupt" not in err
        assert "stopped" in out


def test_plain_flashviz_serves_the_seeds_example():
    with serving() as (_, url, _port):
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


def recorded_profile() -> dict:
    return json.loads((RESULTS / "h200-2026-11-29" / "profile_seed.json").read_text())


def write(path: Path, doc) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


def test_every_recorded_profile_is_accepted():
    assert len(RECORDED) >= 9
    for path in RECORDED:
        assert serve.load_profile(path) == json.loads(path.read_text()), path


def test_a_recorded_profile_is_served_as_it_is():
    with serving("serve", "--no-browser", "--profile", str(RECORDED[-1])) as (_, url, _port):
        assert json.loads(get(url + "api/profile")[1]) == json.loads(RECORDED[-1].read_text())
        assert json.loads(get(url + "api/limits")[1])["profile"] is True


def limit_memory() -> None:
    """So that the old code, which read /dev/zero to the end, fails fast instead of filling the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))


def fifo(tmp: Path) -> str:
    os.mkfifo(tmp / "fifo")
    return str(tmp / "fifo")


def oversized(tmp: Path) -> str:
    with open(tmp / "big.json", "wb") as f:
        f.truncate(serve.PROFILE_MAX_BYTES + 1)  # sparse: no disk used
    return str(tmp / "big.json")


def changed(**where):
    """A recorded profile with one value replaced: `config__d="<b>4</b>"` sets doc["config"]["d"]."""

    def make(tmp: Path) -> str:
        doc = recorded_profile()
        for path, value in where.items():
            *parents, key = path.split("__")
            part = doc
            for p in parents:
                part = part[p]
            if value is None:
                del part[key]
            else:
                part[key] = value
        return write(tmp / "profile.json", doc)

    return make


NOT_PROFILES = {
    "dev-zero": (lambda tmp: "/dev/zero", "not a regular file (a character device)"),
    "fifo": (fifo, "not a regular file (a FIFO)"),
    "oversized": (oversized, f"more than a profile holds ({serve.PROFILE_MAX_BYTES:,} at most)"),
    "trace": (lambda tmp: write(tmp / "trace.json", {"schema": "flashviz.trace/1", "config": {}}), "a trace"),
    "no-schema": (lambda tmp: write(tmp / "p.json", {"device": "H200"}), "schema must be 'flashviz.profile/1'"),
    "html-in-d": (changed(config__d="<b>4</b>"), "config.d: "),
    "html-in-measured": (changed(comparison__load__measured="<meta http-equiv=refresh>"), "comparison.load.measured"),
    "html-in-verdict": (changed(comparison__store__verdict="<a href=x>"), "comparison.store.verdict"),
    "no-kernels": (changed(kernels=[]), "kernels: "),
    "no-load-bytes": (changed(model__load_bytes=None), "model.load_bytes: missing"),
    "long-algo": (changed(config__algo="x" * 500), "config.algo: must be one of"),
}


@pytest.mark.parametrize("case", NOT_PROFILES)
def test_serve_refuses_what_is_not_a_profile_at_start(tmp_path, case):
    """Item 12: /dev/zero was read until memory ran out, a FIFO hung, a trace or a crafted file was served."""
    make, says = NOT_PROFILES[case]
    r = flashviz("serve", "--no-browser", "--profile", make(tmp_path), preexec_fn=limit_memory)
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flashviz: error: --profile: ") and says in lines[0], lines
    assert len(lines[0]) < 400 and r.stdout == ""


def test_the_schema_checker_names_the_key():
    doc = recorded_profile()
    doc["kernels"][0]["measured"]["load_bytes"] = "lots"
    with pytest.raises(ProfileError, match=r"^kernels\[0\]\.measured\.load_bytes: .*'lots'"):
        check(doc)
    doc = recorded_profile()
    comparison = doc.pop("comparison")
    with pytest.raises(ProfileError, match="has no comparison with the model"):
        check(doc)
    doc["kernels"][0]["comparison"] = comparison
    check(doc)  # profiles from before several kernels keep the comparison per kernel, as the page reads it


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "::"])
def test_a_wildcard_host_warns_prints_its_address_and_keeps_the_host_check(wildcard):
    """Item 15: --host 0.0.0.0 printed http://127.0.0.1:..., said nothing and answered any Host header."""
    if wildcard == "::" and not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    args = ("serve", "--no-browser", "--host", wildcard, "--allow-host", "Viz.Example.org", "--allow-host", "10.1.2.3")
    try:
        ctx = serving(*args)
        proc, url, port = ctx.__enter__()
    except AssertionError as exc:
        if wildcard == "::" and "cannot listen" in str(exc):
            pytest.skip("cannot bind :: here")
        raise
    try:
        assert url == (f"http://0.0.0.0:{port}/" if wildcard == "0.0.0.0" else f"http://[::]:{port}/")
        local = f"http://127.0.0.1:{port}/api/limits"
        assert get(local, {"Host": "evil.example.com"})[0] == 421
        assert get(local, {"Host": f"evil.example.com:{port}"})[0] == 421
        for host in (f"127.0.0.1:{port}", "localhost", f"viz.example.org:{port}", "10.1.2.3", f"[::1]:{port}"):
            assert get(local, {"Host": host})[0] == 200, host
    finally:
        ctx.__exit__(None, None, None)
    warning = proc.stderr.read().strip().splitlines()[0]
    assert warning.startswith(f"flashviz: warning: --host {wildcard} listens on every network interface")
    assert "viz.example.org" in warning and "--allow-host" in warning


def test_loopback_prints_no_warning_and_checks_the_host():
    with serving("serve", "--no-browser") as (proc, url, _port):
        assert get(url + "api/limits", {"Host": "rebound.example.com"})[0] == 421
        assert get(url + "api/limits")[0] == 200
    assert "warning" not in proc.stderr.read()


@pytest.mark.parametrize("name", ["evil host", "a:b:c:d:e:f:g:h:i", "x" * 300, "host/path", ""])
def test_a_bad_allow_host_is_one_line_and_exit_2(name):
    r = flashviz("serve", "--no-browser", "--allow-host", name)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--allow-host" in lines[0] and len(lines[0]) < 200


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
    assert serve.browser_available() is expected


def test_readme_holds_the_commands_ci_runs():
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert 'pip install -e ".[test]" && pytest' in readme
    assert "pip install . && flashviz" in readme
