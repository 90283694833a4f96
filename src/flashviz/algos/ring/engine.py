"""The ring executor: the loop of flashviz.ring_attention (`_forward` in flashviz/ops/ring.py, the code the steps show)
run by P simulated devices, in float32, on the memory model.

HBM holds the sequence as the devices hold it: Q, K, V (and O, L) in the layout's order (flashviz.model.ring_layout),
device r's shard in rows [r·N/P, (r+1)·N/P): what `ring_shard` cuts for rank r, the ranks' shards put one after
another. Device r is block r of Q (Br = N/P) and the K/V shard it holds at a step is a tile (Bc = N/P): at step s it
holds device (r − s) mod P's shard, the one that arrived from device r − 1 at the end of step s − 1 (its own at step
0), while it sends that shard on to device r + 1. Each attention call of the step (`ring_layout.calls`) is computed by
`ring_sim.partial_attention` (a plain fp32 softmax over the call's block: the simulation's own) and merged into the
device's carries (O, L) by `flashviz.model.merge.merge`, the rule flashviz.ring_attention merges with; nothing of the
ring
is copied here. Devices run one after another (independent but for what they send, which is their inputs' rows), each
step at the phase it has in every device's program, so the page's block picker shows another device at the same
moment. Besides the steps, the run leaves the trace's `devices` (docs/trace-schema.md): who holds which chunks at
each step, what is in flight, the work done and skipped, each device's carries after every merge, and the bytes each
device sent, counted here as the sends are posted (the link's closed form is the picture's, ring_model's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flashviz.algos.picture import locator
from flashviz.engine.ring_sim import partial_attention
from flashviz.model.merge import merge
from flashviz.model.ring_layout import blocks, calls, chunk_count, chunks, owner
from flashviz.model.units import FLOAT_BYTES

from ...engine.memory import SRAM
from ...engine.recorder import Grid, Recorder, blocks_of_q, run_launch
from . import picture as drawing
from .record import KERNEL, calls_per_step

if TYPE_CHECKING:
    from flashviz.model.config import Config

    from ...engine.flops import Flops

WHERE = locator(drawing.KERNELS, drawing.PICKER)


def phases_per_step(cfg: Config) -> int:
    """Phases of one ring step: send, two per attention call (attend, merge) of the busiest device, wait."""
    return 2 + 2 * calls_per_step(cfg.layout, cfg.causal)


def phase_of(cfg: Config, op: str, step: int = 0, call: int = 0) -> int:
    """The step's position in every device's program: init, then per ring step send, (attend, merge) per call, wait;
    then finish. A device with fewer calls at a step (a skipped shard) idles through the rest of its calls' phases."""
    per = phases_per_step(cfg)
    if op == "init":
        return 0
    if op == "finish":
        return 1 + cfg.devices * per
    base = 1 + step * per
    return base + {"send": 0, "attend": 1 + 2 * call, "merge": 2 + 2 * call, "wait": per - 1}[op]


def count_partial(fl: Flops, rows: int, cols: int, d: int) -> None:
    """The FLOPs `ring_sim.partial_attention` just did on a (rows x cols) block, from its shapes: S = τ·QKᵀ, its row
    max, P = exp(S − m), its row sum, P·V, the division by l and L = m + log l (the mask only assigns)."""
    fl.count("matmul", 2 * rows * cols * d + 2 * rows * d * cols)
    fl.count("mul", rows * cols)
    fl.count("max", rows * cols)
    fl.count("add", 2 * rows * cols + rows)
    fl.count("exp", rows * cols)
    fl.count("div", rows * d)
    fl.count("log", rows)


def count_merge(fl: Flops, rows: int, d: int) -> None:
    """The FLOPs `merge.merge` just did on `rows` rows: the max of the two L, the two weights e^(L − m), their sum,
    its log and reciprocal, the two weights times it, and the weighted sum of the two O rows."""
    fl.count("max", rows)
    fl.count("add", 2 * rows + rows + rows + rows * d)
    fl.count("exp", 2 * rows)
    fl.count("log", rows)
    fl.count("div", rows)
    fl.count("mul", 2 * rows + 2 * rows * d)


