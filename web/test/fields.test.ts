// The page's form and URL parser accept exactly the launch fields /api/limits lists (its `fields`: the table
// flashviz.model.fields), each within its bounds there, and an algorithm's own defaults where the URL leaves a field
// out. LIMITS is GET /api/limits of the real app (test/fixtures/generate.py).
import { describe, expect, it } from "vitest";
import { cut, ECHO_MAX } from "../src/echo";
import type { LaunchField, Limits } from "../src/launch";
import { apiQuery, DEFAULT_CONFIG, parseUrl, sameConfig, toSearch } from "../src/state";
import { configToRaw, FALLBACK_FIELDS, FALLBACK_LIMITS, typedFields, validate } from "../src/validate";
import { LIMITS } from "./fixtures";

const FIELDS = LIMITS.fields!;
// the fields a config holds always (the options of real models, `optional`, only where given)
const launch = (f: LaunchField) => (f.kind === "int" || f.kind === "number" || f.kind === "flag") && !f.optional;
const ints = FIELDS.filter((f) => f.kind === "int" && !f.optional);

describe("the launch fields come from /api/limits", () => {
  it("the bundle's copy (used until the server answers) is the server's table", () => {
    expect(FALLBACK_FIELDS).toEqual(FIELDS);
    expect(FALLBACK_LIMITS.fields).toEqual(FIELDS);
    for (const f of ints) expect(FALLBACK_LIMITS[f.name as "n"]).toEqual([f.min, f.max]);
  });

  it("a config holds the table's launch fields, with its defaults, in its order", () => {
    expect(Object.keys(DEFAULT_CONFIG)).toEqual(["algo", ...FIELDS.filter(launch).map((f) => f.name)]);
    for (const f of FIELDS.filter(launch)) expect(DEFAULT_CONFIG[f.name], f.name).toBe(f.default);
    expect(ints.map((f) => f.name)).toEqual(["n", "d", "br", "bc", "seed"]);
  });

  it("the URL takes each integer field within its bounds and refuses one past them, in the table's words", () => {
    for (const f of ints) {
      for (const v of [f.min!, f.max!]) expect(parseUrl(`?${f.name}=${v}`, LIMITS).config[f.name], `${f.name}=${v}`).toBe(v);
      for (const v of [f.min! - 1, f.max! + 1]) {
        const r = parseUrl(`?${f.name}=${v}`, LIMITS);
        expect(r.config[f.name]).toBe(f.default);
        expect(r.problems).toEqual([`URL ${f.name}="${v}": must be an integer in ${f.min}..${f.max}; showing ${f.name}=${f.default}`]);
      }
    }
  });

  it("the form takes each typed field within its bounds and refuses one past them, in the server's words", () => {
    const raw = configToRaw(DEFAULT_CONFIG, LIMITS);
    expect(Object.keys(raw)).toEqual(typedFields(LIMITS).map((f) => f.name));
    for (const f of ints) {
      const low = validate({ ...raw, [f.name]: String(f.min! - 1) }, LIMITS, false, "fa2");
      expect(low.errors[f.name]).toBe(`must be an integer in ${f.min}..${f.max} (got ${f.min! - 1})`);
      expect(validate({ ...raw, [f.name]: String(f.max) }, LIMITS, false, "fa2").errors[f.name]).toBeUndefined();
    }
    const scale = FIELDS.find((f) => f.kind === "number")!;
    expect(validate({ ...raw, scale: "0" }, LIMITS).errors.scale).toBe(
      `must be a finite number with 1e-06 <= |scale| <= 1e+06, or empty for ${scale.empty}`,
    );
  });

  it("the options of real models are held only where given, read and written as the server takes them", () => {
    const r = parseUrl("?algo=fa2-triton&n=64&window=16,0&group=2&softcap=5&seqlens=20,44&nk=", LIMITS);
    expect(r.problems).toEqual([]);
    expect(r.config).toMatchObject({ window: "16,0", group: 2, softcap: 5, seqlens: "20,44" });
    expect(r.config.nk).toBeUndefined(); // empty: its default (N)
    expect(parseUrl("?group=1&softcap=0", LIMITS).config).toEqual(parseUrl("", LIMITS).config); // their defaults: left out
    expect(apiQuery(r.config)).toContain("window=16%2C0");
    const group = FIELDS.find((f) => f.name === "group")!;
    expect(parseUrl("?group=9", LIMITS).problems).toEqual([
      `URL group="9": must be an integer in ${group.min}..${group.max}; showing group=1`,
    ]);
    const window = FIELDS.find((f) => f.name === "window")!;
    expect(parseUrl("?window=3", LIMITS).problems).toEqual([
      `URL window="3": must be 2 comma-separated integers, each in ${window.min}..${window.max}, or empty for -1,-1; showing the default -1,-1`,
    ]);
    const raw = configToRaw(DEFAULT_CONFIG, LIMITS);
    expect(validate({ ...raw, window: "1,2,3" }, LIMITS).errors.window).toBe(
      `must be 2 comma-separated integers, each in ${window.min}..${window.max}, or empty for -1,-1 (got 1,2,3)`,
    );
    expect(validate({ ...raw, window: "8,-1", group: "" }, LIMITS).config).toEqual({ ...DEFAULT_CONFIG, window: "8,-1" });
  });

  it("a field the table adds is read, checked, written and sent with no other change to the page", () => {
    const window: LaunchField = {
      name: "sinks",
      kind: "int",
      label: "W",
      help: "keys each query sees",
      default: 0,
      min: 0,
      max: 64,
      own: false,
      empty: "",
    };
    const wide: Limits = { ...LIMITS, fields: [...FIELDS, window] };
    const r = parseUrl("?n=16&sinks=3", wide);
    expect(r).toMatchObject({ config: { n: 16, sinks: 3 }, problems: [] });
    expect(parseUrl("?sinks=65", wide).problems).toEqual(['URL sinks="65": must be an integer in 0..64; showing sinks=0']);
    expect(parseUrl("?sinks=3", LIMITS).config.sinks).toBeUndefined(); // a server without it: not the page's either
    expect(toSearch(r.config, 0, 0, 1, LIMITS.default)).toBe("?n=16&d=4&br=4&bc=4&seed=0&sinks=3&step=1&block=0");
    expect(apiQuery(r.config)).toContain("sinks=3");
    expect(sameConfig(r.config, { ...r.config, sinks: 4 })).toBe(false);
    const raw = configToRaw(r.config, wide);
    expect(raw.sinks).toBe("3");
    expect(validate({ ...raw, sinks: "99" }, wide).errors.sinks).toBe("must be an integer in 0..64 (got 99)");
    expect(validate(raw, wide).config).toMatchObject({ sinks: 3 });
  });
});

