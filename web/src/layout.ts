// The memory picture's layout: a pure function from the picture's contents (picture.ts's PictureSpec, from the
// trace: its HBM tensors, all N rows tall and aligned, and the SRAM buffers in rows, a buffer sitting over the one it
// aligns under, so that row r of a block lines up across the buffers of one row) and the space on screen to boxes.
// Wide enough, HBM sits left of SRAM under a band where the connectors arc from a tensor to its buffer; narrower
// (a phone), HBM sits above SRAM with the band between them, and SRAM's rows wrap when that lets it print numbers.
import {
  BAND,
  GAP,
  type GridBox,
  type GridName,
  HEAD,
  LABEL_W,
  type MemoryLayout,
  PAD,
  PANEL_GAP,
  type Rect,
  STACK_BELOW,
  STACK_GAP,
  STACK_IF_TEXT_BELOW,
  TEXT_MIN_H,
  TITLE,
} from "./layoutBoxes";
import { colourPanel, type Panel, textHeight, textWidth } from "./layoutCells";
import { hbmColour, hbmLabels, hbmRowsOf, hbmWidth, placeHbm } from "./layoutHbm";
import { type Placed, placeSram, sramRowsOf, widestSramRow, wrapSram } from "./layoutSram";
import type { PictureSpec, Shape } from "./picture";

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
