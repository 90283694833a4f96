import { describe, expect, it } from "vitest";
import {
  apiQuery,
  blockChoices,
  clampStep,
  DEFAULT_CONFIG,
  INITIAL_STATE,
  keyAction,
  landingProblems,
  landingStep,
  type Picks,
  parseUrl,
  phaseStep,
  pickStep,
  reduce,
  stepInBlock,
  summedN,
  toSearch,
  unrecordedProblem,
} from "../src/state";
import type { BlockInfo } from "../src/types";
import { BWD, FA1, FA2C, LIMITS } from "./fixtures";

// the seed's default launch: 2 blocks x 8 phases of one kernel, the picks its blocks
const SEED = {
  picker: { kernels: ["k"], index: "block", letter: "i", axis: "q", rows_per_block: 4, label: "block i", lockstep: true },
  blocks: [0, 1].map((b) => ({ block: b, i: b, rows: [4 * b, 4 * b + 4], recorded: true, phases: 8, idle: [] })),
  steps: Array.from({ length: 16 }, (_, k) => ({ kernel: "k", block: Math.floor(k / 8), phase: k % 8, indices: {}, tile: null })),
} as unknown as Picks;

describe("URL round trip", () => {
  it("writes config, step and block in a stable order; steps count from 1, as the page shows them", () => {
    // index 5 is the sixth step: "step 6 / 16" on the page, step=6 in the URL
    expect(toSearch(DEFAULT_CONFIG, 5, 0)).toBe("?n=8&d=4&br=4&bc=4&seed=0&step=6&block=0");
  });

  it("reads back what it wrote", () => {
    const c = { algo: "fa1", n: 1024, d: 64, br: 64, bc: 32, seed: 7, scale: 0.125, causal: true };
    const back = parseUrl(toSearch(c, 41, 3, 2), { ...LIMITS, n: [1, 4096] });
    expect(back).toEqual({ config: c, step: 41, block: 3, speed: 2, problems: [] });
    expect(parseUrl("?step=1").step).toBe(0);
  });

  it("falls back to the default for anything malformed, field by field, and says what was wrong (item 22)", () => {
    const r = parseUrl("?n=abc&d=-3&br=4.5&bc=16&seed=&scale=zero&step=x");
    expect(r.config).toEqual({ ...DEFAULT_CONFIG, bc: 16 });
    expect(r.step).toBeNull();
    expect(r.block).toBeNull();
    expect(r.problems).toEqual([
      'URL n="abc": must be an integer in 1..4096; showing n=8',
      'URL d="-3": must be an integer in 1..256; showing d=4',
      'URL br="4.5": must be an integer in 1..256; showing br=4',
      'URL seed="": must be an integer in 0..4294967295; showing seed=0',
      // the server's words for the range (1e-06 <= |scale| <= 1e+06), and one way of writing the default
      'URL scale="zero": must be a finite number with 1e-06 <= |scale| <= 1e+06, or absent for 1/sqrt(D); showing the default 1/sqrt(D)',
      'URL step="x": must be an integer, at least 1 (steps count from 1); showing step 1',
    ]);
  });

  it("names each bad parameter and what it accepts: algo (the server's list), causal, speed, block, step 0", () => {
    const one = (q: string) => parseUrl(q, LIMITS).problems;
    const names = LIMITS.algos!.map((a) => a.name);
    expect(LIMITS.default).toBe("fa2"); // the server's default: the seed's example
    expect(parseUrl("", LIMITS).config.algo).toBe("fa2");
    expect(one("?algo=fa4")).toEqual([`URL algo="fa4": must be one of ${names.join(", ")}; showing ${LIMITS.default}`]);
    expect(names).toContain("fa2-backward");
    // before the server has listed its algorithms, any name goes to the server, which judges it
    expect(parseUrl("?algo=fa4").config.algo).toBe("fa4");
    expect(parseUrl("?algo=fa4").problems).toEqual([]);
    expect(one("?causal=maybe")).toEqual(['URL causal="maybe": must be true or false; showing causal=false']);
    expect(one("?speed=3")).toEqual(['URL speed="3": must be one of 0.25, 0.5, 1, 2, 4; showing 1\u00d7']);
    expect(one("?block=-1")[0]).toMatch(/^URL block="-1": must be an integer, at least 0/);
    expect(one("?step=0")[0]).toMatch(/^URL step="0": must be an integer, at least 1/);
    expect(one("?n=8&d=4&causal=true&speed=2&step=3&block=1")).toEqual([]);
  });

  it("takes N from packed sequences the URL gives without it, as the API and the CLI do", () => {
    const r = parseUrl("?algo=fa2-triton&d=32&br=16&bc=16&seqlens=20,44,30&causal=true", LIMITS);
    expect(r.problems).toEqual([]);
    expect(r.config).toMatchObject({ algo: "fa2-triton", n: 94, seqlens: "20,44,30", causal: true });
    // a good N given stays (the server judges whether it is their sum); a bad one says it shows their sum
    expect(parseUrl("?algo=fa2-triton&n=100&seqlens=20,44,30", LIMITS).config.n).toBe(100);
    expect(parseUrl("?algo=fa2-triton&n=x&seqlens=20,44,30", LIMITS).problems).toEqual([
      'URL n="x": must be an integer in 1..4096; showing n=94',
    ]);
    // bad lengths: no sum, the algorithm's own N
    expect(parseUrl("?algo=fa2-triton&seqlens=20,-4", LIMITS).config.n).toBe(128);
    expect(summedN({ seqlens: " 3, 4 " })).toBe(7);
    expect(summedN({ seqlens: "3,,4" })).toBeNull();
    expect(summedN({})).toBeNull();
  });

  it("holds integers to the server's limits, not only to being integers", () => {
    expect(parseUrl("?n=0")).toMatchObject({ config: { n: 8 }, problems: ['URL n="0": must be an integer in 1..4096; showing n=8'] });
    expect(parseUrl("?n=99999").config.n).toBe(8);
    const limits = { n: [1, 99999], d: [1, 256], br: [1, 256], bc: [1, 256], seed: [0, 9] } as const;
    expect(parseUrl("?n=99999", limits as never).config.n).toBe(99999);
  });

  it("cuts a long bad value to about 40 characters", () => {
    const p = parseUrl(`?algo=${"x".repeat(10_000)}`, LIMITS).problems[0]!;
    // the value is cut; the rest of the message names the algorithms there are, which grows with the registry
    expect(p).toMatch(/"x{30,50}\u2026"/);
    expect(p).not.toContain("x".repeat(51));
  });

  it("says when the URL's step or block is past the launch it opened", () => {
    expect(landingProblems(16, 2, 998, null)).toEqual(['URL step="999": must be an integer in 1..16 for this launch; showing step 16']);
    expect(landingProblems(16, 2, null, 7)).toEqual(['URL block="7": must be an integer in 0..1 for this launch; showing block 0']);
    expect(landingProblems(16, 2, 15, 1)).toEqual([]);
  });

  it("omits scale when it is the default", () => {
    expect(toSearch({ ...DEFAULT_CONFIG, scale: null }, 0, 0)).not.toContain("scale");
    expect(apiQuery({ ...DEFAULT_CONFIG, algo: "fa1", scale: 0.5 })).toBe("algo=fa1&n=8&d=4&br=4&bc=4&seed=0&scale=0.5");
    // the server's default algorithm: named neither to the server nor in the URL
    expect(apiQuery(DEFAULT_CONFIG)).toBe("n=8&d=4&br=4&bc=4&seed=0");
    expect(toSearch({ ...DEFAULT_CONFIG, algo: "fa2" }, 0, 0, 1, "fa2")).not.toContain("algo");
    expect(toSearch({ ...DEFAULT_CONFIG, algo: "fa1" }, 0, 0, 1, "fa2")).toMatch(/^\?algo=fa1&n=8/);
    expect(apiQuery(DEFAULT_CONFIG, 3)).toContain("block=3");
    expect(apiQuery({ ...DEFAULT_CONFIG, causal: true })).toContain("causal=true");
    expect(toSearch(DEFAULT_CONFIG, 0, 0)).not.toContain("causal");
  });
});

