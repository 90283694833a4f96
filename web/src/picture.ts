// Look-ups over what a trace says about its own picture (docs/trace-schema.md): the unit a step belongs to, the pick
// it shows, the block of Q whose rows it holds, the kernel it runs, Rich text, the picture's shapes. Generic: nothing
// here knows an algorithm; every answer comes from the trace.

import { cut } from "./echo";
import { rowCuts } from "./geometry";
import type { Axis, BlockInfo, Rich, Run, Step, Trace } from "./types";

/** The steps whose SRAM belongs together: the same kernel scope and the same block. */
export function unitKey(t: Trace, s: Step): string {
  return `${t.kernels[s.kernel]?.scope ?? s.kernel}:${s.block}`;
}

/** The pick a step shows (what the block picker chooses), or null (a step of a kernel the picks are not of, or one
 *  outside every pick: fa1's outer loop). */
export function pickOf(t: Pick<Trace, "picker">, s: Step): number | null {
  const p = t.picker;
  if (!p.kernels.includes(s.kernel)) return null;
  return p.index === "block" ? s.block : (s.indices[p.index] ?? null);
}

/** The pick a `blocks` entry is. */
export function pickId(t: Pick<Trace, "picker">, b: BlockInfo): number {
  const v = t.picker.index === "block" ? b.block : (b as unknown as Record<string, number | undefined>)[t.picker.index];
  return v ?? b.block;
}

/** The block of Q whose rows the step's q-axis buffers hold (its loop index `i`), or null. */
export function rowBlock(s: Step): number | null {
  return s.indices.i ?? null;
}

// ---- Rich text ----

/** The value of a slot, or undefined (absent: a `when` on it shows nothing). */
export type Slots = Record<string, string | number | undefined>;

/** Rich text flattened to a string (for titles and tests). */
export function richText(r: Rich, slots: Slots = {}): string {
  return r.map((run) => runText(run, slots)).join("");
}

function runText(run: Run, slots: Slots): string {
  if (typeof run === "string") return run;
  if ("b" in run) return run.b;
  if ("sub" in run) return run.sub.join("");
  if ("code" in run) return run.code;
  if ("slot" in run) return String(slots[run.slot] ?? "");
  return slots[run.when] === undefined ? "" : richText(run.runs, slots);
}

// ---- the picture's shapes ----

export interface Shape {
  n: number;
  d: number;
  br: number;
  bc: number;
  /** rows of Q (a group of q heads one above the other) and of K, V, where a trace has a layout */
  nq?: number;
  nk?: number;
}

/** A size in the trace's symbols (N, D, Br, Bc, or a number) at a shape. */
export function dimOf(sym: string, s: Shape): number {
  switch (sym) {
    case "N":
      return s.n;
    case "D":
      return s.d;
    case "Br":
      return s.br;
    case "Bc":
      return s.bc;
    case "Nq":
      return s.nq ?? s.n;
    case "Nk":
      return s.nk ?? s.n;
    default: {
      const v = Number(sym);
      if (!Number.isInteger(v) || v < 1) throw new Error(`a size the viewer cannot read: ${cut(JSON.stringify(sym))}`);
      return v;
    }
  }
}

export interface BufferSpec {
  name: string;
  rows: number;
  cols: number;
  rowAxis: Axis;
  colAxis: Axis;
  kernels: string[];
}

export interface TensorSpec {
  name: string;
  rows: number; // N
  cols: number; // D, N or 1
  axis: Axis; // rows grouped by Br (q) or Bc (kv)
  colAxis: Axis; // kv: its columns are keys
  /** a trace with a layout: where its block (or tile) boundaries go, where its segments begin, the words left of
   *  each, and no padding rows below it (geometry.ts's rowCuts) */
  cuts?: number[];
  bounds?: number[];
  marks?: { row: number; text: string }[];
  padRows?: number;
}

/** The picture's contents at a shape: the layout's input. */
export interface PictureSpec {
  tensors: TensorSpec[];
  /** SRAM rows of the picture, top to bottom; a buffer in `align` sits over the one named */
  sram: BufferSpec[][];
  align: Record<string, string>;
}

/** Rows and columns of a shape in symbols: a vector is a column, or (row axis "none": one row, standard's Sr) a row. */
function rowsCols(dims: string[], axes: [Axis, Axis], s: Shape): [number, number] {
  const sizes = dims.map((x) => dimOf(x, s));
  if (sizes.length >= 2) return [sizes[0]!, sizes[1]!];
  const len = sizes[0] ?? 1;
  return axes[0] === "none" ? [1, len] : [len, 1];
}

/** A trace's own shape: its N, D, Br, Bc, and where it has a layout the rows of Q and of K, V. */
export function traceShape(t: Trace): Shape {
  const c = t.config;
  return { n: c.n, d: c.d, br: c.br, bc: c.bc, nq: t.layout?.q_rows ?? c.n, nk: t.layout?.kv_rows ?? c.nk ?? c.n };
}

/** A buffer of one long row (standard's Sr): its values, a vector, run along its columns. */
export function isOneRow(t: Trace, name: string): boolean {
  const b = t.buffers[name];
  if (!b) return false;
  const [rows, cols] = rowsCols(b.dims, b.axes, t.config);
  return rows === 1 && cols > 1;
}

/** What the memory picture holds, from the trace's own description, laid out at `shape` (its own by default). */
export function pictureSpec(t: Trace, shape: Shape = traceShape(t)): PictureSpec {
  const tensors = Object.entries(t.tensors).map(([name, x]) => {
    const [rows, cols] = rowsCols(x.dims, x.axes, shape);
    const cut = rowCuts(t, x.axes[0]);
    const spec: TensorSpec = { name, rows, cols, axis: x.axes[0], colAxis: x.axes[1] };
    return cut ? { ...spec, ...cut, padRows: 0 } : spec;
  });
  const sram = t.picture.sram_rows.map((row) =>
    row.map((name) => {
      const b = t.buffers[name];
      if (!b) throw new Error(`picture.sram_rows names ${cut(name)}, which buffers does not describe`);
      const [rows, cols] = rowsCols(b.dims, b.axes, shape);
      return { name, rows, cols, rowAxis: b.axes[0], colAxis: b.axes[1], kernels: b.kernels };
    }),
  );
  const align: Record<string, string> = {};
  for (const [name, b] of Object.entries(t.buffers)) if (b.align_under) align[name] = b.align_under;
  return { tensors, sram, align };
}
