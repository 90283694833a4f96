// Compact arrays (docs/trace-schema.md, "Compact arrays"): a trace's float arrays as {dtype, shape, base64}
// (little-endian, C order; float32, float64, or bfloat16 where that is lossless) or as a reference to values already
// in the document ({dtype, shape, ref: "inputs/K", rows?: [a, b)}). `prepareArrays` checks every one at once (its
// dtype, shape and length, its reference) and leaves each in place as a lazy property: its values are decoded the
// first time the page reads them, into the nested lists (null for −∞) a plain trace holds. The steps of a block the
// page never shows are never decoded; `absMaxOf` reads a colour scale from the bytes without building the lists. A
// step's array the server left out (arrays on demand: a stub with its dtype, shape, min and max) is checked here too,
// and put in place by `putArray` once onDemand.ts has fetched it; until then its min and max give its colour scale.

import { cut } from "./echo";
import type { Mat, Num, Trace, Vec } from "./types";

export type CompactDtype = "float32" | "float64" | "bfloat16";

export interface CompactArray {
  dtype: CompactDtype;
  shape: number[];
  base64?: string;
  ref?: string;
  rows?: [number, number];
}

const WIDTH: Record<CompactDtype, number> = { float32: 4, float64: 8, bfloat16: 2 };
const MAX_ELEMENTS = 2 ** 28;

export function isCompact(x: unknown): x is CompactArray {
  return (
    !!x && typeof x === "object" && !Array.isArray(x) && "shape" in x && ("base64" in x || "ref" in x || "base85" in x || "drawn" in x)
  );
}

/** The holders of arrays in a trace, with their paths, in document order (as flashviz.tracing.codec walks them). */
function* groups(t: Trace): Generator<[string, Record<string, unknown>]> {
  const doc = t as unknown as Record<string, unknown>;
  for (const name of ["inputs", "outputs"]) {
    const g = doc[name];
    if (g && typeof g === "object" && !Array.isArray(g)) yield [name, g as Record<string, unknown>];
  }
  const steps = Array.isArray(doc.steps) ? (doc.steps as unknown[]) : [];
  for (let k = 0; k < steps.length; k++) {
    const s = steps[k] as Record<string, unknown> | null;
    if (!s || typeof s !== "object") continue;
    for (const name of ["sram", "carries"]) {
      const g = s[name];
      if (g && typeof g === "object" && !Array.isArray(g)) yield [`steps/${k}/${name}`, g as Record<string, unknown>];
    }
    const subs = Array.isArray(s.substeps) ? (s.substeps as unknown[]) : [];
    for (let q = 0; q < subs.length; q++) {
      const v = (subs[q] as { values?: unknown } | null)?.values;
      if (v && typeof v === "object" && !Array.isArray(v)) yield [`steps/${k}/substeps/${q}/values`, v as Record<string, unknown>];
    }
  }
}

/** Bytes a base64 string decodes to, without decoding it (null: not base64). */
function base64Bytes(text: string): number | null {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return null;
  const pad = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  return (text.length / 4) * 3 - pad;
}

function said(x: unknown): string {
  return cut(JSON.stringify(x) ?? String(x));
}