def device(rec: Recorder, cfg: Config, r: int, out: dict[str, Any]) -> None:
    """Device r's program: flashviz.ops.ring's `_forward` on rank r of P."""
    P, layout, causal, d = cfg.devices, cfg.layout, cfg.causal, cfg.d
    n = cfg.br  # the device's shard: N/P rows of Q, and of each K/V shard it holds
    per = len(chunks(r, P, layout))
    c = n // per  # rows per chunk
    scale = cfg.softmax_scale
    keep = r in rec.recorded
    fl = rec.flops
    sram = SRAM()
    Qi = sram.alloc("Qi", (n, d))  # (n, D) the device's Q shard, kept
    Kj = sram.alloc("Kj", (n, d))  # (n, D) the K shard held
    Vj = sram.alloc("Vj", (n, d))  # (n, D) the V shard held
    Ob = sram.alloc("Ob", (n, d))  # (n, D) one call's partial output
    Lb = sram.alloc("Lb", (n,), fill=-np.inf)  # (n,) its log-sum-exp
    Oi = sram.alloc("Oi", (n, d))  # (n, D) the carries: the output over the keys seen so far (normalised)
    Li = sram.alloc("Li", (n,), fill=-np.inf)  # (n,) and their log-sum-exp
    if rec.sram_footprint is None:
        rec.sram_footprint = sram.footprint()
    r0, r1 = r * n, (r + 1) * n
    snapshots = out["carries"][r]
    sent = 0

    # step: init -- o = 0, lse = -inf; kv = the device's own K, V shard (its Q shard stays for the whole run)
    q, tq = rec.hbm.read("Q", slice(r0, r1))
    k, tk = rec.hbm.read("K", slice(r0, r1))
    v, tv = rec.hbm.read("V", slice(r0, r1))
    Qi[:], Kj[:], Vj[:] = q, k, v
    held = r
    phase = phase_of(cfg, "init")
    snapshots.append({"phase": phase, "O": Oi.copy(), "L": Li.copy()})
    rec.emit(
        r, held, "init", phase, [tq, tk, tv],
        {"Qi": Qi, "Kj": Kj, "Vj": Vj, "Oi": Oi, "Li": Li},
        carries={"Li": Li.copy()} if keep else None,
        indices={"i": r, "j": held},
    )  # fmt: skip

    for s in range(P):
        at = {"i": r, "step": s, "j": held}
        # step: send -- post the shard held to device r+1 and a receive from r-1 (nothing at the last step)
        last = s == P - 1
        if not last:
            sent += 2 * n * d * FLOAT_BYTES  # K and V shards, fp32
        rec.emit(
            r, held, "send", phase_of(cfg, "send", s), [], {},
            indices=at,
        )  # fmt: skip
        work = blocks(r, s, P, layout, causal)
        todo = calls(work, per)  # none: every block skipped, the device idles through the step's compute
        for k_, call in enumerate(todo):
            rows, cols = slice(call.q0 * c, call.q1 * c), slice(call.k0 * c, call.k1 * c)
            # step: attend -- (O, L) of the call's Q rows against the held shard's rows: one attention call
            o_b, l_b = partial_attention(Qi[rows], Kj[cols], Vj[cols], scale, call.causal)  # (rows, D), (rows,)
            count_partial(fl, rows.stop - rows.start, cols.stop - cols.start, d)
            Ob[:], Lb[:] = 0.0, -np.inf  # an empty partial: rows outside the call change nothing when merged
            Ob[rows], Lb[rows] = o_b, l_b
            rec.emit(
                r, held, "attend", phase_of(cfg, "attend", s, k_), [], {"Ob": Ob, "Lb": Lb},
                carries={"Lb": Lb.copy()} if keep else None,
                indices=at,
                facts={"call": k_},  # which of the step's calls, for its words
            )  # fmt: skip

            # step: merge -- the log-sum-exp rule: the call's partial merged into the device's carries
            L_old = Li.copy()  # (n,)
            Oi[rows], Li[rows] = merge(Oi[rows], Li[rows], Ob[rows], Lb[rows])
            count_merge(fl, rows.stop - rows.start, d)
            phase = phase_of(cfg, "merge", s, k_)
            snapshots.append({"phase": phase, "O": Oi.copy(), "L": Li.copy()})
            with np.errstate(all="ignore"):
                w_i = np.where(np.isneginf(L_old), 0.0, np.exp(L_old - Li))  # the weights the rule gave, for show
                w_b = np.where(np.isneginf(Lb), 0.0, np.exp(Lb - Li))
            rec.emit(
                r, held, "merge", phase, [], {"Oi": Oi, "Li": Li},
                carries={"Li": Li.copy(), "Lb": Lb.copy(), "w_i": w_i.astype(np.float32),
                         "w_b": w_b.astype(np.float32)} if keep else None,
                indices=at,
                facts={"call": k_, "L_old": L_old},  # the carries' L before the merge, for its words
            )  # fmt: skip
        out["work"][s][r] = [{"q": b.q_chunk, "k": b.k_chunk, "kind": b.kind} for b in work]
        out["holds"][s][r] = held

        # step: wait -- the receive completes: the shard device r-1 sent is now the one held
        transfers = []
        if not last:
            held = owner(r, s + 1, P)
            k, tk = rec.hbm.read("K", slice(held * n, (held + 1) * n))
            v, tv = rec.hbm.read("V", slice(held * n, (held + 1) * n))
            Kj[:], Vj[:] = k, v
            transfers = [tk, tv]
        rec.emit(
            r, held, "wait", phase_of(cfg, "wait", s), transfers, {"Kj": Kj, "Vj": Vj} if transfers else {},
            indices={**at, "j": held},  # the shard now held
        )  # fmt: skip

    # step: finish -- O and L of the device's rows leave: the carries are the answer
    to = rec.hbm.write("O", slice(r0, r1), Oi)
    tl = rec.hbm.write("L", slice(r0, r1), Li)
    rec.emit(
        r, held, "finish", phase_of(cfg, "finish"), [to, tl], {"Oi": Oi, "Li": Li},
        carries={"Li": Li.copy()} if keep else None,
        indices={"i": r, "j": held},
    )  # fmt: skip
    out["sent"][r] = sent


