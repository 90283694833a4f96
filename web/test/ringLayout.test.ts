// The devices view's pure layout (render/ringLayout.ts) on a hand-made `devices` document of three devices, the
// contiguous layout under a causal mask: the moment a phase falls in, what each device holds then, the transfers in
// flight, the carries as of the phase, the bytes sent so far, the layout's strip, and the ring's geometry.
import { describe, expect, it } from "vitest";
import {
  arrow,
  chunkNames,
  chunkOwners,
  type DevicesDoc,
  devicesProblem,
  placeDevices,
  ringAt,
  workCounts,
} from "../src/render/ringLayout";

const held = (owner: number) => ({ owner, chunks: [owner] });
const sends = (step: number, lo: number, hi: number) =>
  [0, 1, 2].map((r) => ({
    from: r,
    to: (r + 1) % 3,
    owner: (r - step + 3) % 3,
    chunks: [(r - step + 3) % 3],
    bytes: 96,
    phases: [lo, hi] as [number, number],
  }));
const kind = (q: number, k: number) => (q > k ? "full" : q === k ? "causal" : "skip") as "full" | "causal" | "skip";
const work = (step: number) => [0, 1, 2].map((r) => [{ q: r, k: (r - step + 3) % 3, kind: kind(r, (r - step + 3) % 3) }]);

// phases: init 0; step s: send 1+4s, attend, merge, wait 4+4s; finish 13
const DOC: DevicesDoc = {
  count: 3,
  layout: "contiguous",
  chunks: 3,
  chunk_rows: 4,
  own: [[0], [1], [2]],
  rows: [
    [0, 4],
    [4, 8],
    [8, 12],
  ],
  steps: [0, 1, 2].map((s) => ({
    step: s,
    phases: [1 + 4 * s, 4 + 4 * s] as [number, number],
    holds: [0, 1, 2].map((r) => held((r - s + 3) % 3)),
    work: work(s),
    transfers: s === 2 ? [] : sends(s, 1 + 4 * s, 4 + 4 * s),
  })),
  carries: [0, 1, 2].map((r) => [
    { phase: 0, O: [[0]], L: [null] },
    { phase: 3, O: [[r]], L: [r + 0.5] },
    ...(r >= 1 ? [{ phase: 7, O: [[r + 1]], L: [r + 1.5] }] : []),
  ]),
  sent_bytes: [192, 192, 192],
};

describe("the ring at a phase", () => {
  it("before the first step every device holds its own shard, nothing flies, the carries are empty", () => {
    const m = ringAt(DOC, 0);
    expect(m.step).toBeNull();
    expect(m.stage).toBe("start");
    expect(m.holds.map((x) => x.owner)).toEqual([0, 1, 2]);
    expect(m.flying).toEqual([]);
    expect(m.carries.map((c) => c?.L[0])).toEqual([null, null, null]);
    expect(m.sent).toEqual([0, 0, 0]);
  });

  it("at a send the transfers of the step fly, from each device to the next, carrying what it holds", () => {
    const m = ringAt(DOC, 5); // step 1's send
    expect([m.step, m.stage]).toEqual([1, "posted"]);
    expect(m.holds.map((x) => x.owner)).toEqual([2, 0, 1]);
    expect(m.flying.map((t) => [t.from, t.to, t.owner])).toEqual([
      [0, 1, 2],
      [1, 2, 0],
      [2, 0, 1],
    ]);
    expect(m.sent).toEqual([192, 192, 192]); // step 0's and step 1's sends posted
  });

  it("while computing the carries are the latest merge's; a device that skips the shard keeps its own", () => {
    const m = ringAt(DOC, 7); // step 1's merge phase
    expect(m.stage).toBe("computing");
    expect(m.carries.map((c) => c?.phase)).toEqual([3, 7, 7]);
    expect(m.carries[0]!.L).toEqual([0.5]); // device 0 skipped device 2's shard: nothing merged
    expect(m.work.map((w) => workCounts(w))).toEqual([
      { full: 0, causal: 0, skip: 1 },
      { full: 1, causal: 0, skip: 0 },
      { full: 1, causal: 0, skip: 0 },
    ]);
  });

  it("at a wait the shards in flight have arrived: each device holds the next step's shard", () => {
    const m = ringAt(DOC, 8); // step 1's wait
    expect([m.step, m.stage]).toEqual([1, "arrived"]);
    expect(m.flying).toHaveLength(3);
    expect(m.holds.map((x) => x.owner)).toEqual([1, 2, 0]);
  });

  it("the last step sends nothing, and after it the ring is done", () => {
    expect(ringAt(DOC, 9).flying).toEqual([]);
    const end = ringAt(DOC, 13);
    expect([end.step, end.stage]).toEqual([2, "done"]);
    expect(end.flying).toEqual([]);
    expect(end.work.every((w) => w.length === 0)).toBe(true);
  });
});

describe("the ring's shape", () => {
  it("puts device 0 at the top and the others clockwise, evenly", () => {
    const p = placeDevices(4, 100, 100, 50);
    expect(p[0]!.x).toBeCloseTo(100);
    expect(p[0]!.y).toBeCloseTo(50);
    expect(p[1]!.x).toBeCloseTo(150); // clockwise: right
    expect(p[2]!.y).toBeCloseTo(150);
    expect(p[3]!.x).toBeCloseTo(50);
  });

  it("draws an arrow from the edge of one node to the edge of the next, bowed outwards", () => {
    const c = { x: 100, y: 100 };
    const [a, b] = placeDevices(4, 100, 100, 50);
    const arr = arrow(a!, b!, 10, c);
    expect(arr.d.startsWith("M ")).toBe(true);
    expect(Math.hypot(arr.end.x - b!.x, arr.end.y - b!.y)).toBeCloseTo(14, 0); // node radius + head room
    // outwards: the label is further from the centre than the chord's midpoint
    const mid = { x: (a!.x + b!.x) / 2, y: (a!.y + b!.y) / 2 };
    expect(Math.hypot(arr.label.x - c.x, arr.label.y - c.y)).toBeGreaterThan(Math.hypot(mid.x - c.x, mid.y - c.y));
    // two devices: the chord passes through the centre, the two arrows bow to opposite sides
    const [p, q] = placeDevices(2, 100, 100, 50);
    const there = arrow(p!, q!, 10, c);
    const back = arrow(q!, p!, 10, c);
    expect(Math.sign(there.label.x - 100)).toBe(-Math.sign(back.label.x - 100));
  });

  it("reads the zigzag layout's owners chunk by chunk", () => {
    const zig = {
      ...DOC,
      count: 3,
      chunks: 6,
      own: [
        [0, 5],
        [1, 4],
        [2, 3],
      ],
    };
    expect(chunkOwners(zig)).toEqual([0, 1, 2, 2, 1, 0]);
    expect(chunkNames([1, 6])).toBe("c1\u00b7c6");
  });

  it("refuses a document it cannot draw, in one line", () => {
    expect(devicesProblem(null)).toBeNull();
    expect(devicesProblem(DOC)).toBeNull();
    expect(devicesProblem({ ...DOC, count: 0 })).toMatch(/devices\.count/);
    expect(devicesProblem({ ...DOC, own: [[0]] })).toMatch(/one entry per device/);
    expect(devicesProblem({ ...DOC, steps: [{ ...DOC.steps[0]!, holds: [] }] })).toMatch(/one hold per device/);
  });
});
