"""Units (issue 8 item 5): bytes moved in decimal units as ncu writes them, shared memory in KiB as CUDA sizes it,
rounded half up on the exact integer; the web viewer's format.ts prints the same strings (web/test/format.test.ts
holds it to these functions on random sizes)."""

from __future__ import annotations

import random
from decimal import ROUND_HALF_UP, Decimal

import pytest

from flashviz.model.units import human_bytes, kib


@pytest.mark.parametrize(
    ("b", "moved", "smem"),
    [
        (0, "0 B", "0 B"),
        (352, "352 B", "352 B"),
        (1000, "1.0 kB", "1000 B"),
        (1250, "1.3 kB", "1.2 KiB"),  # 1.25 kB half up; 1250 / 1024 = 1.2207 KiB
        (49152, "49.2 kB", "48.0 KiB"),
        (232448, "232.4 kB", "227.0 KiB"),
        (999_950, "1.0 MB", "976.5 KiB"),  # not "1,000.0 kB"
        (25_690_112, "25.7 MB", "25,088.0 KiB"),  # standard at N=1024, D=64, Br=Bc=64
        (8_912_896, "8.9 MB", "8,704.0 KiB"),  # fa2 there
        (136_314_880, "136.3 MB", "133,120.0 KiB"),
        (2**66, "73.8 EB", "72,057,594,037,927,936.0 KiB"),
        (-1500, "-1.5 kB", "-1.5 KiB"),
    ],
)
def test_units(b, moved, smem):
    assert human_bytes(b) == moved
    assert kib(b) == smem


def test_rounding_is_exact_half_up_on_fresh_random_sizes():
    rng = random.Random()
    for _ in range(2000):
        b = rng.randrange(1000, 10 ** rng.randrange(4, 19))
        k = max(e for e in range(1, 7) if b >= 1000**e)
        want = Decimal(b) / Decimal(1000**k)
        got = human_bytes(b)
        number, unit = got.split(" ")
        if unit == ("B", "kB", "MB", "GB", "TB", "PB", "EB")[k]:
            assert Decimal(number.replace(",", "")) == want.quantize(Decimal("0.1"), ROUND_HALF_UP), b
        else:  # rounded up into the next unit: 999.95 kB is 1.0 MB
            assert number == "1.0" and want.quantize(Decimal("0.1"), ROUND_HALF_UP) == 1000, b
        s = kib(b)
        if b < 1024:  # under one KiB: plain bytes
            assert s == f"{b} B", b
        else:
            assert Decimal(s.split(" ")[0].replace(",", "")) == (Decimal(b) / 1024).quantize(
                Decimal("0.1"), ROUND_HALF_UP
            ), b
