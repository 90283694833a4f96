"""The GPU the hardware view lays a launch onto: an NVIDIA H200 (sm_90). Its limits are the ones
cudaGetDeviceProperties reported on the recorded run's H200 (data/hardware/), and the allocation rules are CUDA's
occupancy calculator's for compute capability 9.x (cuda_occupancy.h: registers in units of 256 per warp across 4
sub-partitions, shared memory in units of 128 bytes with 1 KiB reserved per block, at most 32 blocks per SM)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

from . import recorded


@dataclass(frozen=True)
class Device:
    name: str
    compute_capability: str
    sms: int  # multiProcessorCount
    warp_size: int
    max_threads_per_sm: int  # maxThreadsPerMultiProcessor: 64 warps of 32
    max_blocks_per_sm: int  # maxBlocksPerMultiProcessor
    max_threads_per_block: int
    registers_per_sm: int  # regsPerMultiprocessor: 64K 32-bit registers
    registers_per_block: int
    smem_per_sm: int  # sharedMemPerMultiprocessor: 228 KiB, the largest carveout
    smem_per_block_optin: int  # sharedMemPerBlockOptin: 227 KiB
    smem_reserved_per_block: int  # reservedSharedMemPerBlock: 1 KiB the driver keeps per block
    register_granularity: int = 256  # registers are given to a warp in units of 256
    sub_partitions: int = 4  # an SM's four schedulers, each with a quarter of the register file
    smem_granularity: int = 128  # shared memory is given to a block in units of 128 bytes

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "max_warps_per_sm": self.max_warps_per_sm}


@cache
def h200() -> Device:
    d = recorded.load()["device"]
    p = d["properties"]
    return Device(
        name=d["name"],
        compute_capability=d["compute_capability"],
        sms=p["multiProcessorCount"],
        warp_size=p["warpSize"],
        max_threads_per_sm=p["maxThreadsPerMultiProcessor"],
        max_blocks_per_sm=p["maxBlocksPerMultiProcessor"],
        max_threads_per_block=p["maxThreadsPerBlock"],
        registers_per_sm=p["regsPerMultiprocessor"],
        registers_per_block=p["regsPerBlock"],
        smem_per_sm=p["sharedMemPerMultiprocessor"],
        smem_per_block_optin=p["sharedMemPerBlockOptin"],
        smem_reserved_per_block=p["reservedSharedMemPerBlock"],
    )
