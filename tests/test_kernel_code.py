"""The code a step shows is cut from the kernel file that compiles, with i and j substituted."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from flashviz.algos import REGISTRY
from flashviz.model import kernels
from flashviz.model.config import Config
from flashviz.tracing.build import make_trace
from helpers import region_lines

SEED = Path(__file__).resolve().parents[2] / "shared" / "seed" / "fa2-kernel-visualization.txt"


def test_every_step_code_is_its_region_with_indices_substituted():
    t = make_trace(Config(n=10, d=4, br=4, bc=4))
    source = kernels.source(REGISTRY["fa2"].kernel)
    assert t.kernel["source"] == source
    for step in t.steps:
        header, *body = step.code.splitlines()
        assert header == (f"// i = {step.block}" if step.j is None else f"// i = {step.block}, j = {step.j}")
        expected = [
            re.sub(r"\bj\b", str(step.j), re.sub(r"\bi\b", str(step.block), line))
            if step.j is not None
            else re.sub(r"\bi\b", str(step.block), line)
            for line in region_lines(source, step.op)
        ]
        assert body == expected
        first, last = step.lines  # what the editor highlights: exactly the region's lines in the file
        file_lines = source.splitlines()
        assert file_lines[first - 2].strip() == f"// step: {step.op}"
        assert file_lines[last].strip() == "// end step"
        assert [line.strip() for line in file_lines[first - 1 : last]] == [
            line.strip() for line in region_lines(source, step.op)
        ]


def test_literal_indices_as_the_seed_prints_them():
    t = make_trace(Config())
    load_kv_01 = next(s for s in t.steps if s.op == "load_kv" and s.block == 0 and s.j == 1)
    assert "K[(1*Bc + x/D)*D + x%D]" in load_kv_01.code
    assert "V[(1*Bc + x/D)*D + x%D]" in load_kv_01.code
    load_q_1 = next(s for s in t.steps if s.op == "load_q" and s.block == 1)
    assert "Q[(1*Br + x/D)*D + x%D]" in load_q_1.code
    wb_0 = next(s for s in t.steps if s.op == "write_back" and s.block == 0)
    assert "O[(0*Br + x/D)*D + x%D] = Oi[x/D][x%D]" in wb_0.code


@pytest.mark.skipif(not SEED.is_file(), reason="the seed document is not beside this checkout")
def test_online_softmax_region_is_the_seeds_code_verbatim():
    seed = SEED.read_text()
    snippet = seed.split("// i = 0, j = 1\nif (tid < Br) {", 1)[1].split("__syncthreads();", 1)[0]
    seed_code = "// i = 0, j = 1\nif (tid < Br) {" + snippet + "__syncthreads();"
    ours = kernels.step_code(REGISTRY["fa2"].kernel, "online_softmax", i=0, j=1)
    assert ours == seed_code


def test_regions_are_well_formed():
    ops = set(kernels.regions(REGISTRY["fa2"].kernel))
    assert ops == {"load_q", "load_kv", "scores", "online_softmax", "write_back"}


def test_substitute_touches_whole_identifiers_only():
    assert kernels.substitute("m_ij = Sij[i][j] + mi*li + j*Bc", i=3, j=7) == "m_ij = Sij[3][7] + mi*li + 7*Bc"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("algo", sorted(a for a in REGISTRY if REGISTRY[a].kernel_file.endswith(".cu")))
def test_kernel_compiles_for_sm90(algo, tmp_path):
    out = subprocess.run(
        ["nvcc", "-arch=sm_90", "-c", str(kernels.path(REGISTRY[algo].kernel)), "-o", str(tmp_path / "k.o")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "k.o").stat().st_size > 0
