// The one state object every frame is drawn from, its URL round trip, and the pure transitions: stepping and
// clamping, where a URL or a picked block lands, which blocks the picker offers, and what a key means. Nothing here
// touches the DOM.
import { cut } from "./echo";
import type { AlgoInfo, ConfigParams, LaunchField, Limits } from "./launch";
import { pickId, pickOf } from "./picture";
import type { Step, Trace } from "./types";
import { accepted, FALLBACK_FIELDS, FALLBACK_LIMITS, fieldsOf, intsProblem, numberRange } from "./validate";

/** The launch's fields: those the page holds in a config (not the algorithm, which the picker holds, nor the block,
 *  which the block picker does). */
function launchFields(fields: readonly LaunchField[]): LaunchField[] {
  return fields.filter((f) => f.kind === "int" || f.kind === "number" || f.kind === "flag" || f.kind === "ints");
}

/** Each field's default: the algorithm's own (`example`, where the field takes one), else the table's. */
export function defaultsOf(fields: readonly LaunchField[], algo?: AlgoInfo): ConfigParams {
  const out: Record<string, unknown> = { algo: "" };
  for (const f of launchFields(fields)) {
    if (f.optional) continue; // absent: its default (the options of real models)
    out[f.name] = (f.own ? algo?.example?.[f.name] : undefined) ?? f.default;
  }
  return out as ConfigParams;
}

/** The seed's example: two blocks of Q, two tiles of K and V, under the server's default algorithm. */
export const DEFAULT_CONFIG: ConfigParams = defaultsOf(FALLBACK_FIELDS);

export const SPEEDS = [0.25, 0.5, 1, 2, 4] as const;

export interface ViewState {
  config: ConfigParams; // the config of the trace on screen (the last good one)
  step: number; // index into trace.steps
  playing: boolean;
  speed: number; // playback multiplier, one of SPEEDS
}

export const INITIAL_STATE: ViewState = { config: DEFAULT_CONFIG, step: 0, playing: false, speed: 1 };

/** What a URL asks for; step/block are null when absent. `step` is an index into trace.steps (the URL counts
 *  steps from 1, as the page does: `step=1` is index 0). `problems`: one sentence per value the URL got wrong,
 *  naming the parameter and what it accepts, and what the page shows instead. */
export interface UrlRequest {
  config: ConfigParams;
  step: number | null;
  block: number | null;
  speed: number | null;
  problems: string[];
}

function parseNonNegInt(raw: string | null): number | null {
  if (raw === null || !/^\d+$/.test(raw)) return null; // as the API: no space around the digits
  const v = Number(raw);
  return Number.isSafeInteger(v) ? v : null;
}

function parseInteger(raw: string | null): number | null {
  if (raw === null || !/^-?\d+$/.test(raw)) return null; // as the API: no space around the digits
  const v = Number(raw);
  return Number.isSafeInteger(v) ? v : null;
}

/** A bad value as a message quotes it: cut to about 40 characters. */
export function quote(raw: string): string {
  return JSON.stringify(cut(raw));
}

/** One problem with a URL parameter, in the config bar's words: the parameter, what it accepts, what is shown. */
export function urlProblem(name: string, raw: string, accepts: string, instead: string): string {
  return `URL ${name}=${quote(raw)}: must be ${accepts}; showing ${instead}`;
}

/** Read the config, step and block from a query string. The launch fields are /api/limits' `fields` (the table
 *  flashviz.model.fields; its copy in the bundle until the server answers). A value that is malformed or out of
 *  `limits` falls back to the default (the algorithm's own, where it brings one: fa2-triton's N=128, D=32, Br=64,
 *  Bc=32) and says so in `problems`; so does a field the URL leaves out. The server still judges the whole config (its
 *  bounds on the work of one request) and answers with its own detail. */
