"""End-to-end, item 10: a row of Q with no finite score (every score -inf: Q = K = 1e30 and a softmax scale of -1)
renders in every view: its max -inf, its sum and output NaN as the kernel computes them (docs/trace-schema.md,
"Rows with no finite score"), the other rows' numbers as usual, and no exception. The trace is made by the real
CLI (`flashviz trace --inputs ... --scale -1`) and handed to the page in place of /api/trace's answer."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from pageutil import api, assert_clean, counter_el, expect, expect_step, open_viewer, tooltip_at

pytestmark = pytest.mark.browser

N, D, B = 8, 4, 4
ROW = 1  # the row of Q with no finite score


@pytest.fixture(params=["plain", "compact"])
def masked_trace(tmp_path, request) -> dict:
    """The trace as `flashviz trace --plain` writes it (NaN and +inf as strings, null for -inf) and as it writes it
    by default, read as `flashviz view` hands it to the page (compact arrays: the values themselves, in base64)."""
    rng = np.random.default_rng()
    q = rng.standard_normal((N, D)).astype(np.float32)
    k = np.abs(rng.standard_normal((N, D))).astype(np.float32) + np.float32(0.1)
    v = rng.standard_normal((N, D)).astype(np.float32)
    q[ROW] = 1e30  # (D,) its dot product with every key overflows to +inf; times -1: -inf
    k[:, 0] = 1e30
    np.savez(tmp_path / "qkv.npz", Q=q, K=k, V=v)
    out = tmp_path / "trace.json"
    cmd = [sys.executable, "-m", "flashviz", "trace", "--inputs", str(tmp_path / "qkv.npz"), "--scale", "-1"]
    cmd += ["--br", str(B), "--bc", str(B), "-o", str(out)] + (["--plain"] if request.param == "plain" else [])
    run = subprocess.run(cmd, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    from flashviz.share.trace_files import read_trace_file
    from flashviz.tracing.codec import to_plain

    _, text = read_trace_file(out)  # a file's arrays in base85, deflated: the reader makes them the page's base64
    return {"text": text.decode(), "doc": to_plain(json.loads(out.read_text())), "plain": request.param == "plain"}


def test_a_row_with_no_finite_score_renders_in_every_view(page, server_url, log, masked_trace):
    doc = masked_trace["doc"]
    body = masked_trace["text"]
    assert ('"NaN"' in body) == masked_trace["plain"]  # the CLI wrote the row's NaN as the schema says
    page.route("**/api/trace?*", lambda r: r.fulfill(status=200, content_type="application/json", body=body))
    open_viewer(page, server_url, f"n={N}&d={D}&br={B}&bc={B}&seed=0&scale=-1")
    expect(counter_el(page)).to_have_attribute("data-total", str(len(doc["steps"])))
    # the exactness badge says how many values are not numbers rather than an error of NaN
    expect(page.locator("[data-testid=error-badge]")).to_have_attribute("data-ok", "false")
    expect(page.locator("[data-testid=error-badge]")).to_contain_text(
        f"O {doc['reference']['O']['nonfinite']} not finite"
    )
    page.locator("#carries").scroll_into_view_if_needed()
    page.locator("#narrative-detail").scroll_into_view_if_needed()
    for s in doc["steps"]:
        page.evaluate(f"window.flashviz.goto({s['index']})")
        expect_step(page, s["index"])
        expect(page.locator("[data-testid=narrative]")).to_have_text(s["text"])
        text = page.evaluate("document.body.textContent")
        for junk in ("undefined", "[object", "null"):
            assert junk not in text, (s["index"], junk)
        if s["block"] != 0 or s["op"] not in ("online_softmax", "write_back"):
            continue
        # block 0 holds the row: its max is -inf, its sum NaN, in the carries table and the note under it
        row = page.locator("[data-testid=carries] tbody tr").nth(ROW)
        cells = row.locator("td")
        expect(cells.nth(0)).to_contain_text("\u2212\u221e")
        expect(cells.nth(2)).to_contain_text("NaN")
        expect(page.locator("#carries-note")).to_contain_text(f"Row {ROW}: no finite score")
        # the other rows are numbers (a changed cell reads "old \u2192 new": the new value counts)
        other = page.locator("[data-testid=carries] tbody tr").nth(ROW + 1).locator("td")
        m_now = other.nth(0).text_content().split("\u2192")[-1]
        assert "NaN" not in other.nth(2).text_content() and "\u221e" not in m_now, m_now
        page.evaluate("window.scrollTo(0, 0)")
        assert "\u2212\u221e" in tooltip_at(page, "mi", ROW + 0.5, 0.5)
        assert "NaN" in tooltip_at(page, "li", ROW + 0.5, 0.5)
        page.locator("#carries").scroll_into_view_if_needed()
    # the outputs: the row's O and L are NaN in HBM, the other rows numbers
    page.keyboard.press("End")
    page.evaluate("window.scrollTo(0, 0)")
    assert "NaN" in tooltip_at(page, "O", ROW + 0.5, 0.5)
    assert "NaN" not in tooltip_at(page, "O", ROW + 1.5, 0.5)
    assert "NaN" in tooltip_at(page, "L", ROW + 0.5, 0.5)
    # the comparison (counts only) is unaffected
    doc_cmp = api(page, server_url, f"/api/compare?n={N}&d={D}&br={B}&bc={B}")
    last = page.locator("[data-testid=race-fa2] .race-text")
    expect(last).to_have_attribute("data-bytes", str(doc_cmp["algorithms"]["fa2"]["total"]["bytes"]))
    assert_clean(log)
