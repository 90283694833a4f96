// Cells as pixels: the colour of a value (a 512-step table built from the palette: positives, negatives, −∞, and
// "written, value not in the trace"), images of one pixel per cell, kept while their values stay the same, and the
// image of a written HBM tensor, painted write by write as the launch goes on. One colour scale per tensor and
// buffer for the whole trace, so that a tile looks the same in HBM and in SRAM.
import { absMaxOf } from "../../codec";
import { absMax, type Palette, rgbOf } from "../../colors";
import type { HbmHistory } from "../../hbm";
import type { GridBox } from "../../layoutBoxes";
import type { Mat, Num, Trace } from "../../types";
import { dpr } from "./pen";

const LUT_STEPS = 255;
const IMAGE_CAP = 1024; // an HBM tensor's image is at most this many pixels a side (S and P at N = 4096)

/** One colour scale per tensor and per buffer for the whole trace (a tile looks the same in HBM and SRAM): a buffer
 *  that holds a tensor's tile (`copy_of`) shares its scale; a tensor the trace holds no values of takes the scale of
 *  the buffer it says (`scale_like`). */
export function colourRanges(t: Trace): Map<string, number> {
  const r = new Map<string, number>();
  // from the bytes of compact arrays not decoded yet (codec.ts): the scales need no step's values as lists
  const scale = (v: unknown) => absMax(v as Mat);
  for (const g of [t.inputs, t.outputs]) for (const name of Object.keys(g)) r.set(name, absMaxOf(g, name, scale));
  const snap = new Map<string, number>();
  for (const s of t.steps) {
    for (const b of Object.keys(s.sram)) snap.set(b, Math.max(snap.get(b) ?? 0, absMaxOf(s.sram, b, scale)));
  }
  for (const [b, m] of snap) {
    const of = t.buffers[b]?.copy_of;
    r.set(b, of && r.has(of) ? r.get(of)! : m);
  }
  for (const [name, x] of Object.entries(t.tensors)) if (!r.has(name) && x.scale_like) r.set(name, snap.get(x.scale_like) ?? 1);
  return r;
}

/** A written tensor's image and how far it is painted. */
interface Composite {
  canvas: HTMLCanvasElement;
  img: ImageData;
  px: Uint32Array;
  count: number; // events painted
  sx: number; // pixels per cell
  sy: number;
}

export class Raster {
  private palette: Palette = {} as Palette;
  private lutCache: Uint32Array | null = null;
  private images = new Map<string, HTMLCanvasElement>();
  private composites = new Map<string, Composite>();
  private sramImages = new Map<string, HTMLCanvasElement>();
  private scratch = new Map<string, HTMLCanvasElement>();

  /** A new palette: every colour changes. */
  setPalette(p: Palette): void {
    this.palette = p;
    this.lutCache = null;
    this.forget();
  }

  /** A new trace: its images go. */
  forget(): void {
    this.images.clear();
    this.composites.clear();
    this.sramImages.clear();
  }

  /** A new layout: the written tensors' images are sized to the grids on screen. */
  resized(): void {
    this.composites.clear();
  }

  /** An image of `values`, kept under `key` (an input's values never change). */
  image(key: string, values: Num[][], range: number): HTMLCanvasElement {
    const hit = this.images.get(key);
    if (hit) return hit;
    const c = document.createElement("canvas");
    this.paint(c, values, range);
    this.images.set(key, c);
    return c;
  }

  /** An SRAM buffer's image, kept per snapshot (`key`: the buffer and the step that wrote it): a buffer a step left
   *  alone costs nothing to draw again. A few dozen kept; the oldest dropped. */
  sramImage(key: string, values: Num[][], range: number): HTMLCanvasElement {
    const hit = this.sramImages.get(key);
    if (hit) return hit;
    const c = document.createElement("canvas");
    this.paint(c, values, range);
    this.sramImages.set(key, c);
    if (this.sramImages.size > 48) this.sramImages.delete(this.sramImages.keys().next().value!);
    return c;
  }

  /** A one-pixel-per-cell image of an SRAM buffer, repainted into a canvas kept per buffer. */
  freshImage(values: Num[][], range: number, name = "flight"): HTMLCanvasElement {
    let c = this.scratch.get(name);
    if (!c) {
      c = document.createElement("canvas");
      this.scratch.set(name, c);
    }
    this.paint(c, values, range);
    return c;
  }

  /** Fill a canvas with one pixel per cell, through a 512-step colour table (no per-cell allocation). */
  private paint(c: HTMLCanvasElement, values: Num[][], range: number): void {
    const rows = values.length;
    const cols = values[0]?.length ?? 1;
    if (c.width !== Math.max(1, cols) || c.height !== Math.max(1, rows)) {
      c.width = Math.max(1, cols);
      c.height = Math.max(1, rows);
    }
    const g = c.getContext("2d")!;
    const img = g.createImageData(c.width, c.height);
    const px = new Uint32Array(img.data.buffer);
    const scale = range > 0 ? LUT_STEPS / range : 0;
    let o = 0;
    for (let r = 0; r < rows; r++) {
      const row = values[r]!;
      for (let q = 0; q < cols; q++) px[o++] = this.colour(row[q], scale);
    }
    g.putImageData(img, 0, 0);
  }

