"""What one program of `fa2_fwd` takes of an SM on the H200, for the hardware view: its threads (num_warps × 32),
shared memory and registers, as recorded where this launch (D, Br, Bc, warps, stages, causal) was compiled and run
on the H200; elsewhere shared memory by the rule the recorded builds follow, and registers unknown (Triton's
register count is its compiler's: not guessed here).

Recorded (Triton 3.6, sm_90; `compiled.metadata.shared` and `n_regs` of the launched kernel):
- bench/results/fa2-triton/2026-12-01-nvidia-h200/: profile_n4096_d64{,_causal}.json and run_n1000_d64_causal.json;
- bench/results/ladder (src/flashviz/data/ladder/2026-12-01-nvidia-h200.json): the bf16 rungs, D=64, not causal.
"""

from __future__ import annotations

from typing import Any

from flashviz.model.config import Config

from . import tiles

FA2_TRITON_RUN = "flashviz gpu run/profile on the H200, 2026-12-01 (bench/results/fa2-triton/2026-12-01-nvidia-h200)"
LADDER_RUN = "the ladder's H200 run, 2026-12-01 (bench/results/ladder)"

# (D, Br, Bc, num_warps, num_stages, causal) -> (registers per thread, shared memory bytes, where it was recorded)
RECORDED: dict[tuple[int, int, int, int, int, bool], tuple[int, int, str]] = {
    (64, 128, 64, 8, 5, False): (111, 99_328, FA2_TRITON_RUN),  # also the ladder's autotuned rung
    (64, 128, 64, 4, 3, True): (194, 66_560, FA2_TRITON_RUN),
    (64, 128, 128, 8, 3, True): (191, 115_712, FA2_TRITON_RUN),
    (64, 128, 64, 8, 1, False): (108, 32_776, LADDER_RUN),
    (64, 64, 64, 8, 1, False): (106, 24_584, LADDER_RUN),
}


def barrier_bytes(stages: int) -> int:
    """What the compiler adds to the tiles' shared memory in the recorded builds: 8 bytes at one stage, 1 KiB when
    the loads are pipelined (its mbarriers and scratch)."""
    return 8 if stages == 1 else 1024


def smem_rule(d: int, br: int, bc: int, stages: int) -> int:
    """Qi and `stages` copies of Kj, Vj in bf16 (tiles.shared_bytes) plus the compiler's barrier bytes: equal to every
    recorded build (tests/test_hardware_triton.py holds it)."""
    return tiles.shared_bytes(d, br, bc, stages) + barrier_bytes(stages)


def resources(cfg: Config) -> dict[str, Any]:
    """The program's threads, shared memory and registers, each with its source ("measured", "rule" or "unknown")."""
    ws = tiles.warps_and_stages(cfg.n, cfg.d, cfg.br, cfg.bc, cfg.causal)
    warps, stages = ws["num_warps"], ws["num_stages"]
    key = (cfg.d, cfg.br, cfg.bc, warps, stages, cfg.causal)
    what = f"fa2_fwd with {cfg.br}×{cfg.bc} tiles, D={cfg.d}, {warps} warps, {stages} stage{'s' if stages > 1 else ''}"
    if key in RECORDED:
        regs, smem, where = RECORDED[key]
        registers = {"value": regs, "source": "measured", "note": f"{what}, as compiled and launched by {where}"}
        shared = {"value": smem, "source": "measured", "note": f"{what}, as compiled by {where}"}
    else:
        recorded = "; ".join(
            f"{br}×{bc} D={d} {w} warps {s} stages{' causal' if c else ''}" for d, br, bc, w, s, c in RECORDED
        )
        registers = {
            "value": None,
            "source": "unknown",
            "note": f"{what} was not compiled on the H200 in a recorded run (recorded: {recorded}); the register "
            "limit is left out",
        }
        shared = {
            "value": smem_rule(cfg.d, cfg.br, cfg.bc, stages),
            "source": "rule",
            "note": "Qi and one Kj, Vj per stage in bf16, plus the compiler's barriers (8 B at 1 stage, 1 KiB at "
            "more), the rule every recorded build follows; this launch was not compiled in a recorded run",
        }
    return {
        "template": what,
        "threads": 32 * warps,
        "num_warps": warps,
        "num_stages": stages,
        "warps_source": ws["source"],
        "smem": shared,
        "registers": registers,
        # under causal masking program p runs block i = Tr − 1 − p, the longest first (kernel.py's fa2_fwd)
        "program_of_block": "reversed" if cfg.causal else "same",
    }
