// The memory picture's pure parts on real traces: what a frame is drawn from (scene.ts), its words (words.ts) and a
// cell's tooltip (tooltip.ts). The canvases themselves are checked in the browser (tests/browser).
import { describe, expect, it } from "vitest";
import { indexTrace } from "../src/derive";
import { full } from "../src/format";
import { HbmHistory } from "../src/hbm";
import { layoutMemory } from "../src/layout";
import { pictureSpec } from "../src/picture";
import { colourRanges } from "../src/render/memory/raster";
import { live, rowBlock, type Scene, sramValues, tileHeld } from "../src/render/memory/scene";
import { cellTip } from "../src/render/memory/tooltip";
import { describe as describeStep, shortenings, sramNote, sramTitle, unwrittenNoteOf } from "../src/render/memory/words";
import type { Mat, Trace, Vec } from "../src/types";
import { BWD, FA1, FA2C, STD } from "./fixtures";

/** The scene of step k, laid out at a desktop width. */
function sceneOf(t: Trace, k: number): Scene {
  const idx = indexTrace(t);
  return {
    trace: t,
    idx,
    history: new HbmHistory(t, idx),
    layout: layoutMemory(pictureSpec(t), t.config, 1280, 500),
    ranges: colourRanges(t),
    k,
    s: t.steps[k]!,
  };
}

const at = (t: Trace, op: string, pick: (s: Trace["steps"][number]) => boolean = () => true) =>
  t.steps.findIndex((s) => s.op === op && pick(s));

describe("what a frame is drawn from", () => {
  it("holds the tile a block loaded until the block ends, and the rows of the block of Q (the backward's preprocessing too)", () => {
    const wb = at(FA2C, "write_back");
    expect(FA2C.steps[wb]!.j).toBeNull();
    expect(tileHeld(sceneOf(FA2C, wb))).toBe(0); // loaded at load_kv, still held at write-back
    expect(tileHeld(sceneOf(FA2C, 0))).toBeNull();
    const pre = at(BWD, "load_do_o", (s) => s.block === 1);
    expect(BWD.steps[pre]!.kernel).toBe("fa2_bwd_preprocess");
    expect(rowBlock(sceneOf(BWD, pre))).toBe(1); // fa2_bwd_preprocess block i = 1
    const probs = at(BWD, "probs", (s) => s.block === 0 && s.indices.i === 1);
    expect(rowBlock(sceneOf(BWD, probs))).toBe(1); // fa2_bwd block j = 0 visiting block i = 1
    expect(rowBlock(sceneOf(BWD, at(BWD, "write_back")))).toBeNull();
  });

  it("reads a buffer's latest snapshot in the same block and kernel", () => {
    const sc = sceneOf(FA2C, at(FA2C, "scores"));
    const qi = FA2C.steps[0]!.sram.Qi as Mat;
    expect(sramValues(sc, "Qi")).toEqual(qi); // loaded at step 0, unchanged since
    expect(sramValues(sc, "mi")).toEqual((FA2C.steps[0]!.sram.mi as Vec).map((x) => [x])); // a vector as a column
    expect(sramValues(sceneOf(BWD, at(BWD, "load_kv")), "dOi")).toBeNull(); // the preprocessing kernel's SRAM is gone
  });

  it("dims the buffers of the kernels not running", () => {
    const isLive = (t: Trace, buffer: string, op: string) => {
      const sc = sceneOf(t, at(t, op));
      return live(sc.layout.grids[buffer]!, sc.s);
    };
    expect(isLive(STD, "Sr", "softmax_row")).toBe(true);
    expect(isLive(STD, "Qi", "softmax_row")).toBe(false);
    expect(isLive(STD, "Pij", "accumulate")).toBe(true);
    expect(isLive(BWD, "Oi", "load_do_o")).toBe(true);
    expect(isLive(BWD, "Oi", "probs")).toBe(false);
    expect(isLive(BWD, "Kj", "write_delta")).toBe(false);
    expect(isLive(BWD, "dOi", "probs")).toBe(true); // both kernels hold a dOi
    expect(isLive(FA2C, "Kj", "load_q")).toBe(true);
  });
});

