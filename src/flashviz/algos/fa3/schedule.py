"""A modelled schedule of one fa3 block (issue 20: "Modelled"): when each partition of the program does each piece of
the tiles' work, from a cost model whose parameters are written down below with the recorded H200 run each comes
from. The page's schedule view draws it; it is the trace's `schedule` (docs/trace-schema.md).

The model is a list schedule on three shared units of one SM, in the order kernel.py issues the work:
- `tma`: the copy engine, one tile at a time at the SM's share of the measured HBM copy rate (the producer lane);
- `tensor`: the SM's tensor cores, one wgmma at a time at the SM's share of the measured bf16 matmul rate
  (a warpgroup's wgmma spans the SM's four sub-partitions, so the two warpgroups' products take turns);
- `mufu`: the SM's exponential units, one warpgroup's softmax at a time at the SM's share of the measured fp32
  exponential rate.
Each piece starts when its inputs are ready (the ready/empty mbarriers: Kj's slot is free once both warpgroups'
Sij are done, Vj's once both P·V are; Sij before its softmax; tile j's softmax before its P·V) and its unit is free.
Ping-pong is the units' order: warpgroup 0 issues its products first, then 1. Intra-warpgroup overlap is the order
within a warpgroup: Sij of tile j, then P·V of tile j−1, then tile j's softmax under them.
Closed-form cases (tests/test_fa3_schedule.py): every duration is work / rate; one tile's block is load, S, softmax,
P·V end to end.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from .tiles import NUM_WG, WG_ROWS, stages

LANES = ("wg0", "wg1", "producer")  # a recorded run's lanes: the consumer warpgroups, then the producer warp

if TYPE_CHECKING:
    from flashviz.model.config import Config

SMS = 132  # the H200's SMs: bench/results/parallelism/2026-12-01-nvidia-h200.json device.multiprocessors
PARAMS: dict[str, dict[str, Any]] = {
    "bf16_matmul_tflops": {
        "value": 783.4315070696915,
        "unit": "TFLOP/s, whole GPU",
        "source": "bench/results/ladder/2026-12-01-nvidia-h200.json peaks.bf16_matmul (torch bf16 8192³ matmul)",
    },
    "exp_tflops": {
        "value": 2.9438681590949365,
        "unit": "exponentials per ps (Texp/s), whole GPU",
        "source": "bench/results/parallelism/2026-12-01-nvidia-h200.json rates.fp32_exp_tflops (accurate expf)",
        "note": "accurate expf, several instructions; kernel.py's exp2 is one ex2.approx on the MUFU, not measured "
        "on its own: the softmax bars are upper bounds",
    },
    "copy_tb_s": {
        "value": 4.24,
        "unit": "TB/s, whole GPU",
        "source": "bench/results/attention/NOTES.md (the ceilings anchored by bench/attention_bench.py: copy)",
        "note": "HBM's rate; K and V re-read by every block mostly come from L2, faster: the load bars are upper "
        "bounds",
    },
    "tma_latency_ns": {
        "value": 0.0,
        "unit": "ns",
        "source": "not measured (no recorded run times a TMA load's latency): 0 in the model",
    },
    "sms": {"value": SMS, "unit": "SMs", "source": "bench/results/parallelism/2026-12-01-nvidia-h200.json"},
}


def per_sm(name: str) -> float:
    """A parameter's rate per SM, per ns (FLOPs, exponentials or bytes per ns)."""
    return float(PARAMS[name]["value"]) * 1e3 / SMS  # T/s = 1e3 per ns, shared by the SMs


