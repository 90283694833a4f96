// The config form's checks against GET /api/limits, with messages in the API's own words.

import type { ConfigParams } from "./state";
import type { Limits } from "./types";

export type Field = "n" | "d" | "br" | "bc" | "seed" | "scale";
export const FIELDS: readonly Field[] = ["n", "d", "br", "bc", "seed", "scale"];

/** Used until /api/limits answers (the server's own limits replace them). */
export const FALLBACK_LIMITS: Limits = {
  n: [1, 4096],
  d: [1, 256],
  br: [1, 256],
  bc: [1, 256],
  seed: [0, 4294967295],
};
const SCALE_RANGE: [number, number] = [1e-6, 1e6];

export interface Validation {
  config: ConfigParams | null; // null when any field is bad
  errors: Partial<Record<Field, string>>;
}

/** Check what the user typed; every message names the accepted range. */
export function validate(raw: Record<Field, string>, limits: Limits, causal = false, algo = ""): Validation {
  const errors: Partial<Record<Field, string>> = {};
  const out: Partial<ConfigParams> = { causal, algo };
  for (const f of ["n", "d", "br", "bc", "seed"] as const) {
    const [lo, hi] = limits[f];
    const text = raw[f].trim();
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
  const s = raw.scale.trim();
  if (s === "") {
    out.scale = null;
  } else {
    const v = Number(s);
    const [lo, hi] = SCALE_RANGE;
    if (!Number.isFinite(v) || Math.abs(v) < lo || Math.abs(v) > hi) {
      errors.scale = `must be a finite number with ${lo} <= |scale| <= ${hi}, or empty for 1/sqrt(D)`;
    } else {
      out.scale = v;
    }
  }
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
  return a ? a.max_n : limits.n[1];
}

export function configToRaw(c: ConfigParams): Record<Field, string> {
  return {
    n: String(c.n),
    d: String(c.d),
    br: String(c.br),
    bc: String(c.bc),
    seed: String(c.seed),
    scale: c.scale === null ? "" : String(c.scale),
  };
}
