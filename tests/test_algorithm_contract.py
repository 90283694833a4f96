"""Issue 18: an algorithm is one typed object. Each folder's `ALGORITHM` is an `flashviz.algos.base.Algorithm` built
from its parts by direct imports, and mypy checks each part against its Protocol, so that a folder with a missing or
mistyped part fails `mypy src` (not a test at run time). Shown here on two folders made in a temporary directory from
fa2's parts: one whole, one whose traffic model lacks `sram_bytes`, whose expectation's TOLERANCE is a string and
whose words lack `PARTS`."""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flashviz.algos import FOLDERS, ORDER, REGISTRY
from flashviz.algos.base import Algorithm

ROOT = Path(__file__).resolve().parents[1]

FOLDER = """
from flashviz.algos.base import Algorithm
from flashviz.algos.fa2 import ALGORITHM as FA2
from flashviz.algos.fa2 import engine, picture
from flashviz.algos.fa2 import flops, gpu

from . import expect, traffic, words

ALGORITHM = Algorithm(
    name="{name}",
    title=FA2.title,
    short=FA2.short,
    kernel=FA2.kernel,
    kernel_name=FA2.kernel_name,
    inputs=FA2.inputs,
    outputs=FA2.outputs,
    tensors=FA2.tensors,
    causal=True,
    direction="forward",
    grid="Tr",
    idea=FA2.idea,
    trace_values=FA2.trace_values,
    engine=engine,
    traffic=traffic,
    expect=expect,
    picture=picture,
    words=words,
    flops=flops,
    gpu=gpu.SPEC,
)
"""
BROKEN_TRAFFIC = """
from flashviz.algos.fa2.traffic import count, rules, steps  # no sram_bytes
"""
BROKEN_EXPECT = """
from flashviz.algos.fa2.expect import ENGINE_TOLERANCE, LOG_DOMAIN, expected

TOLERANCE = "1e-5"  # a string, not {output: tolerance}
"""
BROKEN_WORDS = """
from flashviz.algos.fa2.words import LABELS, say  # no PARTS
"""


def test_every_folder_exports_its_algorithm_and_the_registry_holds_them_in_order():
    for folder, algo in zip(FOLDERS, ORDER, strict=True):
        assert importlib.import_module(f"flashviz.algos.{folder}").ALGORITHM is algo
        assert isinstance(algo, Algorithm) and REGISTRY[algo.name] is algo and algo.package.endswith(folder)


@pytest.mark.skipif(
    shutil.which("mypy") is None and not Path(sys.executable).with_name("mypy").exists(), reason="no mypy"
)
def test_mypy_fails_a_folder_with_a_missing_or_mistyped_part(tmp_path):
    for name, broken in (("whole", False), ("broken", True)):
        here = tmp_path / name
        here.mkdir()
        (here / "__init__.py").write_text(textwrap.dedent(FOLDER.format(name=name)))
        (here / "traffic.py").write_text(BROKEN_TRAFFIC if broken else "from flashviz.algos.fa2.traffic import *\n")
        (here / "expect.py").write_text(
            BROKEN_EXPECT
            if broken
            else "from flashviz.algos.fa2.expect import *\n"
            "from flashviz.algos.fa2.expect import ENGINE_TOLERANCE, LOG_DOMAIN, TOLERANCE, expected\n"
        )
        (here / "words.py").write_text(
            BROKEN_WORDS if broken else "from flashviz.algos.fa2.words import LABELS, PARTS, say\n"
        )
    if (ROOT / ".mypy_cache").is_dir():  # the checkout's cache of flashviz itself: seconds instead of a minute
        shutil.copytree(ROOT / ".mypy_cache", tmp_path / "cache")
    config, cache = str(ROOT / "pyproject.toml"), str(tmp_path / "cache")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", config, "--cache-dir", cache, "-p", "whole", "-p", "broken"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"MYPYPATH": str(ROOT / "src"), "PATH": str(Path(sys.executable).parent)},
    )
    text = out.stdout + out.stderr
    assert out.returncode == 1, text
    errors = [line for line in text.splitlines() if ": error:" in line]
    assert errors and all(line.startswith("broken/__init__.py") for line in errors), text  # the whole one passes
    assert 'Argument "traffic" to "Algorithm" has incompatible type Module' in text, text
    assert 'missing following "Traffic" protocol member' in text and "    sram_bytes" in text, text  # named
    assert 'Argument "expect" to "Algorithm" has incompatible type Module' in text, text
    assert 'TOLERANCE: expected "dict[str, float]", got "str"' in text, text
    assert 'Argument "words" to "Algorithm" has incompatible type Module' in text, text
    assert 'missing following "Words" protocol member' in text and "    PARTS" in text, text
