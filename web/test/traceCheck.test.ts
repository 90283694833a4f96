// Issue 17 item 6: a trace whose parts are null, a string or not steps is one line saying what is wrong with it (the
// page's own check, for file:// exports too, where there is no server to blame), not "Cannot read properties of null".
import { describe, expect, it } from "vitest";
import { ApiError } from "../src/api";
import type { ConfigParams } from "../src/launch";
import { DATA_ID, pickSource } from "../src/source";
import { traceProblem, verdictProblem } from "../src/traceCheck";
import { compareProblem } from "../src/traceShape";
import SHAPE_CASES from "./cases/trace_shape_cases.json";
import { BY_ALGO, COMPARE, FA2C, LIMITS } from "./fixtures";
import COMPACT from "./fixtures/fa2_causal_n12_block0_compact.json";

const PARTS = ["tensors", "buffers", "picture", "ops", "picker", "inputs", "outputs", "kernels"];

function broken(change: Record<string, unknown>): unknown {
  return { ...structuredClone(FA2C), ...change };
}

describe("traceProblem", () => {
  it.each(Object.keys(BY_ALGO))("passes every algorithm's trace (%s)", (algo) => {
    expect(traceProblem(BY_ALGO[algo])).toBeNull();
  });

  it.each(PARTS.flatMap((p) => [[p, null] as const, [p, "x"] as const]))("%s = %j is named", (part, value) => {
    const why = traceProblem(broken({ [part]: value }));
    expect(why).toMatch(new RegExp(`^${part} must be .*\\(got ${value === null ? "null" : '"x"'}\\)$`));
  });

  it("names the first step that is not one", () => {
    expect(traceProblem(broken({ steps: [null, 1, "x"] }))).toMatch(/^steps\[0\] must be an object .*\(got null\)$/);
    const steps = structuredClone(FA2C.steps) as unknown[];
    steps[3] = { ...(steps[3] as object), op: "nope" };
    expect(traceProblem(broken({ steps }))).toBe('steps[3].op must name one of ops (got "nope")');
  });

  it.each([
    ["d", 0],
    ["n", 8.5],
    ["n", [1, 2]],
    ["br", "x"],
    ["recorded_blocks", 5],
    ["recorded_blocks", null],
    ["scale", "abc"],
  ])("config.%s = %j is named", (key, value) => {
    const t = broken({ config: { ...FA2C.config, [key]: value } });
    expect(traceProblem(t)).toMatch(new RegExp(`^config\\.${key} must be `));
  });

  // issue 17, the page fuzzer: parts a view reads that neither check looked at (the page never got ready); the same
  // cases and words as Python's check (tests/test_trace_shape.py)
  it.each(SHAPE_CASES.cases.map((c) => [c.path.join("."), c] as const))("%s a view cannot read is named", (_, c) => {
    const t = structuredClone(FA2C) as unknown as Record<string, unknown>;
    let here = t as Record<string | number, unknown>;
    for (const p of c.path.slice(0, -1)) here = here[p] as Record<string | number, unknown>;
    const last = c.path[c.path.length - 1]!;
    if ("delete" in c && c.delete) delete here[last];
    else here[last] = (c as { value?: unknown }).value;
    const why = traceProblem(t);
    expect(why).not.toBeNull();
    expect(why!.slice(0, c.says.length)).toBe(c.says);
    expect(why).not.toContain("\n");
  });

  it("keeps every message to one short line", () => {
    const t = broken({ tensors: "x".repeat(5000) });
    const why = traceProblem(t)!;
    expect(why).not.toContain("\n");
    expect(why.length).toBeLessThan(200);
  });
});

