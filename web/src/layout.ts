// The memory picture's layout: a pure function from the picture's contents (picture.ts's PictureSpec, from the
// trace: its HBM tensors, all N rows tall and aligned, and the SRAM buffers in rows, a buffer sitting over the one it
// aligns under, so that row r of a block lines up across the buffers of one row) and the space on screen to boxes.
// Wide enough, HBM sits left of SRAM under a band where the connectors arc from a tensor to its buffer; narrower
// (a phone), HBM sits above SRAM with the band between them, and SRAM's rows wrap when that lets it print numbers.
import type { BufferSpec, PictureSpec, Shape } from "./picture";
import type { Axis } from "./types";

export type { Shape } from "./picture";

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
const ND_MIN_W = 24; // an N x D tensor next to N x N ones is at least this wide, room permitting

const ceilDiv = (a: number, b: number) => Math.floor((a + b - 1) / b);

/** Rows past N covered by the last block of Q (Tr*Br - N) and by the last tile of K/V (Tc*Bc - N). */
export function padding(s: Shape): { q: number; kv: number } {
  return { q: ceilDiv(s.n, s.br) * s.br - s.n, kv: ceilDiv(s.n, s.bc) * s.bc - s.n };
}

/** HBM's height in rows: its tallest tensor with the padding rows below it (N + the larger padding, one head). */
function hbmRowsOf(spec: PictureSpec, s: Shape): number {
  const pad = padding(s);
  return Math.max(...spec.tensors.map((t) => t.rows + (t.padRows ?? (t.axis === "kv" ? pad.kv : pad.q))));
}

interface Panel {
  cw: number; // N x D and buffer cells
  ch: number;
  text: boolean;
  cwn?: number; // HBM's N x N tensors (S, P), when not text
}

const isVec = (cols: number) => cols === 1;

/** How many label columns HBM needs: one left of the first tensor of each row axis (i= for Q, j= for K). */
function hbmLabels(spec: PictureSpec): Set<string> {
  const out = new Set<string>();
  const seen = new Set<Axis>();
  for (const t of spec.tensors) {
    if (!seen.has(t.axis)) {
      seen.add(t.axis);
      out.add(t.name);
    }
  }
  return out;
}

function hbmWidth(spec: PictureSpec, p: Panel, vec: number): number {
  const labels = hbmLabels(spec);
  let w = (spec.tensors.length - 1) * GAP;
  for (const t of spec.tensors) {
    if (labels.has(t.name)) w += LABEL_W;
    w += isVec(t.cols) ? vec : t.colAxis === "kv" ? t.cols * (p.cwn ?? p.cw) : t.cols * p.cw;
  }
  return w;
}

interface Placed {
  boxes: GridBox[];
  w: number;
  h: number;
}

