// The schedule view's layout, pure (no DOM): where each bar of a trace's `schedule` goes (lanes down, time across),
// the axis's ticks, the waits between a lane's bars, the ring's slots filling and draining, which bars are the
// current step's, and what the measured bars say against the model's. Everything comes from the document
// (docs/trace-schema.md, "fa3": `schedule`); nothing here knows an algorithm.

export interface ScheduleBar {
  lane: string;
  unit: string;
  what: string;
  /** the key of the schedule's `pieces` (the legend's words) */
  piece?: string;
  j: number | null;
  start_ns: number;
  end_ns: number;
  /** the op and tile of the trace step whose work it is */
  step: string;
  step_j?: number | null;
  /** absent: the schedule's `kind` */
  source?: "measured" | "modelled";
}

export interface ScheduleBlock {
  i: number;
  tiles: number;
  end_ns: number;
  tensor_busy: number;
  bars: ScheduleBar[];
}

export interface ScheduleVariant {
  name: string;
  pingpong?: boolean;
  overlap?: boolean;
  /** the recorded benchmark run's TFLOP/s of this rung, null where it has none */
  tflops: number | null;
  blocks: ScheduleBlock[];
}

export interface ScheduleBaseline {
  algo: string;
  title?: string;
  lanes: string[];
  lane_labels?: Record<string, string>;
  blocks: ScheduleBlock[];
}

export interface TensorPipeEntry {
  value: number;
  unit: string;
  source?: string;
}

export interface ScheduleDoc {
  kind: "modelled" | "measured";
  lanes: string[];
  lane_labels?: Record<string, string>;
  units?: Record<string, string>;
  pieces?: Record<string, string>;
  stages?: number;
  blocks: ScheduleBlock[];
  baseline?: ScheduleBaseline | null;
  variants?: ScheduleVariant[];
  variant?: string;
  benchmark?: { n: number; d: number; causal: boolean; gpu: string; date: string; source: string } | null;
  /** a lane's own source, for a lane whose bars carry none (a measured lane beside the modelled ones) */
  lane_sources?: Record<string, "measured" | "modelled">;
  /** the record of a measured run whose bars the document carries */
  measured?: { date: string; gpu: string; command: string } | null;
  /** a recorded ncu run's tensor-pipe utilisation per algorithm */
  tensor_pipe?: Record<string, TensorPipeEntry> | null;
  rule?: string;
}

export interface PlacedBar {
  bar: ScheduleBar;
  lane: number;
  x: number;
  width: number;
  /** index of its piece in the legend (colour) */
  kind: number;
  source: "measured" | "modelled";
}

export interface Wait {
  lane: number;
  x: number;
  width: number;
  ns: number;
  /** the bar the lane waits to start */
  before: ScheduleBar;
}

export interface Tick {
  x: number;
  label: string;
}

