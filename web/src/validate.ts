// The config form's checks against GET /api/limits, with messages in the API's own words. Which fields there are,
// their kinds, bounds and defaults come from /api/limits' `fields`: the table of launch fields (flashviz.model.fields),
// so that the form and the URL accept exactly what the server does.

import TABLE from "../../src/flashviz/data/launch_fields.json";
import type { ConfigParams, LaunchField, Limits } from "./launch";

/** A launch field's name: one of /api/limits' `fields`. */
export type Field = string;

/** The fields until /api/limits answers: the same table at the API, as flashviz.model.fields writes it into
 *  data/launch_fields.json (tests/test_fields.py holds that file to the table). */
export const FALLBACK_FIELDS = TABLE as LaunchField[];

/** Used until /api/limits answers (the server's own limits replace them). */
export const FALLBACK_LIMITS: Limits = {
  ...(Object.fromEntries(FALLBACK_FIELDS.filter((f) => f.kind === "int").map((f) => [f.name, [f.min!, f.max!]])) as Pick<
    Limits,
    "n" | "d" | "br" | "bc" | "seed"
  >),
  fields: FALLBACK_FIELDS,
};

/** The launch fields the limits list; limits without them (the fallback's, or limits written by hand) have the
 *  bundle's, each integer within the limits' own range for it. */
export function fieldsOf(limits: Limits): LaunchField[] {
  if (limits.fields) return limits.fields;
  const ranges = limits as unknown as Record<string, [number, number] | undefined>;
  return FALLBACK_FIELDS.map((f) => {
    const r = f.kind === "int" ? ranges[f.name] : undefined;
    return Array.isArray(r) ? { ...f, min: r[0], max: r[1] } : f;
  });
}

/** The fields the form types into: integers, numbers and lists of integers, in the table's order. */
export function typedFields(limits: Limits): LaunchField[] {
  return fieldsOf(limits).filter((f) => f.kind === "int" || f.kind === "number" || f.kind === "ints");
}

/** What an ints field accepts, in the server's words (flashviz.model.fields.Field.accepted). */
export function accepted(f: LaunchField): string {
  const [least, most] = f.items ?? [1, 1];
  const count = least === most ? String(least) : `${least}..${most}`;
  return `${count} comma-separated integers, each in ${f.min}..${f.max}, or empty for ${f.empty}`;
}

/** Why `text` (trimmed, not empty) is no value of an ints field, or null when it is one. */
export function intsProblem(f: LaunchField, text: string): string | null {
  const parts = text.split(",").map((p) => p.trim());
  const [least, most] = f.items ?? [1, 1];
  if (parts.length < least || parts.length > most || !parts.every((p) => /^-?\d{1,9}$/.test(p))) return accepted(f);
  return parts.every((p) => Number(p) >= f.min! && Number(p) <= f.max!) ? null : accepted(f);
}

/** The fields the form ticks: true or false. */
export function flagFields(limits: Limits): LaunchField[] {
  return fieldsOf(limits).filter((f) => f.kind === "flag");
}

/** A number as the server's messages write it (Python's `:g`): 1e-06, 0.125, 1e+06. */
export function g(x: number): string {
  const exp = x === 0 ? 0 : Math.floor(Math.log10(Math.abs(x)));
  if (exp < -4 || exp >= 6) {
    const [m, e] = Number(x.toPrecision(6)).toExponential().split("e");
    const sign = e!.startsWith("-") ? "-" : "+";
    return `${m}e${sign}${e!.replace(/^[+-]/, "").padStart(2, "0")}`;
  }
  return String(Number(x.toPrecision(6)));
}

/** What a number field accepts, in the server's words: `a finite number with 1e-06 <= |scale| <= 1e+06`. */
export function numberRange(f: LaunchField): string {
  return `a finite number with ${g(f.least!)} <= |${f.name}| <= ${g(f.most!)}`;
}

export interface Validation {
  config: ConfigParams | null; // null when any field is bad
  errors: Partial<Record<Field, string>>;
}

