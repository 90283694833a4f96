// Where the memory picture's words and connectors go: pure functions of the layout (layout.ts), the text and a
// measure of text width (the canvas's in the page, a fixed-width estimate in the tests). Nothing here draws.
// The rules they keep: a note inside a grid never crosses a block or tile boundary (it sits between them, or is
// left out), text is never squeezed (a shorter variant, or nothing), connectors stay in the layout's band, and a
// tooltip stays inside the picture.
import type { GridBox, MemoryLayout, Rect } from "./layoutBoxes";

/** Width in pixels of `text` drawn in `font` (a CSS font string). */
export type Measure = (text: string, font: string) => number;

export const NOTE_FONT = "11px system-ui, sans-serif";
export const NOTE_LINE = 14;
export const CAPTION_FONT = "12px system-ui, sans-serif";
export const CAPTION_LINE = 16;
export const VEIL_FONT = "10px system-ui, sans-serif";
const MARGIN = 4; // between a note and the lines around it

/** Centre-aligned lines of text and the box they take. */
export interface Placed {
  lines: string[];
  font: string;
  lineH: number;
  cx: number; // centre of the lines
  cy: number; // middle of the block of lines
  box: Rect;
}

export function overlaps(a: Rect, b: Rect): boolean {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/** A horizontal or vertical segment as a rectangle of zero thickness (for intersection tests). */
export function segmentRect(x1: number, y1: number, x2: number, y2: number): Rect {
  return { x: Math.min(x1, x2), y: Math.min(y1, y2), w: Math.abs(x2 - x1), h: Math.abs(y2 - y1) };
}

/** Does a box meet a segment (a zero-width or zero-height rectangle, edges included)? */
export function crosses(box: Rect, seg: Rect): boolean {
  return seg.x <= box.x + box.w && box.x <= seg.x + seg.w && seg.y <= box.y + box.h && box.y <= seg.y + seg.h;
}

/** The block and tile boundaries drawn across a grid: rows every `group` (and the padding past N), and for grids
 *  whose columns are keys (S, P, Sij) columns every Bc, when they are at least 3 px apart. */
export function separators(b: GridBox, bc: number): { ys: number[]; xs: number[] } {
  const ys: number[] = [];
  const xs: number[] = [];
  if (b.cuts) {
    // a trace with a layout: its blocks' (tiles') own boundaries, when they are at least 3 px apart on average
    if (b.cuts.length === 0 || (b.rows * b.ch) / (b.cuts.length + 1) >= 3) {
      for (const r of b.cuts) if (r > 0 && r < b.rows) ys.push(Math.round(b.y + r * b.ch) + 0.5);
    }
  } else if (b.group > 0 && b.group * b.ch >= 3) {
    for (let r = b.group; r < b.rows + b.padRows; r += b.group) ys.push(Math.round(b.y + r * b.ch) + 0.5);
  }
  if (b.colAxis === "kv" && b.area === "hbm" && bc > 0 && bc * b.cw >= 3) {
    for (let c = bc; c < b.cols; c += bc) xs.push(Math.round(b.x + c * b.cw) + 0.5);
  }
  return { ys, xs };
}

/** The separators as segments (what render/memory/grids.ts strokes: the row lines stick out 3 px each side). */
export function separatorSegments(b: GridBox, bc: number): Rect[] {
  const { ys, xs } = separators(b, bc);
  return [...ys.map((y) => segmentRect(b.x - 3, y, b.x + b.w + 3, y)), ...xs.map((x) => segmentRect(x, b.y, x, b.y + b.h))];
}

/** The rectangles of a grid's real rows between its separators, top to bottom, left to right. */
export function regions(b: GridBox, bc: number): Rect[] {
  const { ys, xs } = separators(b, bc);
  const bottom = b.y + b.h;
  const rowEdges = [b.y, ...ys.filter((y) => y < bottom), bottom];
  const colEdges = [b.x, ...xs, b.x + b.w];
  const out: Rect[] = [];
  for (let r = 0; r + 1 < rowEdges.length; r++) {
    for (let c = 0; c + 1 < colEdges.length; c++) {
      out.push({ x: colEdges[c]!, y: rowEdges[r]!, w: colEdges[c + 1]! - colEdges[c]!, h: rowEdges[r + 1]! - rowEdges[r]! });
    }
  }
  return out;
}

/** Words greedily wrapped into lines no wider than `width` (a word wider than that makes the wrap fail). */
export function wrapWords(text: string, width: number, font: string, measure: Measure): string[] | null {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const next = line ? `${line} ${word}` : word;
    if (measure(next, font) <= width) line = next;
    else {
      if (!line || measure(word, font) > width) return null;
      lines.push(line);
      line = word;
    }
  }
  if (line) lines.push(line);
  return lines;
}

