// Formatting only: numbers as a reader wants them, −∞ for null, byte sizes. Every view formats through here.
// −∞ (null in the trace, as docs/trace-schema.md says) is "−∞"; NaN, which a trace holds only for a row with no
// finite score (the kernel's exp(−∞ − (−∞)), written "NaN" in the JSON), is "NaN", as the narrative says it; a
// value that is absent or not a number at all is "—".
import type { Num } from "./types";

export const MINUS = "\u2212";
export const NEG_INF = `${MINUS}\u221e`;
export const NO_VALUE = "\u2014";

/** The text for a value that has no finite digits to show, or null when it has. */
function special(x: Num | undefined): string | null {
  if (x === null) return NEG_INF;
  if (typeof x !== "number") return NO_VALUE;
  if (Number.isNaN(x)) return "NaN";
  if (!Number.isFinite(x)) return x > 0 ? "+\u221e" : NEG_INF;
  return null;
}

/** 3 significant digits, a real minus sign, −∞ for null. */
export function num(x: Num | undefined, digits = 3): string {
  const sp = special(x);
  if (sp !== null) return sp;
  const v = x as number;
  if (v === 0) return "0";
  const a = Math.abs(v);
  const s = a >= 1e5 || a < 1e-3 ? v.toExponential(digits - 1) : v.toPrecision(digits);
  return tidy(s);
}

/** Fixed decimals for a grid cell, chosen to fit `chars` characters. */
export function cell(x: Num | undefined, chars: number): string {
  const sp = special(x);
  if (sp !== null) return sp;
  const v = x as number;
  const neg = v < 0 || Object.is(v, -0);
  const a = Math.abs(v);
  for (let dec = 2; dec >= 0; dec--) {
    let s = a.toFixed(dec);
    if (dec > 0 && a < 1) s = s.slice(1); // ".39" saves a character
    if (neg && Number(s) !== 0) s = MINUS + s;
    if (s.length <= chars) return s;
  }
  return a >= 1 ? tidy(v.toExponential(0)) : "\u00b7";
}

/** Full precision for tooltips and tables (float32 carries ~7 digits). */
export function full(x: Num | undefined): string {
  const sp = special(x);
  if (sp !== null) return sp;
  const v = x as number;
  return tidy(
    Number.isInteger(v)
      ? String(v)
      : v
          .toPrecision(7)
          .replace(/\.?0+$/, "")
          .replace(/\.?0+e/, "e"),
  );
}

function tidy(s: string): string {
  return s.replace(/^-/, MINUS).replace(/e\+?(-?)(\d+)$/, (_m, sign: string, d: string) => `e${sign ? MINUS : ""}${d}`);
}

/** Thousands separated by commas (as en-US writes them, without Intl: its first use costs ~15 ms at start-up). */
export function int(n: number): string {
  if (!Number.isFinite(n)) return NO_VALUE;
  const [whole, frac] = String(Math.abs(n)).split(".");
  return (n < 0 ? "-" : "") + group(whole!) + (frac ? `.${frac}` : "");
}

function group(digits: string): string {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

// Bytes, one convention for every view and the same strings as the CLI (src/flashviz/model/units.py, whose two functions
// these mirror): bytes moved across HBM in decimal units (1 kB = 1000 B, as ncu and bandwidths quote them), shared
// memory in binary units (1 KiB = 1024 B, as CUDA sizes it). Both round half up on the exact integer.

const DECIMAL_UNITS = ["B", "kB", "MB", "GB", "TB", "PB", "EB"] as const;

/** b / unit rounded half up to `digits` decimals, as "whole.frac" with thousands grouped (exact: BigInt). */
function fixed(b: bigint, unit: bigint, digits: number): { whole: bigint; text: string } {
  const scale = 10n ** BigInt(digits);
  let q = (b * scale) / unit;
  const r = (b * scale) % unit;
  if (2n * r >= unit) q += 1n;
  const whole = q / scale;
  const frac = (q % scale).toString().padStart(digits, "0");
  return { whole, text: group(whole.toString()) + (digits ? `.${frac}` : "") };
}

/** |b| rounded half up to whole bytes. */
function integral(b: number): bigint {
  return BigInt(Math.round(Math.abs(b)));
}

/** Bytes moved, in decimal units: 352 B, 1.5 kB, 136.3 MB (1 kB = 1000 B); units.human_bytes' very strings. */
export function bytes(b: number, digits = 1): string {
  if (!Number.isFinite(b)) return NO_VALUE;
  const a = integral(b);
  const sign = b < 0 && a !== 0n ? "-" : "";
  if (a < 1000n) return `${sign}${a} B`;
  let k = 1;
  while (k < DECIMAL_UNITS.length - 1 && a >= 1000n ** BigInt(k + 1)) k++;
  let f = fixed(a, 1000n ** BigInt(k), digits);
  if (f.whole >= 1000n && k < DECIMAL_UNITS.length - 1) {
    k++; // 999.95 kB rounds to 1.0 MB, not 1,000.0 kB
    f = fixed(a, 1000n ** BigInt(k), digits);
  }
  return `${sign}${f.text} ${DECIMAL_UNITS[k]}`;
}

/** Shared memory, in binary units as CUDA sizes it: 352 B, 48.0 KiB (1 KiB = 1024 B); units.kib's strings. */
export function kib(b: number): string {
  if (!Number.isFinite(b)) return NO_VALUE;
  const a = integral(b);
  const sign = b < 0 && a !== 0n ? "-" : "";
  if (a < 1024n) return `${sign}${a} B`;
  return `${sign}${fixed(a, 1024n, 1).text} KiB`;
}

/** Half-open [a, b) as the seed writes slices: "K[4:8]". */
export function slice(name: string, r: [number, number]): string {
  return `${name}[${r[0]}:${r[1]}]`;
}

/** 2 significant digits in scientific notation (errors): 3.1e−7. */
export function sci(x: Num | undefined): string {
  const sp = special(x);
  if (sp !== null) return sp;
  if (x === 0) return "0";
  return tidy((x as number).toExponential(1));
}
