// The devices view's layout, pure (no DOM): where each device stands round the ring, the arrows of the transfers
// between them, which ring step a trace phase falls in and what is in flight then, what each device holds and has
// carried up to that phase, and the sequence's chunks by owner. Everything comes from the trace's `devices`
// (docs/trace-schema.md); nothing here knows an algorithm.

/** null stands for −∞ (a row that has seen no key yet), as everywhere in a trace. */
export type Num = number | null;

export interface DeviceWork {
  /** global chunk of Q, and of K/V, of one block */
  q: number;
  k: number;
  kind: "full" | "causal" | "skip";
}

export interface DeviceTransfer {
  from: number;
  to: number;
  /** whose shard travels */
  owner: number;
  chunks: number[];
  bytes: number;
  /** [posted, received]: the phases it is in flight */
  phases: [number, number];
}

export interface DevicesStep {
  step: number;
  /** [first, last] phase of the ring step (its send to its wait) */
  phases: [number, number];
  holds: { owner: number; chunks: number[] }[];
  work: DeviceWork[][];
  transfers: DeviceTransfer[];
}

export interface CarrySnapshot {
  phase: number;
  O: Num[][];
  L: Num[];
}

export interface DevicesDoc {
  count: number;
  arrangement?: string;
  label?: string;
  layout: string;
  layout_note?: string;
  note?: string;
  chunks: number;
  chunk_rows: number;
  own: number[][];
  rows: [number, number][];
  steps: DevicesStep[];
  carries: CarrySnapshot[][];
  sent_bytes: number[];
  link?: { shard_bytes: number; per_step: number[]; sent_bytes: number[]; source: string };
}

export interface Point {
  x: number;
  y: number;
}

/** Device k of `count` on a circle of `radius` round (cx, cy): device 0 at the top, the others clockwise. */
export function placeDevices(count: number, cx: number, cy: number, radius: number): Point[] {
  const out: Point[] = [];
  for (let k = 0; k < count; k++) {
    const a = -Math.PI / 2 + (2 * Math.PI * k) / Math.max(1, count);
    out.push({ x: cx + radius * Math.cos(a), y: cy + radius * Math.sin(a) });
  }
  return out;
}

export interface Arrow {
  /** SVG path: a quadratic curve from the edge of one device's node to the edge of the next, bowed outwards */
  d: string;
  /** where its label goes: the curve's midpoint */
  label: Point;
  /** the arrow's head: the end point and the direction it points, in radians */
  end: Point;
  angle: number;
}