/** The lines centred in `r` with MARGIN all round, or null when they do not fit. */
function fitIn(r: Rect, lines: string[], font: string, lineH: number, measure: Measure): Placed | null {
  const w = Math.max(...lines.map((l) => measure(l, font)));
  const h = lines.length * lineH;
  if (w + 2 * MARGIN > r.w || h + 2 * MARGIN > r.h) return null;
  const cx = r.x + r.w / 2;
  const cy = r.y + r.h / 2;
  return { lines, font, lineH, cx, cy, box: { x: cx - w / 2, y: cy - h / 2, w, h } };
}

/**
 * A note inside a grid ("not written yet", "empty"): its lines (split at "\n") in the first region between the
 * grid's separators where they fit; failing that each part word-wrapped to the region; failing that, only the
 * first part; or null (nothing is drawn rather than text across a boundary).
 */
export function placeNote(b: GridBox, text: string, bc: number, measure: Measure, font = NOTE_FONT, lineH = NOTE_LINE): Placed | null {
  if (!text) return null;
  const parts = text.split("\n");
  const rs = regions(b, bc);
  const tries: ((r: Rect) => string[] | null)[] = [
    () => parts,
    (r) => {
      const out: string[] = [];
      for (const p of parts) {
        const w = wrapWords(p, r.w - 2 * MARGIN, font, measure);
        if (!w) return null;
        out.push(...w);
      }
      return out;
    },
    (r) => wrapWords(parts[0]!.replace(/:$/, ""), r.w - 2 * MARGIN, font, measure),
  ];
  for (const lines of tries) {
    for (const r of rs) {
      const ls = lines(r);
      const placed = ls && fitIn(r, ls, font, lineH, measure);
      if (placed) return placed;
    }
  }
  return null;
}

/** The first variant (a list of lines) that fits in `room` whole, centred in it; null if none does. */
export function placeLines(room: Rect, variants: string[][], measure: Measure, font = CAPTION_FONT, lineH = CAPTION_LINE): Placed | null {
  for (const lines of variants) {
    const placed = fitIn(room, lines, font, lineH, measure);
    if (placed) return placed;
  }
  return null;
}

/** The first of `variants` no wider than `width` (a title is shortened, never squeezed), or null. */
export function fitOne(variants: string[], width: number, font: string, measure: Measure): string | null {
  return variants.find((v) => measure(v, font) <= width) ?? null;
}

/** The tile caption's words: which tile is held, or what the loop is doing. */
export function tileCaptionVariants(
  j: number | null,
  tc: number,
  rows: [number, number],
  state: "before" | "after" | "tile",
  noLoop = false,
): string[][] {
  if (state === "before") {
    return noLoop
      ? [["no tile yet:", "this kernel has no loop over j"], ["no tile yet:", "no loop over j"], ["no tile yet"]]
      : [["no tile yet:", "the loop over j starts next"], ["no tile yet:", "loop over j next"], ["no tile yet"]];
  }
  if (state === "after")
    return [["loop over j done:", "all tiles this block needs seen"], ["loop over j done:", "all tiles seen"], ["loop over j done"]];
  const span = `[${rows[0]}:${rows[1]}]`;
  return [
    [`tile j = ${j} of Tc = ${tc}`, `K${span}, V${span} held`],
    [`tile j = ${j} of Tc = ${tc}`, `K${span}, V${span}`, "held"],
    [`tile j = ${j} of ${tc}`, `K${span}, V${span}`],
    [`j = ${j} of ${tc}`],
  ];
}

/** A connector: a cubic from `a` (the side data leaves) to `z` (the side it arrives), its arrowhead at `z`. */
export interface Arc {
  a: { x: number; y: number };
  c1: { x: number; y: number };
  c2: { x: number; y: number };
  z: { x: number; y: number };
  head: [number, number][]; // the arrowhead's triangle
  kind: "read" | "write";
  box: Rect; // bounds of the curve and the head
}

