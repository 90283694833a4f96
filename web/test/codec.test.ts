// codec.ts against flashviz.tracing.codec: the compact fixture (what `flashviz trace` writes) decodes, array by array,
// to the values of the --plain one of the same launch (as float32: the plain file writes each value's shortest
// decimal); arrays stay undecoded until read; the colour scale comes from the bytes; a broken array is one line.
import { describe, expect, it } from "vitest";
import { parseTrace, schemaProblem } from "../src/api";
import { absMaxOf, decodeFlat, isCompact, nested, prepareArrays } from "../src/codec";
import { absMax } from "../src/colors";
import { pickSource } from "../src/source";
import type { Trace } from "../src/types";
import { FA2C } from "./fixtures";
import compactDoc from "./fixtures/fa2_causal_n12_block0_compact.json";

const fresh = (): Trace => structuredClone(compactDoc) as unknown as Trace;

/** Every array holder of a trace with its path (inputs, outputs, each step's sram, carries, substeps' values). */
function holders(t: Trace): [string, Record<string, unknown>][] {
  const out: [string, Record<string, unknown>][] = [
    ["inputs", t.inputs as Record<string, unknown>],
    ["outputs", t.outputs as Record<string, unknown>],
  ];
  t.steps.forEach((s, k) => {
    out.push([`steps/${k}/sram`, s.sram as Record<string, unknown>]);
    if (s.carries) out.push([`steps/${k}/carries`, s.carries as Record<string, unknown>]);
    (s.substeps ?? []).forEach((sub, q) => {
      out.push([`steps/${k}/substeps/${q}/values`, sub.values as Record<string, unknown>]);
    });
  });
  return out;
}

function flat(v: unknown): (number | null)[] {
  return Array.isArray(v) ? (v as unknown[]).flatMap((x) => (Array.isArray(x) ? (x as (number | null)[]) : [x as number | null])) : [];
}

