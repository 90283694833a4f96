// Trips across HBM: where a transfer lands in SRAM, the dashed connector from the HBM tile to its buffer (drawn with
// the step), and the tile itself flying between them while the page plays (drawn on the overlay, frame by frame).

import { cellRect } from "../../hitTest";
import type { Arc } from "../../labels";
import type { MemoryLayout, Rect } from "../../layoutBoxes";
import type { Transfer } from "../../types";
import type { Ctx2D } from "../backbuffer";
import type { Pen } from "./pen";
import type { Raster } from "./raster";
import { hbmValues, rangeOf, type Scene, sramValues } from "./scene";

/** A tile on its way: from one rectangle to the other, showing `crop` of `image` (or a coloured block). */
export interface Flight {
  from: Rect;
  to: Rect;
  image: HTMLCanvasElement | null;
  crop: Rect | null; // region of `image` to draw
  colour: string;
}

/** The buffer rectangle a transfer fills or empties (its tile's rows and columns of it), or null. */
export function endpointRect(l: MemoryLayout, tr: Transfer): Rect | null {
  const names = tr.buffers.filter((n) => l.grids[n]);
  if (!names.length) return null;
  const rows = tr.rows[1] - tr.rows[0];
  const cols = tr.cols[1] - tr.cols[0];
  let out: Rect | null = null;
  for (const n of names) {
    const b = l.grids[n]!;
    const r =
      b.rows === 1 ? cellRect(b, 0, 1, 0, Math.min(b.cols, cols)) : cellRect(b, 0, Math.min(b.rows, rows), 0, Math.min(b.cols, cols));
    out = out
      ? {
          x: Math.min(out.x, r.x),
          y: Math.min(out.y, r.y),
          w: Math.max(out.x + out.w, r.x + r.w) - Math.min(out.x, r.x),
          h: Math.max(out.h, r.h),
        }
      : r;
  }
  return out;
}

/** A dashed connector in the band, from the HBM tile's column to its buffer's, its head where the data goes. */
export function connector(ctx: Ctx2D, pen: Pen, arc: Arc): void {
  const colour = arc.kind === "read" ? pen.palette.read : pen.palette.write;
  ctx.save();
  ctx.strokeStyle = colour;
  ctx.fillStyle = colour;
  ctx.globalAlpha = 0.8;
  ctx.lineWidth = 1.5;
  ctx.setLineDash([5, 4]);
  ctx.beginPath();
  ctx.moveTo(arc.a.x, arc.a.y);
  ctx.bezierCurveTo(arc.c1.x, arc.c1.y, arc.c2.x, arc.c2.y, arc.z.x, arc.z.y);
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.beginPath();
  const [h0, h1, h2] = arc.head;
  ctx.moveTo(h0![0], h0![1]);
  ctx.lineTo(h1![0], h1![1]);
  ctx.lineTo(h2![0], h2![1]);
  ctx.closePath();
  ctx.fill();
  ctx.restore();
  pen.rec.arcs.push(arc.box);
}

/** The step's transfers as flights: a read carries the HBM tile's values into its buffer, a write the buffer's out. */
export function planFlights(sc: Scene, pen: Pen, raster: Raster): Flight[] {
  const { trace: t, layout: l, history, s } = sc;
  const p = pen.palette;
  const flights: Flight[] = [];
  for (const tr of s.transfers) {
    const b = l.grids[tr.tensor];
    const sram = endpointRect(l, tr);
    if (!b || !sram) continue;
    const hbm = cellRect(b, tr.rows[0], tr.rows[1], tr.cols[0], tr.cols[1]);
    let image: HTMLCanvasElement | null = null;
    let crop: Rect | null = null;
    if (tr.kind === "read") {
      if (history.written(tr.tensor)) {
        image = raster.composite(tr.tensor, b, history, s.phase, sc.ranges.get(tr.tensor));
        const c = raster.compositeScale(tr.tensor)!;
        crop = {
          x: tr.cols[0] * c.sx,
          y: tr.rows[0] * c.sy,
          w: Math.max(1, (tr.cols[1] - tr.cols[0]) * c.sx),
          h: Math.max(1, (tr.rows[1] - tr.rows[0]) * c.sy),
        };
      } else {
        const values = hbmValues(t, tr.tensor);
        if (values) {
          image = raster.image(`hbm:${tr.tensor}`, values, rangeOf(sc, tr.tensor, values));
          crop = { x: tr.cols[0], y: tr.rows[0], w: tr.cols[1] - tr.cols[0], h: tr.rows[1] - tr.rows[0] };
        }
      }
    } else {
      const src = tr.buffers[0];
      const values = src ? sramValues(sc, src) : null;
      if (values && src) {
        image = raster.freshImage(values, rangeOf(sc, src, values));
        crop = { x: 0, y: 0, w: Math.min(image.width, tr.cols[1] - tr.cols[0]), h: Math.min(image.height, tr.rows[1] - tr.rows[0]) };
      }
    }
    flights.push({
      from: tr.kind === "read" ? hbm : sram,
      to: tr.kind === "read" ? sram : hbm,
      image,
      crop,
      colour: tr.kind === "read" ? p.read : p.write,
    });
  }
  return flights;
}

/** The flights at progress u (0 → 1 of their time): eased in and out, arcing up on the way. */
export function drawFlights(ctx: Ctx2D, flights: Flight[], u: number): void {
  const e = u < 0.5 ? 2 * u * u : 1 - (-2 * u + 2) ** 2 / 2; // ease in-out
  const lift = Math.sin(Math.PI * e) * 36; // arc up on the way
  for (const f of flights) {
    const r = {
      x: f.from.x + (f.to.x - f.from.x) * e,
      y: f.from.y + (f.to.y - f.from.y) * e - lift,
      w: f.from.w + (f.to.w - f.from.w) * e,
      h: f.from.h + (f.to.h - f.from.h) * e,
    };
    ctx.save();
    ctx.shadowColor = f.colour;
    ctx.shadowBlur = 12;
    if (f.image && f.crop) {
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(f.image, f.crop.x, f.crop.y, f.crop.w, f.crop.h, r.x, r.y, Math.max(2, r.w), Math.max(2, r.h));
    } else {
      ctx.globalAlpha = 0.6;
      ctx.fillStyle = f.colour;
      ctx.fillRect(r.x, r.y, Math.max(2, r.w), Math.max(2, r.h));
      ctx.globalAlpha = 1;
    }
    ctx.shadowBlur = 0;
    ctx.strokeStyle = f.colour;
    ctx.lineWidth = 2;
    ctx.strokeRect(r.x, r.y, Math.max(2, r.w), Math.max(2, r.h));
    ctx.restore();
  }
}
