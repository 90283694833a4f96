// Look-ups over a Trace: the SRAM contents at a step, the launch-wide counters at a step, which rows and columns
// are padding, which tiles causal masking skips, what each block is doing at a phase. Indexing only: the numbers
// all come from the Trace.
import { unitOf } from "./algos";
import type { BufferName, Counters, Mat, Step, Trace, Vec } from "./types";

export interface TraceIndex {
  /** every SRAM buffer any step fills, in first-seen order */
  buffers: BufferName[];
  /** per step, per buffer (index into `buffers`): the step whose snapshot holds its contents (-1: none yet) */
  source: Int32Array[];
  /** launch-wide cumulative HBM counters per phase (all blocks in lockstep) */
  counters: Counters[];
  /** true when trace.phases had to be repaired (see phaseCounters) */
  repairedPhases: boolean;
  /** the tile of K/V held in SRAM at each step (null before the first) */
  tile: (number | null)[];
}

export function indexTrace(trace: Trace): TraceIndex {
  const algo = trace.config.algo;
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
  const tile: (number | null)[] = [];
  const latest = new Int32Array(buffers.length).fill(-1);
  let unit = "";
  let held: number | null = null;
  trace.steps.forEach((s, k) => {
    const u = unitOf(algo, s);
    if (u !== unit) {
      latest.fill(-1);
      unit = u;
      held = null;
    }
    for (const b of Object.keys(s.sram)) latest[at.get(b)!] = k;
    if (s.j !== null) held = s.j;
    tile.push(held);
    source.push(latest.slice());
  });
  const { counters, repaired } = phaseCounters(trace);
  return { buffers, source, counters, repairedPhases: repaired, tile };
}

/** A buffer's contents after step k (the latest snapshot at or before k in the same block and kernel). */
export function sramAt(trace: Trace, idx: TraceIndex, k: number, buf: BufferName): Vec | Mat | null {
  const bi = idx.buffers.indexOf(buf);
  const src = bi < 0 ? -1 : (idx.source[k]?.[bi] ?? -1);
  return src < 0 ? null : (trace.steps[src]!.sram[buf] ?? null);
}

/** A buffer's contents just before step k (null at the block's first step). */
export function sramBefore(trace: Trace, idx: TraceIndex, k: number, buf: BufferName): Vec | Mat | null {
  const s = trace.steps[k];
  const prev = trace.steps[k - 1];
  if (!s || !prev || unitOf(trace.config.algo, prev) !== unitOf(trace.config.algo, s)) return null;
  return sramAt(trace, idx, k - 1, buf);
}

function zeroCounters(names: string[]): Counters {
  const c: Counters = {};
  for (const t of names) c[t] = { read: 0, written: 0 };
  return c;
}

function sameCounters(a: Counters, b: Counters): boolean {
  return Object.keys(b).every((t) => a[t]?.read === b[t]!.read && a[t]?.written === b[t]!.written);
}

/**
 * The launch-wide cumulative counters per phase: `trace.phases[p].hbm`, as the schema says.
 * A guard: the last phase must equal the launch totals `trace.hbm`. When it does not (an engine
 * defect: FA2 traces from before the fix counted every write as a read too and dropped reads), the
 * per-phase counts are rebuilt from the recorded steps' own transfers (FA2 only: tile loads (K, V) are the
 * same for every block of Q, block loads/stores (Q, O, L) cover each block's rows).
 */
export function phaseCounters(trace: Trace): { counters: Counters[]; repaired: boolean } {
  const given = trace.phases.map((p) => p.hbm);
  const last = given[given.length - 1];
  if ((last && sameCounters(last, trace.hbm)) || trace.config.algo !== "fa2") return { counters: given, repaired: false };
  const byPhase = new Map<number, Step>();
  for (const s of trace.steps) if (!byPhase.has(s.phase)) byPhase.set(s.phase, s);
  const rebuilt: Counters[] = [];
  let run = zeroCounters(Object.keys(trace.hbm));
  for (const p of trace.phases) {
    run = structuredClone(run);
    for (const t of byPhase.get(p.phase)?.transfers ?? []) {
      const cols = t.cols[1] - t.cols[0];
      const elements =
        t.tensor === "K" || t.tensor === "V"
          ? t.elements * trace.config.tr
          : trace.blocks.reduce((acc, b) => acc + (b.rows[1] - b.rows[0]) * cols, 0);
      if (!run[t.tensor]) continue;
      if (t.kind === "read") run[t.tensor]!.read += elements;
      else run[t.tensor]!.written += elements;
    }
    rebuilt.push(run);
  }
  const end = rebuilt[rebuilt.length - 1];
  // if even the rebuild disagrees with the totals, show what the trace says rather than a guess
  return end && sameCounters(end, trace.hbm) ? { counters: rebuilt, repaired: true } : { counters: given, repaired: false };
}

/** Is row r of block i a real row of Q (not padding past N)? */
export function rowValid(trace: Trace, block: number | null, r: number): boolean {
  return block === null ? true : block * trace.config.br + r < trace.config.n;
}

/** Is row c of tile j a real key (not padding past N)? */
export function keyValid(trace: Trace, j: number | null, c: number): boolean {
  return j === null ? true : j * trace.config.bc + c < trace.config.n;
}

// ---- causal masking: which (i, j) pairs run ----

/** The last K/V tile block i of Q reads: all of them, or under causal the one holding its last row. */
export function lastTile(trace: Trace, i: number): number {
  const { n, br, bc, tc } = trace.config;
  if (!trace.config.causal) return tc - 1;
  return Math.floor((Math.min(n, (i + 1) * br) - 1) / bc);
}

/** The first block of Q that tile j meets: 0, or under causal the block holding row j·Bc. */
export function firstBlock(trace: Trace, j: number): number {
  return trace.config.causal ? Math.floor((j * trace.config.bc) / trace.config.br) : 0;
}

/** Key columns block i uses: N, or under causal min(N, (last tile + 1)·Bc). */
export function kvWidth(trace: Trace, i: number): number {
  return Math.min(trace.config.n, (lastTile(trace, i) + 1) * trace.config.bc);
}

/** What pair (i, j) does: "full" (computed, no mask), "masked" (computed, crosses the diagonal), "skipped". */
export function pairKind(trace: Trace, i: number, j: number): "full" | "masked" | "skipped" {
  const { br, bc, n } = trace.config;
  if (j > lastTile(trace, i)) return "skipped";
  if (!trace.config.causal) return "full";
  const lastKey = Math.min(n, (j + 1) * bc) - 1;
  return lastKey > i * br ? "masked" : "full";
}

// ---- blocks in lockstep ----

/** blockIdx.x of a `trace.blocks` entry. */
export function blockId(trace: Trace, k: number): number {
  return trace.blocks[k]?.block ?? k;
}

/** The last phase of block b's program (its write-back). */
export function lastPhase(trace: Trace, b: number): number {
  const info = trace.blocks.find((x, k) => (x.block ?? k) === b);
  if (info?.phases) return info.phases - 1;
  // traces before per-block phase counts: the watched block's program, the same for all without causal
  let last = -1;
  for (const s of trace.steps) if (s.block === b) last = Math.max(last, s.phase);
  return last >= 0 ? last : trace.phases.length - 1;
}

/** What block b does at phase p: runs the op every running block runs ("same"), its own last op ("last"),
 *  waits ("idle": standard's kernels, where a block with fewer tiles waits for the launch), or is "done". */
export function blockStatus(trace: Trace, b: number, p: number): "same" | "last" | "idle" | "done" {
  const last = lastPhase(trace, b);
  if (p > last) return "done";
  if (p === last) return "last";
  const recorded = trace.config.recorded_blocks.includes(b) && trace.config.algo !== "fa1";
  if (recorded && !trace.steps.some((s) => s.block === b && s.phase === p)) return "idle";
  return "same";
}

export function isMat(x: Vec | Mat | null | undefined): x is Mat {
  return Array.isArray(x) && Array.isArray(x[0]);
}
