import { describe, expect, it } from "vitest";
import { parseTrace, schemaProblem, TRACE_SCHEMA } from "../src/api";
import type { CompareDoc, PhaseCurve } from "../src/compareDoc";
import { indexTrace } from "../src/derive";
import { int } from "../src/format";
import { pickOf, pictureSpec, richText, rowBlock, unitKey } from "../src/picture";
import { chartDomain, decadeLabel, logPos } from "../src/render/compareChart";
import { curveAt, progressAfter } from "../src/render/compareRace";
import { charted, series, shortName } from "../src/render/compareSeries";
import { displayed, equations, isIdea, segments } from "../src/render/idea";
import { cacheEffect, checkProfile, launchOf, type Profile } from "../src/render/profile";
import { apiQuery, DEFAULT_CONFIG, parseUrl, toSearch } from "../src/state";
import type { Trace } from "../src/types";
import { BWD, COMPARE, FA1, FA2C, LIMITS, STD } from "./fixtures";

const ALL: [string, Trace][] = [
  ["fa2", FA2C],
  ["fa1", FA1],
  ["standard", STD],
  ["fa2-backward", BWD],
];

describe("a trace describes its own picture", () => {
  it("holds its HBM tensors in the picture's order, and every buffer its steps fill in the SRAM rows", () => {
    for (const [name, t] of ALL) {
      expect(t.config.algo).toBe(name);
      const spec = pictureSpec(t);
      expect(
        spec.tensors.map((x) => x.name),
        name,
      ).toEqual(Object.keys(t.tensors));
      const rows = spec.sram.flat().map((b) => b.name);
      for (const s of t.steps) for (const b of Object.keys(s.sram)) expect(rows, `${name} ${b}`).toContain(b);
      // a tensor is N rows tall; a buffer's rows and columns are its shape at this launch
      for (const x of spec.tensors) expect(x.rows).toBe(t.config.n);
      for (const b of spec.sram.flat()) expect(b.rows * b.cols).toBe(t.buffers[b.name]!.shape.reduce((a, c) => a * c, 1));
    }
    expect(pictureSpec(STD).tensors.map((x) => [x.name, x.cols, x.colAxis])).toContainEqual(["S", 6, "kv"]);
    const sr = pictureSpec(STD)
      .sram.flat()
      .find((b) => b.name === "Sr")!;
    expect([sr.rows, sr.cols]).toEqual([1, 6]); // the softmax kernel's one row of S
  });

  it("lays out at any shape from its sizes in symbols", () => {
    const spec = pictureSpec(BWD, { n: 100, d: 16, br: 8, bc: 32 });
    expect(spec.tensors.find((x) => x.name === "Q")).toMatchObject({ rows: 100, cols: 16, axis: "q" });
    expect(spec.tensors.find((x) => x.name === "dK")).toMatchObject({ rows: 100, cols: 16, axis: "kv" });
    const kj = spec.sram.flat().find((b) => b.name === "Kj")!;
    expect([kj.rows, kj.cols, kj.rowAxis]).toEqual([32, 16, "kv"]);
  });

  it("groups steps by the kernel scope and block whose SRAM they share", () => {
    const units = (t: Trace) => new Set(t.steps.map((s) => unitKey(t, s)));
    expect(units(FA1).size).toBe(1); // one CUDA block for the whole head
    expect(units(FA2C).size).toBe(FA2C.config.recorded_blocks.length);
    // standard: block i through its three kernels
    expect(units(STD).size).toBe(STD.config.tr);
    // the backward: each preprocessing block and each fa2_bwd block is a unit of its own
    expect(units(BWD).size).toBe(2 * 2);
    expect(indexTrace(BWD).unit).toEqual(BWD.steps.map((s) => unitKey(BWD, s)));
  });

  it("says which pick a step shows and whose rows its q-axis buffers hold", () => {
    const pre = BWD.steps.find((s) => !BWD.picker.kernels.includes(s.kernel))!;
    expect(pickOf(BWD, pre)).toBeNull(); // the preprocessing kernel's blocks are not picks
    expect(rowBlock(pre)).toBe(pre.block); // its block i holds rows of Q
    const bwd = BWD.steps.find((s) => BWD.picker.kernels.includes(s.kernel) && s.indices.i === 1)!;
    expect(pickOf(BWD, bwd)).toBe(bwd.block);
    expect(rowBlock(bwd)).toBe(1);
    for (const s of FA1.steps) {
      expect(s.block).toBe(0); // blockIdx.x of its one block
      expect(pickOf(FA1, s)).toBe(s.indices.i ?? null); // the picks are its blocks of Q
    }
  });

  it("renders Rich text with its slots, and the runs that wait for one", () => {
    const r = ["at phase ", { slot: "phase" }, { when: "j", runs: [" on tile j = ", { slot: "j" }] }, ", ", { b: "bold" }];
    expect(richText(r as never, { phase: 3, j: 1 })).toBe("at phase 3 on tile j = 1, bold");
    expect(richText(r as never, { phase: 3 })).toBe("at phase 3, bold");
  });
});

