import { describe, expect, it } from "vitest";
import { algoSpec, endpoint, isAlgo, opKind, unitOf } from "../src/algos";
import { firstBlock, kvWidth, lastTile, pairKind } from "../src/derive";
import { int } from "../src/format";
import { chartDomain, curveAt, decadeLabel, logPos } from "../src/render/compare";
import { cacheEffect, checkProfile, launchOf, type Profile } from "../src/render/profile";
import { parseUrl, toSearch, DEFAULT_CONFIG, apiQuery } from "../src/state";
import type { Step, Trace } from "../src/types";
import type { CompareDoc, PhaseCurve } from "../src/api";

const traceOf = (c: Partial<Trace["config"]>): Trace =>
  ({ config: { algo: "fa2", n: 12, d: 4, br: 4, bc: 4, tr: 3, tc: 3, causal: true, ...c } }) as unknown as Trace;

describe("causal pairs", () => {
  it("block i reads the tiles up to its last row's, tile j meets the blocks from the one holding row j*Bc", () => {
    const t = traceOf({});
    expect([0, 1, 2].map((i) => lastTile(t, i))).toEqual([0, 1, 2]);
    expect([0, 1, 2].map((j) => firstBlock(t, j))).toEqual([0, 1, 2]);
    expect(kvWidth(t, 0)).toBe(4);
    expect(pairKind(t, 1, 1)).toBe("masked");
    expect(pairKind(t, 2, 0)).toBe("full");
    expect(pairKind(t, 0, 2)).toBe("skipped");
  });

  it("ragged N and uneven tiles: a block's last row decides", () => {
    const t = traceOf({ n: 10, br: 4, bc: 3, tr: 3, tc: 4 });
    expect(lastTile(t, 0)).toBe(1); // rows 0..3: tiles 0 (keys 0-2) and 1 (keys 3-5)
    expect(lastTile(t, 2)).toBe(3); // rows 8..9
    expect(kvWidth(t, 2)).toBe(10);
    expect(firstBlock(t, 3)).toBe(2); // keys 9..: block of row 9
  });

  it("without causal every pair runs, none masked", () => {
    const t = traceOf({ causal: false });
    expect(pairKind(t, 0, 2)).toBe("full");
    expect(lastTile(t, 0)).toBe(2);
  });
});

describe("algorithms as data", () => {
  it("knows the four algorithms and their HBM tensors", () => {
    expect(isAlgo("fa2-backward")).toBe(true);
    expect(isAlgo("fa3")).toBe(false);
    const s = { n: 8, d: 4, br: 4, bc: 4 };
    expect(algoSpec("standard", s).tensors.map((t) => t.name)).toEqual(["Q", "K", "V", "S", "P", "O"]);
    expect(algoSpec("fa1", s).tensors.map((t) => t.name)).toEqual(["Q", "K", "V", "O", "l", "m"]);
    expect(algoSpec("fa2-backward", s).blockAxis).toBe("j");
  });

  it("sends each transfer to its buffer", () => {
    expect(endpoint("standard", "S", "write", "scores")).toEqual(["Sij"]);
    expect(endpoint("standard", "S", "read", "softmax_row")).toEqual(["Sr"]);
    expect(endpoint("standard", "P", "read", "load_pv")).toEqual(["Pij"]);
    expect(endpoint("fa2", "L", "write", "write_back")).toEqual(["mi", "li"]);
    expect(endpoint("fa2-backward", "L", "read", "load_q")).toEqual(["Li"]);
  });

  it("groups steps by the block and kernel whose SRAM they share", () => {
    const step = (block: number | null, indices: Record<string, number>) => ({ block, indices }) as unknown as Step;
    expect(unitOf("fa1", step(null, { j: 0 }))).toBe(unitOf("fa1", step(1, { j: 0, i: 1 })));
    expect(unitOf("fa2-backward", step(0, { i: 0 }))).not.toBe(unitOf("fa2-backward", step(0, { j: 0 })));
    expect(unitOf("fa2", step(1, { i: 1, j: 0 }))).toBe("1");
  });

  it("colours a step by what it moves", () => {
    const s = (transfers: { kind: string }[], op = "scores") => ({ transfers, op }) as unknown as Step;
    expect(opKind(s([{ kind: "read" }]))).toBe("read");
    expect(opKind(s([{ kind: "read" }, { kind: "write" }]))).toBe("write");
    expect(opKind(s([], "online_softmax"))).toBe("softmax");
    expect(opKind(s([], "dv"))).toBe("compute");
  });
});

