"""The fa3 forward's timestamped build (issue 20), compiled for sm_90 on the CPU: off by default (no %globaltimer,
no extra parameter; its PTX instructions were also checked equal to main's before the change, bench/results/
fa3-view), on with one read at each stamp the kernel places and the same wgmma sequence."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton.experimental.gluon")

# compiled in a child with TRITON_INTERPRET=0 (conftest sets the interpreter here), as test_fa3_compile.py does
COMPILE = """
import sys
from flashviz.algos.fa3 import launcher as fa3
for tiles in (0, 8):
    open(f"{sys.argv[1]}/fwd_{tiles}.ptx", "w").write(fa3.compile_sm90("fwd", 128, False, ts_tiles=tiles).asm["ptx"])
"""


def _code(ptx: str) -> list[str]:
    """PTX instructions only: no debug sections, source locations or labels of the line table."""
    body = re.split(r"\n\s*\.section\s+\.debug", ptx)[0]
    return [ln for ln in body.splitlines() if not re.match(r"\s*(\.loc|\.file|\$L__(func|tmp))", ln)]


def test_timestamps_are_off_by_default_and_placed_when_on(tmp_path):
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, "-c", COMPILE, str(tmp_path)], capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    plain, stamped = ((tmp_path / f"fwd_{t}.ptx").read_text() for t in (0, 8))
    assert "globaltimer" not in plain
    # consumers: block start, Qi arrived, tile 0's four, five in each of the two overlapped loops, block end (x2);
    # producer: block start, Qi issued, two around each tile's loads, block end
    assert stamped.count("%globaltimer") == 2 * (2 + 4 + 2 * 5 + 1) + 5
    # the plain build has no parameter for the buffer; the stamped one has exactly one more
    params = [len(set(re.findall(r"fa3_fwd_param_(\d+)", p))) for p in (plain, stamped)]
    assert params[1] == params[0] + 1
    # the stamps do not change the computation's instructions: every wgmma of the plain build is in the stamped one
    wgmma = [ln.split()[0] for ln in _code(plain) if "wgmma.mma_async" in ln]
    assert wgmma and wgmma == [ln.split()[0] for ln in _code(stamped) if "wgmma.mma_async" in ln]
