// Marks over the grids: what the step touches and what it never does. The HBM tile a transfer moves, the watched
// block's rows and the tile held (dashed), the other blocks doing the same in lockstep (fainter), the SRAM buffer a
// step wrote (boxed), padding rows and keys past N in SRAM, and under causal masking what the watched unit never
// touches (the trace's veils, with their reason).
import { blockStatus, keyValid, lastPhase, rowValid } from "../../derive";
import { blockRows, tileKeys } from "../../geometry";
import { cellRect } from "../../hitTest";
import { placeLines, regions, VEIL_FONT } from "../../labels";
import type { GridBox, Rect } from "../../layoutBoxes";
import type { Transfer } from "../../types";
import type { Ctx2D } from "../backbuffer";
import type { Pen } from "./pen";
import { rowBlock, type Scene, tileHeld } from "./scene";

/** Causal: what the watched unit never touches is veiled (the step's veil set), with the reason. */
export function causalVeils(ctx: Ctx2D, pen: Pen, sc: Scene): void {
  const { trace: t, layout: l, s } = sc;
  const set = s.veil === null ? null : t.veils[s.veil];
  if (!set) return;
  const veil = (r: Rect, label: string, b: GridBox) => {
    if (r.w <= 0 || r.h <= 0) return;
    ctx.save();
    ctx.fillStyle = pen.palette.panel;
    ctx.globalAlpha = 0.72;
    ctx.fillRect(r.x, r.y, r.w, r.h);
    ctx.globalAlpha = 0.5;
    ctx.fillStyle = pen.pattern(ctx) ?? pen.palette.hatch;
    ctx.fillRect(r.x, r.y, r.w, r.h);
    ctx.globalAlpha = 1;
    ctx.restore();
    if (!label) return;
    // in the first block or tile of the veiled rows, between its boundaries
    const inside = regions(b, t.config.bc).filter(
      (q) => q.y >= r.y - 0.5 && q.y + q.h <= r.y + r.h + 1 && q.x >= r.x - 0.5 && q.x + q.w <= r.x + r.w + 0.5,
    );
    for (const q of inside) {
      const placed = placeLines(q, [[label]], pen.measure, VEIL_FONT, 12);
      if (placed) {
        pen.lines(ctx, placed, pen.palette.inkMuted, "veil");
        break;
      }
    }
  };
  for (const v of set) {
    const b = l.grids[v.tensor];
    if (b) veil(cellRect(b, v.rows[0], v.rows[1], v.cols[0], v.cols[1]), v.label, b);
  }
}

/** The watched block's rows and the tile now in SRAM, dashed. */
export function watched(ctx: Ctx2D, pen: Pen, sc: Scene): void {
  const { trace: t, layout: l } = sc;
  const { br, bc, n } = t.config;
  const i = rowBlock(sc);
  const j = tileHeld(sc);
  ctx.save();
  ctx.strokeStyle = pen.palette.watch;
  ctx.lineWidth = 1.5;
  ctx.setLineDash([4, 3]);
  for (const name of l.hbmOrder) {
    const b = l.grids[name]!;
    const k = b.axis === "q" ? i : j;
    if (k === null || k === undefined) continue;
    const g = b.axis === "q" ? br : bc;
    const [r0, r1] = !t.layout ? [k * g, Math.min(k * g + g, n + b.padRows)] : b.axis === "q" ? blockRows(t, k) : tileKeys(t, i, k);
    const r = cellRect(b, r0, r1);
    ctx.strokeRect(r.x - 1.5, r.y - 1.5, r.w + 3, r.h + 3);
  }
  ctx.restore();
}

/** Lockstep: every other block of the step's kernel moves its own rows in the same phase (dashed, fainter): those
 *  doing the same op (or, at the watched block's last phase, their own last), by the picks' status; a kernel whose
 *  blocks are not picks runs them all together. */
