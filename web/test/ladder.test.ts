// The ladder section reads the recorded run that ships with flashviz (what GET /api/ladder answers), and the
// comparison's race counts each algorithm's own bytes (a bf16 kernel's curve gives them).
import { describe, expect, it } from "vitest";
import ladder from "../../src/flashviz/data/ladder/2026-12-01-nvidia-h200.json";
import type { PhaseCurve } from "../src/compareDoc";
import { isLadder } from "../src/ladderDoc";
import { curveAt } from "../src/render/compareRace";

describe("the ladder", () => {
  it("accepts the shipped recorded run and refuses what is not one", () => {
    expect(isLadder(ladder)).toBe(true);
    expect(isLadder({ ...ladder, schema: "flashviz.trace/2" })).toBe(false);
    expect(isLadder({ ...ladder, rungs: "none" })).toBe(false);
    expect(isLadder(null)).toBe(false);
    expect(isLadder({ detail: "no recorded ladder run" })).toBe(false);
  });
});

describe("the race's bytes", () => {
  it("are the curve's own where it gives them, else elements times the document's element size", () => {
    const curve: PhaseCurve = { phases: 3, phase: [0, 1, 2], op: [null, null, null], read: [4, 8, 8], written: [0, 0, 3], tensors: {} };
    expect(curveAt(curve, 1)).toMatchObject({ read: 8, written: 3, bytes: null });
    const bf16 = { ...curve, bytes: [8, 16, 28] };
    expect(curveAt(bf16, 2 / 3)).toMatchObject({ phase: 1, bytes: 16 });
    expect(curveAt(bf16, 0)).toMatchObject({ phase: -1, bytes: 0 });
  });
});

describe("an algorithm's own launch rules in the form", () => {
  it("refuse in place a value its kernel does not run, naming the values it does", async () => {
    const { validate } = await import("../src/validate");
    const { LIMITS } = await import("./fixtures");
    const triton = LIMITS.algos!.find((a) => a.allowed)!;
    expect(triton.allowed!.d).toContain(64);
    const raw = { n: "128", d: "48", br: "64", bc: "32", seed: "0", scale: "" };
    const v = validate(raw, LIMITS, false, triton.name);
    expect(v.config).toBeNull();
    expect(v.errors.d).toBe(`must be one of ${triton.allowed!.d!.join(", ")} for ${triton.name} (got 48)`);
    expect(validate({ ...raw, d: "64" }, LIMITS, false, triton.name).config).not.toBeNull();
    // the same numbers under an algorithm with no such rules are fine
    const plain = LIMITS.algos!.find((a) => !a.allowed)!;
    expect(validate(raw, LIMITS, false, plain.name).config).not.toBeNull();
  });
});
