// The schedule view's layout, pure (no DOM): where each bar of a trace's `schedule` goes (lanes down, time across),
// the axis's ticks, the waits between a lane's bars, the ring's slots filling and draining, which bars are the
// current step's, and the words of what the document says of measured bars against modelled ones (its
// `measured.disagreement`, computed in Python) and of its tensor pipe. Everything comes from the document
// (docs/trace-schema.md, "fa3": `schedule`); nothing here knows an algorithm.
import type { LaneRow, MeasuredDoc, ScheduleBar, ScheduleBlock, ScheduleDoc, Source, TensorPipeDoc, TensorPipeRow } from "../scheduleDoc";

export interface PlacedBar {
  bar: ScheduleBar;
  lane: number;
  x: number;
  width: number;
  /** index of its piece in the legend (colour) */
  kind: number;
  source: Source;
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

export function sourceOf(doc: Pick<ScheduleDoc, "source">, b: ScheduleBar): Source {
  return b.source ?? doc.source;
}

/** The rows of plain lanes: each lane's bars, whatever their source. */
export function rowsOf(lanes: string[], labels: Record<string, string> = {}): LaneRow[] {
  return lanes.map((lane) => ({ lane, label: labels[lane] ?? lane }));
}

/** The row a bar is drawn in: its lane's, of its source where the row names one; -1 when no row takes it. */
export function rowOf(doc: Pick<ScheduleDoc, "source">, rows: LaneRow[], b: ScheduleBar): number {
  const source = sourceOf(doc, b);
  return rows.findIndex((r) => r.lane === b.lane && (r.source === undefined || r.source === source));
}

/** The bars of one block placed on rows `rows` across `width` px for a span of `span` ns (the longest block
 *  drawn, so that two views on the same span compare). A bar is at least 1 px wide. */
export function place(doc: ScheduleDoc, rows: LaneRow[], bars: ScheduleBar[], span: number, width: number): PlacedBar[] {
  const kinds = legend(doc, bars);
  const scale = span > 0 ? width / span : 0;
  const out: PlacedBar[] = [];
  for (const bar of bars) {
    const lane = rowOf(doc, rows, bar);
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

/** The gaps of each row between its first bar's start and its last bar's end where it does nothing: the lane waits
 *  (on an mbarrier or on a unit another lane holds) for the bar after the gap. Gaps under `minNs` are dropped. */
export function waits(
  doc: Pick<ScheduleDoc, "source">,
  rows: LaneRow[],
  bars: ScheduleBar[],
  span: number,
  width: number,
  minNs = 0,
): Wait[] {
  const scale = span > 0 ? width / span : 0;
  const out: Wait[] = [];
  rows.forEach((_, lane) => {
    const mine = bars.filter((b) => rowOf(doc, rows, b) === lane).sort((a, b) => a.start_ns - b.start_ns);
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

function ns(x: number): string {
  return x >= 1000 ? `${(x / 1000).toFixed(2)} µs` : `${x.toFixed(0)} ns`;
}

/** The document's measured-against-modelled rows in words, one per piece: "S (…): measured 625 ns, modelled 353 ns:
 *  1.77× the model". The numbers are the document's (Python computed them); nothing is recomputed here. */
export function disagreementLines(m: MeasuredDoc): string[] {
  return m.disagreement.map((r) => {
    const head = `${r.piece} (${r.what}): measured ${ns(r.measured_ns)} (mean of ${r.count})`;
    if (r.modelled_ns === null) return `${head}; the model has no such piece`;
    const ratio = r.ratio === null ? "" : `: ${r.ratio.toFixed(2)}× the model`;
    return `${head}, modelled ${ns(r.modelled_ns)}${ratio}`;
  });
}

/** The tensor pipe side by side in one sentence: the first two rows of different algorithms at one launch. */
export function pipeSentence(tp: TensorPipeDoc): string | null {
  const launch = (r: TensorPipeRow) => `${r.n},${r.d},${r.heads},${r.batch},${r.causal}`;
  for (const a of tp.rows) {
    const b = tp.rows.find((x) => x.algo !== a.algo && launch(x) === launch(a));
    if (!b) continue;
    const t = (r: TensorPipeRow) => r.metrics.tensor_active_pct ?? Number.NaN;
    const i = (r: TensorPipeRow) => r.metrics.issue_active_pct ?? Number.NaN;
    const at = `N=${a.n}, D=${a.d}, ${a.heads * a.batch} heads${a.causal ? ", causal" : ""}`;
    return (
      `At ${at} the tensor pipe was active ${t(b).toFixed(1)}% of the SMs' active cycles in ${b.algo} (${b.kernel}) against ` +
      `${t(a).toFixed(1)}% in ${a.algo} (${a.kernel}): ${(t(b) / t(a)).toFixed(2)}×; instructions issued ${i(b).toFixed(1)}% ` +
      `against ${i(a).toFixed(1)}% of the most the schedulers could issue; the kernel took ${ns(b.time_ns)} against ${ns(a.time_ns)}.`
    );
  }
  return null;
}

/** The bars of block i (or the first block) of a list of blocks. */
export function blockOf(blocks: ScheduleBlock[], i: number): ScheduleBlock | null {
  return blocks.find((b) => b.i === i) ?? blocks[0] ?? null;
}
