// The memory picture's layout: a pure function from shapes (N, D, Br, Bc) and the space on screen
// to boxes. HBM holds Q, K, V, O (N x D) and L (N); the SRAM of the watched block holds
// Kj, Vj (Bc x D) above Qi, Sij, mi, li, Oi (Br rows each), so that row r of the block lines up
// across Qi, Sij, mi, li and Oi, Kj sits over Qi and Vj over Oi (both D wide).
import type { BufferName, TensorName } from "./types";

export interface Shape {
  n: number;
  d: number;
  br: number;
  bc: number;
}

export type GridName = TensorName | BufferName;

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
  grids: Record<GridName, GridBox>;
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
export const VEC_MIN = 12; // L, mi, li never thinner than this
export const TEXT_W = 40; // widest text cell
export const TEXT_MIN_W = 30; // narrowest cell that still prints "−1.39"
export const TEXT_H = 20;
export const TEXT_MIN_H = 15;
export const MAX_CELL = 40; // colour cells never larger than this

const ceilDiv = (a: number, b: number) => Math.floor((a + b - 1) / b);

/** Rows past N covered by the last block of Q (Tr*Br - N) and by the last tile of K/V (Tc*Bc - N). */
export function padding(s: Shape): { q: number; kv: number } {
  return { q: ceilDiv(s.n, s.br) * s.br - s.n, kv: ceilDiv(s.n, s.bc) * s.bc - s.n };
}

interface Panel {
  cw: number;
  ch: number;
  text: boolean;
}

// fixed horizontal overhead of each panel besides its cells
const HBM_FIXED = LABEL_W + 4 * GAP + LABEL_W; // labels left of Q and K, gaps between 5 grids
const SRAM_FIXED = 4 * GAP; // 5 grids in row B

function hbmWidth(s: Shape, cw: number, vec: number): number {
  return HBM_FIXED + 4 * s.d * cw + vec;
}
function sramWidth(s: Shape, cw: number, vec: number): number {
  return SRAM_FIXED + (2 * s.d + s.bc) * cw + 2 * vec;
}
function hbmHeight(s: Shape, ch: number): number {
  const pad = padding(s);
  return HEAD + TITLE + (s.n + Math.max(pad.q, pad.kv)) * ch;
}
function sramHeight(s: Shape, ch: number): number {
  return HEAD + 2 * TITLE + GAP + (s.bc + s.br) * ch;
}

/** Largest text cell width in [TEXT_MIN_W, TEXT_W] for which `fits(cw)`, or 0. */
function textWidth(fits: (cw: number) => boolean): number {
  for (let cw = TEXT_W; cw >= TEXT_MIN_W; cw--) if (fits(cw)) return cw;
  return 0;
}

/** A text-mode row height for `rows` rows within `avail` pixels, or 0. */
function textHeight(rows: number, avail: number): number {
  const ch = Math.min(TEXT_H, Math.floor(avail / rows));
  return ch >= TEXT_MIN_H ? ch : 0;
}

function colourPanel(cols: number, rows: number, widthForCells: number, heightForCells: number): Panel {
  const cw = Math.max(0.25, Math.min(MAX_CELL, widthForCells / cols));
  const ch = Math.max(0.1, Math.min(cw, MAX_CELL, heightForCells / rows));
  return { cw, ch, text: false };
}

/**
 * Boxes for every grid of the memory picture, within `width` pixels and at most `maxHeight`.
 * Text mode (numbers in cells) when the cells can be at least TEXT_MIN_W x TEXT_MIN_H; otherwise
 * a colour scale, HBM and SRAM each at their own scale (SRAM is the zoomed-in block).
 */