// item 3 of the hardening issue: a file whose outputs are NaN kept its stored ✓ (the page trusted reference.ok)
describe("verdictProblem", () => {
  const base64Of = (a: Float32Array) => btoa(String.fromCharCode(...new Uint8Array(a.buffer)));

  it("passes every algorithm's trace, plain and compact", () => {
    for (const t of [...Object.values(BY_ALGO), COMPACT]) expect(verdictProblem(t as unknown as Record<string, unknown>)).toBeNull();
  });

  it("names NaN outputs under a stored \u2713 (plain lists)", () => {
    const t = structuredClone(FA2C) as unknown as Record<string, unknown>;
    const rows = (t.outputs as { O: number[][] }).O;
    rows[Math.floor(Math.random() * rows.length)]![0] = Number.NaN;
    expect(traceProblem(t)).toBe(
      "outputs.O holds 1 value not finite (NaN or +\u221e), but reference.O says \u2713 with 0 not finite: the file's verdict is not its outputs'",
    );
  });

  it("names +\u221e in a compact output, and a reference to NaN inputs", () => {
    const t = structuredClone(COMPACT) as unknown as Record<string, Record<string, unknown>>;
    const o = new Float32Array(12 * 4).map(() => Math.random());
    o[5] = Number.POSITIVE_INFINITY;
    o[7] = Number.NaN;
    t.outputs!.O = { dtype: "float32", shape: [12, 4], base64: base64Of(o) };
    expect(verdictProblem(t)).toMatch(/^outputs\.O holds 2 values not finite .* says \u2713 with 0 not finite/);
    const q = new Float32Array(12 * 4).fill(Number.NaN);
    t.inputs!.Q = { dtype: "float32", shape: [12, 4], base64: base64Of(q) };
    t.outputs!.O = { dtype: "float32", shape: [12, 4], ref: "inputs/Q" };
    expect(verdictProblem(t)).toMatch(/^outputs\.O holds 48 values not finite/);
  });

  it("takes a file whose verdict counts its non-finite values (\u2717)", () => {
    const t = structuredClone(FA2C) as unknown as { outputs: { O: number[][] }; reference: Record<string, unknown> };
    t.outputs.O[0]![0] = Number.NaN;
    t.reference = { ...t.reference, ok: false, O: { ...(t.reference.O as object), ok: false, nonfinite: 1 } };
    expect(verdictProblem(t)).toBeNull();
    t.outputs.O[1]![0] = Number.NaN; // one more than it counts
    expect(verdictProblem(t)).toMatch(/^outputs\.O holds 2 values not finite .* says \u2717 with 1 not finite/);
  });
});

describe("an exported page holding a broken trace", () => {
  const at: ConfigParams = { algo: "fa2", n: 12, d: 4, br: 4, bc: 4, seed: 0, scale: null, causal: true };
  function page(trace: unknown): Document {
    const index = {
      limits: { algos: LIMITS.algos },
      origin: "flashviz export",
      host: false,
      server: false,
      traces: [{ id: "t0", config: at, recorded: [0], blocks: 3 }],
      compares: [],
    };
    const elements: Record<string, string> = { [DATA_ID]: JSON.stringify(index), t0: JSON.stringify(trace) };
    return { getElementById: (id: string) => (id in elements ? { textContent: elements[id] } : null) } as unknown as Document;
  }

  it.each(PARTS)("says in one line that its trace is broken (%s: null)", async (part) => {
    const err = await pickSource(page(broken({ [part]: null })))
      .trace(at)
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(ApiError);
    const detail = (err as ApiError).detail;
    expect(detail).toMatch(new RegExp(`^this file's trace t0 is broken: ${part} must be `));
    expect(detail).not.toMatch(/server|Cannot read/);
  });

  it("refuses an algorithm the page does not offer (config.algo fa4)", async () => {
    const t = broken({ config: { ...FA2C.config, algo: "fa4" } });
    const err = (await pickSource(page(t))
      .trace(at)
      .catch((e: unknown) => e)) as ApiError;
    expect(err.detail).toContain("config.algo must be one of standard, fa1, fa2");
    expect(err.detail).toContain('(got "fa4")');
  });
});

// a sibling: the comparison a page holds, read by the compare view on every step (a broken one stopped the stepping)
describe("compareProblem and a page holding a broken comparison", () => {
  it("passes the comparison flashviz writes", () => {
    expect(compareProblem(COMPARE)).toBeNull();
  });

  it.each([
    [{}, "config is missing (must be an object {n, d, br, bc, causal, tr, tc})"],
    [null, "the comparison must be an object"],
    [{ ...COMPARE, algorithms: "x" }, "algorithms must be an object of at least 1 (name \u2192 an object {title, "],
    [{ ...COMPARE, curves: { ...COMPARE.curves, fa2: {} } }, "curves.fa2.phases is missing (must be an integer)"],
  ])("names what is wrong (%#)", (doc, says) => {
    const why = compareProblem(doc);
    expect(why).not.toBeNull();
    expect(why!.slice(0, says.length)).toBe(says);
  });

  it("is refused in one line when the page reads it", async () => {
    const at: ConfigParams = { algo: "fa2", n: 12, d: 4, br: 4, bc: 4, seed: 0, scale: null, causal: true };
    const index = {
      limits: { algos: LIMITS.algos },
      origin: "flashviz export",
      host: false,
      server: false,
      traces: [],
      compares: [{ id: "c0", n: 12, d: 4, br: 4, bc: 4, causal: true }],
    };
    const elements: Record<string, string> = { [DATA_ID]: JSON.stringify(index), c0: JSON.stringify({ ...COMPARE, sweep: null }) };
    const doc = { getElementById: (id: string) => (id in elements ? { textContent: elements[id] } : null) } as unknown as Document;
    const err = (await pickSource(doc)
      .compare(at)
      .catch((e: unknown) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.detail).toMatch(/^this file's comparison c0 is broken: sweep must be an object \{n, bytes\} \(got null\)/);
    expect(err.detail).not.toContain("\n");
  });
});