/** What is wrong with one compact array, given the shapes of the arrays before it, or null. */
export function arrayProblem(a: CompactArray, shapes: Map<string, number[]>): string | null {
  const { dtype, shape } = a;
  // what only a trace file holds (flashviz.trace_store): the readers in Python make it whole before a page gets it
  const file = ["drawn", "base85", "compression"].find((k) => k in a);
  if (file) return `is stored as a trace file stores it (${file}): open the file with flashviz view, export --trace or flashviz.show`;
  if (!(dtype in WIDTH)) return `has dtype ${said(dtype)}; expected one of ${Object.keys(WIDTH).join(", ")}`;
  if (
    !Array.isArray(shape) ||
    shape.length === 0 ||
    !shape.every((s) => Number.isSafeInteger(s) && s >= 0 && s <= MAX_ELEMENTS) ||
    shape.reduce((x, y) => x * y, 1) > MAX_ELEMENTS
  ) {
    return `has shape ${said(shape)}; expected a list of integers >= 0`;
  }
  if (a.ref !== undefined) {
    const target = typeof a.ref === "string" ? shapes.get(a.ref) : undefined;
    if (!target) return `refers to ${said(a.ref)}, which is not an array before it`;
    const want = [...target];
    if (a.rows !== undefined) {
      const r = a.rows;
      if (!Array.isArray(r) || r.length !== 2 || !r.every(Number.isSafeInteger) || !(0 <= r[0] && r[0] <= r[1] && r[1] <= want[0]!)) {
        return `has rows ${said(r)}; expected [first, end) within the ${want[0]} rows of ${a.ref}`;
      }
      want[0] = r[1] - r[0];
    }
    if (want.length !== shape.length || want.some((x, k) => x !== shape[k]))
      return `has shape ${said(shape)} but its reference ${a.ref} holds ${said(want)}`;
    return null;
  }
  if (typeof a.base64 !== "string") return "has no base64 string";
  const have = base64Bytes(a.base64);
  if (have === null) return "holds base64 that does not decode";
  const need = shape.reduce((x, y) => x * y, 1) * WIDTH[dtype];
  if (have !== need) return `holds ${have} bytes; shape [${shape.join(", ")}] of ${dtype} needs ${need}`;
  return null;
}

const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Uint8Array.fromBase64 where the browser has it (Chromium 140+, Firefox 133+), else atob. */
const fromBase64 = (Uint8Array as unknown as { fromBase64?: (text: string) => Uint8Array }).fromBase64;

function bytesOf(text: string): Uint8Array {
  if (fromBase64) return fromBase64.call(Uint8Array, text);
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let k = 0; k < bin.length; k++) out[k] = bin.charCodeAt(k);
  return out;
}

/** One stored array's values, flat (bfloat16 widened to float32, exactly). */
export function decodeFlat(a: CompactArray): Float32Array | Float64Array {
  const bytes = bytesOf(a.base64 ?? "");
  const n = bytes.length / WIDTH[a.dtype];
  const view = new DataView(bytes.buffer);
  if (a.dtype === "float64") {
    if (LITTLE) return new Float64Array(bytes.buffer);
    const out = new Float64Array(n);
    for (let k = 0; k < n; k++) out[k] = view.getFloat64(8 * k, true);
    return out;
  }
  if (a.dtype === "bfloat16") {
    const bits = new Uint32Array(n);
    for (let k = 0; k < n; k++) bits[k] = view.getUint16(2 * k, true) << 16;
    return new Float32Array(bits.buffer);
  }
  if (LITTLE) return new Float32Array(bytes.buffer);
  const out = new Float32Array(n);
  for (let k = 0; k < n; k++) out[k] = view.getFloat32(4 * k, true);
  return out;
}

/** Flat values as a plain trace holds them: a vector, or a matrix as rows; −∞ is null. */
export function nested(flat: ArrayLike<number>, shape: number[]): Vec | Mat {
  const num = (v: number): Num => (v === Number.NEGATIVE_INFINITY ? null : v);
  if (shape.length === 1) {
    const out: Vec = new Array(flat.length);
    for (let k = 0; k < flat.length; k++) out[k] = num(flat[k]!);
    return out;
  }
  const cols = shape.slice(1).reduce((x, y) => x * y, 1);
  const rows: Mat = new Array(shape[0]);
  for (let r = 0; r < shape[0]!; r++) {
    const row: Vec = new Array(cols);
    for (let c = 0; c < cols; c++) row[c] = num(flat[r * cols + c]!);
    rows[r] = row;
  }
  return rows;
}

/** The first compact array that is wrong on its own (dtype, shape, bytes; references are not followed), in the
 *  words of `prepareArrays`, or null: what a file's trace is asked before its structure (traceCheck.ts) is, so that
 *  a missing holder is named as such rather than as a reference into it (as flashviz.share.trace_files orders them). */