/** SRAM's rows, placed from (x0, y0): measures as it goes (the width and height are what the panel needs). */
function placeSram(spec: PictureSpec, p: Panel, x0: number, y0: number): Placed {
  const vec = Math.max(p.cw, VEC_MIN);
  const boxes: GridBox[] = [];
  const wide = (b: BufferSpec) => b.rows === 1 && b.cols > 1; // Sr: one row of N, sized to the panel below
  const widthOf = (b: BufferSpec, cw: number) => (isVec(b.cols) ? vec : b.cols * cw);
  // the widest ordinary row sets the panel's width; a buffer of one long row is squeezed into it
  let panelW = 0;
  for (const row of spec.sram) {
    const ordinary = row.filter((b) => !wide(b) && !spec.align[b.name]);
    if (!ordinary.length) continue;
    panelW = Math.max(panelW, ordinary.reduce((acc, b) => acc + widthOf(b, p.cw), 0) + (ordinary.length - 1) * GAP);
  }
  // x of every buffer: rows without aligned buffers first, left to right; then the rows whose buffers sit over
  // another (Kj over Qi), each aligned one at its target's x and the rest of the row after them
  const wideCw = (b: BufferSpec) => (wide(b) ? Math.min(p.cw, Math.max(0.05, (panelW - 2 * (vec + GAP)) / b.cols)) : p.cw);
  const xs = new Map<string, number>();
  const hasAligned = (row: BufferSpec[]) => row.some((b) => spec.align[b.name] !== undefined);
  for (const row of spec.sram.filter((r) => !hasAligned(r))) {
    let x = x0;
    for (const b of row) {
      xs.set(b.name, x);
      x += widthOf(b, wideCw(b)) + GAP;
    }
  }
  for (const row of spec.sram.filter(hasAligned)) {
    let cursor = x0;
    for (const b of row) {
      const target = spec.align[b.name];
      if (target === undefined) continue;
      const x = xs.get(target) ?? x0;
      xs.set(b.name, x);
      cursor = Math.max(cursor, x + widthOf(b, p.cw) + GAP);
    }
    for (const b of row) {
      if (spec.align[b.name] !== undefined) continue;
      xs.set(b.name, cursor);
      cursor += widthOf(b, wideCw(b)) + GAP;
    }
  }
  let y = y0;
  let right = x0 + panelW;
  spec.sram.forEach((row, k) => {
    y += TITLE;
    let x = x0;
    let tallest = 0;
    for (const b of row) {
      const cw = wideCw(b);
      const bx = xs.get(b.name) ?? x;
      const cellW = isVec(b.cols) ? vec : cw;
      const box: GridBox = {
        name: b.name,
        area: "sram",
        x: bx,
        y,
        w: b.cols * cellW,
        h: b.rows * p.ch,
        rows: b.rows,
        cols: b.cols,
        cw: cellW,
        ch: p.ch,
        text: p.text && cellW >= TEXT_MIN_W,
        padRows: 0,
        group: 0,
        axis: b.rowAxis,
        colAxis: b.colAxis,
        kernels: b.kernels,
      };
      boxes.push(box);
      x = Math.max(x, bx + box.w + GAP);
      right = Math.max(right, bx + box.w);
      tallest = Math.max(tallest, box.h);
    }
    y += tallest + (k < spec.sram.length - 1 ? GAP : 0);
  });
  return { boxes, w: right - x0, h: y - y0 };
}

