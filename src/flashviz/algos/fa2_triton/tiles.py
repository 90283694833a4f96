"""Which launches the Triton kernel runs, and how: its tiles, warps and pipeline stages, and the matrix instructions
its two tl.dot calls become on Hopper.

- Tiles: Br and Bc are powers of two from 16 to 256 (tl.dot needs at least 16 along each side; Triton's blocks are
  powers of two), and under causal masking Br is a multiple of Bc (the diagonal stage steps through whole tiles);
  D is one of the head dimensions `flashviz.attention` runs (96 is padded to 128 with zero columns by TMA).
- Warps and stages: where the autotuner's pick for this N, D and causal was recorded on the H200 and the tiles are
  that pick's, the recorded warps and stages; otherwise flashviz's rule for tiles given by hand:
  num_warps = max(4, Br/16) (four warps, one warpgroup, per 64 rows of Qi), num_stages = 2.
- Matrix instructions (Triton 3.x's rules, lib/Analysis/Utility.cpp `supportMMA` and
  lib/Dialect/TritonGPU/Transforms/Utility.cpp `mmaVersionToInstrShape`, `warpsPerTileV3`): on Hopper a tl.dot of
  bf16 tiles becomes wgmma (MMAv3) when the warps come in whole warpgroups and the result has a multiple of 64 rows,
  else mma.sync (MMAv2, Ampere's m16n8k16). The instruction is m64nNk16 with N the largest of 256, 248, ... 8 that
  divides the result's columns; the two dots of this kernel form a chain (Sij feeds P·V), so Triton lays every warp
  along the rows: warp w holds 16 rows of each 16·num_warps-row slice of the tile.
"""

from __future__ import annotations

from typing import Any

from flashviz.model.config import Config, ConfigError
from flashviz.model.units import SMEM_OPTIN_BYTES, kib

SUPPORTED_D = (32, 64, 96, 128, 256)  # flashviz.ops.checks.SUPPORTED_D (tests hold them equal)
MIN_TILE, MAX_TILE = 16, 256
BYTES = 2  # bf16
RECORD = "bench/results/attention (run 3, 2026-12-01, H200)"

# The autotuner's pick per (N, D, causal) in the recorded run (bench/results/attention/logs/run3/*-extra.json,
# "tuned", the forward entries): (Br, Bc, num_warps, num_stages, maxnreg)
TUNED: dict[tuple[int, int, bool], tuple[int, int, int, int, int | None]] = {
    (1, 64, False): (128, 64, 4, 3, None),
    (1, 64, True): (128, 64, 4, 3, None),
    (1000, 64, False): (128, 128, 8, 3, None),
    (1000, 64, True): (128, 128, 8, 3, None),
    (1024, 64, False): (128, 64, 8, 3, None),
    (1024, 64, True): (128, 64, 4, 3, None),
    (4096, 64, False): (128, 64, 8, 5, None),
    (4096, 64, True): (128, 64, 4, 3, None),
    (16384, 64, False): (128, 64, 8, 5, None),
    (16384, 64, True): (128, 64, 8, 4, None),
    (1, 128, False): (128, 64, 8, 2, 128),
    (1, 128, True): (128, 64, 8, 3, None),
    (1000, 128, False): (128, 64, 8, 3, None),
    (1000, 128, True): (128, 64, 8, 3, None),
    (1024, 128, False): (128, 64, 8, 2, 128),
    (1024, 128, True): (128, 64, 8, 2, 128),
    (4096, 128, False): (128, 64, 8, 2, 128),
    (4096, 128, True): (128, 128, 8, 3, None),
    (16384, 128, False): (128, 128, 8, 3, None),
    (16384, 128, True): (128, 128, 8, 3, None),
}
VALID_N = (256, 248, 240, 232, 224, 216, 208, 200, 192, 184, 176, 168, 160, 152, 144, 136, 128, 120, 112, 104, 96, 88,
           80, 72, 64, 56, 48, 40, 32, 24, 16, 8)  # fmt: skip


def padded(d: int) -> int:
    """D rounded up to a power of two: the kernel's tiles are D wide, columns past Dv read as zeros."""
    return 1 << (d - 1).bit_length()


