// What is wrong with a trace's structure, in one line, before any view reads it: the page's copy of the check
// `flashviz.tracing.file_schema` runs on a trace file (docs/trace-schema.md). A file written by hand, cut or edited, or
// an exported page whose trace was changed, must be told apart from a server that cannot be reached: "tensors must
// be an object (got null)", not "Cannot read properties of null (reading 'Qi')". Only the shape of what the views
// read is checked here; values inside are drawn as text nodes whatever they are.

import { type CompactArray, decodeFlat, isCompact } from "./codec";
import { cut, got } from "./echo";
import { referenceProblem, shapeProblem } from "./traceShape";

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v);

/** An array as the trace stores it: a nested list, a `{dtype, shape, base64}` object, a reference `{dtype, shape, ref}`
 *  to one before it (codec.ts checks those), or one already decoded. */
function isArrayLike(v: unknown): boolean {
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return true;
  return (
    isObj(v) &&
    typeof v.dtype === "string" &&
    Array.isArray(v.shape) &&
    (typeof v.base64 === "string" || typeof v.ref === "string" || "data" in v)
  );
}

const OBJECTS: [string, string, boolean][] = [
  // [key, what it holds, at least one entry]
  ["tensors", "an object of tensors (name \u2192 object)", true],
  ["buffers", "an object of SRAM buffers (name \u2192 object)", false],
  ["kernels", "an object of kernels (name \u2192 object)", true],
  ["ops", "an object of ops (name \u2192 object)", true],
];
const INT_FIELDS = ["n", "d", "br", "bc"] as const;

/** The first thing wrong with `t`'s structure (a parsed trace of the right schema), or null. */
export function traceProblem(t: unknown): string | null {
  if (!isObj(t)) return `the trace must be an object (got ${got(t)})`;
  const c = t.config;
  if (!isObj(c)) return `config must be an object (got ${got(c)})`;
  for (const f of INT_FIELDS) if (!isInt(c[f]) || c[f] < 1) return `config.${f} must be an integer, at least 1 (got ${got(c[f])})`;
  if (typeof c.algo !== "string" || !c.algo.length) return `config.algo must be an algorithm's name (got ${got(c.algo)})`;
  if (typeof c.causal !== "boolean") return `config.causal must be true or false (got ${got(c.causal)})`;
  if (typeof c.scale !== "number" || !Number.isFinite(c.scale)) return `config.scale must be a finite number (got ${got(c.scale)})`;
  const rec = c.recorded_blocks;
  if (!Array.isArray(rec) || rec.length === 0 || !rec.every((b) => isInt(b) && b >= 0))
    return `config.recorded_blocks must be a list of at least one block number (got ${got(rec)})`;
  const k = t.kernel;
  if (!isObj(k) || typeof k.file !== "string" || typeof k.source !== "string")
    return `kernel must be an object {file, name, source} (got ${got(k)})`;
  for (const [key, what, some] of OBJECTS) {
    const v = t[key];
    if (!isObj(v) || (some && Object.keys(v).length === 0)) return `${key} must be ${what} (got ${got(v)})`;
    for (const [name, entry] of Object.entries(v)) if (!isObj(entry)) return `${key}.${cut(name)} must be an object (got ${got(entry)})`;
  }
  const kernels = t.kernels as Obj;
  const ops = t.ops as Obj;
  const p = t.picker;
  if (!isObj(p) || !Array.isArray(p.kernels) || typeof p.index !== "string")
    return `picker must be an object {kernels, index, label, ...} (got ${got(p)})`;
  const pic = t.picture;
  if (!isObj(pic) || !Array.isArray(pic.sram_rows) || !pic.sram_rows.every((r) => Array.isArray(r)))
    return `picture must be an object {sram_rows: [[buffer, ...], ...]} (got ${got(pic)})`;
  for (const key of ["inputs", "outputs"]) {
    const v = t[key];
    if (!isObj(v) || Object.keys(v).length === 0) return `${key} must be an object of arrays (got ${got(v)})`;
    for (const [name, a] of Object.entries(v))
      if (!isArrayLike(a)) return `${key}.${cut(name)} must be an array: a nested list or a {dtype, shape, base64} object (got ${got(a)})`;
  }
  for (const key of ["blocks", "phases"]) {
    const v = t[key];
    if (!Array.isArray(v) || v.length === 0) return `${key} must be a list of at least one ${key.slice(0, -1)} (got ${got(v)})`;
    const bad = v.findIndex((x) => !isObj(x));
    if (bad >= 0) return `${key}[${bad}] must be an object (got ${got(v[bad])})`;
  }
  const steps = t.steps;
  if (!Array.isArray(steps) || steps.length === 0) return `steps must be a list of at least one step (got ${got(steps)})`;
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i] as unknown;
    const at = `steps[${i}]`;
    if (!isObj(s)) return `${at} must be an object (a step: block, phase, op, kernel, ...) (got ${got(s)})`;
    if (!isInt(s.block) || s.block < 0) return `${at}.block must be an integer, at least 0 (got ${got(s.block)})`;
    if (!isInt(s.phase) || s.phase < 0) return `${at}.phase must be an integer, at least 0 (got ${got(s.phase)})`;
    if (typeof s.op !== "string" || !isObj(ops[s.op])) return `${at}.op must name one of ops (got ${got(s.op)})`;
    if (typeof s.kernel !== "string" || !isObj(kernels[s.kernel])) return `${at}.kernel must name one of kernels (got ${got(s.kernel)})`;
    if (!isObj(s.indices)) return `${at}.indices must be an object (got ${got(s.indices)})`;
    if (!Array.isArray(s.transfers)) return `${at}.transfers must be a list (got ${got(s.transfers)})`;
    if (!isObj(s.sram)) return `${at}.sram must be an object (got ${got(s.sram)})`;
    if (!Array.isArray(s.lines)) return `${at}.lines must be a list (got ${got(s.lines)})`;
  }
  // then what each view reads deeper, and the references between parts (traceShape.ts, the spec Python walks too),
  // and whether the verdict the badge shows is its outputs'
  return shapeProblem(t) ?? referenceProblem(t) ?? verdictProblem(t);
}

