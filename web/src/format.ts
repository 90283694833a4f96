// Formatting only: numbers as a reader wants them, −∞ for null, byte sizes.
import type { Num } from "./types";

export const MINUS = "\u2212";
export const NEG_INF = MINUS + "\u221e";

/** 3 significant digits, a real minus sign, −∞ for null. */
export function num(x: Num, digits = 3): string {
  if (x === null) return NEG_INF;
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "NaN" : x > 0 ? "+\u221e" : NEG_INF;
  if (x === 0) return "0";
  const a = Math.abs(x);
  const s = a >= 1e5 || a < 1e-3 ? x.toExponential(digits - 1) : x.toPrecision(digits);
  return tidy(s);
}

/** Fixed decimals for a grid cell, chosen to fit `chars` characters. */
export function cell(x: Num, chars: number): string {
  if (x === null) return NEG_INF;
  if (!Number.isFinite(x)) return Number.isNaN(x) ? "NaN" : "+\u221e";
  const neg = x < 0 || Object.is(x, -0);
  const a = Math.abs(x);
  for (let dec = 2; dec >= 0; dec--) {
    let s = a.toFixed(dec);
    if (dec > 0 && a < 1) s = s.slice(1); // ".39" saves a character
    if (neg && Number(s) !== 0) s = MINUS + s;
    if (s.length <= chars) return s;
  }
  return a >= 1 ? tidy(x.toExponential(0)) : "\u00b7";
}

/** Full precision for tooltips and tables (float32 carries ~7 digits). */
export function full(x: Num): string {
  if (x === null) return NEG_INF;
  return tidy(Number.isInteger(x) ? String(x) : x.toPrecision(7).replace(/\.?0+$/, "").replace(/\.?0+e/, "e"));
}

function tidy(s: string): string {
  return s.replace(/^-/, MINUS).replace(/e\+?(-?)(\d+)$/, (_m, sign: string, d: string) => `e${sign ? MINUS : ""}${d}`);
}

/** Thousands separated by commas (as en-US writes them, without Intl: its first use costs ~15 ms at start-up). */
export function int(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const [whole, frac] = String(Math.abs(n)).split(".");
  const grouped = whole!.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return (n < 0 ? "-" : "") + grouped + (frac ? `.${frac}` : "");
}

/** Bytes in the units a CUDA programmer uses for shared memory (KB = 1024 bytes). */
export function bytes(b: number): string {
  if (b < 1024) return `${b} B`;
  if (b < 1024 * 1024) return `${trimDec(b / 1024)} KB`;
  if (b < 1024 ** 3) return `${trimDec(b / 1024 ** 2)} MB`;
  return `${trimDec(b / 1024 ** 3)} GB`;
}

function trimDec(v: number): string {
  return (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)).replace(/\.?0+$/, "");
}

/** Half-open [a, b) as the seed writes slices: "K[4:8]". */
export function slice(name: string, r: [number, number]): string {
  return `${name}[${r[0]}:${r[1]}]`;
}

export function sci(x: number): string {
  if (x === 0) return "0";
  return tidy(x.toExponential(1));
}
