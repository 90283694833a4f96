"""Your own kernel in the viewer (issue 21, phase 2): a kernel trace made into the viewer's Trace
(flashviz.yourkernel.viewer) through the CLI (`flashviz trace --kernel ... -o t.json`, then `flashviz export --trace
t.json`), the Python API (`KernelTrace.viewer_trace()`) and the notebook widget (`flashviz.show(kernel=...)`, whose
edits run the kernel again). The two example kernels (examples/my_attn.py, examples/my_attn_bug.py) on fresh random
inputs; every number asserted is computed here in float64 from the inputs, independently of flashviz.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import flashviz
from flashviz.model.config import ConfigError
from flashviz.share.trace_files import check_trace, read_trace_file
from flashviz.tracing.codec import decode_doc

pytest.importorskip("triton")
pytest.importorskip("torch")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
GOOD, BUG = EXAMPLES / "my_attn.py", EXAMPLES / "my_attn_bug.py"
N, D, B = 40, 16, 16  # three blocks of Q (the last one of 8 rows), three tiles of K and V
META = {"BLOCK_M": B, "BLOCK_N": B}
TOL = {"m": 1e-4, "l": 2e-3, "acc": 4e-3, "O": 4e-3}  # float16's tolerances (docs/yourkernel.md)
LOG2E = 1.4426950408889634


def f16(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).astype(np.float64)


def inputs(rng) -> dict[str, np.ndarray]:
    return {k: rng.standard_normal((N, D)).astype(np.float32) for k in "QKV"}


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True, cwd=cwd)


def line_of(path: Path, text: str) -> int:
    found = [k for k, line in enumerate(path.read_text().splitlines(), start=1) if text in line]
    assert len(found) == 1, text
    return found[0]


def running_state(q, k, v, rows: slice, upto: int, causal: bool = False):
    """The exact online-softmax state of `rows` after the keys 0..upto-1, in the examples' units: m and l in log2
    units (exp2 with the scale times log2 e folded in), acc unnormalised."""
    s = q[rows] @ k[:upto].T / np.sqrt(D) * LOG2E  # (rows, keys)
    if causal:
        r = np.arange(rows.start, rows.stop)[:, None]
        s = np.where(r >= np.arange(upto)[None, :], s, -np.inf)
    m = s.max(1)
    p = np.exp2(s - m[:, None])
    return m, p.sum(1), p @ v[:upto]


def first_moved_tile(q, k) -> int:
    """The first tile of block 0 at which a row's running max grows: where the missing rescale first shows."""
    s = q[:B] @ k.T
    tiles = [slice(j * B, min(N, (j + 1) * B)) for j in range(3)]
    running = np.maximum.accumulate(np.stack([s[:, t].max(1) for t in tiles]), axis=0)
    return next(j for j in range(1, 3) if np.any(running[j] > running[j - 1]))


def tile_end_steps(doc, block: int) -> dict[int, dict]:
    """tile j -> the block's step at the end of that tile (the one whose carries hold the tile's values)."""
    out = {}
    for s in doc["steps"]:
        if s["block"] == block and s["carries"] and "m_i" in s["carries"]:
            out[s["j"]] = s
    return out


def note_text(doc, step) -> str:
    runs = doc["carries"]["notes"][step["carries_note"]]
    return "".join(r if isinstance(r, str) else r.get("code", r.get("b", "")) for r in runs)


