import { describe, expect, it } from "vitest";
import { bytes, cell, full, num } from "../src/format";
import { validate } from "../src/validate";
import { FALLBACK_LIMITS } from "../src/validate";

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

  it("speaks shared-memory units", () => {
    expect(bytes(352)).toBe("352 B");
    expect(bytes(49152)).toBe("48 KB");
    expect(bytes(232448)).toBe("227 KB");
  });
});

describe("validate", () => {
  const ok = { n: "8", d: "4", br: "4", bc: "4", seed: "0", scale: "" };
  it("accepts the seed's example", () => {
    expect(validate(ok, FALLBACK_LIMITS)).toEqual({ config: { algo: "fa2", n: 8, d: 4, br: 4, bc: 4, seed: 0, scale: null, causal: false }, errors: {} });
  });
  it("holds standard to its own N limit (S and P are N x N)", () => {
    const limits = { ...FALLBACK_LIMITS, n: [1, 8192] as [number, number], algos: [{ name: "standard", title: "", causal: true, pass: "forward" as const, max_n: 4096 }] };
    expect(validate({ ...ok, n: "5000" }, limits, false, "standard").errors.n).toContain("at most 4096 for standard");
    expect(validate({ ...ok, n: "5000" }, limits, false, "fa2").errors.n).toBeUndefined();
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
