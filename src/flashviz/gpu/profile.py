"""The kernel under Nsight Compute: measured global-memory and DRAM bytes beside the traffic model's.

`ncu --clock-control none` (the clocks stay as the card has them) and its default
`--cache-control all` (L1 and L2 are flushed before the profiled kernel, so DRAM reads start cold).
The launch is `python -m flashviz gpu run ... --no-check` in a child process: one run of the
algorithm's kernels, filtered by name; the model is held against the sum over the kernels it counts.

What is compared (document: docs/profile-schema.md):
- global loads (`l1tex__t_bytes_pipe_lsu_mem_global_op_ld.sum`, every load instruction's bytes as
  L1 sees them, hit or miss) against the model's reads of Q, K, V x 4 bytes;
- global stores (`..._op_st.sum`) against the model's writes of O and L x 4 bytes;
- the same two after rounding each warp's access up to whole 32-byte sectors (L1 counts sectors,
  so a warp that stores 16 bytes of L is counted as 32): equal to the plain model whenever every
  contiguous run the kernel moves starts and ends on a 32-byte boundary;
- DRAM bytes (`dram__bytes_read.sum`, `dram__bytes_write.sum`): global loads minus DRAM reads is what
  the caches caught, mostly K and V re-read by every block of Q and served from L2.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import shutil
import subprocess
import sys
from typing import Any

import numpy as np

from ..config import Config, ConfigError, shown
from .specs import spec

BYTES = 4  # float32
SECTOR = 32  # bytes
WARP = 32  # threads, one element each

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
}

_UNITS = {
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


def launcher(
    cfg: Config,
    heads: int = 1,
    batch: int = 1,
    threads: int | None = None,
    inputs_path: str | None = None,
    check: bool = False,
) -> list[str]:
    """The command that launches the kernel once: `python -m flashviz gpu run` with the same settings."""
    args = [sys.executable, "-m", "flashviz", "gpu", "run", "--algo", cfg.algo, "--br", str(cfg.br)]
    args += ["--bc", str(cfg.bc), "--heads", str(heads), "--batch", str(batch), "--quiet"]
    if inputs_path is not None:
        args += ["--inputs", str(inputs_path)]
    else:
        args += ["--n", str(cfg.n), "--d", str(cfg.d), "--seed", str(cfg.seed)]
    if cfg.scale is not None:
        args += ["--scale", repr(float(cfg.scale))]
    if cfg.causal:
        args += ["--causal"]
    if threads is not None:
        args += ["--threads", str(threads)]
    args += ["--check" if check else "--no-check"]
    return args


def ncu_command(program: list[str], metrics: list[str], ncu: str = "ncu", kernel: str = "fa2") -> list[str]:
    return [
        ncu,
        "--clock-control",
        "none",
        "--cache-control",
        "all",
        "--kernel-name",
        f"regex:^{kernel}",
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


def sector_bytes(first: np.ndarray, count: np.ndarray, head_stride: int, heads: int) -> int:
    """Bytes L1 counts when each warp's access to a run is rounded out to whole 32-byte sectors.

    A run of `count` float32 elements starting at element `first` (of head 0; head g adds
    g * head_stride) is moved 32 elements per warp instruction from its first element. Allocations
    start on a 256-byte boundary, so only the element offset modulo 8 (one sector) matters.
    """
    per_sector = SECTOR // BYTES
    first, count = np.asarray(first, dtype=np.int64), np.asarray(count, dtype=np.int64)
    residues = np.bincount((np.arange(heads, dtype=np.int64) * head_stride) % per_sector, minlength=per_sector)
    total = 0
    for r, n_heads in enumerate(residues):
        if n_heads == 0:
            continue
        e0 = first + r
        full, rem = count // WARP, count % WARP
        # a full warp (128 bytes) touches 4 sectors when it starts on a sector boundary, else 5
        sectors = full * np.where(e0 % per_sector == 0, 4, 5)
        a = e0 + WARP * full
        sectors = sectors + np.where(rem > 0, (a + rem - 1) // per_sector - a // per_sector + 1, 0)
        total += int(n_heads) * int(sectors.sum())
    return total * SECTOR


def model(cfg: Config, heads: int) -> dict[str, Any]:
    """The traffic model for a launch of `heads` heads, in elements and bytes, plus the sector-rounded bytes
    (where the spec lists the runs its loops move; else the sector model is the model)."""
    s = spec(cfg.algo)
    algo = s.algorithm
    per_head = algo.traffic.count(cfg.n, cfg.d, cfg.br, cfg.bc, causal=cfg.causal)
    tensors = {
        name: {
            "read_elements": t["read"] * heads,
            "written_elements": t["written"] * heads,
            "read_bytes": t["read"] * heads * BYTES,
            "written_bytes": t["written"] * heads * BYTES,
        }
        for name, t in per_head.items()
    }
    load = sum(t["read_bytes"] for t in tensors.values())
    store = sum(t["written_bytes"] for t in tensors.values())
    out = {"tensors": tensors, "load_bytes": load, "store_bytes": store}
    if s.spans is not None:
        spans = s.spans(cfg)
        sectors = {name: sector_bytes(*spans[name], int(np.prod(s.shapes[name](cfg))), heads) for name in spans}
        out["sector_bytes"] = sectors
        out["sector_load_bytes"] = sum(sectors[name] for name in algo.inputs)
        out["sector_store_bytes"] = sum(sectors[name] for name in algo.outputs)
    else:
        out["sector_load_bytes"], out["sector_store_bytes"] = load, store
    out["unique_input_bytes"] = sum(heads * int(np.prod(s.shapes[name](cfg))) * BYTES for name in algo.inputs)
    out["unique_output_bytes"] = sum(heads * int(np.prod(s.shapes[name](cfg))) * BYTES for name in algo.outputs)
    return out


def _verdict(measured: float, exact: int, sector: int) -> dict[str, Any]:
    if measured == exact:
        verdict = "exact"
    elif measured == sector:
        verdict = "sector-rounded"
    else:
        verdict = "mismatch"
    return {
        "measured": int(measured),
        "model": exact,
        "sector_model": sector,
        "measured_over_model": measured / exact if exact else None,
        "verdict": verdict,
    }


def compare(m: dict[str, Any], measured: dict[str, float]) -> dict[str, Any]:
    """Model vs the counters: loads and stores with verdicts, and what the caches caught.

    An atomic add to global memory (fa2-backward's dQ) is one read and one write of its element in the
    model; the GPU counts it apart from loads and stores, so its bytes are added to both."""
    atomics = measured.get("reduction_bytes", 0.0) + measured.get("atomic_bytes", 0.0)
    load = _verdict(measured["load_bytes"] + atomics, m["load_bytes"], m["sector_load_bytes"])
    store = _verdict(measured["store_bytes"] + atomics, m["store_bytes"], m["sector_store_bytes"])
    dram_read = measured["dram_read_bytes"]
    caught = measured["load_bytes"] - dram_read
    caches: dict[str, Any] = {
        "caught_bytes": caught,
        "caught_fraction": caught / measured["load_bytes"] if measured["load_bytes"] else None,
        "dram_read_over_unique_inputs": dram_read / m["unique_input_bytes"],
        "dram_write_over_outputs": measured["dram_write_bytes"] / m["unique_output_bytes"],
    }
    if "l2_read_sectors_from_l1" in measured:
        l2_read = measured["l2_read_sectors_from_l1"] * SECTOR
        caches["l2_read_bytes_from_l1"] = l2_read
        caches["l1_caught_bytes"] = measured["load_bytes"] - l2_read
        caches["l2_caught_bytes"] = l2_read - dram_read
    return {
        "load": load,
        "store": store,
        "atomic_bytes": atomics,
        "caches": caches,
        "ok": "mismatch" not in (load["verdict"], store["verdict"]),
    }


def _mb(b: float) -> str:
    return f"{b / 1e6:.3f} MB" if b >= 1e5 else f"{b:,.0f} B"


def summary(m: dict[str, Any], c: dict[str, Any], measured: dict[str, float], algo: str = "fa2") -> list[str]:
    """Sentences a reader (or the viewer) can show as they are."""
    s = spec(algo)
    inputs, outputs = _names(s.algorithm.inputs), _names(s.algorithm.outputs)
    lines = []
    if c.get("atomic_bytes"):
        lines.append(
            f"Atomic adds moved {_mb(c['atomic_bytes'])}; the model counts each as one read and one write of its "
            "element, so they are added to the loads and to the stores below."
        )
    for what, key in (("Global loads", "load"), ("Global stores", "store")):
        v = c[key]
        if v["verdict"] == "exact":
            lines.append(f"{what}: measured {_mb(v['measured'])} = the model's {_mb(v['model'])} exactly.")
        elif v["verdict"] == "sector-rounded":
            lines.append(
                f"{what}: measured {_mb(v['measured'])}, the model's {_mb(v['model'])} once each warp's access is "
                f"rounded up to whole 32-byte sectors ({_mb(v['sector_model'])}): runs that do not start and end "
                "on a 32-byte boundary cost whole sectors."
            )
        else:
            lines.append(
                f"{what}: measured {_mb(v['measured'])} differs from the model's {_mb(v['model'])} "
                f"(sector-rounded {_mb(v['sector_model'])})."
            )
    k = c["caches"]
    if k["caught_bytes"] > 0:
        lines.append(
            f"DRAM reads {_mb(measured['dram_read_bytes'])} against {_mb(measured['load_bytes'])} of global loads: "
            f"the caches served {_mb(k['caught_bytes'])} ({100 * k['caught_fraction']:.1f}%)"
            + (f", {s.reuse}" if s.reuse else "")
            + f"; DRAM saw {k['dram_read_over_unique_inputs']:.2f}x the {_mb(m['unique_input_bytes'])} of {inputs} "
            "(caches flushed before each kernel)."
        )
    else:
        lines.append(
            f"DRAM reads {_mb(measured['dram_read_bytes'])} exceed the {_mb(measured['load_bytes'])} of global loads: "
            "at this size other traffic than the tensors' dominates DRAM (after the flush, the kernel's code and "
            "parameters among it), so no cache effect can be read off it."
        )
    if "l2_caught_bytes" in k and k["caught_bytes"] > 0:
        lines.append(
            f"Of the loads, L1 passed {_mb(k['l2_read_bytes_from_l1'])} on to L2 (the other "
            f"{_mb(k['l1_caught_bytes'])} hit in L1 or joined a miss already on its way there); L2 served "
            f"{_mb(k['l2_caught_bytes'])} of what it was asked for and DRAM the rest."
        )
    lines.append(
        f"DRAM writes {_mb(measured['dram_write_bytes'])} for {_mb(m['unique_output_bytes'])} of {outputs}: "
        "L2 is write-back, so outputs that still sit in L2 when the kernel ends are not yet in DRAM."
    )
    return lines


def _names(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def tally(algo: str, kernels: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Each parsed kernel under our metric names, marked counted or not, and the counted kernels' sum."""
    s = spec(algo)
    names = {**METRICS, **EXTRA_METRICS}
    listed, total = [], {}
    for k in kernels:
        measured = {key: k["metrics"][metric] for key, metric in names.items() if metric in k["metrics"]}
        counted = s.counts(template_of(k["name"]))
        if counted:
            for key, value in measured.items():
                total[key] = total.get(key, 0.0) + value
        listed.append({**{f: k[f] for f in ("id", "name", "grid", "block", "metrics")}, "counted": counted})
        listed[-1]["measured"] = measured
    return listed, total


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
    program: list[str], ncu: str = "ncu", kernel: str = "fa2", timeout: float = 600
) -> tuple[list, str, list, list]:
    """Profile `program` with the four metrics and the extra ones; if ncu measured the four but not every
    extra, keep what it measured; if it missed any of the four, try again with the four alone.

    Returns (kernels, ncu's output, the command that measured, the metrics asked for but not measured)."""
    tries = [[*METRICS.values(), *EXTRA_METRICS.values()], list(METRICS.values())]
    out = ""
    for metrics in tries:
        cmd = ncu_command(program, metrics, ncu, kernel)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out = proc.stdout + proc.stderr
        kernels = parse_ncu_csv(proc.stdout)
        if kernels and all(m in k["metrics"] for k in kernels for m in METRICS.values()):
            missing = sorted({m for k in kernels for m in metrics if m not in k["metrics"]})
            return kernels, out, cmd, missing
    tail = " | ".join(line for line in out.splitlines() if "ERR" in line or "rror" in line)[-400:]
    raise RuntimeError(f"ncu measured no {kernel} kernel: {tail or out[-400:]}")