describe("the URL holds the algorithm", () => {
  it("round-trips it, leaving the server's default out", () => {
    expect(toSearch(DEFAULT_CONFIG, 0, 0)).not.toContain("algo");
    const c = { ...DEFAULT_CONFIG, algo: "fa2-backward" };
    expect(toSearch(c, 3, 1, 1, LIMITS.default)).toMatch(/^\?algo=fa2-backward&n=8/);
    expect(parseUrl(toSearch(c, 3, 1), LIMITS).config.algo).toBe("fa2-backward");
    expect(parseUrl("?algo=nonsense", LIMITS).config.algo).toBe(LIMITS.default);
    expect(apiQuery(c)).toContain("algo=fa2-backward");
  });
});

describe("the schema", () => {
  it("reads flashviz.trace/4 and refuses any other version, naming both", () => {
    expect(TRACE_SCHEMA).toBe("flashviz.trace/4");
    for (const [, t] of ALL) expect(schemaProblem(t)).toBeNull();
    const old = schemaProblem({ ...FA2C, schema: "flashviz.trace/3" })!; // the last version, before trace files (issue 17)
    expect(old).toContain("flashviz.trace/3");
    expect(old).toContain("flashviz.trace/4");
    expect(old.split("\n")).toHaveLength(1);
    expect(schemaProblem({ schema: "flashviz.profile/1" })).toContain("not a flashviz trace");
    expect(schemaProblem(null)).toContain("not a flashviz trace");
    expect(schemaProblem({ schema: `flashviz.trace/${"9".repeat(500)}` })!.length).toBeLessThan(200);
  });
});