/** Bounds of a cubic Bézier (its extrema), enough for intersection tests. */
export function bezierBox(
  p0: { x: number; y: number },
  p1: { x: number; y: number },
  p2: { x: number; y: number },
  p3: { x: number; y: number },
): Rect {
  const ts = [0, 1];
  for (const k of ["x", "y"] as const) {
    // derivative: 3[(p1-p0)(1-t)^2 + 2(p2-p1)t(1-t) + (p3-p2)t^2] = 0 -> a t^2 + b t + c = 0
    const a = -p0[k] + 3 * p1[k] - 3 * p2[k] + p3[k];
    const b = 2 * (p0[k] - 2 * p1[k] + p2[k]);
    const c = p1[k] - p0[k];
    if (Math.abs(a) < 1e-9) {
      if (Math.abs(b) > 1e-9) ts.push(-c / b);
    } else {
      const disc = b * b - 4 * a * c;
      if (disc >= 0) ts.push((-b + Math.sqrt(disc)) / (2 * a), (-b - Math.sqrt(disc)) / (2 * a));
    }
  }
  const at = (t: number, k: "x" | "y") =>
    (1 - t) ** 3 * p0[k] + 3 * (1 - t) ** 2 * t * p1[k] + 3 * (1 - t) * t ** 2 * p2[k] + t ** 3 * p3[k];
  const xs = ts.filter((t) => t >= 0 && t <= 1).map((t) => at(t, "x"));
  const ys = ts.filter((t) => t >= 0 && t <= 1).map((t) => at(t, "y"));
  const x = Math.min(...xs);
  const y = Math.min(...ys);
  return { x, y, w: Math.max(...xs) - x, h: Math.max(...ys) - y };
}

function union(a: Rect, b: Rect): Rect {
  const x = Math.min(a.x, b.x);
  const y = Math.min(a.y, b.y);
  return { x, y, w: Math.max(a.x + a.w, b.x + b.w) - x, h: Math.max(a.y + a.h, b.y + b.h) - y };
}

const HEAD_LEN = 7;

/**
 * Connectors for a step's transfers, each from the HBM tile's column (`hbmX`) to its SRAM buffer's column
 * (`sramX`), drawn inside the layout's band only: side by side they arc over the top from one panel's upper edge
 * to the other's (the longer the span, the higher); stacked they run down from HBM's lower edge to SRAM's upper
 * edge. The arrowhead points where the data goes (SRAM for a read, HBM for a write).
 */
export function connectors(l: MemoryLayout, ends: { hbmX: number; sramX: number; kind: "read" | "write" }[]): Arc[] {
  const band = l.band;
  const out: Arc[] = [];
  const spans = ends.map((e) => Math.abs(e.sramX - e.hbmX));
  const widest = Math.max(1, ...spans);
  ends.forEach((e, k) => {
    let hbmEnd: { x: number; y: number };
    let sramEnd: { x: number; y: number };
    let c1: { x: number; y: number };
    let c2: { x: number; y: number };
    if (l.stacked) {
      hbmEnd = { x: e.hbmX, y: band.y + 1 };
      sramEnd = { x: e.sramX, y: band.y + band.h - 1 };
      const mid = (hbmEnd.y + sramEnd.y) / 2;
      c1 = { x: hbmEnd.x, y: mid };
      c2 = { x: sramEnd.x, y: mid };
    } else {
      const floor = band.y + band.h - 1; // the panels' upper edge
      // peak height: 0.75 of the control's lift; nested by span so arcs of one step stay apart
      const rise = (band.h - 8) * (0.45 + 0.55 * (spans[k]! / widest));
      hbmEnd = { x: e.hbmX, y: floor };
      sramEnd = { x: e.sramX, y: floor };
      c1 = { x: hbmEnd.x, y: floor - (rise * 4) / 3 };
      c2 = { x: sramEnd.x, y: floor - (rise * 4) / 3 };
    }
    const read = e.kind === "read";
    const a = read ? hbmEnd : sramEnd;
    const z = read ? sramEnd : hbmEnd;
    const [ca, cz] = read ? [c1, c2] : [c2, c1];
    // the head points along the curve's end tangent (vertical at both ends here): into the panel
    const dir = Math.sign(z.y - cz.y) || 1;
    const head: [number, number][] = [
      [z.x, z.y],
      [z.x - 4, z.y - dir * HEAD_LEN],
      [z.x + 4, z.y - dir * HEAD_LEN],
    ];
    const hb: Rect = { x: z.x - 4, y: Math.min(z.y, z.y - dir * HEAD_LEN), w: 8, h: HEAD_LEN };
    out.push({ a, c1: ca, c2: cz, z, head, kind: e.kind, box: union(bezierBox(a, ca, cz, z), hb) });
  });
  return out;
}

/** Where a tooltip of size w x h goes for a pointer at (x, y): below-right of it, flipped above or left where it
 *  would leave `bounds`, and never outside them (unless it is bigger than they are). */
export function tipPlace(x: number, y: number, w: number, h: number, bounds: Rect): { left: number; top: number } {
  const gap = 14;
  let left = x + gap;
  if (left + w > bounds.x + bounds.w) left = x - gap - w;
  left = Math.max(bounds.x, Math.min(left, bounds.x + bounds.w - w));
  let top = y + gap + 2;
  if (top + h > bounds.y + bounds.h) top = y - gap - h;
  top = Math.max(bounds.y, Math.min(top, bounds.y + bounds.h - h));
  return { left, top };
}
