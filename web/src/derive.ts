// Look-ups over a Trace: the SRAM contents at a step, the launch-wide counters at a step, which rows
// and columns are padding. Indexing only: the numbers all come from the Trace.
import { BUFFERS, TENSORS } from "./types";
import type { BufferName, Counters, Mat, Step, Trace, Vec } from "./types";

export interface TraceIndex {
  /** per step, per buffer: the step whose snapshot holds that buffer's contents (-1: none yet) */
  source: Int32Array[];
  /** launch-wide cumulative HBM counters per phase (all blocks in lockstep) */
  counters: Counters[];
  /** true when trace.phases had to be repaired (see phaseCounters) */
  repairedPhases: boolean;
  /** first step of each recorded block */
  firstStep: Map<number, number>;
}

export function indexTrace(trace: Trace): TraceIndex {
  const source: Int32Array[] = [];
  const latest = new Int32Array(BUFFERS.length).fill(-1);
  let block = -1;
  const firstStep = new Map<number, number>();
  trace.steps.forEach((s, k) => {
    if (s.block !== block) {
      latest.fill(-1);
      block = s.block;
      firstStep.set(block, k);
    }
    BUFFERS.forEach((b, bi) => {
      if (s.sram[b] !== undefined) latest[bi] = k;
    });
    source.push(latest.slice());
  });
  const { counters, repaired } = phaseCounters(trace);
  return { source, counters, repairedPhases: repaired, firstStep };
}

/** A buffer's contents after step k (the latest snapshot at or before k in the same block). */
export function sramAt(trace: Trace, idx: TraceIndex, k: number, buf: BufferName): Vec | Mat | null {
  const src = idx.source[k]?.[BUFFERS.indexOf(buf)] ?? -1;
  return src < 0 ? null : (trace.steps[src]!.sram[buf] ?? null);
}

/** A buffer's contents just before step k (null at the block's first step). */
export function sramBefore(trace: Trace, idx: TraceIndex, k: number, buf: BufferName): Vec | Mat | null {
  const s = trace.steps[k];
  const prev = trace.steps[k - 1];
  if (!s || !prev || prev.block !== s.block) return null;
  return sramAt(trace, idx, k - 1, buf);
}

/** Did step k write this buffer? */
export function changedAt(trace: Trace, k: number, buf: BufferName): boolean {
  return trace.steps[k]?.sram[buf] !== undefined;
}

function zeroCounters(): Counters {
  return { Q: { read: 0, written: 0 }, K: { read: 0, written: 0 }, V: { read: 0, written: 0 },
    O: { read: 0, written: 0 }, L: { read: 0, written: 0 } };
}

function sameCounters(a: Counters, b: Counters): boolean {
  return TENSORS.every((t) => a[t].read === b[t].read && a[t].written === b[t].written);
}

/**
 * The launch-wide cumulative counters per phase: `trace.phases[p].hbm`, as the schema says.
 * A guard: the last phase must equal the launch totals `trace.hbm`. When it does not (an engine
 * defect: flashviz.trace/1 producers before the fix counted every write as a read too and dropped
 * reads), the per-phase counts are rebuilt from the recorded steps' own transfers: tile loads (K, V)
 * are the same for every block of Q, block loads/stores (Q, O, L) cover each block's rows.
 */
export function phaseCounters(trace: Trace): { counters: Counters[]; repaired: boolean } {
  const given = trace.phases.map((p) => p.hbm);
  const last = given[given.length - 1];
  if (last && sameCounters(last, trace.hbm)) return { counters: given, repaired: false };
  const byPhase = new Map<number, Step>();
  for (const s of trace.steps) if (!byPhase.has(s.phase)) byPhase.set(s.phase, s);
  const rebuilt: Counters[] = [];
  let run = zeroCounters();
  for (const p of trace.phases) {
    run = structuredClone(run);
    for (const t of byPhase.get(p.phase)?.transfers ?? []) {
      const cols = t.cols[1] - t.cols[0];
      const elements =
        t.tensor === "K" || t.tensor === "V"
          ? t.elements * trace.config.tr
          : trace.blocks.reduce((acc, b) => acc + (b.rows[1] - b.rows[0]) * cols, 0);
      if (t.kind === "read") run[t.tensor].read += elements;
      else run[t.tensor].written += elements;
    }
    rebuilt.push(run);
  }
  const end = rebuilt[rebuilt.length - 1];
  // if even the rebuild disagrees with the totals, show what the trace says rather than a guess
  return end && sameCounters(end, trace.hbm) ? { counters: rebuilt, repaired: true } : { counters: given, repaired: false };
}

/** Is row r of block i a real row of Q (not padding past N)? */
export function rowValid(trace: Trace, block: number, r: number): boolean {
  return block * trace.config.br + r < trace.config.n;
}

/** Is row c of tile j a real key (not padding past N)? */
export function keyValid(trace: Trace, j: number | null, c: number): boolean {
  return j === null ? true : j * trace.config.bc + c < trace.config.n;
}

/** The tile of K/V held in SRAM at step k (the latest load_kv of this block), or null before the first. */
export function tileAt(trace: Trace, k: number): number | null {
  const s = trace.steps[k];
  if (!s) return null;
  if (s.j !== null) return s.j;
  for (let q = k - 1; q >= 0; q--) {
    const p = trace.steps[q]!;
    if (p.block !== s.block) break;
    if (p.j !== null) return p.j;
  }
  return null;
}

/**
 * Which blocks have stored their rows of O and L by step k. Every block runs the same program at once,
 * so block b has written once the launch reaches its write_back phase: known from its own steps when
 * recorded, else taken as the watched block's (the same unless causal masking shortens some blocks).
 */
export function writtenBlocks(trace: Trace, k: number): (block: number) => boolean {
  const s = trace.steps[k];
  if (!s) return () => false;
  const wb = new Map<number, number>();
  for (const x of trace.steps) if (x.op === "write_back") wb.set(x.block, x.phase);
  const own = wb.get(s.block) ?? Number.POSITIVE_INFINITY;
  return (b) => (wb.get(b) ?? own) <= s.phase;
}

export function isMat(x: Vec | Mat | null | undefined): x is Mat {
  return Array.isArray(x) && Array.isArray(x[0]);
}
