// What one frame of the memory picture is drawn from (the trace, its index and HBM history, the layout, the colour
// scales, the step) and the look-ups every layer asks of it: the tile held, the watched block's rows, a grid's values,
// whether a buffer belongs to the kernel now running. Pure.
import { absMax } from "../../colors";
import { isMat, sramAt, type TraceIndex } from "../../derive";
import { qBlock } from "../../geometry";
import type { HbmHistory } from "../../hbm";
import type { GridBox, GridName, MemoryLayout } from "../../layoutBoxes";
import type { Mat, Num, Step, Trace, Vec } from "../../types";

export interface Scene {
  trace: Trace;
  idx: TraceIndex;
  history: HbmHistory;
  layout: MemoryLayout;
  /** one colour scale per tensor and buffer (raster.ts's colourRanges) */
  ranges: Map<string, number>;
  /** the step shown: its index into trace.steps, and the step */
  k: number;
  s: Step;
}

/** The tile of K/V held in SRAM at the step (the trace's `tile`), or null before the first. */
export function tileHeld(sc: Scene): number | null {
  return sc.s.tile;
}

/** The block of Q whose rows the step's q-axis buffers hold: its loop index `i` (the pick, in a trace with a
 *  layout), or null. */
export function rowBlock(sc: Scene): number | null {
  return qBlock(sc.trace, sc.s);
}

/** A vector as a column (or, `oneRow`, as one row), a matrix as it is. */
export function asRows(v: Vec | Mat, oneRow = false): Num[][] {
  if (isMat(v)) return v;
  return oneRow ? [v as Vec] : (v as Vec).map((x) => [x]);
}

/** An input's values (never written by the launch), or an output's final ones. */
export function hbmValues(t: Trace, name: GridName): Num[][] | null {
  const v = t.inputs[name] ?? t.outputs[name];
  return v ? asRows(v) : null;
}

/** An SRAM buffer's contents at the step, as rows (a buffer of one long row stays one row). */
export function sramValues(sc: Scene, name: string): Num[][] | null {
  const v = sramAt(sc.trace, sc.idx, sc.k, name);
  const b = sc.layout.grids[name];
  return v === null ? null : asRows(v, b !== undefined && b.rows === 1 && b.cols > 1);
}

/** The colour scale of a grid: the trace's, else its own values'. */
export function rangeOf(sc: Scene, name: GridName, values: Num[][]): number {
  return sc.ranges.get(name) ?? absMax(values);
}

/** Does this buffer belong to the kernel the step runs (others are dimmed)? */
export function live(box: GridBox, s: Step): boolean {
  return box.kernels === undefined || box.kernels.includes(s.kernel);
}
