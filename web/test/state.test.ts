import { describe, expect, it } from "vitest";
import {
  apiQuery, clampStep, DEFAULT_CONFIG, INITIAL_STATE, keyAction, landingStep, parseUrl, reduce, stepInBlock, toSearch,
} from "../src/state";

// the seed's default trace: 2 blocks x 8 phases
const STEPS = Array.from({ length: 16 }, (_, k) => ({ block: Math.floor(k / 8), phase: k % 8 }));

describe("URL round trip", () => {
  it("writes config, step and block in a stable order", () => {
    expect(toSearch(DEFAULT_CONFIG, 5, 0)).toBe("?n=8&d=4&br=4&bc=4&seed=0&step=5&block=0");
  });

  it("reads back what it wrote", () => {
    const c = { algo: "fa1", n: 1024, d: 64, br: 64, bc: 32, seed: 7, scale: 0.125, causal: true };
    const back = parseUrl(toSearch(c, 41, 3, 2));
    expect(back).toEqual({ config: c, step: 41, block: 3, speed: 2 });
  });

  it("falls back to the default for anything malformed, field by field", () => {
    const r = parseUrl("?n=abc&d=-3&br=4.5&bc=16&seed=&scale=zero&step=x");
    expect(r.config).toEqual({ ...DEFAULT_CONFIG, bc: 16 });
    expect(r.step).toBeNull();
    expect(r.block).toBeNull();
  });

  it("keeps out-of-range integers so the server can say what is wrong", () => {
    expect(parseUrl("?n=0").config.n).toBe(0);
    expect(parseUrl("?n=99999").config.n).toBe(99999);
  });

  it("omits scale when it is the default", () => {
    expect(toSearch({ ...DEFAULT_CONFIG, scale: null }, 0, 0)).not.toContain("scale");
    expect(apiQuery({ ...DEFAULT_CONFIG, scale: 0.5 })).toBe("algo=fa2&n=8&d=4&br=4&bc=4&seed=0&scale=0.5");
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

  it("lands on the URL's step, else the block's first step", () => {
    expect(landingStep(STEPS, 5, null)).toBe(5);
    expect(landingStep(STEPS, 500, 0)).toBe(15);
    expect(landingStep(STEPS, null, 1)).toBe(8);
    expect(landingStep(STEPS, null, 7)).toBe(0);
    expect(landingStep(STEPS, null, null)).toBe(0);
  });

  it("finds the same phase in another block", () => {
    expect(stepInBlock(STEPS, 5, 1)).toBe(13);
    expect(stepInBlock(STEPS, 13, 0)).toBe(5);
    expect(stepInBlock(STEPS, 5, 9)).toBe(-1);
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
  });

  it("leaves typing and browser shortcuts alone", () => {
    expect(keyAction("ArrowRight", { inField: true })).toBeNull();
    expect(keyAction("ArrowLeft", { alt: true })).toBeNull();
    expect(keyAction("Home", { ctrl: true })).toBeNull();
    expect(keyAction(" ", { meta: true })).toBeNull();
  });
});