/** An output's values, flat: a stored array decoded, a reference followed to the input or output it names (its rows),
 *  a plain array's nested lists flattened (null, −∞, counts as a number here); null when it cannot be read here. */
function flatOf(t: Obj, part: string, name: string): ArrayLike<number | null> | null {
  const v = (t[part] as Obj)[name];
  if (Array.isArray(v)) {
    let level: unknown[] = v;
    while (level.some(Array.isArray)) level = level.flatMap((x) => (Array.isArray(x) ? x : [x]));
    return level.map((x) => (typeof x === "number" ? x : null));
  }
  if (!isCompact(v)) return null;
  if (typeof v.base64 === "string") return decodeFlat(v);
  const [from, key, extra] = typeof v.ref === "string" ? v.ref.split("/") : [];
  const target = from === "inputs" || from === "outputs" ? (t[from] as Obj)[key ?? ""] : undefined;
  if (extra !== undefined || !isCompact(target) || typeof target.base64 !== "string") return null;
  const flat = decodeFlat(target as CompactArray);
  if (!v.rows) return flat;
  const cols = target.shape.slice(1).reduce((x, y) => x * y, 1);
  return flat.subarray(v.rows[0] * cols, v.rows[1] * cols);
}

/** The first output holding NaN or +∞ that its stored verdict does not count (`reference[name].nonfinite`), or that
 *  the verdict passes (✓), in one line; null otherwise. A float64 reference is never NaN or +∞ (a row that sees no
 *  key has L = −∞, which may be right), so each is an error the file's own check counted: a file that says ✓ over
 *  them was edited or broken (Python's readers judge the whole verdict again; the page draws, it does not compute). */
export function verdictProblem(t: Obj): string | null {
  const r = t.reference;
  if (!isObj(r) || !isObj(t.outputs)) return null;
  for (const [name, e] of Object.entries(r)) {
    if (!isObj(e) || !("max_abs" in e) || !(name in t.outputs)) continue;
    const flat = flatOf(t, "outputs", name);
    if (!flat) continue;
    let bad = 0;
    for (let k = 0; k < flat.length; k++) {
      const x = flat[k];
      if (x !== null && x !== undefined && (Number.isNaN(x) || x === Number.POSITIVE_INFINITY)) bad++;
    }
    const said = isInt(e.nonfinite) ? e.nonfinite : 0;
    if (bad > said || (bad > 0 && (e.ok === true || r.ok === true))) {
      const mark = e.ok === true ? "\u2713" : "\u2717";
      return `outputs.${cut(name)} holds ${bad} value${bad === 1 ? "" : "s"} not finite (NaN or +\u221e), but reference.${cut(name)} says ${mark} with ${said} not finite: the file's verdict is not its outputs'`;
    }
  }
  return null;
}