describe("an algorithm's own defaults", () => {
  const triton = LIMITS.algos!.find((a) => a.name === "fa2-triton")!;

  it("are what a URL naming it leaves out, and what a bad value falls back to", () => {
    expect(triton.example).toEqual({ n: 128, d: 32, br: 64, bc: 32 });
    expect(parseUrl("?algo=fa2-triton", LIMITS)).toMatchObject({ config: { algo: "fa2-triton", ...triton.example }, problems: [] });
    expect(parseUrl("?algo=fa2-triton&n=256", LIMITS).config).toMatchObject({ n: 256, d: 32, br: 64, bc: 32 });
    expect(parseUrl("?algo=fa2-triton&d=abc", LIMITS).problems).toEqual(['URL d="abc": must be an integer in 1..256; showing d=32']);
    // an algorithm without defaults of its own: the table's
    expect(parseUrl("?algo=fa1", LIMITS).config).toMatchObject({ n: 8, d: 4, br: 4, bc: 4 });
  });
});

describe("a shown value is cut in one place", () => {
  it("keeps ECHO_MAX characters: the first ECHO_MAX - 1 and an ellipsis", () => {
    expect(cut("x".repeat(ECHO_MAX))).toBe("x".repeat(ECHO_MAX));
    expect(cut("x".repeat(ECHO_MAX + 1))).toBe(`${"x".repeat(ECHO_MAX - 1)}\u2026`);
    expect(cut("abcdef", 4)).toBe("abc\u2026");
  });
});