export function layoutMemory(s: Shape, width: number, maxHeight = 440): MemoryLayout {
  const avail = Math.max(200, width - 2 * PAD - PANEL_GAP);
  const pad = padding(s);
  const hbmRows = s.n + Math.max(pad.q, pad.kv);
  const sramRows = s.bc + s.br;
  const hbmCellsH = maxHeight - 2 * PAD - HEAD - TITLE;
  const sramCellsH = maxHeight - 2 * PAD - HEAD - 2 * TITLE - GAP;

  let hbm: Panel;
  let sram: Panel;
  const bothText = textWidth((cw) => hbmWidth(s, cw, cw) + sramWidth(s, cw, cw) <= avail);
  const hbmTH = textHeight(hbmRows, hbmCellsH);
  const sramTH = textHeight(sramRows, sramCellsH);
  if (bothText && hbmTH && sramTH) {
    hbm = { cw: bothText, ch: hbmTH, text: true };
    sram = { cw: bothText, ch: sramTH, text: true };
  } else {
    // SRAM (the block we are inside) gets text if it fits in 60% of the width; HBM takes the rest
    const sramText = textWidth((cw) => sramWidth(s, cw, cw) <= 0.6 * avail);
    if (sramText && sramTH) {
      sram = { cw: sramText, ch: sramTH, text: true };
    } else {
      const share = 0.58 * avail;
      sram = colourPanel(2 * s.d + s.bc, sramRows, share - SRAM_FIXED - 2 * VEC_MIN, sramCellsH);
    }
    const sramW = sramWidth(s, sram.cw, Math.max(sram.cw, VEC_MIN));
    const rest = avail - sramW;
    hbm = colourPanel(4 * s.d, hbmRows, rest - HBM_FIXED - VEC_MIN, hbmCellsH);
  }

  const grids = {} as Record<GridName, GridBox>;
  const box = (
    name: GridName, area: "hbm" | "sram", x: number, y: number, rows: number, cols: number, p: Panel,
    vec: number, padRows = 0, group = 0,
  ): GridBox => {
    const cw = cols === 1 ? vec : p.cw;
    const b: GridBox = { name, area, x, y, w: cols * cw, h: rows * p.ch, rows, cols, cw, ch: p.ch, text: p.text,
      padRows, group };
    grids[name] = b;
    return b;
  };

  // HBM: Q | K | V | O | L, N rows each, aligned
  const hv = Math.max(hbm.cw, VEC_MIN);
  const hy = PAD + HEAD + TITLE;
  let x = PAD + LABEL_W;
  x += box("Q", "hbm", x, hy, s.n, s.d, hbm, hv, pad.q, s.br).w + GAP + LABEL_W;
  x += box("K", "hbm", x, hy, s.n, s.d, hbm, hv, pad.kv, s.bc).w + GAP;
  x += box("V", "hbm", x, hy, s.n, s.d, hbm, hv, pad.kv, s.bc).w + GAP;
  x += box("O", "hbm", x, hy, s.n, s.d, hbm, hv, pad.q, s.br).w + GAP;
  x += box("L", "hbm", x, hy, s.n, 1, hbm, hv, pad.q, s.br).w;
  const hbmRect: Rect = { x: PAD, y: PAD, w: x - PAD, h: hbmHeight(s, hbm.ch) };

  // SRAM: row A = Kj (over Qi), Vj (over Oi); row B = Qi | Sij | mi | li | Oi
  const sv = Math.max(sram.cw, VEC_MIN);
  const sx = x + PANEL_GAP;
  const ay = PAD + HEAD + TITLE;
  const by = ay + s.bc * sram.ch + GAP + TITLE;
  let bx = sx;
  const qi = box("Qi", "sram", bx, by, s.br, s.d, sram, sv);
  bx += qi.w + GAP;
  bx += box("Sij", "sram", bx, by, s.br, s.bc, sram, sv).w + GAP;
  bx += box("mi", "sram", bx, by, s.br, 1, sram, sv).w + GAP;
  bx += box("li", "sram", bx, by, s.br, 1, sram, sv).w + GAP;
  const oi = box("Oi", "sram", bx, by, s.br, s.d, sram, sv);
  bx += oi.w;
  box("Kj", "sram", qi.x, ay, s.bc, s.d, sram, sv);
  box("Vj", "sram", oi.x, ay, s.bc, s.d, sram, sv);
  const sramRect: Rect = { x: sx, y: PAD, w: bx - sx, h: sramHeight(s, sram.ch) };

  const height = Math.ceil(Math.max(hbmRect.y + hbmRect.h, sramRect.y + sramRect.h) + PAD);
  return {
    width: Math.ceil(bx + PAD),
    height,
    hbm: hbmRect,
    sram: sramRect,
    grids,
    hbmText: hbm.text,
    sramText: sram.text,
  };
}

/** The rectangle covering rows [r0, r1) and cols [c0, c1) of a grid. */
export function cellRect(b: GridBox, r0: number, r1: number, c0 = 0, c1 = b.cols): Rect {
  return { x: b.x + c0 * b.cw, y: b.y + r0 * b.ch, w: (c1 - c0) * b.cw, h: (r1 - r0) * b.ch };
}

export interface Hit {
  grid: GridName;
  r: number;
  c: number;
}

/** Which cell is under (x, y), if any. */
export function hitTest(l: MemoryLayout, x: number, y: number): Hit | null {
  for (const b of Object.values(l.grids)) {
    if (x < b.x || y < b.y || x >= b.x + b.w || y >= b.y + b.h) continue;
    const r = Math.min(b.rows - 1, Math.floor((y - b.y) / b.ch));
    const c = Math.min(b.cols - 1, Math.floor((x - b.x) / b.cw));
    return { grid: b.name, r, c };
  }
  return null;
}

/** Characters a text cell can hold at the 10px monospace font the renderer uses. */
export function cellChars(cw: number): number {
  return Math.max(1, Math.floor((cw - 4) / 6));
}
