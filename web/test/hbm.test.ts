// What HBM holds at each phase, on real traces (generated from `flashviz trace`: test/fixtures.ts).
import { describe, expect, it } from "vitest";
import { blockStatus, indexTrace, lastPhase } from "../src/derive";
import { HbmHistory } from "../src/hbm";
import type { Mat, Vec } from "../src/types";
import { BWD, FA1, FA2C, STD } from "./fixtures";

describe("FA1: O, l, m carried through HBM", () => {
  const h = new HbmHistory(FA1, indexTrace(FA1));

  it("places every write the trace lists: init per block of Q, then a write-back per visit", () => {
    expect(h.written("Q")).toBe(false);
    const writes = FA1.steps.filter((s) => s.transfers.some((t) => t.tensor === "O" && t.kind === "write"));
    expect(h.events.get("O")!.map((e) => [e.step, e.r0, e.phase])).toEqual(writes.map((s) => [s.index, s.indices.i! * 4, s.phase]));
    expect(writes.map((s) => s.op)).toEqual(["init", "init", "write_back", "write_back", "write_back", "write_back"]);
  });

  it("shows zeros and -inf after init, then what each visit wrote back, and the final values last", () => {
    const init = FA1.steps.find((s) => s.op === "init")!.phase;
    expect(h.valueAt("O", 0, 0, h.applied("O", init))).toBe(0);
    expect(h.valueAt("m", 0, 0, h.applied("m", init))).toBeNull();
    expect(h.valueAt("O", 0, 0, h.applied("O", -1))).toBe("unwritten");
    const wb = FA1.steps.find((s) => s.op === "write_back" && s.indices.i === 0)!;
    const update = FA1.steps.filter((s) => s.op === "update" && s.indices.i === 0 && s.index < wb.index).pop()!;
    expect(h.valueAt("O", 1, 2, h.applied("O", wb.phase))).toBe((update.sram.Oi as Mat)[1]![2]);
    const last = FA1.phases.length - 1;
    expect(h.valueAt("O", 5, 3, h.applied("O", last))).toBeCloseTo((FA1.outputs.O as Mat)[5]![3]!, 6);
    expect(h.valueAt("l", 6, 0, h.applied("l", last))).toBeCloseTo((FA1.outputs.l as Vec)[6]!, 6);
  });
});

describe("FA2 causal, one block recorded: the others' writes from the trace's phases", () => {
  const idx = indexTrace(FA2C);
  const h = new HbmHistory(FA2C, idx);

  it("each block writes O and L back at its own last phase (causal programs differ)", () => {
    const o = h.events.get("O")!;
    expect(o.map((e) => [e.r0, e.r1])).toEqual([
      [0, 4],
      [4, 8],
      [8, 12],
    ]);
    expect(o.map((e) => e.phase)).toEqual([0, 1, 2].map((b) => lastPhase(FA2C, b)));
    expect(new Set(o.map((e) => e.phase)).size).toBe(3);
    expect(o.map((e) => e.step === null)).toEqual([false, true, true]); // only block 0 is recorded
    // unrecorded blocks' values come from the final outputs (O is written once)
    expect(h.valueAt("O", 9, 1, h.applied("O", 99))).toBe((FA2C.outputs.O as Mat)[9]![1]);
  });

  it("says what each block does at a phase", () => {
    const last0 = lastPhase(FA2C, 0);
    expect(blockStatus(FA2C, 0, last0)).toBe("last");
    expect(blockStatus(FA2C, 0, last0 + 1)).toBe("done");
    expect(blockStatus(FA2C, 2, last0)).toBe("same");
  });
});

describe("values from where each write's source says", () => {
  it("standard: S from the tile of scores, P from the softmax kernel's one row Sr", () => {
    const h = new HbmHistory(STD, indexTrace(STD));
    const row = STD.steps.find((s) => s.op === "softmax_row" && s.indices.r === 5)!;
    const p = h.valueAt("P", 5, 2, h.applied("P", row.phase));
    expect(p).toBe((row.sram.Sr as Vec)[2]);
    const sc = STD.steps.find((s) => s.op === "scores" && s.block === 1)!;
    expect(h.valueAt("S", 4, 0, h.applied("S", sc.phase))).toBe((sc.sram.Sij as Mat)[0]![0]);
    // a block idles while the scores kernel's longest block finishes (causal): the trace says so
    expect(STD.blocks[0]!.idle.length).toBeGreaterThan(0);
    expect(blockStatus(STD, 0, STD.blocks[0]!.idle[0]![0])).toBe("idle");
  });

  it("the backward: dQ zeroed, then each atomic add's result; Delta from the carries", () => {
    const h = new HbmHistory(BWD, indexTrace(BWD));
    const zero = BWD.steps.find((s) => s.op === "write_delta" && s.block === 0)!;
    expect(h.valueAt("dQ", 1, 1, h.applied("dQ", zero.phase))).toBe(0);
    expect(h.valueAt("Delta", 1, 0, h.applied("Delta", zero.phase))).toBe((zero.carries!.Deltai as Vec)[1]);
    const add = BWD.steps.find((s) => s.op === "dq" && s.block === 1 && s.indices.i === 1)!;
    expect(h.valueAt("dQ", 5, 1, h.applied("dQ", add.phase))).toBe((add.carries!.dQi as Mat)[1]![1]);
  });
});
