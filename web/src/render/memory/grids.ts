// The grids of the memory picture and the words on and around them: the two panels with their titles, each tensor's
// and buffer's grid (an image of one pixel per cell, or cells with their numbers when they fit), its title, the
// padding rows past N, the block and tile boundaries, the i= / j= labels left of HBM, and SRAM's tile caption.
// Draws with a Pen; where it all goes comes from layout.ts and labels.ts.
import { luminance, rgbOf } from "../../colors";
import { cell } from "../../format";
import { tileKeys } from "../../geometry";
import { cellChars } from "../../hitTest";
import { fitOne, NOTE_FONT, placeLines, placeNote, separatorSegments, separators, tileCaptionVariants } from "../../labels";
import { type GridBox, HEAD, type MemoryLayout, PAD, type Rect, TITLE } from "../../layoutBoxes";
import type { Num } from "../../types";
import type { Ctx2D } from "../backbuffer";
import type { Pen } from "./pen";
import type { Raster } from "./raster";
import { hbmValues, rangeOf, rowBlock, type Scene, tileHeld } from "./scene";
import { unwrittenNoteOf } from "./words";

/** A panel (HBM or SRAM): its rounded box and the first of `titles` that fits. */
export function panel(ctx: Ctx2D, pen: Pen, r: Rect, titles: string[]): void {
  const p = pen.palette;
  ctx.save();
  ctx.fillStyle = p.panel;
  ctx.strokeStyle = p.panelEdge;
  ctx.lineWidth = 1;
  const x = r.x - PAD / 2;
  const y = r.y;
  const w = r.w + PAD;
  const h = r.h + PAD / 2;
  ctx.beginPath();
  ctx.roundRect(x, y, w, h, 8);
  ctx.fill();
  ctx.stroke();
  ctx.fillStyle = p.inkMuted;
  ctx.textBaseline = "middle";
  const font = "600 11px system-ui, sans-serif";
  const title = fitOne(titles, w - 10, font, pen.measure);
  if (title) pen.text(ctx, title, r.x + 2, y + HEAD / 2 + 2, font, 11, "panel-title");
  ctx.restore();
}

/** Horizontal room for a grid's title: up to the next grid on the same row, or the panel's edge. */
function titleRoom(l: MemoryLayout, b: GridBox): number {
  let right = b.area === "hbm" ? l.hbm.x + l.hbm.w : l.sram.x + l.sram.w + PAD / 2;
  for (const o of Object.values(l.grids)) {
    if (o !== b && Math.abs(o.y - b.y) < 1 && o.x > b.x && o.x < right) right = o.x;
  }
  return right - b.x - 6;
}

/** A grid's title: name, then shape, then a note, each only if it fits before the next grid. */
export function title(ctx: Ctx2D, pen: Pen, l: MemoryLayout, b: GridBox, name: string, shape: string, note: string, hot = false): void {
  const p = pen.palette;
  const room = titleRoom(l, b);
  ctx.save();
  ctx.textBaseline = "alphabetic";
  ctx.font = "700 13px system-ui, sans-serif";
  ctx.fillStyle = hot ? p.changed : p.ink;
  const y = b.y - 5;
  const small = "11px system-ui, sans-serif";
  // the name in the largest size that fits before the next grid (many narrow tensors: smaller), else left out
  const size = [13, 11, 9].find((px) => pen.measure(name, `700 ${px}px system-ui, sans-serif`) <= room);
  if (size === undefined) {
    ctx.restore();
    return;
  }
  const bold = `700 ${size}px system-ui, sans-serif`;
  pen.text(ctx, name, b.x, y, bold, size, "title");
  let x = b.x + pen.measure(name, bold) + 5;
  ctx.fillStyle = p.inkMuted;
  if (shape && x + pen.measure(shape, small) <= b.x + room) {
    pen.text(ctx, shape, x, y, small, 11, "title");
    x += pen.measure(shape, small) + 5;
  }
  if (note && x + pen.measure(note, small) <= b.x + room) {
    ctx.fillStyle = hot ? p.changed : p.inkMuted;
    pen.text(ctx, note, x, y, small, 11, "title");
  }
  ctx.restore();
}

