// The memory picture's layout, what it hands out: a box per grid (HBM tensors and SRAM buffers), the two panels and
// the connectors' band, and the pixel sizes every part of the layout (and the renderers) measure with.
import type { Axis } from "./types";

export type GridName = string;

export interface GridBox {
  name: GridName;
  area: "hbm" | "sram";
  x: number;
  y: number;
  w: number; // cols * cw
  h: number; // rows * ch (real rows only; padding is below, `padRows` of them)
  rows: number;
  cols: number;
  cw: number;
  ch: number;
  text: boolean; // cells are big enough to print their numbers
  padRows: number; // HBM only: rows past N that the last block/tile covers (drawn hatched)
  group: number; // rows per block (Br) or tile (Bc) for the separators, 0 for none
  cuts?: number[]; // HBM, a trace with a layout: the rows where block (or tile) boundaries go, instead of every `group`
  bounds?: number[]; // ... and where its segments (q heads, packed sequences) begin, drawn bolder
  marks?: { row: number; text: string }[]; // ... and the words left of each segment
  axis: Axis; // what its rows follow: rows of a block of Q (q), keys of a tile (kv), or neither
  colAxis: Axis; // kv: its columns are keys (Sij, S, P)
  kernels?: string[]; // SRAM: the kernels whose shared memory holds it
}

export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface MemoryLayout {
  width: number;
  height: number;
  hbm: Rect; // panel bounds
  sram: Rect;
  stacked: boolean; // HBM above SRAM (narrow screens) instead of side by side
  band: Rect; // where the connectors run: above both panels, or between them when stacked; nothing else is drawn there
  grids: Record<GridName, GridBox>;
  hbmOrder: GridName[];
  sramOrder: GridName[];
  hbmText: boolean;
  sramText: boolean;
}

// pixels
export const PAD = 12; // around everything
export const HEAD = 24; // panel title
export const TITLE = 18; // grid title above each grid
export const GAP = 14; // between grids
export const LABEL_W = 30; // room for "i=0" / "j=0" labels left of Q and of K
export const PANEL_GAP = 64; // between HBM and SRAM: where tiles fly
export const BAND = 30; // side by side: the connectors' band above the panels (the panels start under it)
export const STACK_GAP = 44; // stacked: the band between HBM above and SRAM below
export const STACK_BELOW = 680; // narrower than this, HBM is stacked above SRAM
export const STACK_IF_TEXT_BELOW = 1000; // narrower than this, stacked too when only that lets SRAM print numbers
export const VEC_MIN = 12; // L, mi, li never thinner than this
export const TEXT_W = 40; // widest text cell
export const TEXT_MIN_W = 30; // narrowest cell that still prints "−1.39"
export const TEXT_H = 20;
export const TEXT_MIN_H = 15;
export const MAX_CELL = 40; // colour cells never larger than this