export function ownArrayProblem(t: Trace): string | null {
  for (const [path, group] of groups(t)) {
    for (const [key, v] of Object.entries(group)) {
      if (!isCompact(v) || v.ref !== undefined) continue;
      const problem = arrayProblem(v, new Map());
      if (problem) return `array ${path}/${key} ${problem} (docs/trace-schema.md, compact arrays)`;
    }
  }
  return null;
}

/** The compact arrays not decoded yet: holder -> key -> flat values' maker. */
const pending = new WeakMap<object, Map<string, () => ArrayLike<number>>>();

/** A step's array the server left out (arrays on demand, docs/trace-schema.md): its dtype, shape, and the min and
 *  max of its finite values (null when it has none), which the colour scales read; onDemand.ts fetches the values. */
export interface Stub {
  dtype: CompactDtype;
  shape: number[];
  on_demand: true;
  min: number | null;
  max: number | null;
}

export function isStub(x: unknown): x is Stub {
  return !!x && typeof x === "object" && !Array.isArray(x) && (x as { on_demand?: unknown }).on_demand === true;
}

/** The arrays left out, not fetched yet: holder -> key -> the stub. */
const stubs = new WeakMap<object, Map<string, Stub>>();

/** What is wrong with a stub (its dtype, shape, min and max), or null. */
function stubProblem(a: Stub): string | null {
  if (!(a.dtype in WIDTH)) return `has dtype ${said(a.dtype)}; expected one of ${Object.keys(WIDTH).join(", ")}`;
  if (!Array.isArray(a.shape) || a.shape.length === 0 || !a.shape.every((s) => Number.isSafeInteger(s) && s >= 0 && s <= MAX_ELEMENTS)) {
    return `has shape ${said(a.shape)}; expected a list of integers >= 0`;
  }
  const bound = (v: unknown) => v === null || (typeof v === "number" && Number.isFinite(v));
  if (!bound(a.min) || !bound(a.max)) return `has min ${said(a.min)} and max ${said(a.max)}; expected finite numbers or null`;
  return null;
}

/** Whether holder[key] is an array the server left out and the page has not fetched. */
export function isLeftOut(holder: object, key: string): boolean {
  return !!stubs.get(holder)?.has(key);
}

/** Put the fetched values of a left-out array in place (decoded the first time a view reads them, as the others): one
 *  line saying what is wrong with them instead (not a stored array, another shape than the stub's). */
export function putArray(holder: Record<string, unknown>, key: string, a: unknown): string | null {
  const stub = stubs.get(holder)?.get(key);
  if (!stub) return "was not left out";
  if (!isCompact(a) || a.ref !== undefined) return "is not a stored array ({dtype, shape, base64})";
  const problem = arrayProblem(a, new Map());
  if (problem) return problem;
  if (a.shape.length !== stub.shape.length || a.shape.some((x, k) => x !== stub.shape[k]))
    return `has shape ${said(a.shape)} where the trace said ${said(stub.shape)}`;
  stubs.get(holder)!.delete(key);
  let done: ArrayLike<number> | null = null;
  lazy(holder, key, () => (done ??= decodeFlat(a)), a.shape);
  return null;
}

/** A left-out array read before it was fetched: said on the console (onDemand.ts's list of what a step reads missed
 *  it), and the stub is what the view gets. */
function leftOut(holder: Record<string, unknown>, key: string, path: string, stub: Stub): void {
  const map = stubs.get(holder) ?? new Map<string, Stub>();
  stubs.set(holder, map);
  map.set(key, stub);
  Object.defineProperty(holder, key, {
    enumerable: true,
    configurable: true,
    get() {
      console.error(`flashviz: ${path} was read before its values were fetched (arrays on demand: onDemand.ts)`);
      return stub;
    },
  });
}

