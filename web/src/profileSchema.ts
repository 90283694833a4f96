// The GPU profile's schema (`flashviz.profile/1`, docs/profile-schema.md) as the page reads it, and its check.
// A profile comes from a file (dropped on the page, or served by `flashviz serve --profile`): every field the
// panel shows is checked for its type before anything is drawn, and a profile that fails is refused with one
// line naming the field. Pure: no DOM.

import { cut } from "./echo";

export interface ProfileComparison {
  measured: number;
  model: number;
  sector_model?: number;
  measured_over_model?: number;
  verdict: string;
}

export interface ProfileCompare {
  load: ProfileComparison;
  store: ProfileComparison;
  atomic_bytes?: number;
  caches?: Record<string, number>;
  ok?: boolean;
}

export interface ProfileKernel {
  id?: number;
  name: string;
  grid?: string;
  block?: string;
  counted?: boolean;
  measured: Record<string, number>;
  comparison?: ProfileCompare; // profiles from before several kernels: per kernel
  summary?: string[];
}

export interface ProfileConfig {
  algo: string;
  n: number;
  d: number;
  br: number;
  bc: number;
  causal?: boolean;
  seed?: number;
  heads?: number;
  batch?: number;
}

export interface Profile {
  schema: string;
  date?: string;
  config: ProfileConfig;
  launch?: { kernel?: string };
  device?: { name?: string; compute_capability?: string | number };
  model: {
    tensors: Record<string, { read_bytes: number; written_bytes: number }>;
    load_bytes: number;
    store_bytes: number;
    unique_input_bytes?: number;
    /** what the re-read loads are, in the algorithm's words ("mostly K and V, which every block of Q re-reads") */
    reread?: string;
    unique_output_bytes?: number;
  };
  kernels: ProfileKernel[];
  measured?: Record<string, number>; // the counted kernels, summed
  comparison?: ProfileCompare; // the model against `measured`
  summary?: string[];
  ok?: boolean;
}

/** A bad value as a message shows it: JSON, cut to about 40 characters. */
export function shown(v: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(v) ?? String(v);
  } catch {
    text = String(v);
  }
  return cut(text);
}

class Bad extends Error {}

function fail(path: string, want: string, got: unknown): never {
  throw new Bad(`${path} must be ${want} (got ${shown(got)})`);
}

type Obj = Record<string, unknown>;

function obj(x: unknown, path: string): Obj {
  if (!x || typeof x !== "object" || Array.isArray(x)) fail(path, "an object", x);
  return x as Obj;
}
function num(x: unknown, path: string): number {
  if (typeof x !== "number" || !Number.isFinite(x)) fail(path, "a finite number", x);
  return x;
}
function bytesOf(x: unknown, path: string): number {
  if (num(x, path) < 0) fail(path, "a number of bytes, at least 0", x);
  return x as number;
}
function posInt(x: unknown, path: string): number {
  if (typeof x !== "number" || !Number.isSafeInteger(x) || x < 1) fail(path, "a positive integer", x);
  return x;
}
function str(x: unknown, path: string): string {
  if (typeof x !== "string") fail(path, "a string", x);
  return x;
}
function opt<T>(o: Obj, key: string, path: string, check: (x: unknown, path: string) => T): void {
  if (o[key] !== undefined && o[key] !== null) check(o[key], `${path}.${key}`);
}
function bool(x: unknown, path: string): boolean {
  if (typeof x !== "boolean") fail(path, "true or false", x);
  return x;
}
function strings(x: unknown, path: string): string[] {
  if (!Array.isArray(x)) fail(path, "a list of sentences", x);
  for (const [k, s] of x.entries()) str(s, `${path}[${k}]`);
  return x as string[];
}
function numbers(x: unknown, path: string): Record<string, number> {
  const o = obj(x, path);
  for (const [k, v] of Object.entries(o)) num(v, `${path}.${k}`);
  return o as Record<string, number>;
}

function comparison(x: unknown, path: string): void {
  const c = obj(x, path);
  for (const side of ["load", "store"]) {
    const p = `${path}.${side}`;
    const s = obj(c[side], p);
    bytesOf(s.measured, `${p}.measured`);
    bytesOf(s.model, `${p}.model`);
    opt(s, "sector_model", p, bytesOf);
    opt(s, "measured_over_model", p, num);
    str(s.verdict, `${p}.verdict`);
  }
  opt(c, "caches", path, numbers);
}

