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
    with pytest.raises(ValueError, match=r"threads must be in 1\.\.1024"):
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


def launch_of(algo: str, n: int, heads: int):
    from flashviz.algos import get
    from flashviz.model.config import Config
    from flashviz.tracing.hardware import of_launch

    view = of_launch(get(algo), Config(algo=algo, n=n, d=64, br=64, bc=64))
    (k,) = view["kernels"].values()
    return k, next(x for x in k["launches"] if x["heads"] == heads)


def test_fa1_at_long_n_and_one_head_leaves_131_sms_idle_and_fa2_fills_them_at_four():
    k1, fa1 = launch_of("fa1", 4096, 1)
    k2, fa2 = launch_of("fa2", 4096, 1)
    assert (fa1["blocks"], fa1["busy_sms"], fa1["idle_sms"]) == (1, 1, 131)
    assert (fa2["blocks"], fa2["busy_sms"]) == (64, 64)  # Tr = 4096 / 64 blocks for one head
    _, fa2_4 = launch_of("fa2", 4096, 4)
    assert (fa2_4["blocks"], fa2_4["idle_sms"]) == (256, 0)
    # the recorded run's launches: the same registers, shared memory and blocks per SM as ncu saw
    for k, algo in ((k1, "fa1"), (k2, "fa2")):
        row = next(r for r in recorded.parallelism()["rows"] if r["algo"] == algo)
        assert (k["registers"]["value"], k["smem_bytes"], k["threads"]) == (
            row["registers"],
            row["smem_bytes"],
            row["threads"],
        )
        assert k["occupancy"]["blocks_per_sm"] == row["ncu"]["limits"]["smem"] == 2


def emulate(threads: int, rows: int, cols: int, split: str):
    """Run the kernel's loop thread by thread, as CUDA would: who writes each element."""
    import numpy as np

    owner = np.full((rows, cols), -1)
    for tid in range(threads):
        if split == "strided":
            for x in range(tid, rows * cols, threads):
                owner[x // cols, x % cols] = tid // 32
        elif tid < rows:
            owner[tid, :] = tid // 32
    return owner


@pytest.mark.parametrize(("br", "bc", "d"), [(64, 64, 64), (16, 32, 8), (96, 8, 4), (8, 8, 8)])
def test_warp_owner_maps_are_the_kernel_loops(br, bc, d):
    import numpy as np

    from flashviz.algos import get
    from flashviz.hardware.warps import owners
    from flashviz.model.config import Config

    cfg = Config(algo="fa2", n=100, d=d, br=br, bc=bc)
    threads = get("fa2").gpu.kernels[0].threads(cfg)
    for work in get("fa2").warps.WORK.values():
        r, c = work.shape(cfg)
        np.testing.assert_array_equal(owners(work, cfg, threads), emulate(threads, r, c, work.split))


def test_split_q_exchanges_nothing_and_split_k_a_partial_output_per_warp():
    from flashviz.hardware.warps import schemes
    from flashviz.model.config import Config

    q, k = schemes(Config(algo="fa2", n=256, d=64, br=64, bc=64), warps=4)
    assert q["exchanged_elements"] == 0 and {x for row in q["owners"] for x in row} == {0, 1, 2, 3}
    assert k["exchanged_elements"] == 4 * 64 * (64 + 2)
    assert all(row == k["owners"][0] for row in k["owners"])  # split-K: a warp owns columns, the same in every row
