// What HBM holds at each phase: every write of the launch as an event (rows, cols, phase) with where its values
// come from in the Trace. Inputs never change; outputs and intermediates appear as their blocks write them.
// Recorded blocks give their events (and values) step by step; the blocks a large trace did not record are
// placed by the lockstep rule (block b does what the recorded block does, on its own rows, and writes back at
// its own last phase), their values taken from the final outputs where the trace has them.
import { endpoint } from "./algos";
import { blockId, firstBlock, isMat, lastPhase, sramAt, type TraceIndex } from "./derive";
import type { Num, Step, Trace } from "./types";

export interface WriteEvent {
  tensor: string;
  r0: number;
  r1: number;
  c0: number;
  c1: number;
  phase: number;
  order: number;
  step: number | null; // the recorded step that wrote it, or null (a block the trace did not record)
  op: string; // the op that wrote it
  final: boolean; // no later event writes these rows of this tensor
}

/** Tensors written more than once per element (their intermediate values matter): FA1's carries, dQ. */
const MULTI_WRITE: Record<string, string[]> = { fa1: ["O", "l", "m"], "fa2-backward": ["dQ"] };

export class HbmHistory {
  /** per written tensor, its events sorted by (phase, order) */
  readonly events = new Map<string, WriteEvent[]>();
  private readonly phaseOf = new Map<string, Int32Array>();

  constructor(
    private readonly trace: Trace,
    private readonly idx: TraceIndex,
  ) {
    const all = trace.config.algo === "fa1" ? this.fa1Events() : this.lockstepEvents();
    for (const [k, e] of all.entries()) e.order = k;
    all.sort((a, b) => a.phase - b.phase || a.order - b.order);
    for (const e of all) {
      const list = this.events.get(e.tensor);
      if (list) list.push(e);
      else this.events.set(e.tensor, [e]);
    }
    for (const [t, list] of this.events) {
      // final: the last event over each row range (events of one tensor cover whole rows of a block)
      const seen = new Set<string>();
      for (let k = list.length - 1; k >= 0; k--) {
        const e = list[k]!;
        const key = `${e.r0}:${e.r1}:${e.c0}:${e.c1}`;
        e.final = !seen.has(key);
        seen.add(key);
      }
      this.phaseOf.set(
        t,
        Int32Array.from(list, (e) => e.phase),
      );
    }
  }

  /** Is this tensor ever written by the launch (else it is an input, shown whole from the start)? */
  written(tensor: string): boolean {
    return this.events.has(tensor);
  }

