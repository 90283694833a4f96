// The schedule view's pure layout (render/scheduleLayout.ts) on hand-made documents: bars' x and width from their
// times, lanes by the document's order, waits as the gaps of a lane, the ring's slots, the current step's bars, and
// the sentence that compares measured bars with modelled ones.
import { describe, expect, it } from "vitest";
import {
  current,
  disagreement,
  legend,
  place,
  type ScheduleBar,
  type ScheduleDoc,
  slots,
  sourceOf,
  ticks,
  waits,
} from "../src/render/scheduleLayout";

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
  kind: "modelled",
  lanes: ["producer", "wg0", "wg1"],
  pieces: { Q: "load Q", K: "load K", V: "load V", S: "S", softmax: "softmax", PV: "P·V", O: "store O" },
  blocks: [{ i: 0, tiles: 1, end_ns: 15, tensor_busy: 8 / 15, bars: BARS }],
};

describe("the schedule's layout", () => {
  it("places each bar at its start and width by its duration, on its lane, coloured by its piece", () => {
    const placed = place(DOC, DOC.lanes, BARS, 15, 300); // 20 px per ns
    expect(placed).toHaveLength(BARS.length);
    const at = (lane: string, what: string) => placed.find((p) => p.bar.lane === lane && p.bar.what === what)!;
    expect([at("wg1", "S").x, at("wg1", "S").width, at("wg1", "S").lane]).toEqual([120, 40, 2]);
    expect([at("wg0", "softmax").x, at("wg0", "softmax").width, at("wg0", "softmax").lane]).toEqual([120, 60, 1]);
    expect([at("producer", "V").x, at("producer", "V").width]).toEqual([80, 40]);
    expect(at("producer", "Q half 1").kind).toBe(at("producer", "Q half 0").kind); // one piece, one colour
    expect(at("wg0", "PV").kind).toBe(legend(DOC, BARS).indexOf("PV"));
    expect(new Set(placed.map((p) => p.source))).toEqual(new Set(["modelled"]));
    // a lane the document does not draw places nothing; a tiny bar keeps 1 px
    expect(place(DOC, ["wg0"], BARS, 15, 300).every((p) => p.bar.lane === "wg0")).toBe(true);
    expect(place(DOC, DOC.lanes, [bar("wg0", "S", 0, 0, 0.001, "x")], 15, 300)[0]!.width).toBe(1);
  });

  it("finds each lane's waits between its bars, naming the bar it waits for", () => {
    const w = waits(DOC.lanes, BARS, 15, 300);
    // the producer and wg0 never idle once started; wg1 waits from its S's end (8) to its softmax (9): the exp
    // units are wg0's until 9
    const by = w.map((x) => [DOC.lanes[x.lane], x.ns, x.before.what, x.x]);
    expect(by).toEqual([["wg1", 1, "softmax", 160]]);
    expect(waits(DOC.lanes, BARS, 15, 300, 2)).toEqual([]); // gaps under 2 ns dropped
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

  it("says by how much measured bars differ from the modelled ones, and nothing when none is measured", () => {
    expect(disagreement(DOC, BARS)).toEqual([]);
    const measured: ScheduleBar[] = [
      ...BARS,
      bar("wg0", "PV", 0, 9, 11.8, "last", { source: "measured" }),
      bar("wg1", "PV", 0, 12, 14.8, "last", { source: "measured" }),
    ];
    const doc = { ...DOC, measured: { date: "d", gpu: "g", command: "c" } };
    expect(sourceOf(doc, measured[measured.length - 1]!)).toBe("measured");
    expect(disagreement(doc, measured)).toEqual(["measured P·V: 1.40× the model (mean of 2 measured, 2 modelled)"]);
    // a document measured throughout: its bars without a marker are measured
    expect(sourceOf({ ...DOC, kind: "measured" }, BARS[0]!)).toBe("measured");
    // a measured lane: its bars' source from the lane's, a bar's own marker first
    const lanes = { ...DOC, lanes: [...DOC.lanes, "wg0 measured"], lane_sources: { "wg0 measured": "measured" as const } };
    expect(sourceOf(lanes, bar("wg0 measured", "S", 0, 4, 7, "first"))).toBe("measured");
    expect(sourceOf(lanes, bar("wg0 measured", "S", 0, 4, 7, "first", { source: "modelled" }))).toBe("modelled");
    expect(sourceOf(lanes, BARS[4]!)).toBe("modelled");
    expect(disagreement(lanes, [...BARS, bar("wg0 measured", "S", 0, 4, 7, "first")])).toEqual([
      "measured S: 1.50× the model (mean of 1 measured, 2 modelled)",
    ]);
    expect(place(doc, doc.lanes, measured, 15, 300).filter((p) => p.source === "measured")).toHaveLength(2);
  });

  it("ticks the axis at round times, in ns or µs", () => {
    expect(ticks(15, 300).map((t) => t.label)).toEqual(["0 ns", "5 ns", "10 ns", "15 ns"]);
    expect(ticks(15, 300).map((t) => t.x)).toEqual([0, 100, 200, 300]);
    expect(ticks(5000, 500).map((t) => t.label)).toEqual(["0 µs", "1 µs", "2 µs", "3 µs", "4 µs", "5 µs"]);
    expect(ticks(0, 300)).toEqual([]);
  });
});