describe("the URL holds the algorithm", () => {
  it("round-trips it, leaving the default fa2 out", () => {
    expect(toSearch(DEFAULT_CONFIG, 0, 0)).not.toContain("algo");
    const c = { ...DEFAULT_CONFIG, algo: "fa2-backward" };
    expect(toSearch(c, 3, 1)).toMatch(/^\?algo=fa2-backward&n=8/);
    expect(parseUrl(toSearch(c, 3, 1)).config.algo).toBe("fa2-backward");
    expect(parseUrl("?algo=nonsense").config.algo).toBe("fa2");
    expect(apiQuery(c)).toContain("algo=fa2-backward");
  });
});

describe("the comparison view", () => {
  const curve: PhaseCurve = { phases: 11, phase: [0, 5, 10], op: ["a", "b", "c"], read: [1, 5, 9], written: [0, 1, 2], tensors: {} };

  it("reads every algorithm at the same fraction of its launch", () => {
    expect(curveAt(curve, 0)).toMatchObject({ phase: 0, read: 1 });
    expect(curveAt(curve, 0.55)).toMatchObject({ phase: 5, read: 5 });
    expect(curveAt(curve, 1)).toMatchObject({ phase: 10, read: 9, written: 2 });
  });

  it("draws on log axes rounded out to decades", () => {
    expect(logPos(10, 1, 100)).toBeCloseTo(0.5);
    expect(decadeLabel(1e6)).toBe("1 MB");
    expect(decadeLabel(1e4)).toBe("10 kB");
    const doc = {
      config: { n: 8, d: 4, br: 4, bc: 4, causal: false, tr: 2, tc: 2 },
      sweep: { n: [64, 128], bytes: { standard: [2000, 9000], fa1: [1500, 5000], fa2: [1200, 3000] } },
      algorithms: { fa2: { total: { bytes: 800 } } },
    } as unknown as CompareDoc;
    expect(chartDomain(doc)).toEqual({ nLo: 8, nHi: 128, bLo: 100, bHi: 10000 });
  });
});

describe("the GPU profile", () => {
  const comparison = {
    load: { measured: 1000, model: 1000, verdict: "exact" },
    store: { measured: 96, model: 80, sector_model: 96, verdict: "sector-rounded" },
    caches: { caught_bytes: 900, caught_fraction: 0.9 },
  };
  const profile = {
    schema: "flashviz.profile/1",
    config: { algo: "fa2", n: 8, d: 4, br: 4, bc: 4 },
    model: { tensors: {}, load_bytes: 1000, store_bytes: 80 },
    kernels: [{ name: "fa2", measured: { load_bytes: 1000, dram_read_bytes: 100 } }],
    measured: { load_bytes: 1000, dram_read_bytes: 100 },
    comparison,
  } as unknown as Profile;

  it("accepts a profile and says why it refuses anything else", () => {
    expect(checkProfile(profile)).toBeNull();
    expect(checkProfile({ a: 1 })).toContain("not a flashviz profile");
    expect(checkProfile({ ...profile, kernels: [] })).toContain("no kernels");
  });

  it("reads the launch-wide comparison, or an older profile's one kernel", () => {
    expect(launchOf(profile)?.comparison.load.verdict).toBe("exact");
    const old = { ...profile, comparison: undefined, measured: undefined, kernels: [{ ...profile.kernels[0], comparison }] } as unknown as Profile;
    expect(launchOf(old)?.measured.dram_read_bytes).toBe(100);
  });

  it("states the L2 effect as loads minus DRAM reads", () => {
    expect(cacheEffect({ load_bytes: 1000, dram_read_bytes: 100 }, { ...comparison, caches: undefined } as never)).toEqual({ loads: 1000, dram: 100, caught: 900, fraction: 0.9 });
  });
});

describe("formatting", () => {
  it("groups thousands without Intl", () => {
    expect(int(0)).toBe("0");
    expect(int(1234567)).toBe("1,234,567");
    expect(int(-1000)).toBe("-1,000");
    expect(int(1024.5)).toBe("1,024.5");
  });
});