  /** How many of the tensor's events have happened once the launch is past phase p. */
  applied(tensor: string, phase: number): number {
    const ph = this.phaseOf.get(tensor);
    if (!ph) return 0;
    let lo = 0;
    let hi = ph.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (ph[mid]! <= phase) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** A key that changes whenever what HBM shows changes (for caching the drawn layer). */
  key(phase: number): string {
    let k = "";
    for (const t of this.events.keys()) k += `${this.applied(t, phase)},`;
    return k;
  }

  /** The final value of a cell (outputs, else inputs), or undefined when the trace does not hold the tensor. */
  finalValue(tensor: string, r: number, c: number): Num | undefined {
    const v = this.trace.outputs[tensor] ?? this.trace.inputs[tensor];
    if (!v) return undefined;
    const row = v[r];
    return Array.isArray(row) ? row[c] : (row as Num | undefined);
  }

  /** The value event e put in cell (r, c): undefined when the trace does not hold it (an unrecorded block). */
  valueOf(e: WriteEvent, r: number, c: number): Num | undefined {
    return this.sampler(e)(r, c);
  }

  /** Where event e's values come from, resolved once: a function of the cell (absolute row and column). */
  sampler(e: WriteEvent): (r: number, c: number) => Num | undefined {
    const t = this.trace;
    const algo = t.config.algo;
    const none = () => undefined;
    const multi = MULTI_WRITE[algo]?.includes(e.tensor) ?? false;
    const s: Step | undefined = e.step === null ? undefined : t.steps[e.step];
    const final = (r: number, c: number) => this.finalValue(e.tensor, r, c);
    if (e.op === "init" || (e.op === "write_d" && e.tensor === "dQ")) {
      const v = e.tensor === "m" ? null : 0;
      return () => v;
    }
    if (s && e.op === "write_d") {
      const di = s.carries?.Di;
      return (r) => this.vec(di, r - e.r0);
    }
    if (!multi && (t.outputs[e.tensor] || t.inputs[e.tensor])) return final;
    if (!s) return multi && e.final ? final : none;
    if (e.tensor === "dQ") {
      const dq = s.carries?.dQi;
      return (r, c) => this.cell(dq, r - e.r0, c);
    }
    if (e.tensor === "P") {
      const sr = s.sram.Sr ?? sramAt(t, this.idx, s.index, "Sr");
      return (_r, c) => this.vec(sr, c);
    }
    const buf = endpoint(algo, e.tensor, "write", s.op)[0];
    const v = buf ? sramAt(t, this.idx, s.index, buf) : null;
    if (!v) return none;
    return isMat(v) ? (r, c) => this.cell(v, r - e.r0, c - e.c0) : (r) => this.vec(v, r - e.r0);
  }

  private vec(v: unknown, k: number): Num | undefined {
    return Array.isArray(v) ? (v[k] as Num | undefined) : undefined;
  }

  private cell(v: unknown, r: number, c: number): Num | undefined {
    if (!Array.isArray(v)) return undefined;
    const row = v[r];
    return Array.isArray(row) ? (row[c] as Num | undefined) : undefined;
  }

  /** Cell (r, c) of a written tensor once `count` of its events have happened: a value, undefined (written,
   *  value not in the trace), or "unwritten". */
  valueAt(tensor: string, r: number, c: number, count: number): Num | undefined | "unwritten" {
    const list = this.events.get(tensor);
    if (!list) return this.finalValue(tensor, r, c);
    for (let k = Math.min(count, list.length) - 1; k >= 0; k--) {
      const e = list[k]!;
      if (r >= e.r0 && r < e.r1 && c >= e.c0 && c < e.c1) return this.valueOf(e, r, c);
    }
    return "unwritten";
  }

  // ---- building the events ----

  private fromStep(s: Step): WriteEvent[] {
    return s.transfers
      .filter((x) => x.kind === "write")
      .map((x) => ({
        tensor: x.tensor,
        r0: x.rows[0],
        r1: x.rows[1],
        c0: x.cols[0],
        c1: x.cols[1],
        phase: s.phase,
        order: 0,
        step: s.index,
        op: s.op,
        final: false,
      }));
  }

  /** fa2, standard, backward: recorded steps, plus every unrecorded block in lockstep with a recorded one. */
  private lockstepEvents(): WriteEvent[] {
    const t = this.trace;
    const algo = t.config.algo;
    const out: WriteEvent[] = [];
    for (const s of t.steps) out.push(...this.fromStep(s));
    const recorded = new Set(t.config.recorded_blocks);
    const unrecorded = t.blocks.map((_, k) => blockId(t, k)).filter((b) => !recorded.has(b));
    const { n, br, bc, tr } = t.config;
    const main = (s: Step) => algo !== "fa2-backward" || (s.indices !== undefined && "j" in s.indices);
    // the backward's preprocessing kernel has Tr blocks (one per block of Q); only block 0's may be recorded
    if (algo === "fa2-backward") {
      const pre = t.steps.filter((s) => !main(s));
      const done = new Set(pre.map((s) => s.block));
      const tmpl = pre.filter((s) => s.block === pre[0]?.block);
      for (let i = 0; i < tr; i++) {
        if (done.has(i)) continue;
        for (const s of tmpl)
          for (const e of this.fromStep(s)) out.push(this.shift(e, i * br - (s.block ?? 0) * br, Math.min(n, (i + 1) * br), e.phase));
      }
    }
    if (!unrecorded.length) return out;
    const tb = t.config.recorded_blocks.find((b) => t.steps.some((s) => s.block === b && main(s)));
    if (tb === undefined) return out;
    const axis = algo === "fa2-backward" ? bc : br;
    const tmplLast = lastPhase(t, tb);
    const tmpl = t.steps.filter((s) => s.block === tb && main(s));
    for (const b of unrecorded) {
      const bLast = lastPhase(t, b);
      const shift = (b - tb) * axis;
      const end = Math.min(n, (b + 1) * axis);
      for (const s of tmpl) {
        for (const e of this.fromStep(s)) {
          // only writes of the block's own rows move with it (dQ[i] is every block's, at the same phase)
          if (e.r0 < tb * axis || e.r1 > (tb + 1) * axis) continue;
          const phase = e.phase === tmplLast ? bLast : e.phase;
          if (phase > bLast || (phase === bLast && e.phase !== tmplLast)) continue;
          const moved = this.shift(e, shift, end, phase);
          if (moved.r1 > moved.r0) out.push(moved);
        }
      }
    }
    return out;
  }

  private shift(e: WriteEvent, by: number, end: number, phase: number): WriteEvent {
    return { ...e, r0: e.r0 + by, r1: Math.min(end, e.r1 + by), phase, step: null };
  }

  /** fa1: one CUDA block runs every (j, i); its writes are known from the phases alone (init per i, then a
   *  write-back per visited (j, i)), their values from the recorded steps. */
  private fa1Events(): WriteEvent[] {
    const t = this.trace;
    const { n, d, br, tr } = t.config;
    const byPhase = new Map<number, Step>();
    for (const s of t.steps) byPhase.set(s.phase, s);
    const out: WriteEvent[] = [];
    let inits = 0;
    let i = 0;
    for (const p of t.phases) {
      if (p.op === "load_kv" && p.j !== null) i = firstBlock(t, p.j);
      if (p.op !== "init" && p.op !== "write_back") continue;
      const block = p.op === "init" ? inits++ : i++;
      if (block >= tr) continue;
      const s = byPhase.get(p.phase);
      const r0 = block * br;
      const r1 = Math.min(n, r0 + br);
      for (const [tensor, cols] of [
        ["O", d],
        ["l", 1],
        ["m", 1],
      ] as const) {
        out.push({ tensor, r0, r1, c0: 0, c1: cols, phase: p.phase, order: 0, step: s ? s.index : null, op: p.op, final: false });
      }
    }
    return out;
  }
}
