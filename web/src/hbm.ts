// What HBM holds at each phase: every write of the launch (the trace's `phases[p].writes`, recorded blocks or not) as
// an event with where its values come from. Inputs never change; outputs and intermediates appear as their blocks
// write them. A recorded step's write takes its values where its transfer's `source` says; a tensor written once
// shows its final values (`outputs`); the last write of each element of one written again and again shows its final
// value; the rest is "written, its value not in this trace".
import { isMat, sramAt, type TraceIndex } from "./derive";
import { isOneRow } from "./picture";
import type { Num, Step, Trace, Transfer, Write } from "./types";

export interface WriteEvent {
  tensor: string;
  r0: number;
  r1: number;
  c0: number;
  c1: number;
  phase: number;
  order: number;
  step: number | null; // the recorded step that wrote it, or null (a block the trace did not record)
  write: Write;
  final: boolean; // no later event writes these rows of this tensor
}

export class HbmHistory {
  /** per written tensor, its events sorted by (phase, order) */
  readonly events = new Map<string, WriteEvent[]>();
  private readonly phaseOf = new Map<string, Int32Array>();

  constructor(
    private readonly trace: Trace,
    private readonly idx: TraceIndex,
  ) {
    let order = 0;
    for (const p of trace.phases) {
      for (const w of p.writes) {
        const e: WriteEvent = {
          tensor: w.tensor,
          r0: w.rows[0],
          r1: w.rows[1],
          c0: w.cols[0],
          c1: w.cols[1],
          phase: p.phase,
          order: order++,
          step: w.step,
          write: w,
          final: false,
        };
        const list = this.events.get(e.tensor);
        if (list) list.push(e);
        else this.events.set(e.tensor, [e]);
      }
    }
    for (const [t, list] of this.events) {
      list.sort((a, b) => a.phase - b.phase || a.order - b.order);
      // final: the last event over each rectangle (the events of one tensor cover whole tiles)
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
    const none = () => undefined;
    const final = (r: number, c: number) => this.finalValue(e.tensor, r, c);
    const hasFinal = t.outputs[e.tensor] !== undefined || t.inputs[e.tensor] !== undefined;
    if (t.tensors[e.tensor]?.writes === "once" && hasFinal) return final;
    if (e.write.fill !== undefined) {
      const v = e.write.fill;
      return () => v;
    }
    const s: Step | undefined = e.step === null ? undefined : t.steps[e.step];
    const tr = s?.transfers.find(
      (x) =>
        x.kind === "write" && x.tensor === e.tensor && x.rows[0] === e.r0 && x.rows[1] === e.r1 && x.cols[0] === e.c0 && x.cols[1] === e.c1,
    );
    if (!s || !tr?.source) return e.final && hasFinal ? final : none;
    return this.fromSource(s, tr, e);
  }

  /** The values a recorded step's write took, where its transfer's source says. */
  private fromSource(s: Step, tr: Transfer, e: WriteEvent): (r: number, c: number) => Num | undefined {
    const src = tr.source!;
    if ("fill" in src) {
      const v = src.fill;
      return () => v;
    }
    const v = "carry" in src ? s.carries?.[src.carry] : (s.sram[src.buffer] ?? sramAt(this.trace, this.idx, s.index, src.buffer));
    if (!v) return () => undefined;
    if (isMat(v)) return (r, c) => this.cell(v, r - e.r0, c - e.c0);
    // a vector: one value per row, or (a buffer of one long row, standard's Sr) one per column
    const byColumn = "buffer" in src && isOneRow(this.trace, src.buffer);
    return byColumn ? (_r, c) => this.vec(v, c - e.c0) : (r) => this.vec(v, r - e.r0);
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
}
