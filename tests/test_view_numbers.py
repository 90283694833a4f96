"""Issue 17's numbers and words on the page and the terminal, through the CLI: the export's size line (item 9)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from flashviz.units import human_bytes


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True, env=env)


def element_bytes(html: bytes, id_: str) -> int:
    """The byte length of the page's <script id=id_> element, measured in the file."""
    m = re.search(rb'<script type="application/json" id="' + re.escape(id_.encode()) + rb'">.*?</script>', html, re.S)
    assert m, id_
    return len(m[0])


@pytest.mark.skipif(
    not (Path(__file__).parents[1] / "src/flashviz/viewer/static/single/index.html").is_file(),
    reason="the viewer is not built (cd web && npm run build)",
)
def test_export_size_line_measures_each_part(tmp_path):
    """Item 9: the viewer's size was the total less the raw traces, so it grew with N (1.2 MB at N=8, 1.3 MB at
    N=256, 5.0 MB beside a 366 MB trace). Now each part is measured: the viewer is the same at every N, and each
    trace's size is its element's in the file."""
    viewer = []
    for n, algos in ((8, "fa2"), (256, "fa2"), (8, "fa1,standard")):
        out = tmp_path / f"n{n}-{algos.replace(',', '-')}.html"
        r = run_cli("export", str(out), "--n", str(n), "--algo", algos)
        assert r.returncode == 0, r.stderr
        html = out.read_bytes()
        line = r.stderr.strip().splitlines()[-1]
        assert line.startswith(f"wrote {out} ({human_bytes(len(html))}: "), line
        viewer.append(re.search(r"the viewer with its fonts ([\d.]+ [kMG]?B)", line)[1])
        for k, algo in enumerate(algos.split(",")):
            assert f"{algo} N={n} {human_bytes(element_bytes(html, f'flashviz-trace-{k}'))}" in line, line
        assert f"the comparison {human_bytes(element_bytes(html, 'flashviz-compare-0'))}" in line, line
    assert len(set(viewer)) == 1, viewer


def test_sizes_add_up_to_the_file():
    """flashviz.page.sizes: the viewer, the index, each trace and comparison, the ladder; their sum is the file."""
    from flashviz.api import trace
    from flashviz.cli_share import documents
    from flashviz.page import NoBundle, sizes, standalone

    made = trace("fa2", 8, 4, 4, 4, seed=3)
    docs = documents([(made.config, made.to_json())], compare=True)
    try:
        html = standalone(docs).encode()
    except NoBundle:
        pytest.skip("the viewer is not built")
    parts = dict(sizes(docs))
    assert sum(parts.values()) == len(html)
    assert parts["trace 0"] == element_bytes(html, "flashviz-trace-0")
    assert parts["compare 0"] == element_bytes(html, "flashviz-compare-0")


def table_numbers(text: str) -> set[str]:
    """Every number in the table rows of a rich table's text."""
    return {tok for line in text.splitlines() if line.startswith("│") for tok in re.findall(r"\d[\d,.]*", line)}


@pytest.mark.parametrize(
    "args",
    [
        ("compare", "--n", "4096", "--d", "64", "--br", "64", "--bc", "64"),
        ("compare", "--n", "4096", "--d", "64", "--br", "64", "--bc", "64", "--causal", "--ring", "4"),
        ("compare", "--n", "2147483647", "--d", "256", "--br", "128", "--bc", "11", "--causal"),
        ("ladder",),
    ],
    ids=["compare", "compare-ring", "compare-huge", "ladder"],
)
def test_terminal_tables_fit_columns(args):
    """Item 17: with COLUMNS=80, compare printed 93 columns and ladder 150 (a pipe got a fixed 132 or 150). Every
    line now fits, and every number of the wide table is still there, whole (no "…")."""
    import os

    narrow = run_cli(*args, env={**os.environ, "COLUMNS": "80"})
    wide = run_cli(*args, env={**os.environ, "COLUMNS": "400"})
    assert narrow.returncode == 0 and wide.returncode == 0, narrow.stderr + wide.stderr
    widths = [len(line) for line in narrow.stdout.splitlines()]
    assert max(widths) <= 80, max(widths)
    assert max(len(line) for line in wide.stdout.splitlines()) > 80  # the test would show nothing otherwise
    assert "…" not in narrow.stdout
    assert table_numbers(wide.stdout) <= table_numbers(narrow.stdout)
