"""The measured schedule of the fa3 forward (issue 20), on a GPU: the timestamped build (kernel.py, TS_TILES > 0:
%globaltimer at step boundaries of the first block of the first kernel.TS_PROGRAMS programs, per partition) at
N=4096 D=128 Br=Bc=128, one head, causal and not. Checks the timestamped O against the plain build's (same bits, or
says how far) and both against float64; writes one JSON record (`flashviz.fa3_schedule_measured/2`: the lanes and
tiles under the trace's names, `wg0`, `wg1`, `producer` and `j`), which bench/fa3_schedule_install.py installs into
the package (docs/trace-schema.md, "the recorded schedule run").

    python3 bench/fa3_schedule_record.py -o fa3_schedule_measured.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys

CONSUMER = ("k_wait", "k_arrived", "s_done", "softmax_done", "pv_done")
PRODUCER = ("kv_wait", "kv_issued")
LANES = ("wg0", "wg1", "producer")  # kernel.py's partitions in its slot order (PARTS), named as the trace's lanes


def slot_names(tiles: int, lane: str) -> list[tuple[str, int | None]]:
    """(event, tile j) per slot of one lane, as kernel.py writes them (ts_slots: 3 + 5 per tile)."""
    first = ("block_start", None), ("q_arrived" if lane != "producer" else "q_issued", None)
    names: list[tuple[str, int | None]] = list(first)
    per = CONSUMER if lane != "producer" else (*PRODUCER, "", "", "")
    for j in range(tiles):
        names += [(n, j) for n in per]
    return [*names, ("block_end", None)]


def events(raw: list[int], tiles: int, programs: int) -> list[dict]:
    """raw int64 slots -> per program, per lane, the written events in ns from the program's first event."""
    n = 3 + 5 * tiles
    out = []
    for p in range(programs):
        block = raw[p * 3 * n : (p + 1) * 3 * n]
        written = [t for t in block if t]
        if not written:
            continue
        t0 = min(written)
        lanes = {}
        for w, lane in enumerate(LANES):
            evs = []
            for (name, j), t in zip(slot_names(tiles, lane), block[w * n : (w + 1) * n], strict=True):
                if t and name:
                    evs.append({"event": name, "j": j, "t_ns": t - t0})
            lanes[lane] = sorted(evs, key=lambda e: e["t_ns"])
        out.append({"program": p, "lanes": lanes})
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--d", type=int, default=128)
    args = ap.parse_args()
    import torch

    from flashviz.algos.fa3 import kernel as km
    from flashviz.algos.fa3 import launcher as fa3

    why = fa3.unavailable()
    if why is not None:
        print(f"fa3 cannot run here: {why}")
        return 2
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()  # fmt: skip
    n, d, heads = args.n, args.d, 1
    runs = []
    ok = True
    for causal in (False, True):
        g = torch.Generator(device="cuda").manual_seed(20 + causal)
        q, k, v = (torch.randn(1, heads, n, d, device="cuda", generator=g).to(torch.bfloat16) for _ in range(3))
        scale = d**-0.5
        config = fa3.forward_config(d, n, causal)
        tiles = n // config.Bc
        slots = km.TS_PROGRAMS.value * 3 * (3 + 5 * tiles)
        o_plain, _ = fa3.forward(q, k, v, causal, scale, config)
        ts = torch.zeros(slots, dtype=torch.int64, device="cuda")
        o_ts, _ = fa3.forward(q, k, v, causal, scale, config, ts=ts, ts_tiles=tiles)
        torch.cuda.synchronize()
        # float64 reference
        q64, k64, v64 = (x.double()[0, 0] for x in (q, k, v))
        s = (q64 @ k64.T) * scale
        if causal:
            s = s.masked_fill(torch.triu(torch.ones(n, n, dtype=torch.bool, device="cuda"), 1), float("-inf"))
        ref = torch.softmax(s, -1) @ v64
        err_plain = (o_plain.double()[0, 0] - ref).abs().max().item()
        err_ts = (o_ts.double()[0, 0] - ref).abs().max().item()
        same = bool(torch.equal(o_plain, o_ts))
        # time both builds (after warm-up), 20 launches each
        times = {}
        for name, kw in (("plain", {}), ("timestamped", {"ts": ts, "ts_tiles": tiles})):
            for _ in range(3):
                fa3.forward(q, k, v, causal, scale, config, **kw)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(20):
                fa3.forward(q, k, v, causal, scale, config, **kw)
            b.record()
            b.synchronize()
            times[name] = a.elapsed_time(b) / 20 * 1e3
        ts.zero_()
        fa3.forward(q, k, v, causal, scale, config, ts=ts, ts_tiles=tiles)
        torch.cuda.synchronize()
        evs = events(ts.cpu().tolist(), tiles, km.TS_PROGRAMS.value)
        good = err_ts <= 2e-2 and (same or abs(err_ts - err_plain) <= 1e-2) and bool(evs)
        ok &= good
        runs.append({
            "shape": {"n": n, "d": d, "br": 128, "bc": config.Bc, "heads": heads, "batch": 1, "causal": causal},
            "config": config.name(),
            "check": {"o_same_bits_as_plain": same, "max_abs_err_plain_vs_float64": err_plain,
                      "max_abs_err_timestamped_vs_float64": err_ts, "tolerance": 2e-2, "ok": good},
            "time_us": times,
            "programs": evs,
        })  # fmt: skip
        print(f"causal={causal}: O same bits {same}, err plain {err_plain:.2e} ts {err_ts:.2e}; "
              f"time plain {times['plain']:.1f} us, timestamped {times['timestamped']:.1f} us; "
              f"{len(evs)} programs recorded")  # fmt: skip
        for prog in evs[:1]:
            for part, es in prog["lanes"].items():
                by = {}
                for e in es:
                    by.setdefault(e["j"], {})[e["event"]] = e["t_ns"]

                def mean(a, b, by=by):
                    xs = [t[b] - t[a] for t in by.values() if a in t and b in t]
                    return f"{sum(xs) / len(xs):.0f}" if xs else "-"

                if part == "producer":
                    print(f"  program 0 {part}: {len(es)} events, kv wait->issued {mean('kv_wait', 'kv_issued')} ns")
                else:
                    print(f"  program 0 {part}: {len(es)} events; per tile ns: K wait {mean('k_wait', 'k_arrived')},"
                          f" S {mean('k_arrived', 's_done')}, softmax {mean('s_done', 'softmax_done')},"
                          f" to PV done {mean('softmax_done', 'pv_done')}")  # fmt: skip
    gpu, _, driver = smi.partition(", ")
    record = {
        "schema": "flashviz.fa3_schedule_measured/2",
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "gpu": gpu,
        "driver": driver,
        "command": "python3 bench/fa3_schedule_record.py " + " ".join(sys.argv[1:]),
        "clock": "%globaltimer (ns), relative to each program's first event",
        "events": {
            "wg0": ["block_start", "q_arrived", *CONSUMER, "block_end"],
            "wg1": ["block_start", "q_arrived", *CONSUMER, "block_end"],
            "producer": ["block_start", "q_issued", *PRODUCER, "block_end"],
            "note": "pv_done at tile j is the P V of tile j-1 (the overlapped schedule); tile 0 has none",
        },
        "runs": runs,
    }
    with open(args.output, "w") as f:
        json.dump(record, f, indent=1)
    print(f"record: {args.output} ({'ok' if ok else 'CHECK FAILED'})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
