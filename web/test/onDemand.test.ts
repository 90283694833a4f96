// Arrays on demand (onDemand.ts, codec.ts's stubs): the server's skeleton of fa2 at N=24 recording block 1 (every
// step's array left out) is checked and drawn from its stubs' min and max; a step's arrays are fetched before it is
// drawn, and then hold the whole trace's values; only the steps a step reads are asked for; what HBM and SRAM read at
// a step is in `stepsRead` (a left-out array read says so on the console); a bad answer is one line.
import { afterEach, describe, expect, it, vi } from "vitest";
import { schemaProblem } from "../src/api";
import { absMaxOf, hasLeftOut, isLeftOut, isStub, prepareArrays } from "../src/codec";
import { absMax } from "../src/colors";
import { indexTrace, sramAt, sramBefore } from "../src/derive";
import { HbmHistory } from "../src/hbm";
import { arraysFor, attachArrays, stepsRead } from "../src/onDemand";
import type { Step, Trace } from "../src/types";
import { BWD, FA1, FA2C, STD } from "./fixtures";
import fixture from "./fixtures/fa2_n24_block1_on_demand.json";

type Answer = { steps: Record<string, unknown>[] };
const ARRAYS = (fixture as unknown as { arrays: Answer }).arrays;
const fresh = (): Trace => structuredClone((fixture as unknown as { trace: Trace }).trace);
/** the same launch with every array (compact, made lazy: read as nested lists) */
const FULL = (() => {
  const t = structuredClone((fixture as unknown as { full: Trace }).full);
  prepareArrays(t);
  return t;
})();

function holders(s: Step): [string, Record<string, unknown>][] {
  const out: [string, Record<string, unknown>][] = [["sram", s.sram as Record<string, unknown>]];
  if (s.carries) out.push(["carries", s.carries as Record<string, unknown>]);
  (s.substeps ?? []).forEach((sub, q) => {
    out.push([`substeps/${q}`, sub.values as Record<string, unknown>]);
  });
  return out;
}

function flat(v: unknown): (number | null)[] {
  return Array.isArray(v) ? (v as unknown[]).flatMap((x) => (Array.isArray(x) ? (x as (number | null)[]) : [x as number | null])) : [];
}

/** A fetch answering from the fixture, recording what was asked. */
function server(asked: number[][], answer: (steps: number[]) => unknown = (steps) => ({ steps: steps.map((k) => ARRAYS.steps[k]) })) {
  return (steps: number[]) => {
    asked.push(steps);
    return Promise.resolve(structuredClone(answer(steps)));
  };
}

afterEach(() => vi.restoreAllMocks());