/** Check every compact array of the trace and make each a lazy property (values decoded on first read). One line
 *  naming the first bad array, or null. A trace with no compact arrays (written by `flashviz trace --plain`) is left
 *  as it is. */
export function prepareArrays(t: Trace): string | null {
  const shapes = new Map<string, number[]>();
  const flats = new Map<string, () => ArrayLike<number>>();
  const holders: [Record<string, unknown>, string, string, CompactArray][] = [];
  const left: [Record<string, unknown>, string, string, Stub][] = [];
  for (const [path, group] of groups(t)) {
    for (const [key, v] of Object.entries(group)) {
      const here = `${path}/${key}`;
      if (isStub(v)) {
        // only a step's arrays are left out (inputs and outputs always come whole; nothing refers to a step's)
        const problem = path.startsWith("steps/") ? stubProblem(v) : "is left out (on_demand), but only a step's arrays may be";
        if (problem) return `array ${here} ${problem} (docs/trace-schema.md, arrays on demand)`;
        left.push([group, key, here, v]);
        continue;
      }
      if (!isCompact(v)) continue;
      const problem = arrayProblem(v, shapes);
      if (problem) return `array ${here} ${problem} (docs/trace-schema.md, compact arrays)`;
      shapes.set(here, v.shape);
      flats.set(here, flatMaker(v, flats));
      holders.push([group, key, here, v]);
    }
  }
  for (const [group, key, here, v] of holders) lazy(group, key, flats.get(here)!, v.shape);
  for (const [group, key, here, v] of left) leftOut(group, key, here, v);
  return null;
}

/** Whether any array of the trace was left out (a large launch from the server: onDemand.ts fetches them). */
export function hasLeftOut(t: Trace): boolean {
  for (const [, group] of groups(t)) if (stubs.has(group) && stubs.get(group)!.size) return true;
  return false;
}

function flatMaker(a: CompactArray, flats: Map<string, () => ArrayLike<number>>): () => ArrayLike<number> {
  let done: ArrayLike<number> | null = null;
  return () => {
    if (done) return done;
    if (a.ref === undefined) done = decodeFlat(a);
    else {
      const whole = flats.get(a.ref)!() as Float32Array | Float64Array;
      if (a.rows === undefined) done = whole;
      else {
        const per = rowWidth(a.shape);
        done = whole.subarray(a.rows[0] * per, a.rows[1] * per);
      }
    }
    return done;
  };
}

function rowWidth(shape: number[]): number {
  return shape.slice(1).reduce((x, y) => x * y, 1);
}

function lazy(group: Record<string, unknown>, key: string, flat: () => ArrayLike<number>, shape: number[]): void {
  const waiting = pending.get(group) ?? new Map<string, () => ArrayLike<number>>();
  pending.set(group, waiting);
  waiting.set(key, flat);
  const settle = (value: unknown) => {
    pending.get(group)?.delete(key);
    Object.defineProperty(group, key, { value, writable: true, enumerable: true, configurable: true });
  };
  Object.defineProperty(group, key, {
    enumerable: true,
    configurable: true,
    get() {
      const value = nested(flat(), shape);
      settle(value);
      return value;
    },
    set: settle,
  });
}

/** Largest |x| over the finite values of holder[key], from its bytes when it is not decoded yet (colors.absMax's
 *  rule: −∞, +∞ and NaN do not set the scale). */
export function absMaxOf(holder: object, key: string, decoded: (v: unknown) => number): number {
  const stub = stubs.get(holder)?.get(key);
  if (stub) return Math.max(Math.abs(stub.min ?? 0), Math.abs(stub.max ?? 0)); // left out: its finite min and max
  const flat = pending.get(holder)?.get(key);
  if (!flat) return decoded((holder as Record<string, unknown>)[key]);
  const values = flat();
  let m = 0;
  for (let k = 0; k < values.length; k++) {
    const v = Math.abs(values[k]!);
    if (v > m && v !== Number.POSITIVE_INFINITY) m = v;
  }
  return m;
}