def profile(
    cfg: Config,
    heads: int = 1,
    batch: int = 1,
    threads: int | None = None,
    inputs_path: str | None = None,
    ncu: str = "ncu",
) -> dict[str, Any]:
    """Profile one launch; return the profile document (docs/profile-schema.md)."""
    from .run import config_dict, device_info, prepare

    cfg = cfg.validated()
    path = shutil.which(ncu)
    if path is None:
        raise ConfigError("--ncu", f"{shown(ncu)} not found (Nsight Compute; it comes with the CUDA toolkit)")
    device = device_info()
    prepared = prepare(cfg, heads * batch, threads)  # compiles here once; the child reuses CuPy's cache
    s = spec(cfg.algo)
    templates = sorted({k.template for k in s.kernels})
    program = launcher(cfg, heads, batch, threads, inputs_path)
    kernels, log, cmd, unmeasured = run_ncu(program, path, "(" + "|".join(templates) + ")")
    m = model(cfg, heads * batch)
    listed, total = tally(cfg.algo, kernels)
    c = compare(m, total)
    return {
        "schema": "flashviz.profile/1",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "config": {**config_dict(cfg), "heads": heads, "batch": batch, "inputs": inputs_path or "random"},
        "launch": prepared.describe(),
        "device": device,
        "tool": {
            "ncu": ncu_version(path),
            "command": cmd,
            "unmeasured": unmeasured,
            "clock_control": "none",
            "cache_control": "all: L1 and L2 flushed before each kernel",
            "metrics": {**METRICS, **EXTRA_METRICS},
        },
        "bytes_per_element": BYTES,
        "model": m,
        "kernels": listed,
        "measured": total,
        "comparison": c,
        "summary": summary(m, c, total, cfg.algo),
        "ok": c["ok"],
        "ncu_output": log[-20000:],
    }
