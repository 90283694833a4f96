"""Issue 11, item 1: the occupancy calculator (flashviz.hardware.occupancy) against the H200's own answers: the
driver's cuOccupancyMaxActiveBlocksPerMultiprocessor for every kernel instance bench/registers_bench.py built, and
Nsight Compute's launch__occupancy_limit_* and theoretical occupancy of the recorded parallelism run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flashviz.hardware import recorded
from flashviz.hardware.device import h200
from flashviz.hardware.occupancy import first_wave, occupancy, waves

ROOT = Path(__file__).resolve().parents[1]
REGISTERS = ROOT / "bench/results/parallelism/registers-2026-12-01-nvidia-h200.json"


def driver_answers():
    doc = json.loads(REGISTERS.read_text())
    for name, k in doc["kernels"].items():
        for inst in k["instances"]:
            for threads, blocks in inst["blocks_per_sm"].items():
                if isinstance(blocks, int):
                    yield name, inst["registers"], inst["smem_bytes"], int(threads), blocks


def test_blocks_per_sm_equal_the_drivers_for_every_recorded_instance():
    answers = list(driver_answers())
    assert len(answers) > 1000  # every kernel at a grid of tiles and four block sizes
    dev = h200()
    wrong = [a for a in answers if occupancy(dev, a[3], a[1], a[2])["blocks_per_sm"] != a[4]]
    assert not wrong, wrong[:5]
    assert {a[4] for a in answers} >= {1, 2, 16, 32}  # limited by smem, registers, warps and the block cap


def test_limits_equal_ncus_on_the_recorded_launches():
    rows = recorded.parallelism()["rows"]
    assert {r["algo"] for r in rows} == {"fa1", "fa2"}
    dev = h200()
    for r in rows:
        occ = occupancy(dev, r["threads"], r["registers"], r["smem_bytes"])
        ncu = r["ncu"]
        assert {k: float(v) for k, v in occ["limits"].items()} == ncu["limits"], r
        assert occ["theoretical"] * 100 == pytest.approx(ncu["theoretical_occupancy_pct"])
        assert waves(r["blocks"], occ["blocks_per_sm"], dev.sms) == pytest.approx(ncu["waves"], abs=0.005)


def test_a_block_too_big_fits_nowhere_and_bad_threads_are_refused():
    dev = h200()
    assert occupancy(dev, 128, 32, 300 * 1024)["blocks_per_sm"] == 0
    assert occupancy(dev, 128, 256, 0)["limits"]["registers"] == 0
    with pytest.raises(ValueError, match="threads must be in 1..1024"):
        occupancy(dev, 2048, 32, 0)


def test_first_wave_spreads_blocks_over_the_sms():
    assert first_wave(1, 2, 132) == [1] + [0] * 131  # fa1 at one head: 131 SMs idle
    assert sum(first_wave(300, 2, 132)) == 264 and max(first_wave(300, 2, 132)) == 2
    assert first_wave(140, 2, 132)[:9] == [2] * 8 + [1]


def test_the_shipped_data_is_what_the_recorded_runs_give():
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench/hardware_data.py"), "--check"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr
