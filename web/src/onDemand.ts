// Arrays on demand (docs/trace-schema.md, "Arrays on demand"): the server sends a large launch without its steps'
// arrays, each left out as a stub with its dtype, shape, min and max (codec.ts checks them; the colour scales read
// their min and max). Before the page draws a step, the arrays that step's views read are fetched, through the Source
// that sent the trace (/api/trace/arrays), and put in place (codec.putArray). What a step's views read:
//   - its own arrays (its SRAM snapshot, carries, substeps' values);
//   - the SRAM its unit holds at it and at the step before (derive.sramAt, sramBefore: the latest snapshot of each
//     buffer, which an earlier step holds);
//   - the values HBM shows up to its phase (hbm.ts): every write of a recorded step whose values the trace takes
//     from that step (its carries, or the buffer it writes back from), all of them, as the HBM image paints each.
// A trace sent whole (every launch small enough, every file and export) has nothing left out: `arraysFor` is null.
import { hasLeftOut, isLeftOut, putArray } from "./codec";
import { indexTrace, type TraceIndex } from "./derive";
import type { Step, Trace } from "./types";

/** Fetch the arrays of these steps: the answer of /api/trace/arrays?…&steps=K,K,… (`{"steps": [...]}`). */
export type StepFetch = (steps: number[], signal?: AbortSignal) => Promise<unknown>;

/** Steps one request asks for at most (the server's limit). */
const PER_REQUEST = 256;
/** Steps ahead of the one shown whose arrays are fetched while it is shown (playback does not wait). */
const AHEAD = 2;

const loaders = new WeakMap<Trace, Loader>();

/** A trace the Source sent with arrays left out: from now on `arraysFor` fetches what each step needs with `fetch`. */
export function attachArrays(t: Trace, fetch: StepFetch): void {
  if (hasLeftOut(t)) loaders.set(t, new Loader(t, fetch));
}

/** null when every array step k's views read is in place; else a promise that settles once they are (rejected with
 *  an Error saying, in one line, why they could not be fetched). Steps after k are fetched ahead meanwhile. */
export function arraysFor(t: Trace, k: number): Promise<void> | null {
  const loader = loaders.get(t);
  if (!loader || !t.steps[k]) return null;
  const wait = loader.ensure(loader.needed(k));
  for (let a = 1; a <= AHEAD && t.steps[k + a]; a++) {
    // ahead: failures are said when (if) that step is asked for
    const ahead = () => loader.ensure(loader.needed(k + a))?.catch(() => {});
    if (wait) void wait.then(ahead, () => {});
    else void ahead();
  }
  return wait;
}

/** The steps whose arrays drawing step k reads (see the top of this file), k first. */
export function stepsRead(t: Trace, idx: TraceIndex, k: number): number[] {
  const out = new Set<number>([k]);
  for (const src of idx.source[k] ?? []) if (src >= 0) out.add(src);
  if (k > 0 && idx.unit[k - 1] === idx.unit[k]) for (const src of idx.source[k - 1] ?? []) if (src >= 0) out.add(src);
  const phase = t.steps[k]!.phase;
  for (const p of t.phases) {
    if (p.phase > phase) continue;
    for (const w of p.writes) {
      if (w.step === null || w.fill !== undefined) continue;
      const info = t.tensors[w.tensor];
      const hasFinal = w.tensor in t.outputs || w.tensor in t.inputs; // `in`: no lazy array decoded to ask
      if (info?.writes === "once" && hasFinal) continue; // drawn from outputs (hbm.ts)
      const s = t.steps[w.step];
      if (!s) continue;
      const tr = s.transfers.find(
        (x) =>
          x.kind === "write" &&
          x.tensor === w.tensor &&
          x.rows[0] === w.rows[0] &&
          x.rows[1] === w.rows[1] &&
          x.cols[0] === w.cols[0] &&
          x.cols[1] === w.cols[1],
      );
      const src = tr?.source;
      if (!src || "fill" in src) continue;
      out.add(w.step);
      if ("buffer" in src && !(src.buffer in s.sram)) {
        // written back from a buffer an earlier step of its unit holds (derive.sramAt)
        const bi = idx.buffers.indexOf(src.buffer);
        const from = bi < 0 ? -1 : (idx.source[w.step]?.[bi] ?? -1);
        if (from >= 0) out.add(from);
      }
    }
  }
  return [...out];
}

/** The holders of a step's arrays: its sram, its carries, its substeps' values. */
function holdersOf(s: Step): [string, Record<string, unknown>][] {
  const out: [string, Record<string, unknown>][] = [];
  if (s.sram && typeof s.sram === "object") out.push(["sram", s.sram as Record<string, unknown>]);
  if (s.carries && typeof s.carries === "object") out.push(["carries", s.carries as Record<string, unknown>]);
  (s.substeps ?? []).forEach((sub, q) => {
    if (sub?.values && typeof sub.values === "object") out.push([`substeps/${q}`, sub.values as Record<string, unknown>]);
  });
  return out;
}

class Loader {
  private idx: TraceIndex | null = null;
  /** steps with arrays left out and not fetched */
  private readonly missing = new Set<number>();
  /** steps being fetched */
  private readonly coming = new Map<number, Promise<void>>();

  constructor(
    private readonly t: Trace,
    private readonly fetch: StepFetch,
  ) {
    t.steps.forEach((s, k) => {
      if (holdersOf(s).some(([, g]) => Object.keys(g).some((key) => isLeftOut(g, key)))) this.missing.add(k);
    });
  }

  needed(k: number): number[] {
    this.idx ??= indexTrace(this.t);
    return stepsRead(this.t, this.idx, k);
  }

  /** null when none of `steps` lacks its arrays; else a promise that they are all in place. */
  ensure(steps: number[]): Promise<void> | null {
    const waits: Promise<void>[] = [];
    const ask: number[] = [];
    for (const k of steps) {
      const coming = this.coming.get(k);
      if (coming) waits.push(coming);
      else if (this.missing.has(k)) ask.push(k);
    }
    for (let a = 0; a < ask.length; a += PER_REQUEST) {
      const part = ask.slice(a, a + PER_REQUEST);
      const done = this.fetchSteps(part);
      for (const k of part) this.coming.set(k, done);
      void done.then(
        () => {
          for (const k of part) this.coming.delete(k);
        },
        () => {
          for (const k of part) this.coming.delete(k); // asked again next time
        },
      );
      waits.push(done);
    }
    if (!waits.length) return null;
    return Promise.all(waits).then(() => {});
  }

  private async fetchSteps(steps: number[]): Promise<void> {
    const answer = (await this.fetch(steps)) as { steps?: unknown };
    const parts = Array.isArray(answer?.steps) ? (answer.steps as Record<string, unknown>[]) : [];
    steps.forEach((k, n) => {
      const part = parts[n];
      if (!part || typeof part !== "object" || part.step !== k) throw new Error(`the server's answer lacks the arrays of step ${k}`);
      for (const [name, group] of holdersOf(this.t.steps[k]!)) {
        const [kind, q] = name.split("/");
        const subs = part.substeps as unknown[] | undefined;
        const got = (q === undefined ? part[kind!] : subs?.[Number(q)]) as Record<string, unknown> | null;
        for (const key of Object.keys(group)) {
          if (!isLeftOut(group, key)) continue;
          const problem = putArray(group, key, got?.[key]);
          const path = q === undefined ? `steps/${k}/${kind}/${key}` : `steps/${k}/substeps/${q}/values/${key}`;
          if (problem) throw new Error(`the server's array ${path} ${problem}`);
        }
      }
      this.missing.delete(k);
    });
  }
}