describe("compact arrays", () => {
  it("the fixture is compact: base64 arrays and references to the inputs' rows", () => {
    const t = fresh();
    expect(isCompact(t.inputs.Q)).toBe(true);
    const kj = t.steps.find((s) => s.op === "load_kv")!.sram.Kj as unknown as { ref: string; rows: number[] };
    expect(kj.ref).toBe("inputs/K");
    expect(kj.rows).toEqual([0, 4]);
  });

  it("decodes every array to the --plain trace's values, as float32, with null for −∞", () => {
    const t = fresh();
    expect(prepareArrays(t)).toBeNull();
    const plain = holders(FA2C);
    const got = holders(t);
    expect(got.map(([p, g]) => [p, Object.keys(g)])).toEqual(plain.map(([p, g]) => [p, Object.keys(g)]));
    let compared = 0;
    let nulls = 0;
    got.forEach(([path, g], h) => {
      for (const key of Object.keys(g)) {
        const want = plain[h]![1][key];
        const have = g[key];
        expect(Array.isArray(have), `${path}/${key}`).toBe(true);
        expect(JSON.stringify(shapeOf(have))).toBe(JSON.stringify(shapeOf(want)));
        const a = flat(have);
        const b = flat(want);
        for (let k = 0; k < a.length; k++) {
          if (b[k] === null) {
            expect(a[k]).toBeNull();
            nulls++;
          } else expect(a[k]).toBe(Math.fround(b[k] as number));
          compared++;
        }
      }
    });
    expect(compared).toBeGreaterThan(400);
    expect(nulls).toBeGreaterThan(0); // the causal mask's −∞ and mi's start
  });

  it("leaves each array undecoded until the page reads it, and the colour scale needs no lists", () => {
    const t = fresh();
    prepareArrays(t);
    const sram = t.steps[2]!.sram as Record<string, unknown>;
    const key = Object.keys(sram)[0]!;
    expect(Object.getOwnPropertyDescriptor(sram, key)!.get).toBeTypeOf("function");
    const fromBytes = absMaxOf(sram, key, (v) => absMax(v as number[][]));
    expect(Object.getOwnPropertyDescriptor(sram, key)!.get).toBeTypeOf("function"); // still not decoded
    const values = sram[key];
    expect(Object.getOwnPropertyDescriptor(sram, key)!.value).toBe(values); // decoded once, then a plain value
    expect(fromBytes).toBe(absMax(values as number[][]));
    expect(absMaxOf(sram, key, (v) => absMax(v as number[][]))).toBe(fromBytes);
  });

  it("widens bfloat16 exactly and reads NaN and ±∞ as a plain trace does", () => {
    const bits = new Uint16Array([0x3f80, 0xc040, 0x7fc0, 0xff80, 0x7f80, 0x0000]); // 1, -3, NaN, −∞, +∞, 0
    const b64 = btoa(String.fromCharCode(...new Uint8Array(bits.buffer)));
    const values = decodeFlat({ dtype: "bfloat16", shape: [6], base64: b64 });
    const row = nested(values, [6]) as (number | null)[];
    expect(row.slice(0, 2)).toEqual([1, -3]);
    expect(Number.isNaN(row[2])).toBe(true);
    expect(row.slice(3)).toEqual([null, Number.POSITIVE_INFINITY, 0]);
    expect(nested(new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3])).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
  });

  it("a broken array is one line naming it, from the server and from a file", () => {
    const cases: [(t: Trace) => void, string][] = [
      [(t) => Object.assign(t.inputs.Q as object, { dtype: "int7" }), 'array inputs/Q has dtype "int7"'],
      [
        (t) => Object.assign(t.inputs.Q as object, { shape: [12, 5] }),
        "array inputs/Q holds 192 bytes; shape [12, 5] of float32 needs 240",
      ],
      [(t) => Object.assign(t.inputs.Q as object, { base64: "@@@@" }), "array inputs/Q holds base64 that does not decode"],
      [(t) => Object.assign(t.steps[1]!.sram.Kj as object, { ref: "inputs/X" }), 'refers to "inputs/X", which is not an array before it'],
      [
        (t) => Object.assign(t.steps[1]!.sram.Kj as object, { rows: [10, 14] }),
        "has rows [10,14]; expected [first, end) within the 12 rows",
      ],
    ];
    for (const [breakIt, words] of cases) {
      const t = fresh();
      breakIt(t);
      const said = schemaProblem(t);
      expect(said).toContain(words);
      expect(said).toMatch(/^unexpected response: /);
      expect(said).not.toContain("\n");
      const fromFile = schemaProblem(fresh(), "this file holds", "export it again");
      expect(fromFile).toBeNull();
      const t2 = fresh();
      breakIt(t2);
      expect(schemaProblem(t2, "this file holds", "export it again")).toMatch(/^this file holds a broken trace: array /);
    }
  });

  it("an exported page holding a compact trace gives the page its values", async () => {
    const text = JSON.stringify(compactDoc);
    const c = { algo: "fa2", n: 12, d: 4, br: 4, bc: 4, seed: 0, scale: null, causal: true };
    const index = { limits: { algos: [{ name: "fa2" }] }, origin: "flashviz export", host: false, server: false, compares: [] };
    const traces = [{ id: "t0", config: c, recorded: [0], blocks: 3 }];
    const elements: Record<string, string> = { "flashviz-data": JSON.stringify({ ...index, traces }), t0: text };
    const doc = { getElementById: (id: string) => (id in elements ? { textContent: elements[id] } : null) } as unknown as Document;
    const t = await pickSource(doc).trace(c, 0);
    expect(flat(t.inputs.Q)[0]).toBe(Math.fround(flat(FA2C.inputs.Q)[0] as number));
    expect(parseTrace(text).schema).toBe(FA2C.schema);
  });
});

function shapeOf(v: unknown): number[] {
  if (!Array.isArray(v)) return [];
  return Array.isArray(v[0]) ? [v.length, (v[0] as unknown[]).length] : [v.length];
}