/** The launch-wide measurements and comparison (older profiles: the one kernel's), or null. */
export function launchOf(p: Profile): { measured: Record<string, number>; comparison: ProfileCompare; summary: string[] } | null {
  const k = p.kernels[0];
  const comparison = p.comparison ?? k?.comparison;
  const measured = p.measured ?? k?.measured;
  if (!comparison || !measured) return null;
  return { measured, comparison, summary: p.summary ?? k?.summary ?? [] };
}

/** Check a document against the schema; the reason it is not a profile the panel can show, or null. */
export function checkProfile(x: unknown): string | null {
  try {
    const p = obj(x, "the file");
    if (typeof p.schema !== "string" || !p.schema.startsWith("flashviz.profile/")) {
      return `not a flashviz profile (schema ${shown(p.schema ?? null)})`;
    }
    opt(p, "date", "", str);
    const c = obj(p.config, "config");
    // the algorithm's name is only shown as text and compared with the page's: any name the server may give
    if (typeof c.algo !== "string" || !/^[\w.-]{1,40}$/.test(c.algo))
      fail("config.algo", "an algorithm's name (letters, digits, _ . -)", c.algo);
    for (const f of ["n", "d", "br", "bc"]) posInt(c[f], `config.${f}`);
    opt(c, "causal", "config", bool);
    opt(c, "heads", "config", posInt);
    opt(c, "batch", "config", posInt);
    if (c.seed !== undefined && c.seed !== null && (typeof c.seed !== "number" || !Number.isSafeInteger(c.seed) || c.seed < 0)) {
      fail("config.seed", "an integer, at least 0", c.seed);
    }
    if (p.device !== undefined && p.device !== null) {
      const dev = obj(p.device, "device");
      opt(dev, "name", "device", str);
      if (dev.compute_capability !== undefined && dev.compute_capability !== null && typeof dev.compute_capability !== "string") {
        num(dev.compute_capability, "device.compute_capability");
      }
    }
    if (p.launch !== undefined && p.launch !== null) opt(obj(p.launch, "launch"), "kernel", "launch", str);
    const m = obj(p.model, "model");
    const tensors = obj(m.tensors, "model.tensors");
    for (const [t, v] of Object.entries(tensors)) {
      const e = obj(v, `model.tensors.${t}`);
      bytesOf(e.read_bytes, `model.tensors.${t}.read_bytes`);
      bytesOf(e.written_bytes, `model.tensors.${t}.written_bytes`);
    }
    bytesOf(m.load_bytes, "model.load_bytes");
    bytesOf(m.store_bytes, "model.store_bytes");
    opt(m, "unique_input_bytes", "model", bytesOf);
    opt(m, "unique_output_bytes", "model", bytesOf);
    opt(m, "reread", "model", str);
    if (!Array.isArray(p.kernels) || !p.kernels.length) return "the profile has no kernels (kernels must be a non-empty list)";
    p.kernels.forEach((kx, i) => {
      const path = `kernels[${i}]`;
      const k = obj(kx, path);
      str(k.name, `${path}.name`);
      opt(k, "counted", path, bool);
      numbers(k.measured, `${path}.measured`);
      opt(k, "comparison", path, comparison);
      opt(k, "summary", path, strings);
    });
    opt(p, "measured", "", numbers);
    opt(p, "comparison", "", comparison);
    opt(p, "summary", "", strings);
    if (!launchOf(p as unknown as Profile)) return "the profile has no comparison with the model (comparison and measured)";
    return null;
  } catch (e) {
    if (e instanceof Bad) return e.message.replace(/^\./, "");
    throw e;
  }
}

/** The L2 effect in numbers: what the caches served (global loads − DRAM reads). */
export function cacheEffect(
  measured: Record<string, number>,
  c: ProfileCompare,
): { loads: number; dram: number; caught: number; fraction: number } {
  const loads = measured.load_bytes ?? 0;
  const dram = measured.dram_read_bytes ?? 0;
  const caught = c.caches?.caught_bytes ?? loads - dram;
  return { loads, dram, caught, fraction: c.caches?.caught_fraction ?? (loads > 0 ? caught / loads : 0) };
}
