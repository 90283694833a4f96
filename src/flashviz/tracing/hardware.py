"""The trace's `hardware` key (docs/trace-schema.md): each kernel of a launch laid onto the H200 — its grid for a
range of heads (B·H), the blocks one SM holds at once (occupancy from its threads, registers and shared memory),
the waves, the SMs left idle — and, where the algorithm declares it, what each warp of a block computes. Machinery:
it reads an algorithm's launches (gpu.py), its kernels (picture.py) and its warps (warps.py) through the registry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flashviz.hardware import occupancy as occ
from flashviz.hardware import recorded, warps
from flashviz.hardware.device import h200
from flashviz.model.config import Config

if TYPE_CHECKING:
    from flashviz.algos.base import Algorithm

HEADS = (1, 2, 4, 8, 16, 32, 64, 128)  # B·H the page's heads control offers
HEADS_DEFAULT = 1


def grid_of(heads: int, grid: tuple[int, int, int], per_sm: int, sms: int) -> dict[str, Any]:
    """One launch of `grid` blocks for `heads`: waves and what the SMs hold while the first wave runs."""
    blocks = grid[0] * grid[1] * grid[2]
    resident = occ.first_wave(blocks, per_sm, sms)
    slots = per_sm * sms
    return {
        "heads": heads,
        "grid": list(grid),
        "blocks": blocks,
        "waves": occ.waves(blocks, per_sm, sms),
        "full_waves": blocks // slots if slots else 0,
        "tail_blocks": blocks % slots if slots else blocks,
        "resident": resident,  # blocks on each SM while the first wave runs
        "busy_sms": sum(1 for r in resident if r),
        "idle_sms": sum(1 for r in resident if not r),
    }


def kernel_view(cfg: Config, spec: Any, k: Any) -> dict[str, Any]:
    dev = h200()
    threads = k.threads(cfg)
    smem = spec.smem_bytes(k, cfg)
    regs = recorded.registers(k.template, tuple(k.template_args(cfg)))
    o = occ.occupancy(dev, threads, regs["value"], smem)
    per_sm = o["blocks_per_sm"]
    grid_x = k.grid(cfg, 1)[0]
    return {
        "template": k.name_expression(cfg),
        "threads": threads,
        "smem_bytes": smem,
        "registers": regs,
        "occupancy": o,
        "grid_x": grid_x,  # blockIdx.x runs over 0 … grid_x − 1 for each head (blockIdx.y)
        "launches": [grid_of(h, k.grid(cfg, h), per_sm, dev.sms) for h in HEADS],
    }


def triton_kernel_view(cfg: Config, spec: Any, k: Any) -> dict[str, Any]:
    """A Triton kernel's program on the H200, from what its folder recorded (`spec.resources`): the shared memory and
    registers each with its source, occupancy without the register limit where registers were not recorded."""
    dev = h200()
    r = spec.resources(cfg)
    o = occ.occupancy(dev, r["threads"], r["registers"]["value"], r["smem"]["value"])
    return {
        "template": r["template"],
        "threads": r["threads"],
        "smem_bytes": r["smem"]["value"],
        "smem": r["smem"],
        "registers": r["registers"],
        "occupancy": o,
        "grid_x": k.grid(cfg, 1)[0],
        "program_of_block": r["program_of_block"],
        "launches": [grid_of(h, k.grid(cfg, h), o["blocks_per_sm"], dev.sms) for h in HEADS],
    }


def of_launch(algo: Algorithm, cfg: Config, tensor_cores: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """None for an algorithm with no GPU launch whose resources are known (a CUDA C++ kernel: its file's shared-memory
    macro; a Triton kernel: its spec's `resources`). `tensor_cores`: the trace's key of that name, whose warps'
    rows are the warp split of a tensor-core kernel."""
    spec = algo.gpu
    if spec is None:
        return None
    dev = h200()
    drawn = [kk.name for kk in algo.picture.KERNELS]  # the kernels the trace's steps name
    if algo.kernel_file.endswith(".cu"):
        kernels = {k.template: kernel_view(cfg, spec, k) for k in spec.kernels if k.template in drawn}
    elif getattr(spec, "resources", None) is not None:
        kernels = {k.template: triton_kernel_view(cfg, spec, k) for k in spec.kernels if k.template in drawn}
    else:
        return None
    main = next(iter(kernels.values()))
    warp_view: dict[str, Any] | None
    if tensor_cores is not None:
        warp_view = warps.from_tensor_cores(cfg, tensor_cores, main["threads"], dev.warp_size)
    elif algo.warps is not None:
        warp_view = warps.of_launch(cfg, algo.warps.WORK, main["threads"], dev.warp_size)
    else:
        warp_view = None
    par = recorded.parallelism()
    return {
        "device": {**dev.to_dict()},
        "heads": list(HEADS),
        # a group of q heads sharing one K/V head (GQA): the first launch that holds a whole group
        "heads_default": next((h for h in HEADS if h >= cfg.group), HEADS_DEFAULT),
        "placement": "the block scheduler hands a launch's blocks to the SMs in turn before it stacks a second on "
        "one; which block lands on which SM is its choice (drawn: block b on SM b mod "
        f"{dev.sms})",
        "kernels": kernels,
        "warps": warp_view,
        "measured": {
            "source": par["source"],
            "date": par["date"],
            "command": par["command"],
            "metrics": par["ncu_metrics"],
            "rows": [r for r in par["rows"] if r["algo"] == cfg.algo],
        },
    }