def test_the_bug_through_the_cli_and_export(tmp_path, rng):
    """trace --kernel -o t.json, then export --trace t.json: the page's Trace holds the file, its steps, its tiles,
    its carries beside float64 (the divergence at the tile where the max first moves), and its traffic."""
    qkv = inputs(rng)
    np.savez(tmp_path / "qkv.npz", **qkv)
    q, k, v = (f16(qkv[x]) for x in "QKV")
    j0 = first_moved_tile(q, k)
    done = cli("trace", "--kernel", f"{BUG}:attn_fwd", "--meta", "BLOCK_M=16,BLOCK_N=16", "--inputs", "qkv.npz",
               "-o", "t.json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1, done.stderr
    said = f"block 0, tile {j0}: acc diverges"
    assert done.stdout.startswith(said), done.stdout
    exported = cli("export", "k.html", "--trace", "t.json", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert "1 trace (fa2 N=40" in exported.stderr
    assert '"flashviz.trace/4"' in (tmp_path / "k.html").read_text()
    doc, data = read_trace_file(tmp_path / "t.json")  # the viewer's Trace, checked as every trace file is
    assert json.loads(data) == doc
    doc = decode_doc(doc)
    # the top line and the code panel
    assert doc["tagline"].startswith(said) and doc["tagline"].endswith("so the rescale by alpha is missing")
    assert doc["idea"]["summary"] == doc["tagline"]
    assert doc["kernel"] == {"file": "my_attn_bug.py", "name": "attn_fwd", "source": BUG.read_text()}
    lines = len(BUG.read_text().splitlines())
    k_line, v_line = line_of(BUG, "k = tl.load("), line_of(BUG, "v = tl.load(")
    for s in doc["steps"]:
        first, last = s["lines"]
        assert 1 <= first <= last <= lines, s["lines"]
        for t in s["transfers"]:  # a load's step highlights its tl.load
            if t["tensor"] in ("K", "V"):
                assert first <= (k_line if t["tensor"] == "K" else v_line) <= last, (s["op"], s["lines"])
    # the tiles the kernel read, from the inputs as float16 rounded them
    for s in doc["steps"]:
        for t in s["transfers"]:
            a, b = t["rows"]
            if t["kind"] == "read" and t["tensor"] in ("K", "V"):
                assert (a, b) == (s["j"] * B, min(N, (s["j"] + 1) * B))
                tile = np.asarray(s["sram"][t["tensor"] + "j"], dtype=np.float64)
                assert np.array_equal(tile[: b - a], {"K": k, "V": v}[t["tensor"]][a:b])
                assert not tile[b - a :].any()
            if t["kind"] == "read" and t["tensor"] == "Q":
                assert (a, b) == (s["block"] * B, min(N, (s["block"] + 1) * B))
    # the carries at the end of every tile of block 0, beside float64 computed here
    ends = tile_end_steps(doc, 0)
    assert sorted(ends) == [0, 1, 2]
    for j, s in ends.items():
        m, l, acc = running_state(q, k, v, slice(0, B), min(N, (j + 1) * B))
        c = {name: np.asarray(x, dtype=np.float64) for name, x in s["carries"].items()}
        got = np.asarray(s["sram"]["Oi"], dtype=np.float64)  # the kernel's acc, in the SRAM picture
        assert np.allclose(c["m_i.float64"], m, rtol=0, atol=1e-5)
        assert np.allclose(c["l_i.float64"], l, rtol=1e-6)
        assert np.abs(c["m_i"] - m).max() <= TOL["m"] * max(1, np.abs(m).max())
        assert np.array_equal(c["m_i.error"], np.abs(c["m_i"] - c["m_i.float64"]).astype(np.float32))
        assert np.allclose(c["acc.error"], np.abs(got - acc).max(1), rtol=1e-4, atol=1e-6)  # float64 computed here
        acc_err = np.abs(got - acc).max() / np.abs(acc).max()
        diverges = "(diverges)" in note_text(doc, s)
        assert diverges == (acc_err > TOL["acc"]), (j, acc_err, note_text(doc, s))
        assert diverges == (j >= j0)
        assert s["op"] == "online_softmax" and s["lines"][0] <= line_of(BUG, "    acc = tl.dot(") <= s["lines"][1]
    assert doc["carries"]["view"] == "table"
    assert doc["carries"]["labels"]["acc.error"] == "|acc \u2212 float64| (row max)"
    # O and L as the kernel left them, against float64
    s = q @ k.T / np.sqrt(D)
    p = np.exp(s - s.max(1)[:, None])
    O = p @ v / p.sum(1)[:, None]
    assert not doc["reference"]["ok"] and doc["reference"]["O"]["max_rel"] > TOL["O"]
    assert doc["reference"]["L"]["ok"]  # m_i and l_i are right: so is L
    assert np.abs(np.asarray(doc["outputs"]["L"]) - (s.max(1) + np.log(p.sum(1)))).max() < 1e-3
    assert np.abs(np.asarray(doc["outputs"]["O"]) - O).max() > TOL["O"]
    # the traffic: what the kernel moved (head 0) beside FA2's closed form, both computed here
    tr = 3
    want = {"Q": (N * D, 0), "K": (tr * N * D, 0), "V": (tr * N * D, 0), "O": (0, N * D), "L": (0, N)}
    assert {t: (c["read"], c["written"]) for t, c in doc["hbm"].items()} == want
    assert {t: (doc["model"][t]["read"], doc["model"][t]["written"]) for t in want} == want
    assert doc["model"]["matches"] is True
    assert doc["phases"][-1]["hbm"] == doc["hbm"]
    # no invented views
    assert doc["flops"] is None and doc["hardware"] is None and doc["tensor_cores"] is None
    assert "Sij" not in doc["buffers"]


@pytest.mark.parametrize("causal", [False, True])
def test_the_correct_kernel_through_the_api(rng, causal):
    qkv = inputs(rng)
    made = flashviz.trace(kernel=f"{GOOD}:attn_fwd", inputs=qkv, causal=causal, meta=META)
    assert made.verdict == "correct", made.message
    trace = made.viewer_trace()
    for compact in (True, False):
        doc = json.loads(trace.to_json(compact=compact))
        check_trace(doc, "the trace", "trace")  # the trace checks (schema, structure, trace_shape) take it
    assert trace.tagline == made.message and trace.tagline.startswith("correct: m_i, l_i, acc, O and L match float64")
    assert trace.reference["ok"]
    q, k, v = (f16(qkv[x]) for x in "QKV")
    # every block's steps, each block's phases its number of steps; the picks are the launch's blocks
    assert [b["phases"] for b in trace.blocks] == [len(p["steps"]) for p in made.doc["programs"]]
    assert len(trace.phases) == max(b["phases"] for b in trace.blocks)
    tiles = [1, 2, 3] if causal else [3, 3, 3]  # tiles each block of Q visits
    keys = sum(min(N, t * B) for t in tiles)
    assert trace.hbm["K"] == {"read": keys * D, "written": 0} == trace.hbm["V"]
    assert trace.model["matches"] is True
    for i, t in enumerate(tiles):  # the last tile's carries, against this test's float64, causal as the launch is
        rows = slice(i * B, min(N, (i + 1) * B))
        m, l, acc = running_state(q, k, v, rows, min(N, t * B), causal)
        end = tile_end_steps(json.loads(trace.to_json()), i)[t - 1]
        live = rows.stop - rows.start
        assert np.allclose(np.asarray(end["carries"]["m_i.float64"])[:live], m, rtol=0, atol=1e-5)
        assert np.allclose(np.asarray(end["carries"]["l_i.float64"])[:live], l, rtol=1e-6)
        assert np.abs(np.asarray(end["sram"]["Oi"])[:live] - acc).max() / np.abs(acc).max() < TOL["acc"]
    # the write-back's L is the kernel's, in natural units (it stores log2), beside float64's
    wb = next(s for s in trace.steps if s.op == "write_back" and s.block == 0)
    s = q[:B] @ k.T / np.sqrt(D)
    if causal:
        s = np.where(np.arange(B)[:, None] >= np.arange(N)[None, :], s, -np.inf)
    L = s.max(1) + np.log(np.exp(s - s.max(1)[:, None]).sum(1))
    assert np.abs(wb.carries["L"] - L).max() < 1e-3
    assert np.allclose(wb.carries["L.float64"], L, atol=1e-6)
    assert [t.tensor for t in wb.transfers] == ["L", "O"]


def test_the_widget_runs_the_kernel_again_on_an_edit(tmp_path):
    pytest.importorskip("anywidget")
    w = flashviz.show(kernel=f"{BUG}:attn_fwd", meta=META, n=N, d=D)
    assert w.kernel_trace.verdict == "diverges" and w.trace.tagline == w.kernel_trace.message
    assert w.config["n"] == N and w.config["br"] == B
    reply = json.loads(w._answer({"type": "ask", "config": {**w.config, "n": 48, "causal": True}}))
    assert reply["config"]["n"] == 48 and reply["config"]["causal"] is True
    assert w.kernel_trace.doc["launch"]["n"] == 48 and w.kernel_trace.doc["launch"]["causal"] is True
    assert reply["tagline"] == w.kernel_trace.message
    assert reply["kernel"]["source"] == BUG.read_text()
    # the tiles edited are the kernel's BLOCK_M and BLOCK_N
    reply = json.loads(w._answer({"type": "ask", "config": {**w.config, "n": 48, "bc": 32}}))
    assert w.kernel_trace.doc["binding"]["BLOCK_N"]["value"] == 32 and reply["config"]["bc"] == 32
    # a kernel trace file, as flashviz view opens it
    (tmp_path / "t.json").write_bytes(w.kernel_trace.to_json())
    from_file = flashviz.show(str(tmp_path / "t.json"))
    assert from_file.trace["tagline"] == w.kernel_trace.message and from_file.config["bc"] == 32
    # a KernelTrace shown as it is cannot be run again: said in one line
    shown = flashviz.show(w.kernel_trace)
    with pytest.raises(ConfigError, match=r"^kernel: this widget shows a KernelTrace"):
        shown._answer({"type": "ask", "config": {**shown.config, "n": 32}})


def test_a_kernel_trace_without_its_arrays_is_one_line(tmp_path, rng):
    made = flashviz.trace(kernel=f"{GOOD}:attn_fwd", inputs=inputs(rng), meta=META)
    doc = dict(made.doc)
    del doc["arrays"]
    (tmp_path / "old.json").write_text(json.dumps(doc))
    done = cli("export", "k.html", "--trace", "old.json", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--trace" in lines[0] and "has no arrays" in lines[0], done.stderr


def test_a_kernel_with_markers_two_heads(rng):
    """fa2_marked.py (the tests' kernel in the tutorial's style, with `# step:` regions): its steps are its regions,
    each step's highlighted lines inside its own region; head 0 is drawn, its traffic counted alone."""
    marked = Path(__file__).parent / "fixtures" / "kernels" / "fa2_marked.py"
    n = 48
    made = flashviz.trace(kernel=f"{marked}:attn_fwd", n=n, d=D, heads=2, seed=int(rng.integers(2**31)), meta=META)
    assert made.verdict == "correct", made.message
    trace = made.viewer_trace()
    check_trace(json.loads(trace.to_json(compact=True)), "the trace", "trace")
    text = marked.read_text().splitlines()
    region: dict[int, str] = {}
    name = None
    for k, line in enumerate(text, start=1):
        if line.strip().startswith("# step: "):
            name = line.strip().removeprefix("# step: ")
        elif line.strip() == "# end step":
            name = None
        elif name is not None:
            region[k] = name
    assert set(region.values()) == {"load_q", "load_kv", "scores", "online_softmax", "write_back"}
    for s in trace.steps:
        assert all(region.get(x) == s.op for x in range(s.lines[0], s.lines[1] + 1)), (s.op, s.lines)
    assert [s.op for s in trace.steps if s.block == 0] == ["load_q", *["load_kv", "scores", "online_softmax"] * 3,
                                                          "write_back"]  # fmt: skip
    assert trace.hbm["K"] == {"read": 3 * n * D, "written": 0}  # head 0: Tr·N·D, the other head not counted here


def test_a_faulted_kernel_is_one_line_in_the_viewer(tmp_path, rng):
    plain = Path(__file__).parent / "fixtures" / "kernels" / "fa2_plain.py"
    text = plain.read_text()
    assert text.count("s = tl.dot(q, k) * sm_scale") == 1
    (tmp_path / "bad.py").write_text(text.replace("s = tl.dot(q, k) * sm_scale", "s = tl.dot(q, v) * sm_scale"))
    np.savez(tmp_path / "qkv.npz", **inputs(rng))
    done = cli("trace", "--kernel", "bad.py:attn_fwd", "--meta", "BLOCK_M=16,BLOCK_N=16", "--inputs", "qkv.npz",
               "-o", "t.json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1
    done = cli("export", "k.html", "--trace", "t.json", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "faulted, so no whole run is there to draw: block 0 (program (0, 0, 0))" in lines[0]
    assert "raised UnboundLocalError" in lines[0]