/** Check what the user typed (`raw`: each typed field's text) and ticked (`causal`, and `flags` for any other flag);
 *  every message names the accepted range. */
export function validate(
  raw: Record<Field, string>,
  limits: Limits,
  causal = false,
  algo = "",
  flags: Record<Field, boolean> = {},
): Validation {
  const errors: Partial<Record<Field, string>> = {};
  const out: Record<string, unknown> = { algo };
  for (const f of flagFields(limits)) out[f.name] = f.name === "causal" ? causal : (flags[f.name] ?? f.default === true);
  for (const field of typedFields(limits)) {
    const f = field.name;
    const text = (raw[f] ?? "").trim();
    if (field.kind === "ints") {
      if (text === "") out[f] = null;
      else if (intsProblem(field, text) !== null) errors[f] = `must be ${accepted(field)} (got ${text})`;
      else out[f] = text;
      continue;
    }
    if (field.kind === "int" && field.empty && text === "") {
      out[f] = field.default; // empty: its default (group: 1; nk: null, which is N)
      continue;
    }
    if (field.kind === "number") {
      const v = Number(text);
      if (text === "")
        out[f] = field.default ?? null; // empty: its default (scale: null, 1/sqrt(D); softcap: 0)
      else if (!Number.isFinite(v) || Math.abs(v) < field.least! || Math.abs(v) > field.most!)
        errors[f] = `must be ${numberRange(field)}, or empty for ${field.empty}`;
      else out[f] = v;
      continue;
    }
    const [lo, hi] = [field.min!, field.max!];
    const v = Number(text);
    if (text === "" || !/^-?\d+$/.test(text) || !Number.isSafeInteger(v)) {
      errors[f] = `must be an integer in ${lo}..${hi}${text === "" ? "" : ` (got ${text})`}`;
    } else if (v < lo || v > hi) {
      errors[f] = `must be an integer in ${lo}..${hi} (got ${v})`;
    } else if (f === "n" && v > maxN(limits, algo)) {
      const why = limits.algos?.find((x) => x.name === algo)?.max_n_reason;
      errors[f] = `must be at most ${maxN(limits, algo)} for ${algo}${why ? `, which ${why}` : ""} (got ${v})`;
    } else if (!allows(limits, algo, f, v)) {
      errors[f] = `must be one of ${allowedOf(limits, algo, f)!.join(", ")} for ${algo} (got ${v})`;
    } else {
      out[f] = v;
    }
  }
  // a field held only where given (the options of real models) is left out at its default
  for (const field of typedFields(limits)) if (field.optional && (out[field.name] ?? null) === field.default) delete out[field.name];
  const ok = Object.keys(errors).length === 0;
  return { config: ok ? (out as ConfigParams) : null, errors };
}

/** The only values a field may take for this algorithm (/api/limits' `allowed`), or null when any in range will do. */
export function allowedOf(limits: Limits, algo: string, f: string): number[] | null {
  return limits.algos?.find((x) => x.name === algo)?.allowed?.[f] ?? null;
}

export function allows(limits: Limits, algo: string, f: string, v: number): boolean {
  const only = allowedOf(limits, algo, f);
  return only === null || only.includes(v);
}

/** The largest N the server traces for this algorithm (standard holds S and P, N x N). */
export function maxN(limits: Limits, algo: string): number {
  const a = limits.algos?.find((x) => x.name === algo);
  return a ? a.max_n : (fieldsOf(limits).find((f) => f.name === "n")?.max ?? limits.n[1]);
}

/** The typed fields of a config as the form shows them ("" for an empty number: its default). */
export function configToRaw(c: ConfigParams, limits: Limits = FALLBACK_LIMITS): Record<Field, string> {
  const out: Record<Field, string> = {};
  for (const f of typedFields(limits)) out[f.name] = c[f.name] === null || c[f.name] === undefined ? "" : String(c[f.name]);
  return out;
}
