"""CUDA's occupancy calculation for compute capability 9.x, in Python: how many blocks of a kernel one SM holds at
once, and what limits it. It follows cuda_occupancy.h (cudaOccMaxActiveBlocksPerMultiprocessor) step by step for
the default shared-memory carveout, and is tested against the driver's own answers and Nsight Compute's
`launch__occupancy_limit_*` on the H200 (tests/test_hardware.py)."""

from __future__ import annotations

from typing import Any

from .device import Device


def round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def limits(dev: Device, threads: int, registers: int | None, smem_bytes: int) -> dict[str, int | None]:
    """Blocks per SM each resource allows: `warps` (64 warps an SM), `blocks` (32 an SM), `registers` (None when
    unknown) and `smem`. 0 means the block does not fit at all."""
    warps = -(-threads // dev.warp_size)
    out: dict[str, int | None] = {
        "warps": dev.max_warps_per_sm // warps,
        "blocks": dev.max_blocks_per_sm,
        "registers": None,
        "smem": 0,
    }
    if registers is not None:
        # registers go to warps in units of 256, each warp's from one sub-partition's quarter of the file; the
        # hardware's check assumes a block's warps are spread over all four sub-partitions at once
        per_warp = round_up(registers * dev.warp_size, dev.register_granularity)
        assumed = per_warp * round_up(warps, dev.sub_partitions)
        if registers > 255 or assumed > dev.registers_per_block or per_warp * warps > dev.registers_per_block:
            out["registers"] = 0
        else:
            per_sub = (dev.registers_per_sm // dev.sub_partitions) // per_warp if per_warp else dev.max_warps_per_sm
            out["registers"] = per_sub * dev.sub_partitions // warps
    # shared memory: the block's own plus the 1 KiB the driver reserves, in units of 128 bytes, out of the SM's
    # 228 KiB (the largest carveout, which the default preference gives when a block needs it)
    allocated = round_up(smem_bytes + dev.smem_reserved_per_block, dev.smem_granularity)
    if allocated <= dev.smem_per_block_optin + dev.smem_reserved_per_block:
        out["smem"] = dev.smem_per_sm // allocated
    return out


def occupancy(dev: Device, threads: int, registers: int | None, smem_bytes: int) -> dict[str, Any]:
    """Blocks per SM (the smallest limit), what limits it, and the theoretical occupancy: resident warps over the
    SM's 64 (what ncu calls sm__maximum_warps_per_active_cycle_pct)."""
    if not 1 <= threads <= dev.max_threads_per_block:
        raise ValueError(f"threads must be in 1..{dev.max_threads_per_block} (got {threads})")
    lim = limits(dev, threads, registers, smem_bytes)
    known = {k: v for k, v in lim.items() if v is not None}
    blocks = min(known.values())
    warps = -(-threads // dev.warp_size)
    return {
        "limits": lim,
        "blocks_per_sm": blocks,
        "limited_by": [k for k, v in known.items() if v == blocks],
        "warps_per_block": warps,
        "warps_per_sm": blocks * warps,
        "theoretical": blocks * warps / dev.max_warps_per_sm,
    }


def waves(blocks: int, blocks_per_sm: int, sms: int) -> float:
    """The launch's blocks over what the GPU holds at once (ncu's launch__waves_per_multiprocessor)."""
    return blocks / (blocks_per_sm * sms) if blocks_per_sm else float("inf")


def first_wave(blocks: int, blocks_per_sm: int, sms: int) -> list[int]:
    """Blocks resident on each SM while the first wave runs, blocks handed out one per SM in turn (the block
    scheduler spreads a launch over the SMs before it stacks them; which block lands on which SM is its choice)."""
    resident = min(blocks, blocks_per_sm * sms)
    return [resident // sms + (1 if s < resident % sms else 0) for s in range(sms)]