/** The legend's pieces in the document's order, then any a bar names that it does not list. */
export function legend(doc: ScheduleDoc, bars: ScheduleBar[]): string[] {
  const out = Object.keys(doc.pieces ?? {});
  for (const b of bars) {
    const p = pieceOf(b);
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

export function pieceOf(b: ScheduleBar): string {
  return b.piece ?? b.what;
}

export function sourceOf(doc: ScheduleDoc, b: ScheduleBar): "measured" | "modelled" {
  return b.source ?? doc.lane_sources?.[b.lane] ?? doc.kind;
}

/** The bars of one block placed on lanes `lanes` across `width` px for a span of `span` ns (the longest block
 *  drawn, so that two views on the same span compare). A bar is at least 1 px wide. */
export function place(doc: ScheduleDoc, lanes: string[], bars: ScheduleBar[], span: number, width: number): PlacedBar[] {
  const kinds = legend(doc, bars);
  const scale = span > 0 ? width / span : 0;
  const out: PlacedBar[] = [];
  for (const bar of bars) {
    const lane = lanes.indexOf(bar.lane);
    if (lane < 0) continue;
    out.push({
      bar,
      lane,
      x: bar.start_ns * scale,
      width: Math.max(1, (bar.end_ns - bar.start_ns) * scale),
      kind: kinds.indexOf(pieceOf(bar)),
      source: sourceOf(doc, bar),
    });
  }
  return out;
}

/** The gaps of each lane between its first bar's start and its last bar's end where it does nothing: the lane waits
 *  (on an mbarrier or on a unit another lane holds) for the bar after the gap. Gaps under `minNs` are dropped. */
export function waits(lanes: string[], bars: ScheduleBar[], span: number, width: number, minNs = 0): Wait[] {
  const scale = span > 0 ? width / span : 0;
  const out: Wait[] = [];
  lanes.forEach((name, lane) => {
    const mine = bars.filter((b) => b.lane === name).sort((a, b) => a.start_ns - b.start_ns);
    let end = mine.length ? mine[0]!.start_ns : 0;
    for (const b of mine) {
      const gap = b.start_ns - end;
      if (gap > minNs && gap > 1e-9) out.push({ lane, x: end * scale, width: gap * scale, ns: gap, before: b });
      end = Math.max(end, b.end_ns);
    }
  });
  return out;
}

/** Ticks at 1, 2 or 5 × a power of ten, about `target` of them, labelled in ns or µs. */
export function ticks(span: number, width: number, target = 6): Tick[] {
  if (!(span > 0)) return [];
  const raw = span / target;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? 10 * p;
  const us = span >= 2000;
  const out: Tick[] = [];
  for (let t = 0; t <= span + 1e-9; t += step) {
    const v = us ? t / 1000 : t;
    const digits = us ? Math.max(0, -Math.floor(Math.log10(step / 1000))) : Math.max(0, -Math.floor(Math.log10(step)));
    out.push({ x: (t / span) * width, label: `${v.toFixed(digits)} ${us ? "µs" : "ns"}` });
  }
  return out;
}

export interface SlotSpan {
  slot: number;
  j: number;
  x: number;
  width: number;
}

/** The ring's slots filling and draining: tile j sits in slot j mod `stages` from its first load's start (a lane
 *  `fromLane` bar with that j) to the end of the last bar that reads it (any bar of another lane with that j). */
export function slots(bars: ScheduleBar[], fromLane: string, stages: number, span: number, width: number): SlotSpan[] {
  const scale = span > 0 ? width / span : 0;
  const held = new Map<number, [number, number]>();
  for (const b of bars) {
    if (b.j === null) continue;
    const cur = held.get(b.j);
    if (b.lane === fromLane) {
      const start = cur ? Math.min(cur[0], b.start_ns) : b.start_ns;
      held.set(b.j, [start, cur ? Math.max(cur[1], b.end_ns) : b.end_ns]);
    } else if (cur) held.set(b.j, [cur[0], Math.max(cur[1], b.end_ns)]);
    else held.set(b.j, [Number.POSITIVE_INFINITY, b.end_ns]);
  }
  const out: SlotSpan[] = [];
  for (const [j, [start, end]] of [...held.entries()].sort((a, b) => a[0] - b[0])) {
    if (!Number.isFinite(start)) continue;
    out.push({ slot: j % Math.max(1, stages), j, x: start * scale, width: Math.max(1, (end - start) * scale) });
  }
  return out;
}

/** Whether a bar is the work of the step at (op, j). */
export function current(bar: ScheduleBar, op: string, j: number | null): boolean {
  const at = bar.step_j === undefined ? bar.j : bar.step_j;
  return bar.step === op && (at ?? null) === j;
}

/** Sentences comparing the measured bars with the modelled ones of the same piece (mean durations): "measured P·V
 *  1.40× the model". Empty when no bar is measured. */
export function disagreement(doc: ScheduleDoc, bars: ScheduleBar[]): string[] {
  const sums = new Map<string, { m: number[]; p: number[] }>();
  for (const b of bars) {
    const k = pieceOf(b);
    const e = sums.get(k) ?? { m: [], p: [] };
    (sourceOf(doc, b) === "measured" ? e.m : e.p).push(b.end_ns - b.start_ns);
    sums.set(k, e);
  }
  const mean = (xs: number[]) => xs.reduce((a, c) => a + c, 0) / xs.length;
  const out: string[] = [];
  for (const [k, { m, p }] of sums) {
    if (!m.length || !p.length) continue;
    const r = mean(m) / mean(p);
    if (!Number.isFinite(r)) continue;
    const words = doc.pieces?.[k] ?? k;
    out.push(`measured ${words}: ${r.toFixed(2)}× the model (mean of ${m.length} measured, ${p.length} modelled)`);
  }
  return out;
}

/** The bars of block i (or the first block) of a list of blocks. */
export function blockOf(blocks: ScheduleBlock[], i: number): ScheduleBlock | null {
  return blocks.find((b) => b.i === i) ?? blocks[0] ?? null;
}