def run_picture(cfg: Config, out: dict[str, Any]) -> dict[str, Any]:
    """The run's part of the trace's `devices` (docs/trace-schema.md): per ring step who holds what, the work each
    device did or skipped and the transfers in flight (from `send` to `wait`); each device's carries after init and
    every merge; the bytes each device sent."""
    P, layout, n = cfg.devices, cfg.layout, cfg.br
    per = phases_per_step(cfg)
    steps = []
    for s in range(P):
        first = phase_of(cfg, "send", s)
        steps.append(
            {
                "step": s,
                "phases": [first, first + per - 1],
                "holds": [{"owner": j, "chunks": list(chunks(j, P, layout))} for j in out["holds"][s]],
                "work": out["work"][s],
                "transfers": []
                if s == P - 1
                else [
                    {
                        "from": r,
                        "to": (r + 1) % P,
                        "owner": out["holds"][s][r],
                        "chunks": list(chunks(out["holds"][s][r], P, layout)),
                        "bytes": 2 * n * cfg.d * FLOAT_BYTES,
                        "phases": [first, first + per - 1],
                    }
                    for r in range(P)
                ],
            }
        )
    return {
        "count": P,
        "layout": layout,
        "chunks": chunk_count(P, layout),
        "chunk_rows": cfg.n // chunk_count(P, layout),
        "own": [list(chunks(r, P, layout)) for r in range(P)],
        "rows": [[r * n, (r + 1) * n] for r in range(P)],
        "steps": steps,
        "carries": out["carries"],
        "sent_bytes": out["sent"],
    }


def execute(cfg: Config, inputs: dict[str, np.ndarray]) -> Recorder:
    """Run every device's program on the memory model; the recorder's `devices` holds the ring's own picture."""
    rec = Recorder(KERNEL, WHERE, set(cfg.recorded_blocks(cfg.devices)))
    P = cfg.devices
    out: dict[str, Any] = {
        "carries": [[] for _ in range(P)],
        "work": [[None] * P for _ in range(P)],
        "holds": [[None] * P for _ in range(P)],
        "sent": [0] * P,
    }
    qkv = {name: inputs[name] for name in ("Q", "K", "V")}
    outputs = {"O": (cfg.n, cfg.d), "L": (cfg.n,)}
    run_launch(rec, cfg, qkv, outputs, [Grid(P, lambda rec_, cfg_, r: device(rec_, cfg_, r, out))])
    rec.devices = run_picture(cfg, out)
    return rec


trace_blocks = blocks_of_q  # device r is block r of Q: rows [r·N/P, (r+1)·N/P) of the laid-out sequence


__all__ = ["execute", "phase_of", "trace_blocks"]