describe("arrays on demand", () => {
  it("a skeleton passes the checks with its steps' arrays left out, and its colour scales come from min and max", () => {
    const t = fresh();
    expect(schemaProblem(t)).toBeNull();
    expect(hasLeftOut(t)).toBe(true);
    let scales = 0;
    t.steps.forEach((s, k) => {
      for (const [name, g] of holders(s)) {
        for (const key of Object.keys(g)) {
          expect(isLeftOut(g, key), `steps/${k}/${name}/${key}`).toBe(true);
          const want = absMax((holders(FULL.steps[k]!).find(([n]) => n === name)![1][key] ?? []) as number[][]);
          expect(absMaxOf(g, key, () => Number.NaN)).toBe(Math.fround(want));
          scales++;
        }
      }
    });
    expect(scales).toBeGreaterThan(100);
  });

  it("a stub outside the steps, or a broken one, is one line naming it", () => {
    const t = fresh();
    (t.inputs as Record<string, unknown>).Q = { dtype: "float32", shape: [24, 4], on_demand: true, min: 0, max: 1 };
    expect(schemaProblem(t)).toMatch(/array inputs\/Q is left out \(on_demand\), but only a step's arrays may be/);
    const u = fresh();
    (u.steps[1]!.sram as Record<string, unknown>).Kj = { dtype: "float32", shape: [4, 4], on_demand: true, min: "x", max: 1 };
    expect(schemaProblem(u)).toMatch(/array steps\/1\/sram\/Kj has min "x" and max 1; expected finite numbers or null/);
  });

  it("fetches what a later step reads before it is drawn: then its values are the trace's", async () => {
    const t = fresh();
    expect(prepareArrays(t)).toBeNull();
    const asked: number[][] = [];
    attachArrays(t, server(asked));
    const idx = indexTrace(t);
    const k = t.steps.findIndex((s, q) => q > 6 && s.op === "online_softmax");
    const wait = arraysFor(t, k);
    expect(wait).not.toBeNull();
    await wait;
    const read = stepsRead(t, idx, k);
    expect(read[0]).toBe(k);
    expect(asked[0]).toEqual(read); // the first request: exactly what step k reads
    for (const q of read) {
      holders(t.steps[q]!).forEach(([name, g], h) => {
        const want = holders(FULL.steps[q]!)[h]![1];
        for (const key of Object.keys(g)) {
          expect(isLeftOut(g, key)).toBe(false);
          const a = flat(g[key]);
          const b = flat(want[key]);
          expect(a.length, `steps/${q}/${name}/${key}`).toBe(b.length);
          expect(a).toEqual(b);
        }
      });
    }
    // a step far from k was not asked for
    const far = t.steps.length - 1;
    if (!read.includes(far) && far > k + 2)
      expect(holders(t.steps[far]!).some(([, g]) => Object.keys(g).some((key) => isLeftOut(g, key)))).toBe(true);
    // once here, asking again needs nothing
    await Promise.resolve();
    expect(arraysFor(t, k) === null || (await arraysFor(t, k)) === undefined).toBe(true);
  });

  it("an answer of the wrong shape is refused in one line naming the array", async () => {
    const t = fresh();
    prepareArrays(t);
    attachArrays(
      t,
      server([], (steps) => {
        const parts = steps.map((k) => structuredClone(ARRAYS.steps[k])) as { sram: Record<string, { shape: number[] }> }[];
        for (const p of parts) for (const v of Object.values(p.sram)) v.shape = [99];
        return { steps: parts };
      }),
    );
    await expect(arraysFor(t, 1)).rejects.toThrow(
      /the server's array steps\/\d+\/sram\/\w+ has shape \[99\] where the trace said \[4,4\]|holds \d+ bytes/,
    );
  });

  it("a view reading an array not fetched yet says so on the console", () => {
    const t = fresh();
    prepareArrays(t);
    const said = vi.spyOn(console, "error").mockImplementation(() => {});
    const v = t.steps[2]!.sram.Sij;
    expect(isStub(v)).toBe(true);
    expect(said).toHaveBeenCalledWith(expect.stringMatching(/steps\/2\/sram\/Sij was read before its values were fetched/));
  });

  // stepsRead must hold everything HBM's history and the SRAM look-ups read at a step: with every other step's arrays
  // left out, drawing them reads no stub (each algorithm's fixture: fa1 writes O again and again from its steps, the
  // backward adds into dQ, standard writes S and P from SRAM)
  for (const [name, full] of Object.entries({ fa1: FA1, fa2: FA2C, "fa2-backward": BWD, standard: STD })) {
    it(`${name}: HBM and SRAM at each step read only the steps stepsRead names`, () => {
      const said = vi.spyOn(console, "error").mockImplementation(() => {});
      for (let k = 0; k < full.steps.length; k++) {
        const t = leftOutExcept(full, k);
        const idx = indexTrace(t);
        const hist = new HbmHistory(t, idx);
        const phase = t.steps[k]!.phase;
        for (const [tensor, events] of hist.events) {
          const count = hist.applied(tensor, phase);
          for (const e of events.slice(0, count)) for (let r = e.r0; r < e.r1; r++) for (let c = e.c0; c < e.c1; c++) hist.valueOf(e, r, c);
        }
        for (const b of idx.buffers) {
          sramAt(t, idx, k, b);
          sramBefore(t, idx, k, b);
        }
        expect(said, `${name} step ${k}`).not.toHaveBeenCalled();
      }
    });
  }
});

/** A copy of a plain trace whose steps' arrays are left out (stubs), but for those of the steps step k reads. */
function leftOutExcept(full: Trace, k: number): Trace {
  const t = structuredClone(full);
  const keep = new Set(stepsRead(t, indexTrace(t), k));
  t.steps.forEach((s, q) => {
    if (keep.has(q)) return;
    for (const [, g] of holders(s))
      for (const key of Object.keys(g)) g[key] = { dtype: "float32", shape: [1], on_demand: true, min: null, max: null };
  });
  prepareArrays(t);
  return t;
}