describe("step clamping and landing", () => {
  it("clamps to the trace", () => {
    expect(clampStep(-1, 16)).toBe(0);
    expect(clampStep(99, 16)).toBe(15);
    expect(clampStep(5.7, 16)).toBe(5);
    expect(clampStep(Number.NaN, 16)).toBe(0);
    expect(clampStep(3, 0)).toBe(0);
  });

  it("lands on the URL's step, else the pick's first step", () => {
    expect(landingStep(SEED, 5, null)).toBe(5);
    expect(landingStep(SEED, 500, 0)).toBe(15);
    expect(landingStep(SEED, null, 1)).toBe(8);
    expect(landingStep(SEED, null, 7)).toBe(0);
    expect(landingStep(SEED, null, null)).toBe(0);
  });

  it("finds the same phase in another block", () => {
    expect(stepInBlock(SEED, 5, 1)).toBe(13);
    expect(stepInBlock(SEED, 13, 0)).toBe(5);
    expect(stepInBlock(SEED, 5, 9)).toBe(-1);
  });

  it("lands the backward's block j on its fa2_bwd block (the picks), not the preprocessing kernel's block of that number", () => {
    const k = landingStep(BWD, null, 1);
    expect(BWD.steps[k]).toMatchObject({ kernel: BWD.picker.kernels[0], block: 1, indices: { j: 1 } });
    expect(BWD.steps[k]!.index).toBeGreaterThan(BWD.steps.findIndex((s) => s.block === 1)); // not the first step with block 1
    expect(landingStep(BWD, 3, 1)).toBe(3); // a step given wins
  });

  it("lands a fetched block at the phase it was picked at, else its first step", () => {
    const k = phaseStep(BWD, 1, 4);
    expect(BWD.steps[k]).toMatchObject({ kernel: BWD.picker.kernels[0], block: 1, phase: 4 });
    expect(phaseStep(SEED, 1, 99)).toBe(8);
    expect(phaseStep(FA2C, 2, 3)).toBe(0); // not in the trace at all
  });

  it("picks another block at the same phase; FA1's one block visits block i at the same tile and op", () => {
    expect(pickStep(SEED, 5, 1)).toBe(13);
    expect(pickStep(FA2C, 2, 1)).toBe(-1); // not recorded: fetched
    expect(FA1.picker).toMatchObject({ index: "i", lockstep: false });
    const from = FA1.steps.findIndex((s) => s.indices.i === 0 && s.op === "update" && s.j === 1);
    const to = pickStep(FA1, from, 1);
    expect(FA1.steps[to]).toMatchObject({ block: 0, indices: { i: 1 }, op: "update", j: 1 });
    // on the outer loop's K/V load (no block of Q): block i's first step in that tile
    const load = FA1.steps.findIndex((s) => s.indices.i === undefined && s.j === 1);
    expect(FA1.steps[pickStep(FA1, load, 0)]).toMatchObject({ indices: { i: 0 }, tile: 1 });
    expect(FA1.steps[pickStep(FA1, load, 0)]!.index).toBeGreaterThan(load);
  });

  it("offers the trace's picks in the picker, in the trace's words", () => {
    expect(blockChoices(FA2C)).toEqual({
      label: "block i",
      options: [
        ["0 \u00b7 rows 0\u20133", "0"],
        ["1 \u00b7 rows 4\u20137 (fetch)", "1"],
        ["2 \u00b7 rows 8\u201311 (fetch)", "2"],
      ],
    });
    expect(blockChoices(FA1)).toMatchObject({
      label: "block of Q, i",
      options: [
        ["0 \u00b7 rows 0\u20133", "0"],
        ["1 \u00b7 rows 4\u20137", "1"],
      ],
    });
    expect(blockChoices(BWD)).toMatchObject({
      label: "block j",
      options: [
        ["0 \u00b7 keys 0\u20133", "0"],
        ["1 \u00b7 keys 4\u20137", "1"],
      ],
    });
    // past 512 blocks: every recorded one, and about 256 others evenly spaced
    const many: BlockInfo[] = Array.from({ length: 1024 }, (_, k) => ({
      block: k,
      rows: [4 * k, 4 * k + 4],
      recorded: k === 5,
      phases: 8,
      idle: [],
    }));
    const ids = blockChoices({ ...SEED, blocks: many }).options.map(([, v]) => Number(v));
    expect(ids).toContain(5);
    expect(ids.length).toBe(257);
    expect(ids.filter((b) => b !== 5).every((b) => b % 4 === 0)).toBe(true);
  });

  it("says when a block asked for is not in the trace fetched for it", () => {
    expect(unrecordedProblem(3, [0], 2, 0)).toBe("Block 2's values are not in this trace (recorded: 0); showing block 0");
    expect(unrecordedProblem(3, [0, 2], 2, 2)).toBeNull();
    expect(unrecordedProblem(3, [0], 7, 0)).toBeNull(); // past the launch: landingProblems says so
    expect(unrecordedProblem(3, [0], null, 0)).toBeNull();
  });
});