export function parseUrl(search: string, limits: Limits = FALLBACK_LIMITS): UrlRequest {
  const q = new URLSearchParams(search);
  const problems: string[] = [];
  const given = (k: string) => q.get(k) !== null;
  // the algorithms are the server's (/api/limits); before it answers any name goes, and the server judges it
  let algo = limits.default ?? DEFAULT_CONFIG.algo; // the server's default algorithm, once it has said which
  const asked = (q.get("algo") ?? "").trim();
  const names = limits.algos?.map((a) => a.name);
  if (asked && (!names || names.includes(asked))) algo = asked;
  else if (given("algo") && names)
    problems.push(urlProblem("algo", q.get("algo")!, `one of ${names.join(", ")}`, limits.default ?? "the default algorithm"));
  // a field the URL leaves out (or gets wrong) is the algorithm's own default, where it brings one
  const config: ConfigParams = {
    ...defaultsOf(
      fieldsOf(limits),
      limits.algos?.find((a) => a.name === algo),
    ),
    algo,
  };
  // packed sequences: N is their sum unless the URL gives a good one (as the API and the CLI take them)
  const lens = fieldsOf(limits).find((f) => f.name === "seqlens" && f.kind === "ints");
  const packed = (q.get("seqlens") ?? "").trim();
  if (lens && packed && intsProblem(lens, packed) === null) config.n = summedN({ seqlens: packed })!;
  for (const f of launchFields(fieldsOf(limits))) {
    const raw = q.get(f.name);
    if (f.kind === "ints") {
      if (raw === null || raw.trim() === "") continue;
      const problem = intsProblem(f, raw.trim());
      if (problem === null) config[f.name] = raw.trim();
      else problems.push(urlProblem(f.name, raw, accepted(f), `the default ${f.empty}`));
    } else if (f.kind === "int") {
      if (f.empty && raw !== null && raw.trim() === "") continue; // empty: its default
      const v = parseInteger(raw);
      if (v !== null && v >= f.min! && v <= f.max!) {
        if (!(f.optional && v === f.default)) config[f.name] = v;
      } else if (raw !== null)
        problems.push(urlProblem(f.name, raw, `an integer in ${f.min}..${f.max}`, `${f.name}=${config[f.name] ?? f.default ?? f.empty}`));
    } else if (f.kind === "number") {
      if (raw === null || raw.trim() === "") continue;
      const v = Number(raw);
      if (Number.isFinite(v) && Math.abs(v) >= f.least! && Math.abs(v) <= f.most!) {
        if (!(f.optional && v === f.default)) config[f.name] = v;
      } else problems.push(urlProblem(f.name, raw, `${numberRange(f)}, or absent for ${f.empty}`, `the default ${f.empty}`));
    } else {
      const v = (raw ?? "").trim().toLowerCase();
      if (v === "true" || v === "1") config[f.name] = true;
      else if (v === "" || v === "false" || v === "0") config[f.name] = false;
      else problems.push(urlProblem(f.name, raw!, "true or false", `${f.name}=${f.default}`));
    }
  }
  let speed: number | null = null;
  if (given("speed")) {
    const v = Number(q.get("speed"));
    if ((SPEEDS as readonly number[]).includes(v)) speed = v;
    else problems.push(urlProblem("speed", q.get("speed")!, `one of ${SPEEDS.join(", ")}`, "1\u00d7"));
  }
  let step: number | null = null;
  if (given("step")) {
    const v = parseNonNegInt(q.get("step"));
    if (v !== null && v >= 1) step = v - 1;
    else problems.push(urlProblem("step", q.get("step")!, "an integer, at least 1 (steps count from 1)", "step 1"));
  }
  let block: number | null = null;
  if (given("block")) {
    block = parseNonNegInt(q.get("block"));
    if (block === null)
      problems.push(urlProblem("block", q.get("block")!, "an integer, at least 0 (blocks count from 0, as blockIdx.x)", "block 0"));
  }
  return { config, step, block, speed, problems };
}

/** N as packed sequences give it: the sum of `seqlens` (a list as the URL and the form hold it, "20,44,30"), or null
 *  when there are none. The API and the CLI fill N so when it is left out. */
export function summedN(config: Record<string, unknown>): number | null {
  const lens = config.seqlens;
  if (typeof lens !== "string" || lens.trim() === "") return null;
  const parts = lens.split(",").map((p) => p.trim());
  return parts.every((p) => /^\d{1,9}$/.test(p)) ? parts.reduce((a, p) => a + Number(p), 0) : null;
}

/** A config's launch fields as query parameters, in its order: a number as it is, true as "true"; null (a number's
 *  default) and false are left out. */
function setFields(q: URLSearchParams, config: ConfigParams): void {
  for (const [k, v] of Object.entries(config)) {
    if (k === "algo" || v === null || v === undefined || v === false) continue;
    q.set(k, String(v));
  }
}

