// What the page's views read in a trace, checked before any view draws it: the spec flashviz ships
// (src/flashviz/data/trace_shape.json, its `_doc` says how to read it), walked here with the same words as Python's
// flashviz.tracing.shape. traceCheck.ts checks the config and the top-level structure first; this walks the parts it
// leaves open (a step's code and lines, a block's rows, a phase's writes, the footprint, the flops and hardware
// sections, ...): a trace a view cannot read is said in one line naming the field, not drawn into a page that throws.
import SPEC from "../../src/flashviz/data/trace_shape.json";
import { cut, got } from "./echo";

type Shape =
  | string
  | { ref?: string; either?: Shape[]; keys?: Record<string, Shape>; list?: Shape; map?: Shape; min?: number; null?: boolean };

const DEFS = SPEC.defs as Record<string, Shape>;
const TRACE = SPEC.trace as Shape;
const COMPARE = SPEC.compare as Shape;

const ATOMS: Record<string, string> = {
  str: "a string",
  int: "an integer",
  num: "a finite number",
  bool: "true or false",
  obj: "an object",
  list: "a list",
  span: "[first, end): two integers",
  rich: "Rich text (a list of runs: strings or objects)",
  array: "an array: a nested list or a {dtype, shape, base64} object",
};

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isInt = (v: unknown): boolean => typeof v === "number" && Number.isSafeInteger(v);

function atomOk(v: unknown, atom: string): boolean {
  switch (atom) {
    case "any":
      return true;
    case "str":
      return typeof v === "string";
    case "int":
      return isInt(v);
    case "num":
      return typeof v === "number" && Number.isFinite(v);
    case "bool":
      return typeof v === "boolean";
    case "obj":
      return isObj(v);
    case "list":
      return Array.isArray(v);
    case "span":
      return Array.isArray(v) && v.length === 2 && v.every(isInt);
    case "rich":
      return Array.isArray(v) && v.every((r) => typeof r === "string" || isObj(r));
    case "array":
      // a nested list, a compact object, or one codec.ts has already made a lazy list of
      return Array.isArray(v) || ArrayBuffer.isView(v) || (isObj(v) && "dtype" in v && "shape" in v);
  }
  throw new Error(`trace_shape.json: no atom ${atom}`);
}

/** What a shape accepts, in words (as flashviz.tracing.shape.words says it). */
export function words(shape: Shape): string {
  if (typeof shape === "string") {
    const atom = shape.replace(/\?$/, "");
    const text = ATOMS[atom] ?? atom;
    return shape.endsWith("?") ? `${text}, or null` : text;
  }
  if (shape.ref) return words(DEFS[shape.ref]!);
  if (shape.either) return shape.either.map(words).join(", or ");
  const nul = shape.null ? ", or null" : "";
  if (shape.keys) {
    const names = Object.keys(shape.keys).filter((k) => !k.endsWith("?"));
    return names.length ? `an object {${names.join(", ")}}${nul}` : `an object${nul}`;
  }
  const least = shape.min ? ` of at least ${shape.min}` : "";
  if (shape.list !== undefined) return `a list${least} (${words(shape.list)} each)${nul}`;
  return `an object${least} (name \u2192 ${words(shape.map!)})${nul}`;
}

function walk(v: unknown, shape: Shape, at: string): string | null {
  if (typeof shape === "string") {
    if ((v === null && shape.endsWith("?")) || atomOk(v, shape.replace(/\?$/, ""))) return null;
    return `${at} must be ${words(shape)} (got ${got(v)})`;
  }
  if (shape.ref) return walk(v, DEFS[shape.ref]!, at);
  if (v === null && shape.null) return null;
  if (shape.either) {
    const wrongs = shape.either.map((x) => walk(v, x, at));
    // none fits: what the closest (the last, the fullest form) says
    return wrongs.every((w) => w !== null) ? wrongs[wrongs.length - 1]! : null;
  }
  if (shape.keys) {
    if (!isObj(v)) return `${at} must be ${words(shape)} (got ${got(v)})`;
    for (const [key, sub] of Object.entries(shape.keys)) {
      const name = key.replace(/\?$/, "");
      const here = at ? `${at}.${name}` : name;
      if (!(name in v)) {
        if (key.endsWith("?")) continue;
        return `${here} is missing (must be ${words(sub)})`;
      }
      const wrong = walk(v[name], sub, here);
      if (wrong) return wrong;
    }
    return null;
  }
  const least = shape.min ?? 0;
  if (shape.list !== undefined) {
    if (!Array.isArray(v) || v.length < least) return `${at} must be ${words(shape)} (got ${got(v)})`;
    for (let k = 0; k < v.length; k++) {
      const wrong = walk(v[k], shape.list, `${at}[${k}]`);
      if (wrong) return wrong;
    }
    return null;
  }
  if (!isObj(v) || Object.keys(v).length < least) return `${at} must be ${words(shape)} (got ${got(v)})`;
  for (const [k, x] of Object.entries(v)) {
    const wrong = walk(x, shape.map!, `${at}.${cut(k)}`);
    if (wrong) return wrong;
  }
  return null;
}

