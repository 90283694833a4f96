// What HBM holds at each phase, on real traces (generated from `flashviz trace`: test/fixtures.ts).
import { describe, expect, it } from "vitest";
import { blockStatus, indexTrace, lastPhase } from "../src/derive";
import { HbmHistory } from "../src/hbm";
import { FA1, FA2C } from "./fixtures";

describe("FA1: O, l, m carried through HBM", () => {
  const h = new HbmHistory(FA1, indexTrace(FA1));

  it("knows every write from the phases: init per block, then a write-back per visit", () => {
    expect(h.written("Q")).toBe(false);
    expect(h.events.get("O")!.map((e) => [e.op, e.r0, e.phase])).toEqual(
      FA1.steps.filter((s) => s.transfers.some((t) => t.tensor === "O" && t.kind === "write")).map((s) => [s.op, s.block! * 4, s.phase]),
    );
  });

  it("shows zeros and -inf after init, then what each visit wrote back, and the final values last", () => {
    const init = FA1.steps.find((s) => s.op === "init")!.phase;
    expect(h.valueAt("O", 0, 0, h.applied("O", init))).toBe(0);
    expect(h.valueAt("m", 0, 0, h.applied("m", init))).toBeNull();
    expect(h.valueAt("O", 0, 0, h.applied("O", -1))).toBe("unwritten");
    const wb = FA1.steps.find((s) => s.op === "write_back" && s.block === 0)!;
    const update = FA1.steps.filter((s) => s.op === "update" && s.block === 0 && s.index < wb.index).pop()!;
    expect(h.valueAt("O", 1, 2, h.applied("O", wb.phase))).toBe((update.sram.Oi as number[][])[1]![2]);
    const last = FA1.phases.length - 1;
    expect(h.valueAt("O", 5, 3, h.applied("O", last))).toBeCloseTo((FA1.outputs.O as number[][])[5]![3]!, 6);
    expect(h.valueAt("l", 6, 0, h.applied("l", last))).toBeCloseTo((FA1.outputs.l as number[])[6]!, 6);
  });
});

describe("FA2 causal, one block recorded: the others placed in lockstep", () => {
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
    // unrecorded blocks' values come from the final outputs
    expect(h.valueAt("O", 9, 1, h.applied("O", 99))).toBe((FA2C.outputs.O as number[][])[9]![1]);
  });

  it("says what each block does at a phase", () => {
    const last0 = lastPhase(FA2C, 0);
    expect(blockStatus(FA2C, 0, last0)).toBe("last");
    expect(blockStatus(FA2C, 0, last0 + 1)).toBe("done");
    expect(blockStatus(FA2C, 2, last0)).toBe("same");
  });
});