/** The query string for a state: config first (in the form's order; algo only when not the server's default,
 *  `defaultAlgo`), then step (counted from 1, as the page shows it; `step` here is the index) and block. */
export function toSearch(config: ConfigParams, step: number, block: number, speed = 1, defaultAlgo = ""): string {
  const q = new URLSearchParams();
  if (config.algo && config.algo !== defaultAlgo) q.set("algo", config.algo);
  setFields(q, config);
  q.set("step", String(step + 1));
  q.set("block", String(block));
  if (speed !== 1) q.set("speed", String(speed));
  return `?${q.toString()}`;
}

/** The query string for GET /api/trace. `record` asks the server to record one block's values. */
export function apiQuery(config: ConfigParams, record: number | null = null): string {
  const q = new URLSearchParams(config.algo ? { algo: config.algo } : {});
  setFields(q, config);
  if (record !== null) q.set("block", String(record));
  return q.toString();
}

export function sameConfig(a: ConfigParams, b: ConfigParams): boolean {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((k) => a[k] === b[k]);
}

export function clampStep(step: number, total: number): number {
  if (total <= 0 || !Number.isFinite(step)) return 0;
  return Math.min(total - 1, Math.max(0, Math.trunc(step)));
}

/** The picks the transitions need: a trace's steps, what a pick is, and each step's pick (picture.ts's pickOf). */
export type Picks = Pick<Trace, "steps" | "picker" | "blocks">;

const picked = (t: Picks, s: Step) => pickOf(t, s);

/** Where a URL lands: its step if given (clamped), else the first step of its pick (`block`: the backward's lands
 *  on its fa2_bwd block j, whose steps are the picks, not on the preprocessing kernel's block of the same number),
 *  else step 0. */
export function landingStep(t: Picks, step: number | null, block: number | null): number {
  if (step !== null) return clampStep(step, t.steps.length);
  if (block !== null) {
    const k = t.steps.findIndex((s) => picked(t, s) === block);
    if (k >= 0) return k;
  }
  return 0;
}

/** The step of pick `block` at `phase` (all blocks run the same program), else its first step, else step 0: where a
 *  block fetched from the picker lands. */
export function phaseStep(t: Picks, block: number, phase: number): number {
  const k = t.steps.findIndex((s) => picked(t, s) === block && s.phase === phase);
  return k >= 0
    ? k
    : Math.max(
        0,
        t.steps.findIndex((s) => picked(t, s) === block),
      );
}

/** What a URL's step and block got wrong for the launch it opened (`blocks`: how many blocks it has), in the
 *  words of parseUrl's problems; `step` is an index (the URL's value less 1). */
export function landingProblems(total: number, blocks: number, step: number | null, block: number | null): string[] {
  const out: string[] = [];
  if (step !== null && step >= total)
    out.push(urlProblem("step", String(step + 1), `an integer in 1..${total} for this launch`, `step ${total}`));
  if (block !== null && block >= blocks)
    out.push(urlProblem("block", String(block), `an integer in 0..${blocks - 1} for this launch`, "block 0"));
  return out;
}

/** Picking another pick while at step `from`: the step of `block` at the same phase (picks in lockstep run the same
 *  program at once), else its first step; -1 when the trace did not record it (then it is fetched). Picks not in
 *  lockstep (fa1's blocks of Q, visited in turn by its one CUDA block): its visit of the tile held at `from`, at the
 *  same op if it has one. */
export function pickStep(t: Picks, from: number, block: number): number {
  return t.picker.lockstep ? stepInBlock(t, from, block) : visitStep(t, from, block);
}

/** The pick's visit of the tile held at `from`, at the same op if it has one. */
function visitStep(t: Picks, from: number, pick: number): number {
  const steps = t.steps;
  const s = steps[from];
  const j = s?.tile ?? null;
  const same = steps.findIndex((x) => picked(t, x) === pick && x.op === s?.op && x.tile === j);
  if (same >= 0) return same;
  const visit = steps.findIndex((x) => picked(t, x) === pick && x.tile === j);
  return visit >= 0 ? visit : steps.findIndex((x) => picked(t, x) === pick);
}

