import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { bytes, cell, full, int, kib, num, sci } from "../src/format";
import { FALLBACK_LIMITS, validate } from "../src/validate";
import { LIMITS } from "./fixtures";

describe("format", () => {
  it("spells −∞ for null and uses a real minus", () => {
    expect(num(null)).toBe("\u2212\u221e");
    expect(num(-1.38712)).toBe("\u22121.39");
    expect(num(0)).toBe("0");
    expect(full(-0.074993245)).toBe("\u22120.07499325");
  });

  it("fits a cell's width", () => {
    expect(cell(1.117622, 5)).toBe("1.12");
    expect(cell(-1.3871249, 5)).toBe("\u22121.39");
    expect(cell(-1.3871249, 4)).toBe("\u22121.4");
    expect(cell(0.60142773, 4)).toBe(".60");
    expect(cell(null, 4)).toBe("\u2212\u221e");
  });

  it("spells every non-finite value: null is \u2212\u221e, NaN is NaN, a missing value a dash (item 10)", () => {
    for (const f of [num, full, sci, (x: number | null) => cell(x, 4)]) {
      expect(f(null)).toBe("\u2212\u221e");
      expect(f(Number.NEGATIVE_INFINITY)).toBe("\u2212\u221e");
      expect(f(Number.POSITIVE_INFINITY)).toBe("+\u221e");
      expect(f(Number.NaN)).toBe("NaN"); // a row with no finite score: what the kernel computes, as the narrative says
      expect(f(undefined as unknown as number)).toBe("\u2014");
      expect(f("NaN" as unknown as number)).toBe("\u2014"); // strings are decoded by parseTrace, never shown raw
    }
    expect(num(0)).toBe("0");
    expect(int(Number.NaN)).toBe("\u2014");
    expect(bytes(Number.NaN)).toBe("\u2014");
  });
});

describe("units (item 5): bytes moved in decimal units, shared memory in KiB", () => {
  it("writes bytes moved as ncu does: 1 kB = 1000 B", () => {
    expect(bytes(0)).toBe("0 B");
    expect(bytes(352)).toBe("352 B");
    expect(bytes(1000)).toBe("1.0 kB");
    expect(bytes(1250)).toBe("1.3 kB"); // half up on the exact integer, not through a float
    expect(bytes(999_950)).toBe("1.0 MB"); // not 1,000.0 kB
    expect(bytes(25_690_112)).toBe("25.7 MB"); // standard at N=1024, D=64, Br=Bc=64: what `flashviz compare` prints
    expect(bytes(8_912_896)).toBe("8.9 MB");
    expect(bytes(2 ** 66)).toBe("73.8 EB");
    expect(bytes(-1500)).toBe("-1.5 kB");
  });

  it("writes shared memory as CUDA sizes it: 1 KiB = 1024 B", () => {
    expect(kib(352)).toBe("352 B");
    expect(kib(49152)).toBe("48.0 KiB");
    expect(kib(232448)).toBe("227.0 KiB");
    expect(kib(82432)).toBe("80.5 KiB");
  });

  it("prints the very strings src/flashviz/model/units.py prints, on fresh random sizes", () => {
    // sizes from 1 B to 2^62 B, each magnitude equally likely, plus the rounding edges of every unit (sent to Python
    // as the exact integers the doubles hold)
    const sizes: number[] = [];
    for (let k = 0; k < 600; k++) sizes.push(Math.floor(2 ** (Math.random() * 62)));
    for (let e = 3; e <= 15; e += 3) for (const d of [-50, -1, 0, 1, 49, 50, 51]) sizes.push(Math.round(10 ** e + d * 10 ** (e - 4)));
    for (const d of [-1, 0, 1, 51, 52, 256, 512]) sizes.push(1024 + d, 10 * 1024 + d);
    const script =
      "import json, sys\nfrom flashviz.model.units import human_bytes, kib\nprint(json.dumps([[human_bytes(b), kib(b)] for b in map(int, json.load(sys.stdin))]))";
    const src = decodeURIComponent(new URL("../../src", import.meta.url).pathname);
    const env = { ...process.env, PYTHONPATH: [src, process.env.PYTHONPATH].filter(Boolean).join(":") };
    const out = execFileSync(process.env.PYTHON ?? "python3", ["-c", script], {
      input: JSON.stringify(sizes.map((b) => BigInt(b).toString())),
      env,
      encoding: "utf8",
    });
    const py = JSON.parse(out) as [string, string][];
    expect(sizes.map((b) => [bytes(b), kib(b)])).toEqual(py);
  });
});

describe("validate", () => {
  const ok = { n: "8", d: "4", br: "4", bc: "4", seed: "0", scale: "" };
  it("accepts the seed's example", () => {
    expect(validate(ok, FALLBACK_LIMITS, false, "fa2")).toEqual({
      config: { algo: "fa2", n: 8, d: 4, br: 4, bc: 4, seed: 0, scale: null, causal: false },
      errors: {},
    });
  });
  it("holds an algorithm to its own N limit, saying why in the server's words (standard: S and P are N x N)", () => {
    const limits = { ...LIMITS, fields: LIMITS.fields!.map((f) => (f.name === "n" ? { ...f, max: 8192 } : f)) };
    const std = LIMITS.algos!.find((a) => a.name === "standard")!;
    expect(std.max_n).toBe(4096);
    expect(validate({ ...ok, n: "5000" }, limits, false, "standard").errors.n).toBe(
      `must be at most 4096 for standard, which ${std.max_n_reason} (got 5000)`,
    );
    expect(std.max_n_reason).toContain("S and P");
    expect(
      validate({ ...ok, n: "5000" }, { ...limits, algos: [{ ...std, max_n: 4096, name: "fa2", max_n_reason: "" }] }, false, "fa2").errors.n,
    ).toBe("must be at most 4096 for fa2 (got 5000)");
  });
  it("says what range is accepted, in the API's words", () => {
    const v = validate({ ...ok, n: "0" }, FALLBACK_LIMITS);
    expect(v.config).toBeNull();
    expect(v.errors.n).toBe("must be an integer in 1..4096 (got 0)");
    expect(validate({ ...ok, br: "2.5" }, FALLBACK_LIMITS).errors.br).toContain("1..256");
    expect(validate({ ...ok, scale: "0" }, FALLBACK_LIMITS).errors.scale).toContain("|scale|");
    expect(validate({ ...ok, scale: "0.25" }, FALLBACK_LIMITS).config?.scale).toBe(0.25);
  });
});