describe("transitions", () => {
  const at = (step: number, playing = false) => ({ ...INITIAL_STATE, step, playing });

  it("steps and stops at the ends", () => {
    expect(reduce(at(0), { type: "next" }, 16).step).toBe(1);
    expect(reduce(at(15), { type: "next" }, 16).step).toBe(15);
    expect(reduce(at(0), { type: "prev" }, 16).step).toBe(0);
    expect(reduce(at(7), { type: "first" }, 16).step).toBe(0);
    expect(reduce(at(7), { type: "last" }, 16).step).toBe(15);
    expect(reduce(at(7), { type: "goto", step: 40 }, 16).step).toBe(15);
  });

  it("plays, pauses, stops playing at the end, and replays from the start", () => {
    expect(reduce(at(3), { type: "toggle" }, 16).playing).toBe(true);
    expect(reduce(at(3, true), { type: "toggle" }, 16).playing).toBe(false);
    const end = reduce(at(14, true), { type: "next" }, 16);
    expect(end).toMatchObject({ step: 15, playing: false });
    expect(reduce(at(15), { type: "play" }, 16)).toMatchObject({ step: 0, playing: true });
    expect(reduce(at(4, true), { type: "prev" }, 16).playing).toBe(false);
  });

  it("accepts only the offered speeds", () => {
    expect(reduce(at(0), { type: "speed", speed: 2 }, 16).speed).toBe(2);
    expect(reduce(at(0), { type: "speed", speed: 3 }, 16).speed).toBe(1);
  });
});