/** The step of pick `block` at the same phase as `from` (all blocks run the same program); -1 if not recorded. */
export function stepInBlock(t: Picks, from: number, block: number): number {
  const phase = t.steps[from]?.phase ?? 0;
  let first = -1;
  for (let k = 0; k < t.steps.length; k++) {
    const s = t.steps[k]!;
    if (picked(t, s) !== block) continue;
    if (first < 0) first = k;
    if (s.phase === phase) return k;
  }
  return first;
}

export type Action =
  | { type: "next" }
  | { type: "prev" }
  | { type: "first" }
  | { type: "last" }
  | { type: "goto"; step: number }
  | { type: "toggle" }
  | { type: "play" }
  | { type: "pause" }
  | { type: "speed"; speed: number };

/** One transition of the view state; `total` is the number of steps in the trace on screen. */
export function reduce(state: ViewState, action: Action, total: number): ViewState {
  const last = Math.max(0, total - 1);
  switch (action.type) {
    case "next": {
      const step = clampStep(state.step + 1, total);
      return { ...state, step, playing: state.playing && step < last };
    }
    case "prev":
      return { ...state, step: clampStep(state.step - 1, total), playing: false };
    case "first":
      return { ...state, step: 0, playing: false };
    case "last":
      return { ...state, step: last, playing: false };
    case "goto":
      return { ...state, step: clampStep(action.step, total) };
    case "toggle":
      return reduce(state, { type: state.playing ? "pause" : "play" }, total);
    case "play":
      // playing from the end starts over
      return { ...state, playing: total > 1, step: state.step >= last ? 0 : state.step };
    case "pause":
      return { ...state, playing: false };
    case "speed":
      return { ...state, speed: (SPEEDS as readonly number[]).includes(action.speed) ? action.speed : 1 };
  }
}

/** What a key press means, or null to leave it alone: typing in a field (`inField`, or `tag` an INPUT, SELECT or
 *  TEXTAREA, or an `editable` element), modifier chords, and space on a focused button, link or summary (which it
 *  activates). `tag` is the focused element's tagName. */
export function keyAction(
  key: string,
  opts: { inField?: boolean; tag?: string; editable?: boolean; ctrl?: boolean; meta?: boolean; alt?: boolean } = {},
): Action | null {
  const tag = opts.tag ?? "";
  const inField = opts.inField || tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA" || !!opts.editable;
  if (inField || opts.ctrl || opts.meta || opts.alt) return null;
  if (key === " " && (tag === "BUTTON" || tag === "A" || tag === "SUMMARY")) return null;
  switch (key) {
    case "ArrowRight":
      return { type: "next" };
    case "ArrowLeft":
      return { type: "prev" };
    case " ":
    case "Spacebar":
      return { type: "toggle" };
    case "Home":
      return { type: "first" };
    case "End":
      return { type: "last" };
    default:
      return null;
  }
}

/** The block picker: its label and its options [text, pick] (past 512 picks, every recorded one and about 256
 *  others, evenly spaced). */
export function blockChoices(t: Picks): { label: string; options: [string, string][] } {
  const blocks = t.blocks;
  const many = blocks.length > 512;
  const rows = t.picker.axis === "kv" ? "keys" : "rows";
  const options: [string, string][] = [];
  for (const b of blocks) {
    const id = pickId(t, b);
    if (many && !b.recorded && id % Math.ceil(blocks.length / 256) !== 0) continue;
    const words = b.segment !== undefined && b.label ? b.label : `${id} \u00b7 ${rows} ${b.rows[0]}\u2013${b.rows[1] - 1}`;
    options.push([`${words}${b.recorded ? "" : " (fetch)"}`, String(id)]);
  }
  return { label: t.picker.label, options };
}

/** What the config bar says when a block asked for is not in the trace fetched for it (`shown`: the block shown). */
export function unrecordedProblem(tr: number, recorded: readonly number[], block: number | null, shown: number): string | null {
  if (block === null || block >= tr || recorded.includes(block)) return null;
  return `Block ${block}'s values are not in this trace (recorded: ${recorded.join(", ")}); showing block ${shown}`;
}

/** Milliseconds between steps while playing, and how long a transfer's flight takes. */
export function stepInterval(speed: number): number {
  return Math.round(1400 / speed);
}
export function flightDuration(speed: number): number {
  return Math.min(650, Math.round(0.55 * stepInterval(speed)));
}
