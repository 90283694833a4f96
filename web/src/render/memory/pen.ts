// What every layer of the memory picture draws with: the palette, a text measure, the hatch pattern, and the record
// of what was drawn besides cells (each label's box, each boundary line, each connector's bounds), which the tests
// read through `window.flashviz.layout().drawn`.
import type { Palette } from "../../colors";
import type { Measure, Placed } from "../../labels";
import type { Rect } from "../../layoutBoxes";
import type { Ctx2D } from "../backbuffer";

/** What the picture drew besides cells, for the tests: each label's box, each boundary line, each connector's
 *  bounds (CSS pixels of the canvas). */
export interface Drawn {
  labels: { text: string; box: Rect; kind: string }[];
  lines: Rect[];
  arcs: Rect[];
}

export const emptyDrawn = (): Drawn => ({ labels: [], lines: [], arcs: [] });

/** A text measure on a canvas of its own (setting a font there forces no style pass), cached per text. */
function measurer(): Measure {
  const c = typeof OffscreenCanvas !== "undefined" ? new OffscreenCanvas(1, 1) : document.createElement("canvas");
  const g = c.getContext("2d") as Ctx2D;
  const cache = new Map<string, number>();
  return (text, font) => {
    const key = `${font}|${text}`;
    let w = cache.get(key);
    if (w === undefined) {
      g.font = font;
      w = g.measureText(text).width;
      if (cache.size > 4000) cache.clear();
      cache.set(key, w);
    }
    return w;
  };
}

/** The box of text drawn at (x, y) with the given alignment and baseline, `size` px tall. */
function textBox(x: number, y: number, w: number, size: number, align: CanvasTextAlign, baseline: CanvasTextBaseline): Rect {
  const left = align === "center" ? x - w / 2 : align === "right" || align === "end" ? x - w : x;
  const top = baseline === "middle" ? y - size / 2 : baseline === "top" ? y : y - 0.8 * size;
  return { x: left, y: top, w, h: size };
}

/** The device pixels per CSS pixel the canvases are drawn at (at most 3). */
export function dpr(): number {
  return Math.min(3, window.devicePixelRatio || 1);
}

export class Pen {
  palette: Palette = {} as Palette; // set by setPalette before anything is drawn
  readonly measure = measurer();
  /** the record being drawn into (the view points it at the HBM layer's or the step's) */
  rec: Drawn = emptyDrawn();
  private hatch: CanvasPattern | null = null;

  setPalette(p: Palette): void {
    this.palette = p;
    this.hatch = null;
  }

  /** The diagonal hatch of padding and veiled regions, in the palette's colour (made once per palette). */
  pattern(ctx: Ctx2D): CanvasPattern | null {
    if (this.hatch) return this.hatch;
    const c = typeof OffscreenCanvas !== "undefined" ? new OffscreenCanvas(8, 8) : document.createElement("canvas");
    c.width = c.height = 8;
    const g = c.getContext("2d") as Ctx2D;
    g.strokeStyle = this.palette.hatch;
    g.lineWidth = 1.5;
    g.beginPath();
    g.moveTo(-2, 10);
    g.lineTo(10, -2);
    g.moveTo(-2, 2);
    g.lineTo(2, -2);
    g.moveTo(6, 10);
    g.lineTo(10, 6);
    g.stroke();
    this.hatch = ctx.createPattern(c, "repeat");
    return this.hatch;
  }

  /** Centre-aligned lines placed by labels.ts, drawn and recorded. */
  lines(ctx: Ctx2D, p: Placed, colour: string, kind: string): void {
    ctx.save();
    ctx.fillStyle = colour;
    ctx.font = p.font;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    p.lines.forEach((line, k) => {
      const y = p.cy + (k - (p.lines.length - 1) / 2) * p.lineH;
      ctx.fillText(line, p.cx, y);
      this.rec.labels.push({ text: line, box: textBox(p.cx, y, this.measure(line, p.font), p.lineH - 2, "center", "middle"), kind });
    });
    ctx.restore();
  }

  /** fillText at the context's alignment, recorded with its box. */
  text(ctx: Ctx2D, text: string, x: number, y: number, font: string, size: number, kind: string): void {
    ctx.font = font;
    ctx.fillText(text, x, y);
    this.rec.labels.push({ text, box: textBox(x, y, this.measure(text, font), size, ctx.textAlign, ctx.textBaseline), kind });
  }
}