describe("the picture's words", () => {
  it("titles SRAM by whose it is: the block and kernel of the step", () => {
    expect(sramTitle(FA2C, FA2C.steps[0]!)).toBe("SRAM of block i = 0 \u00b7 rows 0\u20133 \u00b7 352 bytes");
    expect(sramTitle(FA1, FA1.steps[at(FA1, "load_kv")]!)).toBe("SRAM of the one block per head \u00b7 outer loop over j \u00b7 352 bytes");
    expect(sramTitle(BWD, BWD.steps[at(BWD, "write_delta", (s) => s.block === 1)]!)).toBe(
      "SRAM of fa2_bwd_preprocess block i = 1 \u00b7 rows 4\u20137",
    );
    expect(sramTitle(BWD, BWD.steps[at(BWD, "load_kv", (s) => s.block === 1)]!)).toMatch(
      /^SRAM of fa2_bwd block j = 1 \u00b7 K\/V rows 4\u20137 \u00b7/,
    );
    expect(sramTitle(FA1, FA1.steps[at(FA1, "update", (s) => s.indices.i === 1)]!)).toBe(
      "SRAM of the one block per head \u00b7 now on block i = 1 \u00b7 352 bytes",
    );
    expect(sramTitle(STD, STD.steps[at(STD, "softmax_row", (s) => s.block === 1)]!)).toMatch(
      /^SRAM of block i = 1 \u00b7 rows 4\u20135 \u00b7 three kernels, \d+ bytes at most$/,
    );
    expect(shortenings("a \u00b7 b \u00b7 c")).toEqual(["a \u00b7 b \u00b7 c", "a \u00b7 b", "a"]);
  });

  it("says what fills or empties a buffer, else what it holds", () => {
    const t = FA2C;
    const k = at(t, "scores");
    expect(sramNote(t, t.steps[0]!, "Qi")).toBe("\u2190 Q[0:4]");
    expect(sramNote(t, t.steps[k]!, "Sij")).toBe("masked: key > query \u2192 \u2212\u221e"); // (0, 0) crosses the diagonal
    expect(sramNote(t, t.steps[at(t, "online_softmax")]!, "Sij")).toBe("holds P = exp(S \u2212 m\u1d62)");
    expect(sramNote(t, t.steps[at(t, "write_back")]!, "Oi")).toBe("\u2192 O[0:4] (\u00f7 \u2113\u1d62)");
    expect(sramNote(t, t.steps[at(t, "write_back")]!, "li")).toBe("\u2192 L[0:4]"); // L leaves from mi and li
    expect(sramNote(FA1, FA1.steps[at(FA1, "update")]!, "Sij")).toBe("holds P\u0303 = exp(S \u2212 m\u0303)");
    // the backward's tile (0, 1) is masked: P is 0 where key > query
    expect(sramNote(BWD, BWD.steps[at(BWD, "probs", (s) => s.block === 1 && s.indices.i === 1)]!, "Pij")).toBe("0 where key > query");
    expect(unwrittenNoteOf(t, "O")).toContain("written once");
    expect(unwrittenNoteOf(FA1, "O")).toBe("not written yet");
  });

  it("describes each step for a screen reader", () => {
    expect(describeStep(FA2C, FA2C.steps[0]!)).toBe(
      "Memory picture, block i = 0, step 1 of 5: Q[0:4] read from HBM into Qi. SRAM buffers changed: Qi, Oi, mi, li. N=12, D=4, Br=4, Bc=4.",
    );
    // fa1's one block per head (blockIdx.x 0), on its outer loop's K/V load
    expect(describeStep(FA1, FA1.steps[at(FA1, "load_kv")]!)).toMatch(/^Memory picture, block 0, step 3 of 20: K\[0:4\] read/);
    // the backward's preprocessing kernel: a block i (phase 1 called it "block j")
    expect(describeStep(BWD, BWD.steps[at(BWD, "load_do_o", (s) => s.block === 1)]!)).toMatch(/^Memory picture, block i = 1, step/);
  });
});

describe("a cell's tooltip", () => {
  it("says an HBM cell's value as the launch has it after the step's phase", () => {
    const t = FA2C;
    const wb = sceneOf(t, at(t, "write_back"));
    const o = t.outputs.O as Mat;
    expect(cellTip(sceneOf(t, 0), { grid: "O", r: 1, c: 3 })).toEqual({
      name: "O[1, 3]",
      what: "not written yet",
      note: "block i = 0, row 1",
    });
    expect(cellTip(wb, { grid: "O", r: 1, c: 3 })).toEqual({ name: "O[1, 3]", value: full(o[1]![3]!), note: "block i = 0, row 1" });
    // block 2 (not recorded, causal: the longest program) writes back after the last phase block 0 reaches
    expect(cellTip(wb, { grid: "O", r: 9, c: 0 })).toMatchObject({ what: "not written yet", note: "block i = 2, row 1" });
    expect(cellTip(wb, { grid: "K", r: 5, c: 2 })).toEqual({
      name: "K[5, 2]",
      value: full((t.inputs.K as Mat)[5]![2]!),
      note: "tile j = 1, row 1",
    });
  });

  it("says where an SRAM cell sits in the launch: its query row and key, masked or padding", () => {
    const t = FA2C;
    const scores = sceneOf(t, at(t, "scores"));
    expect(cellTip(scores, { grid: "Sij", r: 1, c: 3 })).toEqual({
      name: "Sij[1, 3]",
      value: "\u2212\u221e",
      note: "query row 1 (block i = 0), key 3 > query: masked",
    });
    expect(cellTip(scores, { grid: "Sij", r: 3, c: 2 }).note).toBe("query row 3 (block i = 0), key 2");
    expect(cellTip(scores, { grid: "Kj", r: 2, c: 0 }).note).toBe("key row 2 (tile j = 0)");
    expect(cellTip(sceneOf(t, 0), { grid: "Kj", r: 0, c: 0 })).toEqual({ name: "Kj[0, 0]", what: "not loaded yet", note: "" });
    // the backward's preprocessing kernel holds rows of its own block of Q
    const pre = sceneOf(
      BWD,
      at(BWD, "load_do_o", (s) => s.block === 1),
    );
    expect(cellTip(pre, { grid: "dOi", r: 1, c: 1 })).toEqual({
      name: "dOi[1, 1]",
      value: full((BWD.inputs.dO as Mat)[5]![1]!),
      note: "query row 5 (block i = 1)",
    });
  });

  it("shows FA1's carries in HBM as each visit left them: m = \u2212\u221e after init, before any tile", () => {
    const init = sceneOf(
      FA1,
      at(FA1, "init", (s) => s.indices.i === 0),
    );
    expect(cellTip(init, { grid: "m", r: 1, c: 0 })).toEqual({ name: "m[1]", value: "\u2212\u221e", note: "block i = 0, row 1" });
    expect(cellTip(init, { grid: "m", r: 5, c: 0 }).what).toBe("not written yet"); // block 1's init is the next phase
  });
});
