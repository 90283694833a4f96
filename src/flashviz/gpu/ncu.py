"""Nsight Compute: the command line, its CSV read into kernels and metrics, and a run that falls back to the
four metrics every GPU has when the extra ones are missing.

`ncu --clock-control none` (the clocks stay as the card has them) and its default `--cache-control all`
(L1 and L2 are flushed before the profiled kernel, so DRAM reads start cold).
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
from typing import Any

from flashviz.model.echo import cut

# name in the document -> ncu metric
METRICS = {
    "load_bytes": "l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum",
    "store_bytes": "l1tex__t_bytes_pipe_lsu_mem_global_op_st.sum",
    "dram_read_bytes": "dram__bytes_read.sum",
    "dram_write_bytes": "dram__bytes_write.sum",
}
# asked for too when the GPU has them; without them the L1/L2 split is left out
EXTRA_METRICS = {
    "reduction_bytes": "l1tex__t_bytes_pipe_lsu_mem_global_op_red.sum",  # atomicAdd whose result is unused
    "atomic_bytes": "l1tex__t_bytes_pipe_lsu_mem_global_op_atom.sum",
    "l2_read_sectors_from_l1": "lts__t_sectors_srcunit_tex_op_read.sum",
    "l1_load_hit_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_hit.sum",
    "time_ns": "gpu__time_duration.sum",
    # loads and stores through the Tensor Memory Accelerator (a Triton kernel's tensor descriptors), which bypass the
    # LSU pipe that the two first METRICS count (bench/results/tma/README.md: equal to the model on the H200)
    "tma_load_bytes": "l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum",
    "tma_store_bytes": "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum",
}

# the tensor pipe and why warps do not issue (issue 20): asked for in a pass of their own, after the bytes, and only
# those that `ncu --query-metrics` lists for the GPU (names differ between chips); percentages and ratios per kernel,
# never summed (docs/profile-schema.md, "pipe")
STALL_REASONS = (
    "barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss", "lg_throttle", "long_scoreboard",
    "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
    "short_scoreboard", "sleeping", "tex_throttle", "wait",
)  # fmt: skip
PIPE_METRICS = {
    "tensor_gmma_active_pct": "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "tensor_hmma_active_pct": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "tensor_active_pct": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "issue_active_pct": "sm__inst_issued.avg.pct_of_peak_sustained_active",
    "warp_latency_per_issue": "smsp__average_warp_latency_per_inst_issued.ratio",
    **{f"stall_{r}": f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALL_REASONS},
}

_UNITS = {
    "%": 1,
    "cycle": 1,
    "inst": 1,
    "warp": 1,
    "ratio": 1,
    "byte": 1,
    "kbyte": 1e3,
    "mbyte": 1e6,
    "gbyte": 1e9,
    "tbyte": 1e12,
    "sector": 1,
    "nsecond": 1,
    "usecond": 1e3,
    "msecond": 1e6,
    "second": 1e9,
    "ns": 1,
    "us": 1e3,
    "ms": 1e6,
    "s": 1e9,
    "": 1,
}


def ncu_command(
    program: list[str], metrics: list[str], ncu: str, kernel: str, launch_count: int | None = None
) -> list[str]:
    """ncu measuring `metrics` of the kernels whose names match the regular expression `kernel`, as CSV (only the
    first `launch_count` matching launches when given)."""
    count = [] if launch_count is None else ["--launch-count", str(launch_count)]
    return [
        ncu,
        "--clock-control",
        "none",
        "--cache-control",
        "all",
        "--kernel-name",
        f"regex:^{kernel}",
        *count,
        "--metrics",
        ",".join(metrics),
        "--csv",
        "--print-units",
        "base",
        *program,
    ]


def _number(value: str, unit: str) -> float:
    v = float(value.replace(",", ""))
    scale = _UNITS.get(unit.strip().lower())
    if scale is None:
        raise ValueError(f"unknown ncu unit {unit!r}")
    return v * scale


def parse_ncu_csv(text: str) -> list[dict[str, Any]]:
    """ncu --csv (details page) output -> one dict per profiled kernel: id, name, grid, block, metrics.

    Lines before the CSV header (the program's own output, ==PROF== notes) are skipped; values may
    carry thousands separators and any unit ncu prints (converted to bytes, sectors, nanoseconds).
    """
    lines = text.splitlines()
    start = next((k for k, line in enumerate(lines) if line.startswith('"ID"') and '"Metric Name"' in line), None)
    if start is None:
        return []
    rows = csv.DictReader(io.StringIO("\n".join(line for line in lines[start:] if line.startswith('"'))))
    kernels: dict[str, dict[str, Any]] = {}
    for row in rows:
        k = kernels.setdefault(
            row["ID"],
            {
                "id": int(row["ID"]),
                "name": row["Kernel Name"],
                "grid": row.get("Grid Size", ""),
                "block": row.get("Block Size", ""),
                "metrics": {},
            },
        )
        try:
            k["metrics"][row["Metric Name"]] = _number(row["Metric Value"], row.get("Metric Unit", ""))
        except ValueError:  # "n/a", or a unit this parser does not know: left out, so the caller sees it missing
            continue
    return [kernels[key] for key in sorted(kernels, key=int)]


def template_of(kernel_name: str) -> str:
    """`void fa2<32, 32, 64>(const float *, ...)` -> `fa2`."""
    m = re.match(r"\s*(?:void\s+)?([A-Za-z_]\w*)", kernel_name)
    return m[1] if m else kernel_name


def ncu_version(ncu: str) -> str:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return next((line.strip() for line in out.splitlines() if line.strip().startswith("Version")), out.strip())


def run_ncu(
    program: list[str], ncu: str, kernel: str, timeout: float = 600, launch_count: int | None = None
) -> tuple[list[dict[str, Any]], str, list[str], list[str]]:
    """Profile `program` with the four metrics and the extra ones; if ncu measured the four but not every
    extra, keep what it measured; if it missed any of the four, try again with the four alone.

    Returns (kernels, ncu's output, the command that measured, the metrics asked for but not measured)."""
    tries = [[*METRICS.values(), *EXTRA_METRICS.values()], list(METRICS.values())]
    out = ""
    for metrics in tries:
        cmd = ncu_command(program, metrics, ncu, kernel, launch_count)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out = proc.stdout + proc.stderr
        kernels = parse_ncu_csv(proc.stdout)
        if kernels and all(m in k["metrics"] for k in kernels for m in METRICS.values()):
            missing = sorted({m for k in kernels for m in metrics if m not in k["metrics"]})
            return kernels, out, cmd, missing
    tail = " | ".join(line for line in out.splitlines() if "ERR" in line or "rror" in line)[-400:]
    raise RuntimeError(f"ncu measured no {kernel} kernel: {tail or out[-400:]}")


def known_metrics(ncu: str, timeout: float = 120) -> set[str] | None:
    """The base names `ncu --query-metrics` lists for the GPU in this machine, or None when it lists nothing."""
    try:
        out = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=timeout).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = {line.split()[0] for line in out.splitlines() if re.match(r"^[a-z0-9]+__\w+", line)}
    return names or None


def run_pipe(
    program: list[str], ncu: str, kernel: str, timeout: float = 600, launch_count: int | None = None
) -> dict[str, Any]:
    """The PIPE_METRICS that ncu knows here, measured in one more ncu run: {"asked", "not_listed", "kernels":
    [{"name", "metrics": {our name: value}}], "command", "error"}. Never raises: the bytes' profile stands alone."""
    known = known_metrics(ncu)
    asked = {k: m for k, m in PIPE_METRICS.items() if known is None or m.split(".")[0] in known}
    doc: dict[str, Any] = {
        "asked": asked,
        "not_listed": sorted(set(PIPE_METRICS) - set(asked)),
        "kernels": [],
        "command": [],
        "error": None,
    }
    if not asked:
        doc["error"] = "ncu --query-metrics lists none of the pipe metrics"
        return doc
    cmd = ncu_command(program, list(asked.values()), ncu, kernel, launch_count)
    doc["command"] = cmd
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        kernels = parse_ncu_csv(proc.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        doc["error"] = cut(f"{type(e).__name__}: {e}", 400)
        return doc
    for k in kernels:
        got = {key: k["metrics"][m] for key, m in asked.items() if m in k["metrics"]}
        doc["kernels"].append({"name": k["name"], "metrics": got})
    if not kernels:
        out = proc.stdout + proc.stderr
        doc["error"] = (" | ".join(x for x in out.splitlines() if "ERR" in x or "rror" in x) or out)[-400:]
    return doc