/** A grid with nothing in it (yet), dashed, with a note between its block and tile boundaries if one fits. */
export function emptyGrid(ctx: Ctx2D, pen: Pen, b: GridBox, bc: number, text = ""): void {
  ctx.save();
  ctx.fillStyle = pen.palette.panel;
  ctx.fillRect(b.x, b.y, b.w, b.h);
  ctx.strokeStyle = pen.palette.grid;
  ctx.setLineDash([3, 3]);
  ctx.strokeRect(b.x + 0.5, b.y + 0.5, b.w - 1, b.h - 1);
  ctx.restore();
  // between the block and tile boundaries (drawn over the grid later), never across one
  const placed = text ? placeNote(b, text, bc, pen.measure, NOTE_FONT) : null;
  if (placed) pen.lines(ctx, placed, pen.palette.inkMuted, "note");
}

/** A grid of values: its image (`image`, made only when needed), or its cells with their numbers. */
export function grid(ctx: Ctx2D, pen: Pen, b: GridBox, values: Num[][], range: number, image: () => HTMLCanvasElement): void {
  if (!b.text) {
    const img = image();
    ctx.save();
    ctx.imageSmoothingEnabled = b.cw < 1 || b.ch < 1;
    ctx.drawImage(img, b.x, b.y, b.w, b.h);
    ctx.restore();
    return;
  }
  // null is −∞ (masked or past N) and must show as such; only a missing cell counts as 0
  textCells(
    ctx,
    pen,
    b,
    (r, c) => {
      const v = values[r]?.[c];
      return v === undefined ? 0 : v;
    },
    range,
  );
}

/** Cells with their numbers (small sizes): a value, −∞ (null), unknown (undefined) or not written yet. */
export function textCells(
  ctx: Ctx2D,
  pen: Pen,
  b: GridBox,
  at: (r: number, c: number) => Num | undefined | "unwritten",
  range: number,
): void {
  const p = pen.palette;
  const chars = cellChars(b.cw);
  ctx.save();
  ctx.font = `${b.cw >= 36 ? 10 : 9.5}px ui-monospace, monospace`;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (let r = 0; r < b.rows; r++) {
    for (let c = 0; c < b.cols; c++) {
      const v = at(r, c);
      const x = b.x + c * b.cw;
      const y = b.y + r * b.ch;
      if (v === "unwritten") {
        ctx.fillStyle = p.panel;
        ctx.fillRect(x, y, b.cw, b.ch);
        continue;
      }
      const rgb = v === undefined ? p.neutral : rgbOf(v, range, p);
      ctx.fillStyle = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
      ctx.fillRect(x, y, b.cw, b.ch);
      ctx.fillStyle = luminance(rgb) < 0.5 ? "#fff" : "#111";
      ctx.fillText(v === undefined ? "?" : cell(v, chars), x + b.cw / 2, y + b.ch / 2 + 0.5);
    }
  }
  ctx.strokeStyle = p.grid;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let r = 1; r < b.rows; r++) {
    ctx.moveTo(b.x, Math.round(b.y + r * b.ch) + 0.5);
    ctx.lineTo(b.x + b.w, Math.round(b.y + r * b.ch) + 0.5);
  }
  for (let c = 1; c < b.cols; c++) {
    ctx.moveTo(Math.round(b.x + c * b.cw) + 0.5, b.y);
    ctx.lineTo(Math.round(b.x + c * b.cw) + 0.5, b.y + b.h);
  }
  ctx.stroke();
  ctx.restore();
}