describe("keys", () => {
  it("maps the player keys", () => {
    expect(keyAction("ArrowRight")).toEqual({ type: "next" });
    expect(keyAction("ArrowLeft")).toEqual({ type: "prev" });
    expect(keyAction(" ")).toEqual({ type: "toggle" });
    expect(keyAction("Home")).toEqual({ type: "first" });
    expect(keyAction("End")).toEqual({ type: "last" });
    expect(keyAction("x")).toBeNull();
    expect(keyAction("ArrowRight", { tag: "INPUT" })).toBeNull(); // typing in a field
    expect(keyAction("ArrowRight", { tag: "DIV", editable: true })).toBeNull();
    expect(keyAction(" ", { tag: "BUTTON" })).toBeNull(); // space activates the focused button
    expect(keyAction(" ", { tag: "SUMMARY" })).toBeNull();
    expect(keyAction("ArrowRight", { tag: "BUTTON" })).toEqual({ type: "next" });
    expect(keyAction(" ", { tag: "CANVAS" })).toEqual({ type: "toggle" });
  });

  it("leaves typing and browser shortcuts alone", () => {
    expect(keyAction("ArrowRight", { inField: true })).toBeNull();
    expect(keyAction("ArrowLeft", { alt: true })).toBeNull();
    expect(keyAction("Home", { ctrl: true })).toBeNull();
    expect(keyAction(" ", { meta: true })).toBeNull();
  });
});
