// The schedule view's pure layout (render/scheduleLayout.ts) on hand-made documents: bars' x and width from their
// times, lanes by the document's order, waits as the gaps of a lane, the ring's slots, the current step's bars, and
// measured lanes drawn beside modelled ones, and the words of the document's disagreement rows and tensor pipe.
import { describe, expect, it } from "vitest";
import {
  current,
  disagreementLines,
  legend,
  pipeSentence,
  place,
  rowOf,
  rowsOf,
  slots,
  sourceOf,
  ticks,
  waits,
} from "../src/render/scheduleLayout";
import type { LaneRow, MeasuredDoc, ScheduleBar, ScheduleDoc, TensorPipeDoc } from "../src/scheduleDoc";

const bar = (lane: string, what: string, j: number | null, start: number, end: number, step: string, extra: Partial<ScheduleBar> = {}) =>
  ({ lane, unit: "u", what, piece: what.split(" ")[0], j, start_ns: start, end_ns: end, step, step_j: j, ...extra }) as ScheduleBar;

// the one-tile case of tests/test_fa3_schedule.py: end 15 ns
const BARS: ScheduleBar[] = [
  bar("producer", "Q half 0", null, 0, 1, "q"),
  bar("producer", "Q half 1", null, 1, 2, "q"),
  bar("producer", "K", 0, 2, 4, "kv"),
  bar("producer", "V", 0, 4, 6, "kv"),
  bar("wg0", "S", 0, 4, 6, "first"),
  bar("wg0", "softmax", 0, 6, 9, "first"),
  bar("wg1", "S", 0, 6, 8, "first"),
  bar("wg1", "softmax", 0, 9, 12, "first"),
  bar("wg0", "PV", 0, 9, 11, "last"),
  bar("wg0", "O", null, 11, 12, "wb"),
  bar("wg1", "PV", 0, 12, 14, "last"),
  bar("wg1", "O", null, 14, 15, "wb"),
];

const DOC: ScheduleDoc = {
  source: "modelled",
  lanes: ["producer", "wg0", "wg1"],
  pieces: { Q: "load Q", K: "load K", V: "load V", S: "S", softmax: "softmax", PV: "P·V", O: "store O" },
  blocks: [{ i: 0, tiles: 1, end_ns: 15, tensor_busy: 8 / 15, bars: BARS }],
};

const ROWS = rowsOf(DOC.lanes);

