"""End-to-end: the GPU profile panel, from `flashviz serve --profile` (create_app(profile=...)) with a profile
recorded on the H200 (bench/results/), and from a file dropped onto the page when the server has none."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = pytest.mark.browser

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def recorded(name: str) -> Path:
    found = sorted(RESULTS.glob(f"*/{name}"))
    assert found, f"no recorded {name} under {RESULTS}"
    return found[-1]


@pytest.fixture(scope="module")
def profiled_url():
    """A second server, started as `flashviz serve --profile profile_n4096_d64_b32.json` would start it."""
    uvicorn = pytest.importorskip("uvicorn")
    from flashviz import server

    if not (server.static_dir() / "index.html").is_file():
        pytest.skip("the viewer is not built")
    profile = json.loads(recorded("profile_n4096_d64_b32.json").read_text())
    port = _free_port()
    app = server.create_app(profile=profile)
    srv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the profiled server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", profile
    srv.should_exit = True
    thread.join(timeout=10)


def open_viewer(page, base: str, query: str = "") -> None:
    page.goto(f"{base}/{('?' + query) if query else ''}")
    page.wait_for_selector("html[data-ready=true]")


def assert_clean(log) -> None:
    assert log.errors == [], f"console errors: {log.errors}"
    assert log.hosts <= {"127.0.0.1"}, f"requests left the local server: {sorted(log.hosts)}"


def test_profile_from_the_server_beside_the_counters(page, profiled_url, log):
    base, profile = profiled_url
    open_viewer(page, base)
    panel = page.locator("[data-testid=profile]")
    page.locator("#gpu").scroll_into_view_if_needed()
    expect(panel.locator("[data-testid=profile-launch]")).to_have_count(1)
    assert page.locator("[data-testid=profile-drop]").is_hidden()
    head = panel.locator("[data-testid=profile-head]").text_content()
    assert "NVIDIA H200" in head and "N=4,096" in head
    # measured global bytes against the model's, and the verdict
    cmp = profile["comparison"]
    load = panel.locator("[data-testid=profile-load]")
    assert int(load.get_attribute("data-measured")) == cmp["load"]["measured"]
    assert int(load.get_attribute("data-model")) == cmp["load"]["model"]
    assert "exact" in load.text_content()
    assert "exact" in panel.locator("[data-testid=profile-store]").text_content()
    # the L2 effect, in numbers and in words: global loads - DRAM reads
    m = profile["measured"]
    l2 = panel.locator("[data-testid=profile-l2]")
    assert float(l2.get_attribute("data-caught")) == m["load_bytes"] - m["dram_read_bytes"]
    words = panel.locator("[data-testid=profile-l2-words]").text_content()
    assert "caches" in words and "98.8%" in words and "K and V" in words
    assert panel.locator("[data-testid=profile-summary] li").count() == len(profile["summary"])
    # the page shows the seed's example, not the profiled launch: it says so
    expect(panel.locator("[data-testid=profile-match]")).to_contain_text("another launch")
    assert_clean(log)


def test_profile_of_the_same_launch_says_so_and_a_dropped_file_replaces_nothing_on_a_bad_file(page, server_url, log):
    # the default server has no profile: the page offers the drop zone and asks for no /api/profile
    open_viewer(page, server_url)
    page.locator("#gpu").scroll_into_view_if_needed()
    expect(page.locator("[data-testid=profile-drop]")).to_be_visible()
    assert not [u for u in log.urls if "/api/profile" in u]
    # a file that is not a profile is refused with the reason
    page.set_input_files(
        "[data-testid=profile-file]", files=[{"name": "x.json", "mimeType": "application/json", "buffer": b'{"a": 1}'}]
    )
    expect(page.locator("[data-testid=profile-message]")).to_contain_text("not a flashviz profile")
    # the recorded profile of the seed's example, chosen as a file: shown, and it is the launch on screen
    page.set_input_files("[data-testid=profile-file]", str(recorded("profile_seed.json")))
    panel = page.locator("[data-testid=profile]")
    expect(panel.locator("[data-testid=profile-launch]")).to_have_count(1)
    expect(panel.locator("[data-testid=profile-match]")).to_have_attribute("data-same", "true")
    assert "sector" in panel.locator("[data-testid=profile-store]").text_content()
    # at N=8 DRAM reads exceed the loads: no cache effect can be read off it, and the panel says so
    assert "no cache effect" in panel.locator("[data-testid=profile-l2-words]").text_content()
    assert_clean(log)


def test_dropping_a_profile_onto_the_page(page, server_url, log):
    open_viewer(page, server_url)
    data = recorded("profile_standard_n1024.json").read_text()
    page.evaluate(
        """(text) => {
          const dt = new DataTransfer();
          dt.items.add(new File([text], "profile.json", { type: "application/json" }));
          document.body.dispatchEvent(new DragEvent("dragover", { dataTransfer: dt, bubbles: true, cancelable: true }));
          document.body.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
        }""",
        data,
    )
    panel = page.locator("[data-testid=profile]")
    expect(panel.locator("[data-testid=profile-launch]")).to_have_count(1)
    # standard runs three kernels: each listed with what it moved
    expect(panel.locator("[data-testid=profile-kernels] tbody tr")).to_have_count(3)
    # the panel offers to open the profiled config, and doing so loads it
    steps = page.request.get(f"{server_url}/api/trace?algo=standard&n=1024&d=64&br=32&bc=32&seed=0").json()["steps"]
    page.click("[data-testid=profile-open]")
    expect(page.locator("[data-testid=step-counter]")).to_have_attribute("data-total", str(len(steps)), timeout=30_000)
    assert "algo=standard" in page.url and "n=1024" in page.url
    expect(panel.locator("[data-testid=profile-match]")).to_have_attribute("data-same", "true")
    assert_clean(log)
