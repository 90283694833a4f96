// Look-ups over a Trace: the SRAM contents at a step, the launch-wide counters at a step, which rows and columns
// are padding, what each pick is doing at a phase. Indexing only: the numbers and the judgements all come from the
// Trace.
import { blockRows, tileKeys } from "./geometry";
import { pickId, unitKey } from "./picture";
import type { BufferName, Counters, Mat, Trace, Vec } from "./types";

export interface TraceIndex {
  /** every SRAM buffer any step fills, in first-seen order */
  buffers: BufferName[];
  /** per step, per buffer (index into `buffers`): the step whose snapshot holds its contents (-1: none yet) */
  source: Int32Array[];
  /** launch-wide cumulative HBM counters per phase (trace.phases[p].hbm) */
  counters: Counters[];
  /** per step, the unit it belongs to (picture.ts's unitKey) */
  unit: string[];
}

export function indexTrace(trace: Trace): TraceIndex {
  const buffers: BufferName[] = [];
  const at = new Map<BufferName, number>();
  for (const s of trace.steps) {
    for (const b of Object.keys(s.sram)) {
      if (!at.has(b)) {
        at.set(b, buffers.length);
        buffers.push(b);
      }
    }
  }
  const source: Int32Array[] = [];
  const units: string[] = [];
  const latest = new Int32Array(buffers.length).fill(-1);
  let unit = "";
  trace.steps.forEach((s, k) => {
    const u = unitKey(trace, s);
    if (u !== unit) {
      latest.fill(-1);
      unit = u;
    }
    for (const b of Object.keys(s.sram)) latest[at.get(b)!] = k;
    units.push(u);
    source.push(latest.slice());
  });
  return { buffers, source, counters: trace.phases.map((p) => p.hbm), unit: units };
}

/** A buffer's contents after step k (the latest snapshot at or before k in the same unit). */
export function sramAt(trace: Trace, idx: TraceIndex, k: number, buf: BufferName): Vec | Mat | null {
  const bi = idx.buffers.indexOf(buf);
  const src = bi < 0 ? -1 : (idx.source[k]?.[bi] ?? -1);
  return src < 0 ? null : (trace.steps[src]!.sram[buf] ?? null);
}

/** A buffer's contents just before step k (null at the unit's first step). */
export function sramBefore(trace: Trace, idx: TraceIndex, k: number, buf: BufferName): Vec | Mat | null {
  if (k <= 0 || idx.unit[k - 1] !== idx.unit[k]) return null;
  return sramAt(trace, idx, k - 1, buf);
}

/** Is row r of block i of Q a real row (not padding past N, or past its sequence's end)? */
export function rowValid(trace: Trace, block: number | null, r: number): boolean {
  if (block === null) return true;
  if (trace.layout) {
    const [a, b] = blockRows(trace, block);
    return r < b - a;
  }
  return block * trace.config.br + r < trace.config.n;
}

/** Is row c of tile j a real key (not padding past Nk, or past the sequence of block i)? */
export function keyValid(trace: Trace, j: number | null, c: number, block: number | null = null): boolean {
  if (j === null) return true;
  const [a, b] = tileKeys(trace, block, j);
  return c < b - a;
}

// ---- the picks at a phase ----

/** The last phase of a pick's program (its write-back). */
export function lastPhase(trace: Trace, pick: number): number {
  const info = trace.blocks.find((b) => pickId(trace, b) === pick);
  return info ? info.phases - 1 : trace.phases.length - 1;
}

/** What a pick does at phase p: runs the op every running block runs ("same"), its own last op ("last"), waits
 *  ("idle": the trace's `idle` ranges), or is "done". */
export function blockStatus(trace: Trace, pick: number, p: number): "same" | "last" | "idle" | "done" {
  const info = trace.blocks.find((b) => pickId(trace, b) === pick);
  const last = info ? info.phases - 1 : trace.phases.length - 1;
  if (p > last) return "done";
  if (p === last) return "last";
  if (info?.idle.some(([a, b]) => p >= a && p < b)) return "idle";
  return "same";
}

export function isMat(x: Vec | Mat | null | undefined): x is Mat {
  return Array.isArray(x) && Array.isArray(x[0]);
}