/** The rows past N that the last block or tile covers, hatched under an HBM grid. */
function padRows(ctx: Ctx2D, pen: Pen, b: GridBox): void {
  if (b.padRows <= 0) return;
  const y = b.y + b.h;
  const h = b.padRows * b.ch;
  ctx.save();
  ctx.fillStyle = pen.pattern(ctx) ?? pen.palette.hatch;
  ctx.fillRect(b.x, y, b.w, h);
  ctx.strokeStyle = pen.palette.hatch;
  ctx.setLineDash([3, 2]);
  ctx.strokeRect(b.x + 0.5, y + 0.5, b.w - 1, Math.max(1, h - 1));
  ctx.restore();
}

/** The block and tile boundaries across a grid (labels.ts's separators), recorded. */
function boundaries(ctx: Ctx2D, pen: Pen, b: GridBox, bc: number): void {
  const { ys, xs } = separators(b, bc);
  if (!ys.length && !xs.length) return;
  ctx.save();
  ctx.strokeStyle = pen.palette.ink;
  ctx.globalAlpha = 0.45;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (const y of ys) {
    ctx.moveTo(b.x - 3, y);
    ctx.lineTo(b.x + b.w + 3, y);
  }
  for (const x of xs) {
    ctx.moveTo(x, b.y);
    ctx.lineTo(x, b.y + b.h);
  }
  ctx.stroke();
  if (b.bounds?.length) {
    // where a segment begins (a q head's rows, a packed sequence): a firmer line across the grid and past it
    ctx.globalAlpha = 0.9;
    ctx.lineWidth = 2;
    ctx.strokeStyle = pen.palette.ink;
    ctx.beginPath();
    for (const r of b.bounds) {
      const y = Math.round(b.y + r * b.ch);
      ctx.moveTo(b.x - 6, y);
      ctx.lineTo(b.x + b.w + 6, y);
    }
    ctx.stroke();
  }
  ctx.restore();
  pen.rec.lines.push(...separatorSegments(b, bc));
}

/** A trace with a layout: the segments' words left of a grid ("h1", "s2"), each at its first row, where they fit. */
function segmentLabels(ctx: Ctx2D, pen: Pen, b: GridBox): void {
  const marks = b.marks ?? [];
  ctx.save();
  ctx.fillStyle = pen.palette.inkMuted;
  ctx.textAlign = "right";
  ctx.textBaseline = "top";
  const font = "10px system-ui, sans-serif";
  let last = -Infinity;
  for (const m of marks) {
    const y = b.y + m.row * b.ch;
    if (y < last + 11) continue; // crowded: the next label below its neighbour, else left out
    pen.text(ctx, m.text, b.x - 5, y + 1, font, 10, "block");
    last = y;
  }
  ctx.restore();
}

/** "i=0", "i=1", ... left of a grid, one per block (or tile) of `group` rows; the first and the count when crowded. */
function blockLabels(ctx: Ctx2D, pen: Pen, b: GridBox, letter: string, group: number, count: number): void {
  const h = group * b.ch;
  ctx.save();
  ctx.fillStyle = pen.palette.inkMuted;
  ctx.font = "10px system-ui, sans-serif";
  ctx.textAlign = "right";
  const font = "10px system-ui, sans-serif";
  if (h < 11) {
    // too many blocks to label each: label the first and say how many
    ctx.textBaseline = "top";
    pen.text(ctx, `${letter}=0`, b.x - 5, b.y, font, 10, "block");
    pen.text(ctx, `\u2026${count - 1}`, b.x - 5, b.y + b.h - 10, font, 10, "block");
  } else {
    ctx.textBaseline = "middle";
    for (let k = 0; k < count; k++) pen.text(ctx, `${letter}=${k}`, b.x - 5, b.y + (k + 0.5) * h, font, 10, "block");
  }
  ctx.restore();
}