def durations(d: int, bc: int) -> dict[str, float]:
    """ns per piece of one warpgroup's work on a tile (64 rows), and per TMA tile."""
    return {
        "scores": 2 * WG_ROWS * bc * d / per_sm("bf16_matmul_tflops"),  # (64, D) x (D, Bc)
        "pv": 2 * WG_ROWS * d * bc / per_sm("bf16_matmul_tflops"),  # (64, Bc) x (Bc, D)
        "softmax": (WG_ROWS * bc + WG_ROWS) / per_sm("exp_tflops"),  # exp2 of Sij and of alpha
        "load_q": 2 * WG_ROWS * d / per_sm("copy_tb_s") + float(PARAMS["tma_latency_ns"]["value"]),  # one half
        "load_kv": 2 * bc * d / per_sm("copy_tb_s") + float(PARAMS["tma_latency_ns"]["value"]),  # Kj or Vj
        "store_o": 2 * WG_ROWS * d / per_sm("copy_tb_s"),
    }


class _Units:
    def __init__(self) -> None:
        self.free = {"tma": 0.0, "tensor": 0.0, "mufu": 0.0}
        self.bars: list[dict[str, Any]] = []

    def run(self, unit: str, lane: str, what: str, j: int | None, ready: float, ns: float, step: str,
            step_j: int | None = -1) -> float:  # fmt: skip
        """One piece on a unit, after `ready`; `step` and `step_j` the op and tile of the trace step whose work it
        is (`step_j` -1: the piece's own tile)."""
        start = max(ready, self.free[unit])
        end = start + ns
        self.free[unit] = end
        self.bars.append({"lane": lane, "unit": unit, "what": what, "j": j, "start_ns": round(start, 3),
                          "end_ns": round(end, 3), "step": step, "piece": what.split(" ")[0],
                          "step_j": j if step_j == -1 else step_j})  # fmt: skip
        return end


def block(cfg: Config, i: int, pingpong: bool = True, overlap: bool = True) -> dict[str, Any]:
    """The modelled bars of block i: lanes `producer`, `wg0`, `wg1`; each bar's unit, the piece of work (`what`), its
    tile, start and end in ns from the program's start, and the trace step (op) whose work it is.

    `pingpong` and `overlap` are the ablation's features (launcher.ABLATION). Without intra-warpgroup overlap a
    warpgroup runs S, softmax and P·V of tile j one after another, and Sij of tile j + 1 after P·V of tile j. Without
    ping-pong the two warpgroups meet at every piece (each piece of either starts once both finished the one before:
    the two softmaxes then run together, under no product)."""
    tc = cfg.tiles_of_block(i)
    st = stages(cfg.d)
    t = durations(cfg.d, cfg.bc)
    u = _Units()
    q_ready = [u.run("tma", "producer", f"Q half {w}", None, 0.0, t["load_q"], "load_q") for w in range(NUM_WG)]
    k_ready: list[float] = []
    v_ready: list[float] = []
    k_free = [0.0] * tc  # when both warpgroups' Sij of tile j are done (Kj's slot released)
    v_free = [0.0] * tc
    s_done = [[0.0] * tc for _ in range(NUM_WG)]
    soft_done = [[0.0] * tc for _ in range(NUM_WG)]
    pv_done = [[0.0] * tc for _ in range(NUM_WG)]
    wgs = range(NUM_WG)

    def load(j: int) -> None:  # the producer: slot of tile j free once tile j - STAGES has left it
        free_k = k_free[j - st] if j >= st else 0.0
        k_ready.append(u.run("tma", "producer", "K", j, free_k, t["load_kv"], "load_kv"))
        free_v = v_free[j - st] if j >= st else 0.0
        v_ready.append(u.run("tma", "producer", "V", j, free_v, t["load_kv"], "load_kv"))

    def meet(done: list[list[float]], j: int, w: int) -> float:  # without ping-pong, both warpgroups' piece
        return done[w][j] if pingpong else max(done[x][j] for x in wgs)

    # the producer runs ahead by STAGES tiles; the consumers' pieces are issued in kernel.py's order
    for j in range(min(st, tc)):
        load(j)
    for j in range(tc):
        first = "first_tile" if j == 0 else "scores"
        soft_step = "first_tile" if j == 0 else "online_softmax"
        if overlap:
            for w in wgs:  # ping-pong: warpgroup 0's products, then 1's
                lane = f"wg{w}"
                s_done[w][j] = u.run("tensor", lane, "S", j, max(q_ready[w], k_ready[j]), t["scores"], first)
                if j > 0:
                    ready = max(v_ready[j - 1], meet(soft_done, j - 1, w))
                    pv_done[w][j - 1] = u.run("tensor", lane, "PV", j - 1, ready, t["pv"], "online_softmax", j)
                soft_done[w][j] = u.run("mufu", lane, "softmax", j, meet(s_done, j, w), t["softmax"], soft_step)
        else:
            pv_step, pv_at = ("last_pv", j) if j == tc - 1 else ("online_softmax", j + 1)
            for w in wgs:
                after = meet(pv_done, j - 1, w) if j > 0 else 0.0
                ready = max(q_ready[w], k_ready[j], after)
                s_done[w][j] = u.run("tensor", f"wg{w}", "S", j, ready, t["scores"], first)
            for w in wgs:
                ready = meet(s_done, j, w)
                soft_done[w][j] = u.run("mufu", f"wg{w}", "softmax", j, ready, t["softmax"], soft_step)
            for w in wgs:
                ready = max(v_ready[j], meet(soft_done, j, w))
                pv_done[w][j] = u.run("tensor", f"wg{w}", "PV", j, ready, t["pv"], pv_step, pv_at)
            v_free[j] = max(pv_done[w][j] for w in wgs)
        k_free[j] = max(s_done[w][j] for w in wgs)
        if overlap and j > 0:
            v_free[j - 1] = max(pv_done[w][j - 1] for w in wgs)
        if j + st < tc:
            load(j + st)
    ends = []
    for w in wgs:
        lane = f"wg{w}"
        if overlap:
            ready = max(v_ready[tc - 1], meet(soft_done, tc - 1, w))
            pv_done[w][tc - 1] = u.run("tensor", lane, "PV", tc - 1, ready, t["pv"], "last_pv")
        ends.append(u.run("tma", lane, "O", None, pv_done[w][tc - 1], t["store_o"], "write_back"))
    end = max(ends)
    busy = sum(b["end_ns"] - b["start_ns"] for b in u.bars if b["unit"] == "tensor")
    return {"i": i, "tiles": tc, "end_ns": end, "tensor_busy": busy / end if end else 0.0, "bars": u.bars}


