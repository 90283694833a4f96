// Where a pick's rows and a tile's keys are (docs/trace-schema.md `layout`): blocks of Br rows and tiles of Bc keys of
// one head, or, in a trace with a layout (several q heads sharing one K/V head, packed sequences, Nq ≠ Nk), the rows
// its `blocks` list and the keys of their sequence. Generic: every answer is the trace's own.
import type { Axis, Step, Trace } from "./types";

/** The rows of K and V (Nk), and of Q, O, L (the group's q heads one above the other). */
export function kvRows(t: Trace): number {
  return t.layout?.kv_rows ?? t.config.nk ?? t.config.n;
}
export function qRows(t: Trace): number {
  return t.layout?.q_rows ?? t.config.n;
}

/** The block of Q whose rows the step's q-axis buffers hold: the pick in a trace with a layout (its `i` is the
 *  kernel's block within its sequence), else its loop index `i`; null when it has none. */
export function qBlock(t: Trace, s: Step): number | null {
  if (t.layout && t.picker.index === "block" && t.picker.kernels.includes(s.kernel)) return s.block;
  return s.indices.i ?? null;
}

/** [first, end) of block i's real rows of Q. */
export function blockRows(t: Trace, i: number): [number, number] {
  const { br, n } = t.config;
  if (t.layout) return t.blocks[i]?.rows ?? [0, 0];
  return [i * br, Math.min(n, (i + 1) * br)];
}

/** [first, end) of tile j's real keys, for block i (the keys of its sequence in a trace with a layout). */
export function tileKeys(t: Trace, i: number | null, j: number): [number, number] {
  const { bc } = t.config;
  const keys = i !== null ? t.blocks[i]?.keys : undefined;
  if (t.layout && keys) return [keys[0] + j * bc, Math.min(keys[1], keys[0] + (j + 1) * bc)];
  return [j * bc, Math.min(kvRows(t), (j + 1) * bc)];
}

/** A grid's rows as the trace cuts them: where block or tile boundaries go, where a segment (a q head, a sequence)
 *  begins, and the words left of each segment; null where blocks of Br and tiles of Bc are regular (no layout). */
export interface Cuts {
  cuts: number[];
  bounds: number[];
  marks: { row: number; text: string }[];
}

export function rowCuts(t: Trace, axis: Axis): Cuts | null {
  const lay = t.layout;
  if (!lay || axis === "none") return null;
  const cuts = new Set<number>();
  const bounds = new Set<number>();
  const marks: { row: number; text: string }[] = [];
  if (axis === "q") {
    for (const b of t.blocks) if (b.rows[0] > 0) cuts.add(b.rows[0]);
    for (const s of lay.segments) {
      if (s.q[0] > 0) bounds.add(s.q[0]);
      marks.push({ row: s.q[0], text: s.short });
    }
  } else {
    const seen = new Set<number>();
    for (const s of lay.segments) {
      if (seen.has(s.kv[0])) continue;
      seen.add(s.kv[0]);
      if (s.kv[0] > 0) bounds.add(s.kv[0]);
      for (let r = s.kv[0]; r < s.kv[1]; r += t.config.bc) if (r > 0) cuts.add(r);
      if (lay.seqs.length > 1) marks.push({ row: s.kv[0], text: `s${s.seq}` });
    }
  }
  for (const b of bounds) cuts.add(b);
  return { cuts: [...cuts].sort((a, b) => a - b), bounds: [...bounds].sort((a, b) => a - b), marks };
}