describe("the schedule's layout", () => {
  it("places each bar at its start and width by its duration, on its lane, coloured by its piece", () => {
    const placed = place(DOC, ROWS, BARS, 15, 300); // 20 px per ns
    expect(placed).toHaveLength(BARS.length);
    const at = (lane: string, what: string) => placed.find((p) => p.bar.lane === lane && p.bar.what === what)!;
    expect([at("wg1", "S").x, at("wg1", "S").width, at("wg1", "S").lane]).toEqual([120, 40, 2]);
    expect([at("wg0", "softmax").x, at("wg0", "softmax").width, at("wg0", "softmax").lane]).toEqual([120, 60, 1]);
    expect([at("producer", "V").x, at("producer", "V").width]).toEqual([80, 40]);
    expect(at("producer", "Q half 1").kind).toBe(at("producer", "Q half 0").kind); // one piece, one colour
    expect(at("wg0", "PV").kind).toBe(legend(DOC, BARS).indexOf("PV"));
    expect(new Set(placed.map((p) => p.source))).toEqual(new Set(["modelled"]));
    // a lane the document does not draw places nothing; a tiny bar keeps 1 px
    expect(place(DOC, rowsOf(["wg0"]), BARS, 15, 300).every((p) => p.bar.lane === "wg0")).toBe(true);
    expect(place(DOC, ROWS, [bar("wg0", "S", 0, 0, 0.001, "x")], 15, 300)[0]!.width).toBe(1);
  });

  it("finds each lane's waits between its bars, naming the bar it waits for", () => {
    const w = waits(DOC, ROWS, BARS, 15, 300);
    // the producer and wg0 never idle once started; wg1 waits from its S's end (8) to its softmax (9): the exp
    // units are wg0's until 9
    const by = w.map((x) => [DOC.lanes[x.lane], x.ns, x.before.what, x.x]);
    expect(by).toEqual([["wg1", 1, "softmax", 160]]);
    expect(waits(DOC, ROWS, BARS, 15, 300, 2)).toEqual([]); // gaps under 2 ns dropped
  });

  it("holds a tile in its ring slot from its load to its last use", () => {
    const two = [...BARS, bar("producer", "K", 1, 6, 8, "kv"), bar("wg0", "S", 1, 12, 13, "s")];
    const sl = slots(two, "producer", 2, 15, 300);
    expect(sl.map((x) => [x.slot, x.j, x.x, x.width])).toEqual([
      [0, 0, 40, 240], // K0 loaded from 2 ns, its last reader (wg1's P·V) ends at 14
      [1, 1, 120, 140], // K1 from 6 to 13
    ]);
  });

  it("outlines the bars of the current step, by op and tile", () => {
    const on = (op: string, j: number | null) => BARS.filter((b) => current(b, op, j)).map((b) => `${b.lane}:${b.what}`);
    expect(on("first", 0)).toEqual(["wg0:S", "wg0:softmax", "wg1:S", "wg1:softmax"]);
    expect(on("q", null)).toEqual(["producer:Q half 0", "producer:Q half 1"]);
    expect(on("first", 1)).toEqual([]);
    // a bar whose step's tile is not its own: tile 0's P·V done at step (x, 1)
    expect(current(bar("wg0", "PV", 0, 0, 1, "x", { step_j: 1 }), "x", 1)).toBe(true);
    expect(current(bar("wg0", "PV", 0, 0, 1, "x", { step_j: 1 }), "x", 0)).toBe(false);
  });

  it("draws a measured lane in its own row beside the modelled lane of the same name", () => {
    const measured = [
      bar("wg0", "S", 0, 4, 7, "first", { source: "measured" }),
      bar("wg0", "softmax", 0, 7, 12, "first", { source: "measured" }),
    ];
    const rows: LaneRow[] = [
      { lane: "wg0", source: "modelled", label: "wg0, modelled" },
      { lane: "wg0", source: "measured", label: "wg0, measured" },
    ];
    const all = [...BARS, ...measured];
    expect(sourceOf(DOC, measured[0]!)).toBe("measured");
    expect(sourceOf(DOC, BARS[4]!)).toBe("modelled"); // no marker: the document's source
    expect(sourceOf({ source: "measured" }, BARS[4]!)).toBe("measured");
    expect(rowOf(DOC, rows, measured[0]!)).toBe(1);
    expect(rowOf(DOC, rows, BARS[4]!)).toBe(0);
    expect(rowOf(DOC, rows, BARS[0]!)).toBe(-1); // the producer has no row here
    const placed = place(DOC, rows, all, 15, 300);
    // the same axis: a measured S from 4 to 7 ns sits where a modelled bar of 4..7 ns would
    const s = placed.find((p) => p.source === "measured" && p.bar.what === "S")!;
    expect([s.lane, s.x, s.width]).toEqual([1, 80, 60]);
    expect(placed.filter((p) => p.lane === 0).map((p) => p.bar.what)).toEqual(["S", "softmax", "PV", "O"]);
    expect(placed.filter((p) => p.source === "measured")).toHaveLength(2);
    // waits per row: the measured row is busy from 4 to 12 without a gap; the modelled row as before
    expect(waits(DOC, rows, all, 15, 300).map((w) => w.lane)).toEqual([]);
  });

  it("words the document's disagreement rows without recomputing them", () => {
    const m = {
      disagreement: [
        { piece: "S", what: "Sij", count: 256, measured_ns: 624.8, modelled_ns: 353.3, ratio: 1.768 },
        { piece: "PV", what: "P·V past the softmax", count: 248, measured_ns: 61.3, modelled_ns: 0, ratio: null },
        { piece: "wait", what: "a wait for Kj", count: 256, measured_ns: 79.6, modelled_ns: null, ratio: null },
        { piece: "block", what: "one block", count: 4, measured_ns: 56368, modelled_ns: 68075.6, ratio: 0.828 },
      ],
    } as MeasuredDoc;
    expect(disagreementLines(m)).toEqual([
      "S (Sij): measured 625 ns (mean of 256), modelled 353 ns: 1.77× the model",
      "PV (P·V past the softmax): measured 61 ns (mean of 248), modelled 0 ns",
      "wait (a wait for Kj): measured 80 ns (mean of 256); the model has no such piece",
      "block (one block): measured 56.37 µs (mean of 4), modelled 68.08 µs: 0.83× the model",
    ]);
  });

  it("sets two kernels' tensor pipe side by side at the launch they share", () => {
    const row = (algo: string, kernel: string, t: number, i: number, causal: boolean, ns: number) => ({
      algo,
      kernel,
      n: 4096,
      d: 128,
      heads: 16,
      batch: 1,
      causal,
      time_ns: ns,
      profile: "p.json",
      metrics: { tensor_active_pct: t, issue_active_pct: i },
      top_stalls: [],
    }); // prettier-ignore
    const tp = {
      rows: [row("a", "ka", 50, 40, false, 2000), row("b", "kb", 75, 30, true, 1000), row("b", "kb", 80, 35, false, 1500)],
    } as unknown as TensorPipeDoc;
    expect(pipeSentence(tp)).toBe(
      "At N=4096, D=128, 16 heads the tensor pipe was active 80.0% of the SMs' active cycles in b (kb) against 50.0% in a (ka): 1.60×; instructions issued 35.0% against 40.0% of the most the schedulers could issue; the kernel took 1.50 µs against 2.00 µs.",
    );
    expect(pipeSentence({ ...tp, rows: tp.rows.slice(0, 2) })).toBeNull(); // no launch in common
  });

  it("ticks the axis at round times, in ns or µs", () => {
    expect(ticks(15, 300).map((t) => t.label)).toEqual(["0 ns", "5 ns", "10 ns", "15 ns"]);
    expect(ticks(15, 300).map((t) => t.x)).toEqual([0, 100, 200, 300]);
    expect(ticks(5000, 500).map((t) => t.label)).toEqual(["0 µs", "1 µs", "2 µs", "3 µs", "4 µs", "5 µs"]);
    expect(ticks(0, 300)).toEqual([]);
  });
});