describe("the comparison view", () => {
  const curve: PhaseCurve = { phases: 11, phase: [0, 5, 10], op: ["a", "b", "c"], read: [1, 5, 9], written: [0, 1, 2], tensors: {} };

  it("reads every algorithm at the same fraction of its launch", () => {
    expect(curveAt(curve, 0)).toMatchObject({ phase: -1, read: 0, written: 0 }); // nothing done yet
    expect(curveAt(curve, 6 / 11)).toMatchObject({ phase: 5, read: 5 });
    expect(curveAt(curve, 1)).toMatchObject({ phase: 10, read: 9, written: 2 });
  });

  it("puts the watched launch at the very phase it shows, not one ahead (item 4)", () => {
    // the seed's example: 8 phases, every one sampled; after phase p the comparison reads phase p
    const fa2: PhaseCurve = {
      phases: 8,
      phase: [0, 1, 2, 3, 4, 5, 6, 7],
      op: ["load_q", "load_kv", "scores", "online_softmax", "load_kv", "scores", "online_softmax", "write_back"],
      read: [32, 96, 96, 96, 160, 160, 160, 160],
      written: [0, 0, 0, 0, 0, 0, 0, 40],
      tensors: {},
    };
    for (let p = 0; p < 8; p++) expect(curveAt(fa2, progressAfter(p, 8))).toMatchObject({ phase: p, op: fa2.op[p], read: fa2.read[p] });
    // any phase count: the same launch is read at its own phase
    for (const phases of [1, 2, 3, 7, 50, 241, 1000]) {
      const c: PhaseCurve = {
        phases,
        phase: [...Array(phases).keys()],
        op: Array(phases).fill(null),
        read: [...Array(phases).keys()],
        written: Array(phases).fill(0),
        tensors: {},
      };
      for (const p of [0, Math.floor(phases / 3), phases - 1]) expect(curveAt(c, progressAfter(p, phases)).phase).toBe(p);
    }
    // another algorithm at the same fraction of its own phases: FA2's phase 1 of 8 is standard's 16 of 130 (1/8 of 130)
    const std: PhaseCurve = {
      phases: 130,
      phase: [...Array(130).keys()],
      op: Array(130).fill(null),
      read: [...Array(130).keys()],
      written: Array(130).fill(0),
      tensors: {},
    };
    expect(curveAt(std, progressAfter(0, 8)).phase).toBe(Math.round(130 / 8) - 1);
  });

  it("reads a real /api/compare document at the watched launch's own phases, and its totals at the end", () => {
    // the same config as the FA2 causal trace: after each of its phases the comparison shows its very counters
    const fa2 = COMPARE.curves!.fa2 as PhaseCurve;
    expect(fa2.phases).toBe(FA2C.phases.length);
    FA2C.phases.forEach((p, k) => {
      const at = curveAt(fa2, progressAfter(k, FA2C.phases.length));
      const sum = (kind: "read" | "written") => Object.values(p.hbm).reduce((a, c) => a + c[kind], 0);
      expect(at).toMatchObject({ phase: k, read: sum("read"), written: sum("written") });
    });
    for (const [a, e] of Object.entries(COMPARE.algorithms)) {
      if (!e.supported) continue; // tiles its kernel does not run (fa2-triton at D=2): no counters to animate
      const c = COMPARE.curves![a] as PhaseCurve;
      expect(curveAt(c, 1), a).toMatchObject({ read: e.total!.read, written: e.total!.written });
    }
  });

  it("charts the algorithms the server swept, by the names it gives them", () => {
    expect(charted(COMPARE)).toEqual(Object.keys(COMPARE.sweep.bytes));
    for (const a of Object.keys(COMPARE.algorithms)) expect(shortName(COMPARE, a)).toBe(COMPARE.algorithms[a]!.short);
    expect(new Set(Object.keys(COMPARE.algorithms).map((a) => series(COMPARE, a))).size).toBe(Object.keys(COMPARE.algorithms).length);
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
    expect(checkProfile(null)).toBe("the file must be an object (got null)");
    expect(checkProfile([1])).toBe("the file must be an object (got [1])");
  });

  it("checks the type of every field it shows, naming the field (item 14)", () => {
    const meta = '<meta http-equiv="refresh" content="0;url=https://example.com/">';
    const cfg = (c: object) => checkProfile({ ...profile, config: { ...profile.config, ...c } });
    expect(cfg({ d: meta })).toMatch(/^config\.d must be a positive integer \(got "<meta http-equiv=.{10,30}\u2026\)$/);
    expect(cfg({ br: 4.5 })).toBe("config.br must be a positive integer (got 4.5)");
    expect(cfg({ bc: "4" })).toBe('config.bc must be a positive integer (got "4")');
    expect(cfg({ algo: "<a href=x>fa2</a>" })).toContain("config.algo must be an algorithm's name");
    expect(cfg({ algo: "fa3" })).toBeNull(); // the name is only shown and compared: the server's list may grow
    expect(cfg({ causal: "yes" })).toBe('config.causal must be true or false (got "yes")');
    const cmp = (load: object) => checkProfile({ ...profile, comparison: { ...comparison, load: { ...comparison.load, ...load } } });
    expect(cmp({ measured: "<a href='x'>1 GB</a>" })).toContain("comparison.load.measured must be a finite number");
    expect(cmp({ model: -5 })).toBe("comparison.load.model must be a number of bytes, at least 0 (got -5)");
    expect(cmp({ verdict: 3 })).toBe("comparison.load.verdict must be a string (got 3)");
    expect(checkProfile({ ...profile, measured: { load_bytes: "1e9" } })).toBe('measured.load_bytes must be a finite number (got "1e9")');
    expect(checkProfile({ ...profile, summary: ["ok", { html: "<b>" }] })).toBe('summary[1] must be a string (got {"html":"<b>"})');
    expect(checkProfile({ ...profile, kernels: [{ name: 7, measured: {} }] })).toBe("kernels[0].name must be a string (got 7)");
    expect(checkProfile({ ...profile, device: { name: ["x"] } })).toBe('device.name must be a string (got ["x"])');
    expect(checkProfile({ ...profile, model: { ...profile.model, tensors: { Q: { read_bytes: null, written_bytes: 0 } } } })).toBe(
      "model.tensors.Q.read_bytes must be a finite number (got null)",
    );
    // strings the panel shows as text may hold anything
    expect(checkProfile({ ...profile, device: { name: meta }, summary: [meta], date: meta })).toBeNull();
  });

  it("reads the launch-wide comparison, or an older profile's one kernel", () => {
    expect(launchOf(profile)?.comparison.load.verdict).toBe("exact");
    const old = {
      ...profile,
      comparison: undefined,
      measured: undefined,
      kernels: [{ ...profile.kernels[0], comparison }],
    } as unknown as Profile;
    expect(launchOf(old)?.measured.dram_read_bytes).toBe(100);
  });

  it("states the L2 effect as loads minus DRAM reads", () => {
    expect(cacheEffect({ load_bytes: 1000, dram_read_bytes: 100 }, { ...comparison, caches: undefined } as never)).toEqual({
      loads: 1000,
      dram: 100,
      caught: 900,
      fraction: 0.9,
    });
  });
});

describe("the idea, from the trace (item 18)", () => {
  it("splits a paragraph into text and inline TeX", () => {
    expect(segments("For $q$, stream $K_j, V_j$.")).toEqual([
      { tex: false, text: "For " },
      { tex: true, text: "q" },
      { tex: false, text: ", stream " },
      { tex: true, text: "K_j, V_j" },
      { tex: false, text: "." },
    ]);
    expect(segments("no formula")).toEqual([{ tex: false, text: "no formula" }]);
    expect(segments("costs $5")).toEqual([{ tex: false, text: "costs $5" }]); // an unmatched dollar is text
    expect(segments("<img src=x onerror=alert(1)>")).toEqual([{ tex: false, text: "<img src=x onerror=alert(1)>" }]);
  });

  it("knows a displayed formula", () => {
    expect(displayed("$$O = PV$$")).toBe("O = PV");
    expect(displayed("$$a$ and $b$$")).toBeNull();
    expect(displayed("text $x$")).toBeNull();
  });

  it("typesets each equation of a displayed line on its own, so that a narrow screen wraps between them", () => {
    expect(equations("a = b,\\qquad c = d")).toEqual(["a = b,", "c = d"]);
    expect(equations("S = \\tau\\, QK^{\\top},\\qquad m' = \\max\\big(m,\\ x\\big),\\qquad P")).toEqual([
      "S = \\tau\\, QK^{\\top},",
      "m' = \\max\\big(m,\\ x\\big),",
      "P",
    ]);
    // not inside braces, not a thin space "\\," and not another command that starts with qquad
    expect(equations("x_{a,\\qquad b}")).toEqual(["x_{a,\\qquad b}"]);
    expect(equations("a\\,\\qquad b")).toEqual(["a\\,\\qquad b"]);
    expect(equations("a,\\qquadx b")).toEqual(["a,\\qquadx b"]);
    expect(equations("O = PV")).toEqual(["O = PV"]);
  });

  it("accepts only {summary: string, body: string[]}", () => {
    expect(isIdea({ summary: "s", body: ["a", "$$b$$"] })).toBe(true);
    expect(isIdea({ summary: "s", body: ["a", 3] })).toBe(false);
    expect(isIdea({ body: [] })).toBe(false);
    expect(isIdea(undefined)).toBe(false);
  });
});

describe("reading a trace (item 10)", () => {
  it("reads null as \u2212\u221e and the strings NaN and Infinity in arrays as the numbers they stand for", () => {
    const t = parseTrace(
      '{"schema": "flashviz.trace/2", "op": "NaN", "sram": {"li": [0, null, "NaN", "Infinity"]}, "text": "Infinity"}',
    ) as unknown as {
      op: string;
      text: string;
      sram: { li: (number | null)[] };
    };
    expect(t.sram.li[0]).toBe(0);
    expect(t.sram.li[1]).toBeNull();
    expect(Number.isNaN(t.sram.li[2])).toBe(true);
    expect(t.sram.li[3]).toBe(Number.POSITIVE_INFINITY);
    expect(t.op).toBe("NaN"); // not an array item: a string stays a string
    expect(t.text).toBe("Infinity");
    expect(parseTrace('{"a": [1, null]}')).toEqual({ a: [1, null] });
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