/** HBM's grids as the launch left them after the step's phase: inputs whole, written tensors as far as written. */
export function hbmGrids(ctx: Ctx2D, pen: Pen, raster: Raster, sc: Scene): void {
  const { trace: t, layout: l, history: h } = sc;
  const phase = sc.s.phase;
  const bc = t.config.bc;
  let firstQ = true;
  let firstKV = true;
  for (const name of l.hbmOrder) {
    const b = l.grids[name]!;
    const info = t.tensors[name];
    title(ctx, pen, l, b, info?.label ?? name, info?.dims.join("\u00d7") ?? "", "");
    if (h.written(name)) {
      const count = h.applied(name, phase);
      if (count === 0) {
        emptyGrid(ctx, pen, b, bc, unwrittenNoteOf(t, name));
      } else if (b.text) textCells(ctx, pen, b, (r, c) => h.valueAt(name, r, c, count), sc.ranges.get(name) ?? 1);
      else {
        ctx.save();
        ctx.imageSmoothingEnabled = b.cw < 1 || b.ch < 1;
        ctx.fillStyle = pen.palette.panel;
        ctx.fillRect(b.x, b.y, b.w, b.h);
        ctx.drawImage(raster.composite(name, b, h, phase, sc.ranges.get(name)), b.x, b.y, b.w, b.h);
        ctx.restore();
      }
    } else {
      const values = hbmValues(t, name);
      if (values) {
        const range = rangeOf(sc, name, values);
        grid(ctx, pen, b, values, range, () => raster.image(`hbm:${name}`, values, range));
      } else emptyGrid(ctx, pen, b, bc, "");
    }
    padRows(ctx, pen, b);
    boundaries(ctx, pen, b, bc);
    if (b.axis === "q" && firstQ) {
      firstQ = false;
      if (b.cuts) segmentLabels(ctx, pen, b);
      else blockLabels(ctx, pen, b, "i", t.config.br, t.config.tr);
    }
    if (b.axis === "kv" && firstKV) {
      firstKV = false;
      if (b.cuts) segmentLabels(ctx, pen, b);
      else blockLabels(ctx, pen, b, "j", t.config.bc, t.config.tc);
    }
  }
}

/** In SRAM's top row, right of its buffers: which tile is held, and what the loop is doing. */
export function tileCaption(ctx: Ctx2D, pen: Pen, sc: Scene): void {
  const { layout: l, trace: t, s } = sc;
  const row = l.sramOrder.filter((n) => Math.abs(l.grids[n]!.y - l.grids[l.sramOrder[0]!]!.y) < 1).map((n) => l.grids[n]!);
  const first = row[0]!;
  const last = row[row.length - 1]!;
  // room between the first two boxes of the top row (fa2: between Kj and Vj), else after the last
  const second = row[1] ?? null;
  // down to the next row's titles (or the panel's foot): the row itself may be only a few pixels tall
  const below = l.sramOrder
    .map((n) => l.grids[n]!)
    .filter((g) => g.y > first.y + 1)
    .map((g) => g.y - TITLE);
  const tall = Math.min(...below, l.sram.y + l.sram.h) - first.y;
  let room: Rect = {
    x: first.x + first.w + 6,
    y: first.y,
    w: (second ? second.x : l.sram.x + l.sram.w) - 12 - first.x - first.w,
    h: tall,
  };
  if (room.w < 90) room = { x: last.x + last.w + 6, y: first.y, w: l.sram.x + l.sram.w + PAD / 2 - 10 - last.x - last.w, h: tall };
  if (room.w < 40) return;
  const j = tileHeld(sc);
  const i = rowBlock(sc);
  const state = j === null ? "before" : t.ops[s.op]?.after_loop ? "after" : "tile";
  const rows = tileKeys(t, i, j ?? 0);
  const tc = t.layout && i !== null ? (t.tiling.pairs[i]?.length ?? t.config.tc) : t.config.tc;
  const noLoop = !t.kernels[s.kernel]?.tile_loop;
  const placed = placeLines(room, tileCaptionVariants(j, tc, rows, state, noLoop), pen.measure);
  if (placed) pen.lines(ctx, placed, pen.palette.inkMuted, "caption");
}