def baseline(cfg: Config, i: int) -> dict[str, Any]:
    """The same tiles of block i one after another in one lane, fa2-triton's order (one program of 128 rows, no
    producer, no overlap): Qi, then per tile Kj, Vj, Sij, its softmax, P·V, then O; each piece the same work at the
    same rates as the fa3 model's (both warpgroups' halves: twice a warpgroup's duration)."""
    tc = cfg.tiles_of_block(i)
    t = durations(cfg.d, cfg.bc)
    u = _Units()
    lane = "one program"
    now = u.run("tma", lane, "Q", None, 0.0, NUM_WG * t["load_q"], "load_q")
    for j in range(tc):  # each piece named by the fa3 step that does the same tile's work (the page follows it)
        first = "first_tile" if j == 0 else "scores"
        soft = "first_tile" if j == 0 else "online_softmax"
        pv_step, pv_at = ("last_pv", j) if j == tc - 1 else ("online_softmax", j + 1)
        now = u.run("tma", lane, "K", j, now, t["load_kv"], "load_kv")
        now = u.run("tma", lane, "V", j, now, t["load_kv"], "load_kv")
        now = u.run("tensor", lane, "S", j, now, NUM_WG * t["scores"], first)
        now = u.run("mufu", lane, "softmax", j, now, NUM_WG * t["softmax"], soft)
        now = u.run("tensor", lane, "PV", j, now, NUM_WG * t["pv"], pv_step, pv_at)
    now = u.run("tma", lane, "O", None, now, NUM_WG * t["store_o"], "write_back")
    busy = sum(b["end_ns"] - b["start_ns"] for b in u.bars if b["unit"] == "tensor")
    return {"i": i, "tiles": tc, "end_ns": now, "tensor_busy": busy / now if now else 0.0, "bars": u.bars}