def _power_of_two(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


def rule_text() -> str:
    return (
        f"Br and Bc powers of two in {MIN_TILE}..{MAX_TILE} (tl.dot needs 16 along each side), Br a multiple of Bc "
        f"under causal masking, D one of {', '.join(map(str, SUPPORTED_D))}"
    )


def warps_and_stages(n: int, d: int, br: int, bc: int, causal: bool) -> dict[str, Any]:
    """num_warps, num_stages, maxnreg and where they come from (the recorded autotuner's pick, or the rule)."""
    tuned = TUNED.get((n, d, causal))
    mode = "causal" if causal else "non-causal"
    if tuned is not None and tuned[:2] == (br, bc):
        _, _, warps, stages, maxnreg = tuned
        return {
            "num_warps": warps,
            "num_stages": stages,
            "maxnreg": maxnreg,
            "source": "autotuned",
            "why": f"the autotuner's pick for N={n}, D={d}, {mode} on the H200 ({RECORD})",
        }
    why = (
        "tiles given with --br/--bc; flashviz's rule for their launch: num_warps = max(4, Br/16) (a warpgroup of four "
        "warps per 64 rows of Qi), num_stages = 2"
    )
    if tuned is not None:
        why += (
            f". At N={n}, D={d}, {mode} the autotuner picked Br={tuned[0]}, Bc={tuned[1]}, {tuned[2]} warps, "
            f"{tuned[3]} stages on the H200 ({RECORD})"
        )
    return {"num_warps": max(4, br // 16), "num_stages": 2, "maxnreg": None, "source": "rule", "why": why}


def shared_bytes(d: int, br: int, bc: int, stages: int = 1) -> int:
    """Shared memory for Qi and `stages` copies of Kj and Vj, in bf16 (the compiler adds a few barrier bytes)."""
    dp = padded(d)
    return BYTES * (br * dp + stages * 2 * bc * dp)


def suggest(n: int, d: int, causal: bool) -> str:
    """Tiles to try: the autotuner's recorded pick for this N, D and causal, else tiles every launch runs."""
    tuned = TUNED.get((n, d, causal))
    if tuned is None:
        return "e.g. --br 64 --bc 32"
    return f"e.g. --br {tuned[0]} --bc {tuned[1]}, the autotuner's pick for N={n}, D={d} on the H200"


def check(cfg: Config) -> None:
    """The launches the Triton kernel runs: ConfigError naming the flag otherwise."""
    if cfg.d not in SUPPORTED_D:
        raise ConfigError(
            "d", f"must be one of {', '.join(map(str, SUPPORTED_D))} for {cfg.algo}, the head dimensions its kernel "
            f"runs (got {cfg.d})",
        )  # fmt: skip
    for name in ("br", "bc"):
        value = getattr(cfg, name)
        if not (_power_of_two(value) and MIN_TILE <= value <= MAX_TILE):
            raise ConfigError(
                name, f"must be a power of two in {MIN_TILE}..{MAX_TILE} for {cfg.algo} (Triton's tiles: tl.dot needs "
                f"16 along each side) (got {value}); {suggest(cfg.n, cfg.d, cfg.causal)}",
            )  # fmt: skip
    if cfg.causal and cfg.br % cfg.bc:
        raise ConfigError(
            "bc", f"must divide Br for causal {cfg.algo}: its diagonal stage steps through whole tiles "
            f"(got Br={cfg.br}, Bc={cfg.bc})",
        )  # fmt: skip
    stages = warps_and_stages(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal)["num_stages"]
    need = shared_bytes(cfg.d, cfg.br, cfg.bc, stages)
    if need > SMEM_OPTIN_BYTES:
        raise ConfigError(
            "br", f"{cfg.algo} at Br={cfg.br}, Bc={cfg.bc}, D={cfg.d} needs {kib(need)} of shared memory with "
            f"{stages} stages, a block may have {kib(SMEM_OPTIN_BYTES)}; use smaller tiles",
        )  # fmt: skip


def instruction_n(cols: int) -> int:
    return next(n for n in VALID_N if cols % n == 0)


def dot(m: int, n: int, k: int, warps: int, a: str, b: str, c: str) -> dict[str, Any]:
    """How one tl.dot of an (m, k) by (k, n) bf16 product into fp32 runs on Hopper under Triton's rules."""
    wgmma = warps % 4 == 0 and m % 64 == 0 and n % 8 == 0 and k >= 16
    inst_n = instruction_n(n) if wgmma else 8
    slice_rows = 16 * warps  # all warps along the rows: warp w holds rows 16w .. 16w + 15 of each slice
    repeats = max(1, m // slice_rows)
    owners = [
        {"warp": w, "warpgroup": w // 4, "rows": [[r * slice_rows + 16 * w, r * slice_rows + 16 * w + 16]
                                                   for r in range(repeats) if r * slice_rows + 16 * w < m]}
        for w in range(warps)
    ]  # fmt: skip
    if wgmma:
        per_group = (m // (64 * (warps // 4)) or 1) * (n // inst_n) * (k // 16)
        instruction = {
            "name": "wgmma.mma_async",
            "shape": [64, inst_n, 16],
            "text": f"wgmma.mma_async m64n{inst_n}k16 (bf16 in, fp32 accumulate)",
            "issued_by": "a warpgroup: 4 warps, 128 threads, together",
            "per_warpgroup": per_group,
        }
    else:
        per_group = max(1, m // 16 // warps) * (n // 8) * (k // 16)
        instruction = {
            "name": "mma.sync",
            "shape": [16, 8, 16],
            "text": "mma.sync m16n8k16 (bf16 in, fp32 accumulate), Ampere's instruction",
            "issued_by": "one warp, 32 threads",
            "per_warp": per_group,
        }
    return {
        "a": a,
        "b": b,
        "c": c,
        "m": m,
        "n": n,
        "k": k,
        "flops": 2 * m * n * k,
        "instruction": instruction,
        "k_steps": k // 16,
        "owners": owners,
        "replicated": m < slice_rows,
    }
