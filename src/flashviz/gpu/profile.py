"""The kernel under Nsight Compute (`ncu`): measured global-memory and DRAM bytes beside the traffic model's
(`sectors`).

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

A Triton kernel that moves tiles by tensor descriptors (TMA) bypasses the LSU pipe: its loads are
`l1tex__m_xbar2l1tex_read_bytes_mem_global_op_tma_ld.sum`, its stores
`l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum` (bench/results/tma/README.md). Global loads and stores
are the LSU's and the TMA's together, and `comparison.paths` holds each path against the model's share of it (the
spec's `paths`: which tensors go by TMA), so the record says which counters agree with the model and how closely.
"""

from __future__ import annotations

import datetime as dt
import shutil
from typing import Any

from flashviz.model.config import Config, ConfigError, shown
from flashviz.model.echo import cut

from ..algos import get
from ..algos import gpu_spec as spec
from . import device, launch
from .ncu import EXTRA_METRICS, METRICS, ncu_version, run_ncu, run_pipe, template_of
from .run import config_dict
from .sectors import SECTOR, model

METRICS_ALL = {**METRICS, **EXTRA_METRICS}


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
    model; the GPU counts it apart from loads and stores, so its bytes are added to both. Where the model has
    tensor descriptors (a Triton kernel's tensormaps, `sectors.model`), the atomic pipe's counter is theirs: it is
    held against them alone (`descriptors`) and not added to the loads and stores."""
    descriptors = m.get("descriptors")
    atom = measured.get("atomic_bytes", 0.0)
    atomics = measured.get("reduction_bytes", 0.0) + (0.0 if descriptors else atom)
    tma_load, tma_store = measured.get("tma_load_bytes", 0.0), measured.get("tma_store_bytes", 0.0)
    loaded = measured["load_bytes"] + tma_load  # every global load, through the LSU or the TMA
    load = _verdict(loaded + atomics, m["load_bytes"], m["sector_load_bytes"])
    store = _verdict(measured["store_bytes"] + tma_store + atomics, m["store_bytes"], m["sector_store_bytes"])
    dram_read = measured["dram_read_bytes"]
    caught = loaded - dram_read
    caches: dict[str, Any] = {
        "caught_bytes": caught,
        "caught_fraction": caught / loaded if loaded else None,
        "dram_read_over_unique_inputs": dram_read / m["unique_input_bytes"],
        "dram_write_over_outputs": measured["dram_write_bytes"] / m["unique_output_bytes"],
    }
    # the L1/L2 split reads L2's requests from L1; TMA loads go from L2 to shared memory past L1's cache, so for a
    # kernel that loads by TMA that counter does not split its loads into L1 and L2 hits: left out
    if "l2_read_sectors_from_l1" in measured and not tma_load:
        l2_read = measured["l2_read_sectors_from_l1"] * SECTOR
        caches["l2_read_bytes_from_l1"] = l2_read
        caches["l1_caught_bytes"] = loaded - l2_read
        caches["l2_caught_bytes"] = l2_read - dram_read
    out: dict[str, Any] = {
        "load": load,
        "store": store,
        "atomic_bytes": atomics,
        "caches": caches,
        "ok": "mismatch" not in (load["verdict"], store["verdict"]),
    }
    if descriptors:
        # an older record without the atomic pipe's counter: the descriptors are not judged (None), not failed
        seen = "atomic_bytes" in measured
        want = descriptors["bytes"]
        out["descriptors"] = {
            "counter": METRICS_ALL["atomic_bytes"],
            "measured": int(atom) if seen else None,
            "model": want,
            "measured_over_model": atom / want if seen else None,
            "agrees": int(atom) == want if seen else None,
        }
        out["ok"] = out["ok"] and out["descriptors"]["agrees"] is not False
    if "tma_load_bytes" in measured and "paths" in m:
        out["paths"] = paths(m, measured, atomics)
    return out


PATH_COUNTERS = {
    "lsu": ("load_bytes", "store_bytes"),
    "tma": ("tma_load_bytes", "tma_store_bytes"),
}


def paths(m: dict[str, Any], measured: dict[str, float], atomics: float) -> dict[str, Any]:
    """Each way into memory (LSU, TMA) on its own: the counter that sees it against the model's bytes for the tensors
    that go that way, loads and stores apart, and which agree."""
    out: dict[str, Any] = {}
    for path, (ld, st) in PATH_COUNTERS.items():
        want = m["paths"].get(path, {"load_bytes": 0, "store_bytes": 0})
        extra = atomics if path == "lsu" else 0.0
        got = {"load": measured.get(ld, 0.0) + extra, "store": measured.get(st, 0.0) + extra}
        out[path] = {
            kind: {
                "counter": METRICS_ALL[ld if kind == "load" else st],
                "measured": int(got[kind]),
                "model": want[f"{kind}_bytes"],
                "measured_over_model": got[kind] / want[f"{kind}_bytes"] if want[f"{kind}_bytes"] else None,
                "agrees": int(got[kind]) == want[f"{kind}_bytes"],
            }
            for kind in ("load", "store")
        }
    return out


def _mb(b: float) -> str:
    return f"{b / 1e6:.3f} MB" if b >= 1e5 else f"{b:,.0f} B"


def summary(m: dict[str, Any], c: dict[str, Any], measured: dict[str, float], algo: str) -> list[str]:
    """Sentences a reader (or the viewer) can show as they are."""
    s = spec(algo)
    inputs, outputs = _names(get(s.algo).inputs), _names(get(s.algo).outputs)
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
    if "descriptors" in c:
        v, d = c["descriptors"], m["descriptors"]
        per = " + ".join(f"{len(n)} ({', '.join(n)} in {t})" for t, n in d["per_program"].items())
        how = (
            "not measured; the model has"
            if v["measured"] is None
            else f"measured {_mb(v['measured'])}, equal to the model's"
            if v["agrees"]
            else f"measured {_mb(v['measured'])}, {v['measured_over_model']:.4f}x the model's"
        )
        lines.append(
            f"TMA descriptors ({v['counter']}): {how} {_mb(v['model'])} = "
            f"{d['programs']} programs x {per} descriptors x {d['tensormap_bytes']} B: each program builds its "
            "tensor descriptors on the device and publishes each 128-byte tensormap to global memory "
            "(tensormap.cp_fenceproxy), which Nsight Compute counts as atomics. They are not tensor bytes, so they "
            "are kept out of the loads and stores."
        )
    for path, kinds in c.get("paths", {}).items():
        for kind, v in kinds.items():
            if v["model"] == 0 and v["measured"] == 0:
                continue
            how = (
                "equal to the model's"
                if v["agrees"]
                else f"{v['measured_over_model']:.4f}x the model's"
                if v["model"]
                else "where the model has none of"
            )
            lines.append(
                f"{path.upper()} {kind}s ({v['counter']}): measured {_mb(v['measured'])}, {how} {_mb(v['model'])}."
            )
    loaded = measured["load_bytes"] + measured.get("tma_load_bytes", 0.0)
    k = c["caches"]
    if k["caught_bytes"] > 0:
        lines.append(
            f"DRAM reads {_mb(measured['dram_read_bytes'])} against {_mb(loaded)} of global loads: "
            f"the caches served {_mb(k['caught_bytes'])} ({100 * k['caught_fraction']:.1f}%)"
            + (f", {s.reuse}" if s.reuse else "")
            + f"; DRAM saw {k['dram_read_over_unique_inputs']:.2f}x the {_mb(m['unique_input_bytes'])} of {inputs} "
            "(caches flushed before each kernel)."
        )
    else:
        lines.append(
            f"DRAM reads {_mb(measured['dram_read_bytes'])} exceed the {_mb(loaded)} of global loads: "
            "at this size other traffic than the tensors' dominates DRAM (after the flush, the kernel's code and "
            "parameters among it), so no cache effect can be read off it."
        )
    if "l2_caught_bytes" in k and k["caught_bytes"] > 0 and k["l1_caught_bytes"] >= 0:
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


def pipe_summary(pipe: dict[str, Any]) -> list[str]:
    """One line per kernel: the tensor pipe's active share and the three largest stall reasons."""
    if pipe.get("error"):
        return [f"pipe metrics not measured: {pipe['error']}"]
    lines = []
    for k in pipe["kernels"]:
        got = k["metrics"]
        tensor = [f"{key} {got[key]:.1f}%" for key in got if key.startswith("tensor_")]
        stalls = sorted((v, key[6:]) for key, v in got.items() if key.startswith("stall_"))[::-1][:3]
        top = ", ".join(f"{name} {v:.2f}" for v, name in stalls)
        lines.append(f"{cut(k['name'])}: {'; '.join(tensor) or 'no tensor-pipe metric'}; top stalls {top or 'none'}")
    return lines


def _names(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def tally(algo: str, kernels: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Each parsed kernel under our metric names, marked counted or not, and the counted kernels' sum."""
    s = spec(algo)
    names = {**METRICS, **EXTRA_METRICS}
    listed: list[dict[str, Any]] = []
    total: dict[str, float] = {}
    for k in kernels:
        measured = {key: k["metrics"][metric] for key, metric in names.items() if metric in k["metrics"]}
        counted = s.counts(template_of(k["name"]))
        if counted:
            for key, value in measured.items():
                total[key] = total.get(key, 0.0) + value
        listed.append({**{f: k[f] for f in ("id", "name", "grid", "block", "metrics")}, "counted": counted})
        listed[-1]["measured"] = measured
    return listed, total


def profile(
    cfg: Config,
    heads: int = 1,
    batch: int = 1,
    threads: int | None = None,
    inputs_path: str | None = None,
    ncu: str = "ncu",
) -> dict[str, Any]:
    """Profile one launch; return the profile document (docs/profile-schema.md)."""
    cfg = get(cfg.algo).validated(cfg)
    path = shutil.which(ncu)
    if path is None:
        raise ConfigError("--ncu", f"{shown(ncu)} not found (Nsight Compute; it comes with the CUDA toolkit)")
    facts = device.device_info()
    prepared = launch.prepare(cfg, heads * batch, threads)  # compiles here once; the child reuses CuPy's cache
    s = spec(cfg.algo)
    templates = sorted({k.template for k in s.kernels})
    program = launch.launcher(cfg, heads, batch, threads, inputs_path)
    # a Triton spec's host code launches its kernel twice (the second launch is timed): ncu measures the first
    count = len(s.kernels) if s.kind == "triton" else None
    kernels, log, cmd, unmeasured = run_ncu(program, path, "(" + "|".join(templates) + ")", launch_count=count)
    pipe = run_pipe(program, path, "(" + "|".join(templates) + ")", launch_count=count)
    m = model(cfg, heads * batch)
    listed, total = tally(cfg.algo, kernels)
    c = compare(m, total)
    return {
        "schema": "flashviz.profile/1",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "config": {**config_dict(cfg), "heads": heads, "batch": batch, "inputs": inputs_path or "random"},
        "launch": prepared.describe(),
        "device": facts,
        "tool": {
            "ncu": ncu_version(path),
            "command": cmd,
            "unmeasured": unmeasured,
            "clock_control": "none",
            "cache_control": "all: L1 and L2 flushed before each kernel",
            "metrics": {**METRICS, **EXTRA_METRICS},
        },
        "bytes_per_element": get(s.algo).element_bytes,
        "model": m,
        "kernels": listed,
        "measured": total,
        "comparison": c,
        "pipe": pipe,
        "summary": summary(m, c, total, cfg.algo) + pipe_summary(pipe),
        "ok": c["ok"],
        "ncu_output": log[-20000:],
    }
