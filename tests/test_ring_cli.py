"""The ring's front doors, through their real entry points in subprocesses: `torchrun -m flashviz.ring_demo` on 2
gloo processes (the check passes, the bytes counted are the closed form's, every rank is in the table), its bad
flags (one line, exit code 2, before any process starts), and `flashviz compare --ring P`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from flashviz.hardware.ring_model import model
from flashviz.model.units import human_bytes

pytest.importorskip("torch")
pytest.importorskip("triton")


def flashviz(*args: str) -> subprocess.CompletedProcess:
    """A wide terminal (COLUMNS, which the CLI honours in a pipe too): the tables' titles stay on one line whatever
    COLUMNS the test runner left in the environment."""
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "flashviz", *args], capture_output=True, text=True, env=env)


def test_compare_prints_the_ring_beside_one_device():
    out = flashviz("compare", "--n", "4096", "--d", "64", "--ring", "4", "--causal")
    assert out.returncode == 0, out.stderr
    assert "HBM trips per head" in out.stdout  # the single-device tables are still there
    assert "Ring attention on 4 ranks (zigzag, causal): N=4,096 D=64, 1,024 tokens per rank" in out.stdout
    doc = model(4096, 64, 4, causal=True)
    row = next(line for line in out.stdout.splitlines() if "bytes sent per rank" in line)
    assert human_bytes(doc["forward"]["sent_bytes"]) in row and human_bytes(doc["backward"]["sent_bytes"]) in row


def test_compare_ring_json():
    out = flashviz("compare", "--n", "64", "--d", "32", "--ring", "2", "--json")
    assert out.returncode == 0, out.stderr
    ring = json.loads(out.stdout)["ring"]
    assert ring["config"]["world"] == 2 and ring["config"]["shard"] == 32
    assert ring["forward"]["sent_bytes"] == 1 * 2 * 32 * 32 * 2  # (P-1) shards of K and V, bf16
    assert ring["backward"]["sent_bytes"] == 1 * (2 * 32 * 32 * 2 + 2 * 32 * 32 * 4)  # and dK, dV in fp32


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--n", "64", "--ring", "3"], r"^flashviz: error: --ring: N = 64 must be a multiple of 2P = 6 "),
        (["--ring", "0"], r"^flashviz compare: error: Invalid value for '--ring': must be an integer in 1\.\.1024"),
        (["--ring", "x" * 200], r"^flashviz compare: error: Invalid value for '--ring': must be an integer"),
    ],
)
def test_compare_ring_refuses_in_one_line(args, message):
    out = flashviz("compare", *args)
    assert out.returncode == 2
    assert len(out.stderr.splitlines()) == 1 and re.search(message, out.stderr), out.stderr


def test_ring_demo_under_torchrun():
    seed = str(int.from_bytes(os.urandom(4), "little"))
    print(f"demo seed: {seed}")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "flashviz.ring_demo", "--seq-len", "32", "--head-dim", "32", "--heads", "1", "--causal",
           "--seed", seed]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "flashviz.ring_attention on 2 processes (gloo, cpu): B=1 H=1 N=32 D=32, zigzag, causal" in out.stdout
    assert "bytes sent equal the closed form on every rank" in out.stdout
    assert "check: passed" in out.stdout
    doc = model(32, 32, 2, causal=True)
    for rank, chunks in ((0, "0, 3"), (1, "1, 2")):
        row = next(line for line in out.stdout.splitlines() if re.match(rf"\W+{rank} \W+{chunks} ", line))
        assert row.count(human_bytes(doc["forward"]["sent_bytes"], digits=2)) == 2  # counted and model
        assert f"{doc['rank_flops'][rank]:,}" in row


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seq-len", "30", "--processes", "4"], r"--seq-len: must be a multiple of 8 \(zigzag on 4 processes"),
        (["--head-dim", "48"], r"Invalid value for '--head-dim': must be one of 32, 64, 96, 128, 256 \(got '48'\)"),
        (["--processes", "65"], r"Invalid value for '--processes': must be an integer in 1\.\.64"),
    ],
)
def test_ring_demo_refuses_in_one_line(args, message):
    out = subprocess.run([sys.executable, "-m", "flashviz.ring_demo", *args], capture_output=True, text=True)
    assert out.returncode == 2
    assert len(out.stderr.splitlines()) == 1, out.stderr
    assert re.match(r"^flashviz\.ring_demo: error: ", out.stderr) and re.search(message, out.stderr), out.stderr


def test_readme_numbers_are_the_models():
    """The README's ring numbers: compare --ring's closed form at N=131072, D=128, P=8, causal, and the bytes of its
    CPU run (4 processes, N=256, D=64, H=2) as the model has them."""
    from pathlib import Path

    readme = Path(__file__).resolve().parents[1] / "README.md"
    if not readme.is_file():
        pytest.skip("no README beside this checkout")
    text = " ".join(readme.read_text().split())
    doc = model(131072, 128, 8, causal=True)
    step = doc["forward"]["steps"][0]
    said = (
        f"{human_bytes(step['sent_bytes'])} per forward step sent in {step['transfer_s'] * 1e6:.3g} µs under "
        f"{step['compute_s'] * 1e6:.3g} µs of compute"
    )
    assert said in text
    overlap = (
        f"from {doc['forward']['min_shard_for_overlap']:,} tokens per rank forward and "
        f"{doc['backward']['min_shard_for_overlap']:,} backward"
    )
    assert overlap in text
    run = model(256, 64, 4, causal=True, heads=2)
    lines = readme.read_text().splitlines()
    start = next(k for k, line in enumerate(lines) if "-m flashviz.ring_demo --causal" in line and line.startswith("$"))
    block = lines[start : start + next(k for k, line in enumerate(lines[start:]) if line.startswith("```"))]
    rows = [line for line in block if re.match(r"│\s+[0-3] │", line)]  # the ring demo's per-rank table
    assert len(rows) == 4
    for line in rows:
        assert line.count(human_bytes(run["forward"]["sent_bytes"], digits=2)) == 2
        assert line.count(human_bytes(run["backward"]["sent_bytes"], digits=2)) == 2