/** The first part of a comparison document (GET /api/compare's, or one a page holds) its views cannot read, or null. */
export function compareProblem(doc: unknown): string | null {
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return `the comparison must be an object (got ${got(doc)})`;
  return walk(doc, COMPARE, "");
}

/** The first part of `t` a view cannot read, in one line ("steps[3].code must be a string (got nothing)"), or null. */
export function shapeProblem(t: unknown): string | null {
  return walk(t, TRACE, "");
}

type Doc = {
  tensors: Record<string, unknown>;
  buffers: Record<string, unknown>;
  picture: { sram_rows: string[][] };
  veils: { tensor: string }[][];
  phases: { writes: { tensor: string }[] }[];
  carries: { notes: unknown[] };
  steps: { phase: number; veil: number | null; carries_note: number | null; transfers: { tensor: string; buffers: string[] }[] }[];
};

/** The first reference between parts that points nowhere (a view would index by it), in one line, or null (as
 *  flashviz.tracing.shape.reference_problem says it). Runs on a trace `shapeProblem` passed. */
export function referenceProblem(t: unknown): string | null {
  const d = t as Doc;
  const phases = d.phases.length;
  const veils = d.veils.length;
  const notes = d.carries.notes.length;
  const missing = (at: string, name: string, part: string, names: Record<string, unknown>): string | null =>
    Object.hasOwn(names, name) ? null : `${at} names ${got(name)}, which is not in ${part} (${Object.keys(names).slice(0, 8).join(", ")})`;
  const found = (xs: (string | null)[]): string | null => xs.find((x) => x !== null) ?? null;
  let wrong = found(
    d.picture.sram_rows.flatMap((row, r) => row.map((name, c) => missing(`picture.sram_rows[${r}][${c}]`, name, "buffers", d.buffers))),
  );
  if (wrong) return wrong;
  wrong = found(d.veils.flatMap((g, v) => g.map((x, q) => missing(`veils[${v}][${q}].tensor`, x.tensor, "tensors", d.tensors))));
  if (wrong) return wrong;
  wrong = found(
    d.phases.flatMap((p, k) => p.writes.map((w, q) => missing(`phases[${k}].writes[${q}].tensor`, w.tensor, "tensors", d.tensors))),
  );
  if (wrong) return wrong;
  for (let k = 0; k < d.steps.length; k++) {
    const s = d.steps[k]!;
    const at = `steps[${k}]`;
    if (!(s.phase < phases)) return `${at}.phase must be an index into phases, 0..${phases - 1} (got ${s.phase})`;
    for (const [key, count, part] of [
      ["veil", veils, "veils"],
      ["carries_note", notes, "carries.notes"],
    ] as const) {
      const i = s[key];
      if (i !== null && !(0 <= i && i < count)) return `${at}.${key} must be null or an index into ${part}, 0..${count - 1} (got ${i})`;
    }
    for (let q = 0; q < s.transfers.length; q++) {
      const tr = s.transfers[q]!;
      wrong = missing(`${at}.transfers[${q}].tensor`, tr.tensor, "tensors", d.tensors);
      if (wrong) return wrong;
      for (let b = 0; b < tr.buffers.length; b++) {
        wrong = missing(`${at}.transfers[${q}].buffers[${b}]`, tr.buffers[b]!, "buffers", d.buffers);
        if (wrong) return wrong;
      }
    }
  }
  return null;
}
