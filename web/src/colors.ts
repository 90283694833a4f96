// Colour scales for the memory picture. Diverging around 0 (negative blue, positive orange) so that a
// tile looks the same in HBM and in SRAM; −∞ has its own colour. Pure: a palette in, colours out.
import type { Num } from "./types";

export interface Palette {
  neutral: [number, number, number]; // the colour of 0
  neg: [number, number, number];
  pos: [number, number, number];
  negInf: [number, number, number];
  ink: string; // text on cells
  inkMuted: string;
  grid: string; // separators
  panel: string; // panel backgrounds
  panelEdge: string;
  read: string; // HBM -> SRAM
  write: string; // SRAM -> HBM
  watch: string; // the watched block / current tile
  hatch: string; // padding past N
  changed: string; // an SRAM buffer this step wrote
}

export function hexToRgb(hex: string): [number, number, number] {
  const h = hex.trim().replace("#", "");
  const v =
    h.length === 3
      ? h
          .split("")
          .map((c) => c + c)
          .join("")
      : h;
  const n = parseInt(v.slice(0, 6), 16);
  if (!Number.isFinite(n)) return [128, 128, 128];
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

/** 0..1 position of x on a symmetric scale ±range, eased so small values still show. */
export function intensity(x: number, range: number): number {
  if (!(range > 0)) return 0;
  const t = Math.min(1, Math.abs(x) / range);
  return t ** 0.75;
}

export function rgbOf(x: Num, range: number, p: Palette): [number, number, number] {
  if (x === null) return p.negInf;
  if (Number.isNaN(x)) return p.negInf;
  const t = intensity(x, range);
  const end = x < 0 ? p.neg : p.pos;
  return [
    Math.round(p.neutral[0] + (end[0] - p.neutral[0]) * t),
    Math.round(p.neutral[1] + (end[1] - p.neutral[1]) * t),
    Math.round(p.neutral[2] + (end[2] - p.neutral[2]) * t),
  ];
}

/** Largest |x| over finite entries (nulls are −∞ and do not set the scale). */
export function absMax(values: ArrayLike<Num> | Num[][]): number {
  let m = 0;
  for (let k = 0; k < values.length; k++) {
    const row = (values as ArrayLike<unknown>)[k];
    if (Array.isArray(row)) {
      for (const v of row as Num[]) if (v !== null && Number.isFinite(v) && Math.abs(v) > m) m = Math.abs(v);
    } else {
      const v = row as Num;
      if (v !== null && Number.isFinite(v) && Math.abs(v) > m) m = Math.abs(v);
    }
  }
  return m;
}

/** Luminance of a colour (0..1), to pick dark or light text on a cell. */
export function luminance([r, g, b]: [number, number, number]): number {
  return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
}