# the ablation's rungs drawn (launcher.ABLATION's names and features; "+ persistent" changes the launch, not a
# block's schedule, so it is not one of them)
RUNGS = (
    ("warp specialization", False, False),
    ("+ ping-pong", True, False),
    ("+ intra-warpgroup overlap", True, True),
)
ATTENTION_RUN = "2026-12-02-nvidia-h200.json"  # bench/results/attention's recorded run, shipped in data/attention/


def measured_tflops(d: int, causal: bool) -> dict[str, Any]:
    """The recorded benchmark run's forward TFLOP/s of each rung (rows "fa3 <rung>", N = 16384, at this D and
    masking), read from the shipped copy of bench/results/attention's JSON; a rung the run lacks is None."""
    run = json.loads(files("flashviz").joinpath(f"data/attention/{ATTENTION_RUN}").read_text())
    names = {"warp specialization": "fa3 warp specialization"} | {r: f"fa3 {r}" for r, _, _ in RUNGS[1:]}
    rows = {
        x["provider"]: x
        for x in run["rows"]
        if x["mode"] == "fwd" and x["d"] == d and x["n"] == 16384 and x["causal"] == causal
    }
    tflops = {r: (float(rows[p]["tflops"]) if p in rows else None) for r, p in names.items()}
    return {
        "tflops": tflops,
        "n": 16384,
        "d": d,
        "causal": causal,
        "gpu": run["gpu"],
        "date": run["date"],
        "source": f"bench/results/attention/{ATTENTION_RUN} (rows 'fa3 <rung>', forward)",
    }


def model(cfg: Config, recorded: tuple[int, ...]) -> dict[str, Any]:
    """The trace's `schedule`: the parameters, the per-piece durations and the recorded blocks' bars, and the same
    tiles one after another in a single lane (fa2-triton's order: no overlap), for comparison."""
    t = durations(cfg.d, cfg.bc)
    blocks = [block(cfg, i) for i in recorded]
    bench_run = measured_tflops(cfg.d, cfg.causal)
    variants = [
        {
            "name": name,
            "pingpong": pp,
            "overlap": ov,
            "tflops": bench_run["tflops"][name],
            "blocks": [block(cfg, i, pp, ov) for i in recorded],
        }
        for name, pp, ov in RUNGS
    ]
    serial = [
        {
            "i": b["i"],
            "end_ns": 2 * t["load_q"]
            + b["tiles"] * (2 * t["load_kv"] + NUM_WG * (t["scores"] + t["softmax"] + t["pv"]))
            + NUM_WG * t["store_o"],
        }
        for b in blocks
    ]
    return {
        "source": "modelled",
        "lanes": ["producer", "wg0", "wg1"],
        "lane_labels": {
            "producer": "producer warp (TMA)",
            "wg0": "consumer warpgroup 0",
            "wg1": "consumer warpgroup 1",
        },
        "pieces": {
            "Q": "TMA load of Qi",
            "K": "TMA load of Kj",
            "V": "TMA load of Vj",
            "S": "Sij = Qi·Kjᵀ (wgmma)",
            "softmax": "softmax (exp2)",
            "PV": "Oi += P·Vj (wgmma)",
            "O": "store of Oi",
        },
        "stages": stages(cfg.d),
        "units": {
            "tma": "the copy engine (TMA)",
            "tensor": "the tensor cores (wgmma)",
            "mufu": "the exponential units (exp2)",
        },
        "params": PARAMS,
        "durations_ns": t,
        "blocks": blocks,
        "serial": serial,
        "baseline": {
            "algo": "fa2-triton",
            "title": "fa2-triton: the same tiles, one program, one after another",
            "lanes": ["one program"],
            "lane_labels": {"one program": "one program (all warps)"},
            "blocks": [baseline(cfg, i) for i in recorded],
        },
        "variants": variants,
        "variant": RUNGS[-1][0],
        "benchmark": {k: v for k, v in bench_run.items() if k != "tflops"},
        "rule": __doc__.split("\n\n", 1)[1].split("\nClosed-form")[0].replace("\n", " ").strip() if __doc__ else "",
    }