export function lockstep(ctx: Ctx2D, pen: Pen, sc: Scene): void {
  const { trace: t, layout: l, s } = sc;
  const k = t.kernels[s.kernel];
  if (!k?.lockstep || !k.grid.axis || !k.grid.rows_per_block) return;
  const axis = k.grid.axis;
  const g = k.grid.rows_per_block;
  const rowsOf = (o: number): [number, number] => (t.layout && axis === "q" ? blockRows(t, o) : [o * g, o * g + g]);
  const [own0, ownEnd] = rowsOf(s.block);
  const picks = t.picker.kernels.includes(s.kernel);
  const myLast = picks && s.phase === lastPhase(t, s.block);
  ctx.save();
  ctx.globalAlpha = 0.55;
  ctx.setLineDash([2, 3]);
  for (const tr of s.transfers) {
    const b = l.grids[tr.tensor];
    if (!b || b.axis !== axis || tr.rows[0] < own0 || tr.rows[1] > ownEnd) continue;
    ctx.strokeStyle = tr.kind === "read" ? pen.palette.read : pen.palette.write;
    for (let o = 0; o < k.grid.count; o++) {
      if (o === s.block) continue;
      if (picks) {
        const st = blockStatus(t, o, s.phase);
        if (myLast ? st !== "last" : st !== "same") continue;
      }
      const [first, end] = rowsOf(o);
      const r0 = tr.rows[0] - own0 + first;
      const r1 = Math.min(t.layout ? end : t.config.n, tr.rows[1] - own0 + first);
      if (r1 <= r0) continue;
      const r = cellRect(b, r0, r1, tr.cols[0], tr.cols[1]);
      ctx.strokeRect(r.x + 0.5, r.y + 0.5, r.w - 1, Math.max(1, r.h - 1));
    }
  }
  ctx.restore();
}

/** A cell range veiled: the panel's colour, then the context's fill (the hatch) over it. */
function veilCells(ctx: Ctx2D, pen: Pen, r: Rect): void {
  const fill = ctx.fillStyle;
  const alpha = ctx.globalAlpha;
  ctx.globalAlpha = 0.55 * alpha;
  ctx.fillStyle = pen.palette.panel;
  ctx.fillRect(r.x, r.y, r.w, r.h);
  ctx.globalAlpha = alpha;
  ctx.fillStyle = fill;
  ctx.fillRect(r.x, r.y, r.w, r.h);
}

/** In an SRAM buffer: the rows (and, for scores, the key columns) past N, hatched. */
export function sramPadding(ctx: Ctx2D, pen: Pen, sc: Scene, b: GridBox): void {
  const t = sc.trace;
  ctx.save();
  ctx.fillStyle = pen.pattern(ctx) ?? pen.palette.hatch;
  const j = tileHeld(sc);
  const i = rowBlock(sc);
  if (b.axis === "kv") {
    for (let r = 0; r < b.rows; r++) if (!keyValid(t, j, r, i)) veilCells(ctx, pen, cellRect(b, r, r + 1));
  } else if (b.axis === "q") {
    for (let r = 0; r < b.rows; r++) if (!rowValid(t, i, r)) veilCells(ctx, pen, cellRect(b, r, r + 1));
  }
  if (b.colAxis === "kv" && j !== null) {
    for (let c = 0; c < b.cols; c++) if (!keyValid(t, j, c, i)) veilCells(ctx, pen, cellRect(b, 0, b.rows, c, c + 1));
  }
  ctx.restore();
}

/** The box around an SRAM buffer the step wrote. */
export function changedBox(ctx: Ctx2D, pen: Pen, b: GridBox): void {
  ctx.save();
  ctx.strokeStyle = pen.palette.changed;
  ctx.lineWidth = 2;
  ctx.strokeRect(b.x - 2, b.y - 2, b.w + 4, b.h + 4);
  ctx.restore();
}

/** The HBM tile a transfer moves, highlighted; returns its rectangle (null when HBM has no such grid). */
export function transferMark(ctx: Ctx2D, pen: Pen, sc: Scene, tr: Transfer): Rect | null {
  const p = pen.palette;
  const b = sc.layout.grids[tr.tensor];
  if (!b) return null;
  const r = cellRect(b, tr.rows[0], tr.rows[1], tr.cols[0], tr.cols[1]);
  const colour = tr.kind === "read" ? p.read : p.write;
  ctx.save();
  ctx.fillStyle = colour;
  ctx.globalAlpha = 0.22;
  ctx.fillRect(r.x, r.y, r.w, r.h);
  ctx.globalAlpha = 1;
  ctx.strokeStyle = colour;
  ctx.lineWidth = 2.5;
  ctx.strokeRect(r.x - 1, r.y - 1, r.w + 2, r.h + 2);
  ctx.restore();
  return r;
}