/** The arrow of a transfer from `a` to `b` (node centres, nodes of radius `r`), bowed away from `centre`. */
export function arrow(a: Point, b: Point, r: number, centre: Point, bow = 0.25): Arrow {
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  const len = Math.hypot(dx, dy) || 1;
  const mid = { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
  // outwards: away from the centre of the ring (for two devices, to one side of the chord)
  let nx = mid.x - centre.x;
  let ny = mid.y - centre.y;
  let nl = Math.hypot(nx, ny);
  if (nl < 1e-6) {
    nx = dy;
    ny = -dx;
    nl = len;
  }
  const ctrl = { x: mid.x + (nx / nl) * len * bow, y: mid.y + (ny / nl) * len * bow };
  const from = toward(a, ctrl, r);
  const to = toward(b, ctrl, r + 4);
  const label = { x: 0.25 * from.x + 0.5 * ctrl.x + 0.25 * to.x, y: 0.25 * from.y + 0.5 * ctrl.y + 0.25 * to.y };
  const angle = Math.atan2(to.y - ctrl.y, to.x - ctrl.x);
  const f = (p: Point) => `${p.x.toFixed(1)} ${p.y.toFixed(1)}`;
  return { d: `M ${f(from)} Q ${f(ctrl)} ${f(to)}`, label, end: to, angle };
}

function toward(p: Point, q: Point, dist: number): Point {
  const dx = q.x - p.x;
  const dy = q.y - p.y;
  const l = Math.hypot(dx, dy) || 1;
  return { x: p.x + (dx / l) * dist, y: p.y + (dy / l) * dist };
}

export type Stage = "start" | "posted" | "computing" | "arrived" | "done";

export interface RingMoment {
  /** the ring step the phase falls in, or null before the first (init) */
  step: number | null;
  stage: Stage;
  /** per device, the shard it holds at this phase */
  holds: { owner: number; chunks: number[] }[];
  /** the transfers in flight at this phase (from their send to their wait) */
  flying: DeviceTransfer[];
  /** per device, its carries as of this phase: the latest snapshot at or before it */
  carries: (CarrySnapshot | null)[];
  /** per device, the work of the ring step (empty before the first and after the last) */
  work: DeviceWork[][];
  /** per device, the bytes it has posted up to and including this phase */
  sent: number[];
}

/** What the ring looks like at trace phase `phase` (a step's `phase`). */
export function ringAt(doc: DevicesDoc, phase: number): RingMoment {
  const n = doc.count;
  const steps = doc.steps;
  let k = steps.findIndex((s) => s.phases[0] <= phase && phase <= s.phases[1]);
  let stage: Stage;
  if (k >= 0) {
    const s = steps[k]!;
    stage = phase === s.phases[0] ? "posted" : phase === s.phases[1] ? "arrived" : "computing";
  } else if (steps.length && phase < steps[0]!.phases[0]) {
    stage = "start";
  } else {
    stage = "done";
    k = steps.length - 1;
  }
  const step = stage === "start" ? null : k;
  const at = step === null ? steps[0] : steps[step];
  // after a wait the device holds the shard that arrived: the next step's
  const next = stage === "arrived" && step !== null && step + 1 < steps.length ? steps[step + 1] : null;
  const holds = (next ?? at)?.holds ?? Array.from({ length: n }, () => ({ owner: -1, chunks: [] }));
  const flying =
    step === null || stage === "done" ? [] : steps[step]!.transfers.filter((t) => t.phases[0] <= phase && phase <= t.phases[1]);
  const carries = doc.carries.map((list) => {
    let best: CarrySnapshot | null = null;
    for (const c of list) if (c.phase <= phase && (!best || c.phase >= best.phase)) best = c;
    return best;
  });
  const work = step === null || stage === "done" ? Array.from({ length: n }, () => []) : (steps[step]!.work ?? []);
  const sent = Array.from({ length: n }, (_, r) =>
    steps.reduce((sum, s) => sum + s.transfers.filter((t) => t.from === r && t.phases[0] <= phase).reduce((a, t) => a + t.bytes, 0), 0),
  );
  return { step, stage, holds, flying, carries, work, sent };
}

/** The device that owns each chunk of the sequence, chunk by chunk (the layout's strip). */
export function chunkOwners(doc: DevicesDoc): number[] {
  const out = Array.from({ length: doc.chunks }, () => -1);
  doc.own.forEach((cs, r) => {
    for (const c of cs) if (c >= 0 && c < out.length) out[c] = r;
  });
  return out;
}

/** A device's work at a step, counted: blocks computed in full, under the mask, and skipped. */
export function workCounts(work: DeviceWork[]): { full: number; causal: number; skip: number } {
  const out = { full: 0, causal: 0, skip: 0 };
  for (const w of work) out[w.kind] += 1;
  return out;
}

/** The chunks' names as the section writes them: "c1·c6". */
export function chunkNames(cs: number[]): string {
  return cs.map((c) => `c${c}`).join("\u00b7");
}

/** A doc the section can draw, or the first thing that keeps it from it (a view never trusts a file blindly). */
export function devicesProblem(doc: unknown): string | null {
  if (doc === null || doc === undefined) return null;
  const d = doc as Partial<DevicesDoc>;
  if (typeof d.count !== "number" || !Number.isInteger(d.count) || d.count < 1 || d.count > 64)
    return "devices.count must be an integer in 1..64";
  if (!Array.isArray(d.steps) || !Array.isArray(d.own) || !Array.isArray(d.carries)) return "devices.steps, own and carries must be lists";
  if (d.own.length !== d.count || d.carries.length !== d.count) return "devices.own and devices.carries must have one entry per device";
  for (const s of d.steps) {
    if (!Array.isArray(s?.phases) || s.phases.length !== 2 || !Array.isArray(s.holds) || s.holds.length !== d.count)
      return "each of devices.steps needs phases [first, last] and one hold per device";
  }
  return null;
}