function sramRowsOf(spec: PictureSpec): number {
  return spec.sram.reduce((acc, row) => acc + Math.max(...row.map((b) => b.rows)), 0);
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

/** Colour cells for `cols` columns plus `vecs` vector columns (never thinner than VEC_MIN) in the width, at most
 *  `aspect` times as tall as wide. */
function colourPanel(cols: number, rows: number, widthForCells: number, heightForCells: number, vecs = 0, aspect = 1): Panel {
  const even = widthForCells / (cols + vecs); // vectors as wide as a cell, when cells are wider than VEC_MIN
  const cw = Math.max(0.05, Math.min(MAX_CELL, even >= VEC_MIN ? even : (widthForCells - vecs * VEC_MIN) / cols));
  const ch = Math.max(0.05, Math.min(aspect * cw, MAX_CELL, heightForCells / rows));
  return { cw, ch, text: false };
}

/** HBM in colour: N x D tensors share `cw`; N x N ones (standard's S and P) get their own, narrower cells. */
function hbmColour(spec: PictureSpec, widthForCells: number, heightForCells: number, rows: number): Panel {
  const dCols = spec.tensors.filter((t) => !isVec(t.cols) && t.colAxis !== "kv").reduce((a, t) => a + t.cols, 0);
  const nCols = spec.tensors.filter((t) => t.colAxis === "kv").reduce((a, t) => a + t.cols, 0);
  const vecs = spec.tensors.filter((t) => isVec(t.cols)).length;
  // cells up to twice as tall as wide: many tensors side by side (the backward's ten) stay legible
  if (!nCols) return colourPanel(dCols, rows, widthForCells, heightForCells, vecs, 2);
  widthForCells -= vecs * VEC_MIN;
  const ch = Math.max(0.05, Math.min(MAX_CELL, heightForCells / rows));
  const perD = dCols / Math.max(1, spec.tensors.filter((t) => !isVec(t.cols) && t.colAxis !== "kv").length);
  const cw = Math.max(0.25, Math.min(MAX_CELL, Math.max(ch, ND_MIN_W / perD), (0.45 * widthForCells) / dCols));
  const cwn = Math.max(0.01, Math.min(ch, cw, (widthForCells - cw * dCols) / nCols));
  return { cw, ch, text: false, cwn };
}

/** The widest ordinary SRAM row as cells, vectors and gaps (the colour scale's budget). */
function widestSramRow(spec: PictureSpec): { cols: number; vecs: number; gaps: number } {
  let cols = 0;
  let vecs = 0;
  let gaps = 0;
  for (const row of spec.sram) {
    const ord = row.filter((b) => !(b.rows === 1 && b.cols > 1));
    const c = ord.filter((b) => !isVec(b.cols)).reduce((a, b) => a + b.cols, 0);
    const v = ord.filter((b) => isVec(b.cols)).length;
    if (c + v > cols + vecs) {
      cols = c;
      vecs = v;
      gaps = Math.max(0, ord.length - 1) * GAP;
    }
  }
  return { cols, vecs, gaps };
}

/** SRAM's rows wrapped so that each line fits `avail` at the narrowest text cells: as few lines as greedy wrapping
 *  needs, split where the widest line is narrowest (fa2 on a phone: Qi Sij / mi li Oi). Alignment is dropped. */
export function wrapSram(spec: PictureSpec, avail: number): PictureSpec {
  const widthAt = (b: BufferSpec) => (b.rows === 1 && b.cols > 1 ? 0 : isVec(b.cols) ? TEXT_MIN_W : b.cols * TEXT_MIN_W);
  const lineW = (line: BufferSpec[]) => line.reduce((a, b) => a + widthAt(b), 0) + (line.length - 1) * GAP;
  const rows: BufferSpec[][] = [];
  for (const row of spec.sram) {
    // greedy: how many lines it takes
    let count = 1;
    let used = 0;
    row.forEach((b, k) => {
      const w = widthAt(b);
      if (k > 0 && used + GAP + w > avail) {
        count++;
        used = w;
      } else used += (k > 0 ? GAP : 0) + w;
    });
    // every way to cut the row into `count` lines, the one whose widest line is narrowest
    let best: BufferSpec[][] = [row];
    let bestW = Infinity;
    const cut = (from: number, left: number, acc: BufferSpec[][]) => {
      if (left === 1) {
        const lines = [...acc, row.slice(from)];
        const w = Math.max(...lines.map(lineW));
        if (w < bestW) [best, bestW] = [lines, w];
        return;
      }
      for (let end = from + 1; end <= row.length - left + 1; end++) cut(end, left - 1, [...acc, row.slice(from, end)]);
    };
    if (count > 1) cut(0, Math.min(count, row.length), []);
    rows.push(...best);
  }
  return rows.length === spec.sram.length ? spec : { ...spec, sram: rows, align: {} };
}

/** HBM's grids placed from (x0, y0): every tensor N rows tall, aligned. */
function placeHbm(spec: PictureSpec, s: Shape, hbm: Panel, x0: number, y0: number, hbmRows: number) {
  const pad = padding(s);
  const grids: GridBox[] = [];
  const hv = Math.max(hbm.cw, VEC_MIN);
  const hy = y0 + HEAD + TITLE;
  const labels = hbmLabels(spec);
  let x = x0;
  spec.tensors.forEach((t, k) => {
    if (labels.has(t.name)) x += LABEL_W;
    const cw = isVec(t.cols) ? hv : t.colAxis === "kv" ? (hbm.cwn ?? hbm.cw) : hbm.cw;
    const group = t.axis === "kv" ? s.bc : s.br;
    grids.push({
      name: t.name,
      area: "hbm",
      x,
      y: hy,
      w: t.cols * cw,
      h: t.rows * hbm.ch,
      rows: t.rows,
      cols: t.cols,
      cw,
      ch: hbm.ch,
      text: hbm.text,
      padRows: t.padRows ?? (t.axis === "kv" ? pad.kv : pad.q),
      group,
      axis: t.axis,
      colAxis: t.colAxis,
      ...(t.cuts ? { cuts: t.cuts, bounds: t.bounds ?? [], marks: t.marks ?? [] } : {}),
    });
    x += t.cols * cw + (k < spec.tensors.length - 1 ? GAP : 0);
  });
  return { grids, rect: { x: x0, y: y0, w: x - x0, h: HEAD + TITLE + hbmRows * hbm.ch } as Rect };
}

function assemble(
  hbmPlaced: { grids: GridBox[]; rect: Rect },
  sramPlaced: Placed,
  sramRect: Rect,
  hbm: Panel,
  sram: Panel,
  stacked: boolean,
  band: Rect,
): MemoryLayout {
  const grids: Record<GridName, GridBox> = {};
  for (const b of hbmPlaced.grids) grids[b.name] = b;
  for (const b of sramPlaced.boxes) grids[b.name] = b;
  const hbmRect = hbmPlaced.rect;
  return {
    width: Math.ceil(Math.max(hbmRect.x + hbmRect.w, sramRect.x + sramRect.w) + PAD - 1e-6),
    height: Math.ceil(Math.max(hbmRect.y + hbmRect.h, sramRect.y + sramRect.h) + PAD - 1e-6),
    hbm: hbmRect,
    sram: sramRect,
    stacked,
    band,
    grids,
    hbmOrder: hbmPlaced.grids.map((b) => b.name),
    sramOrder: sramPlaced.boxes.map((b) => b.name),
    hbmText: hbm.text,
    sramText: sram.text,
  };
}

/**
 * Boxes for every grid of the memory picture, within `width` pixels and at most `maxHeight`.
 * Text mode (numbers in cells) when the cells can be at least TEXT_MIN_W x TEXT_MIN_H; otherwise
 * a colour scale, HBM and SRAM each at their own scale (SRAM is the zoomed-in block).
 * Narrower than STACK_BELOW, HBM is stacked above SRAM (see layoutStacked); narrower than STACK_IF_TEXT_BELOW
 * (a tablet), stacked too when side by side SRAM would be colours only and stacked it prints its numbers.
 */
export function layoutMemory(spec: PictureSpec, s: Shape, width: number, maxHeight = 440): MemoryLayout {
  if (width < STACK_BELOW) return layoutStacked(spec, s, width, maxHeight);
  const side = layoutSideBySide(spec, s, width, maxHeight);
  if (width < STACK_IF_TEXT_BELOW && !side.sramText) {
    const stacked = layoutStacked(spec, s, width, maxHeight);
    if (stacked.sramText) return stacked;
  }
  return side;
}

function layoutSideBySide(spec: PictureSpec, s: Shape, width: number, maxHeight: number): MemoryLayout {
  const avail = Math.max(200, width - 2 * PAD - PANEL_GAP);
  const hbmRows = hbmRowsOf(spec, s);
  const sramRows = sramRowsOf(spec);
  const nRows = spec.sram.length;
  const top = BAND; // the panels start under the connectors' band
  const hbmCellsH = maxHeight - PAD - top - HEAD - TITLE;
  const sramCellsH = maxHeight - PAD - top - HEAD - nRows * TITLE - (nRows - 1) * GAP;
  const sramW = (p: Panel) => placeSram(spec, p, 0, 0).w;
  const hbmTextW = (cw: number) => hbmWidth(spec, { cw, ch: 0, text: true }, cw);
  const sramTextW = (cw: number) => sramW({ cw, ch: TEXT_MIN_H, text: true });

  let hbm: Panel;
  let sram: Panel;
  const bothText = textWidth((cw) => hbmTextW(cw) + sramTextW(cw) <= avail);
  const hbmTH = textHeight(hbmRows, hbmCellsH);
  const sramTH = textHeight(sramRows, sramCellsH);
  if (bothText && hbmTH && sramTH) {
    hbm = { cw: bothText, ch: hbmTH, text: true };
    sram = { cw: bothText, ch: sramTH, text: true };
  } else {
    // SRAM (the block we are inside) gets text if it fits in 60% of the width; HBM takes the rest
    const sramText = textWidth((cw) => sramTextW(cw) <= 0.6 * avail);
    if (sramText && sramTH) {
      sram = { cw: sramText, ch: sramTH, text: true };
    } else {
      // HBM's N x N tensors (standard's S and P) need more of the width
      const share = (spec.tensors.some((t) => t.colAxis === "kv") ? 0.42 : 0.58) * avail;
      const { cols, vecs, gaps } = widestSramRow(spec);
      sram = colourPanel(cols, sramRows, share - gaps, sramCellsH, vecs);
    }
    const rest = avail - sramW(sram);
    const labels = hbmLabels(spec).size * LABEL_W;
    hbm = hbmColour(spec, rest - labels - (spec.tensors.length - 1) * GAP, hbmCellsH, hbmRows);
  }

  const hbmPlaced = placeHbm(spec, s, hbm, PAD, top, hbmRows);
  const sx = hbmPlaced.rect.x + hbmPlaced.rect.w + PANEL_GAP;
  const placed = placeSram(spec, sram, sx, top + HEAD);
  const sramRect: Rect = { x: sx, y: top, w: placed.w, h: HEAD + placed.h };
  const band: Rect = { x: 0, y: 0, w: sx + placed.w + PAD, h: top };
  return assemble(hbmPlaced, placed, sramRect, hbm, sram, false, band);
}

/**
 * Narrow screens: HBM on top at the full width, the connectors' band, then SRAM at the full width. SRAM's rows
 * wrap when that lets its cells print numbers (the block is where the step happens); otherwise whichever of the
 * wrapped and unwrapped rows gives the larger colour cells.
 */
function layoutStacked(spec0: PictureSpec, s: Shape, width: number, maxHeight: number): MemoryLayout {
  const avail = Math.max(200, width - 2 * PAD);
  const hbmRows = hbmRowsOf(spec0, s);
  const hbmCellsH = Math.max(60, 0.42 * maxHeight - HEAD - TITLE);
  const sramBudget = (sp: PictureSpec) => Math.max(80, 0.9 * maxHeight - HEAD - sp.sram.length * TITLE - (sp.sram.length - 1) * GAP);
  const textFor = (sp: PictureSpec): Panel | null => {
    const cw = textWidth((c) => placeSram(sp, { cw: c, ch: TEXT_MIN_H, text: true }, 0, 0).w <= avail);
    const ch = textHeight(sramRowsOf(sp), sramBudget(sp));
    return cw && ch ? { cw, ch, text: true } : null;
  };
  const colourFor = (sp: PictureSpec): Panel => {
    const { cols, vecs, gaps } = widestSramRow(sp);
    return colourPanel(cols, sramRowsOf(sp), avail - gaps, sramBudget(sp), vecs);
  };
  const wrapped = wrapSram(spec0, avail);
  let spec = spec0;
  let sram = textFor(spec0) ?? textFor(wrapped);
  if (sram && !textFor(spec0)) spec = wrapped;
  if (!sram) {
    const a = colourFor(spec0);
    const b = colourFor(wrapped);
    [spec, sram] = Math.min(b.cw, b.ch) > Math.min(a.cw, a.ch) ? [wrapped, b] : [spec0, a];
  }
  const labels = hbmLabels(spec).size * LABEL_W;
  const hbmText = textWidth((cw) => hbmWidth(spec, { cw, ch: 0, text: true }, cw) <= avail);
  const hbmTH = textHeight(hbmRows, hbmCellsH);
  const hbm: Panel =
    hbmText && hbmTH
      ? { cw: hbmText, ch: hbmTH, text: true }
      : hbmColour(spec, avail - labels - (spec.tensors.length - 1) * GAP, hbmCellsH, hbmRows);
  const hbmPlaced = placeHbm(spec, s, hbm, PAD, PAD, hbmRows);
  const bandY = hbmPlaced.rect.y + hbmPlaced.rect.h + PAD / 2;
  const sy = bandY + STACK_GAP;
  const placed = placeSram(spec, sram, PAD, sy + HEAD);
  const sramRect: Rect = { x: PAD, y: sy, w: placed.w, h: HEAD + placed.h };
  const band: Rect = { x: 0, y: bandY, w: width, h: STACK_GAP };
  return assemble(hbmPlaced, placed, sramRect, hbm, sram, true, band);
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