  /** Packed colour of a value: the scale, −∞ (null), or "written, value not in the trace" (undefined). */
  private colour(v: Num | undefined, scale: number): number {
    const lut = this.lut();
    if (v === undefined) return lut[LUT_STEPS * 2 + 2]!;
    if (v === null || Number.isNaN(v)) return lut[LUT_STEPS * 2 + 1]!;
    const k = Math.min(LUT_STEPS, Math.round(Math.abs(v) * scale));
    return lut[v < 0 ? LUT_STEPS + 1 + k : k]!;
  }

  /** Packed RGBA (little-endian) for |x|/range = k/LUT_STEPS: positives, then negatives, then −∞, then unknown. */
  private lut(): Uint32Array {
    if (this.lutCache) return this.lutCache;
    const lut = new Uint32Array(2 * LUT_STEPS + 3);
    const pack = ([r, g, b]: [number, number, number], a = 255) => ((a << 24) | (b << 16) | (g << 8) | r) >>> 0;
    for (let k = 0; k <= LUT_STEPS; k++) {
      lut[k] = pack(rgbOf(k / LUT_STEPS, 1, this.palette));
      lut[LUT_STEPS + 1 + k] = pack(rgbOf(-k / LUT_STEPS, 1, this.palette));
    }
    lut[2 * LUT_STEPS + 1] = pack(this.palette.negInf);
    lut[2 * LUT_STEPS + 2] = pack(this.palette.neutral, 110);
    this.lutCache = lut;
    return lut;
  }

  /** Pixels per cell of a written tensor's image (where a tile sits in it), once composite() has made it. */
  compositeScale(name: string): { sx: number; sy: number } | null {
    const c = this.composites.get(name);
    return c ? { sx: c.sx, sy: c.sy } : null;
  }

  /** A written tensor's image once the launch is past `phase`: its events painted in order (incrementally). */
  composite(name: string, b: GridBox, h: HbmHistory, phase: number, range: number | undefined): HTMLCanvasElement {
    let c = this.composites.get(name);
    if (!c) {
      const canvas = document.createElement("canvas");
      // never more pixels than the grid shows on screen (nor than it has cells)
      canvas.width = Math.max(1, Math.min(IMAGE_CAP, b.cols, Math.ceil(b.w * dpr())));
      canvas.height = Math.max(1, Math.min(IMAGE_CAP, b.rows, Math.ceil(b.h * dpr())));
      const g = canvas.getContext("2d")!;
      const img = g.createImageData(canvas.width, canvas.height);
      c = { canvas, img, px: new Uint32Array(img.data.buffer), count: 0, sx: canvas.width / b.cols, sy: canvas.height / b.rows };
      this.composites.set(name, c);
    }
    const target = h.applied(name, phase);
    if (target === c.count) return c.canvas;
    if (target < c.count) {
      c.px.fill(0);
      c.count = 0;
    }
    const list = h.events.get(name) ?? [];
    const scale = (range ?? 0) > 0 ? LUT_STEPS / range! : 0;
    const W = c.canvas.width;
    let y0 = Infinity;
    let y1 = 0;
    let x0 = Infinity;
    let x1 = 0;
    for (let k = c.count; k < target; k++) {
      const e = list[k]!;
      const at = h.sampler(e);
      const py0 = Math.floor(e.r0 * c.sy);
      const py1 = Math.min(c.canvas.height, Math.ceil(e.r1 * c.sy));
      const px0 = Math.floor(e.c0 * c.sx);
      const px1 = Math.min(W, Math.ceil(e.c1 * c.sx));
      for (let py = py0; py < py1; py++) {
        const r = Math.min(b.rows - 1, Math.floor((py + 0.5) / c.sy));
        if (r < e.r0 || r >= e.r1) continue;
        for (let px = px0; px < px1; px++) {
          const col = Math.min(b.cols - 1, Math.floor((px + 0.5) / c.sx));
          if (col < e.c0 || col >= e.c1) continue;
          c.px[py * W + px] = this.colour(at(r, col), scale);
        }
      }
      y0 = Math.min(y0, py0);
      y1 = Math.max(y1, py1);
      x0 = Math.min(x0, px0);
      x1 = Math.max(x1, px1);
    }
    c.count = target;
    const g = c.canvas.getContext("2d")!;
    if (y1 > y0 && x1 > x0 && target > 0) g.putImageData(c.img, 0, 0, x0, y0, x1 - x0, y1 - y0);
    else g.putImageData(c.img, 0, 0);
    return c.canvas;
  }
}
