// The viewer knows no algorithm (issue 10): every per-algorithm decision comes from the Trace (or the server's
// documents), so web/src names no algorithm, kernel or op, compares no `algo`, keeps no table keyed by them, and never
// tells kernels apart by their loop indices. This test reads every source file and fails naming the line that does.
import { describe, expect, it } from "vitest";

const SOURCES = import.meta.glob("../src/**/*.ts", { query: "?raw", import: "default", eager: true }) as Record<string, string>;
// the page's markup and style: no algorithm in their words, ids or classes either
const MARKUP = import.meta.glob(["../index.html", "../src/**/*.css"], { query: "?raw", import: "default", eager: true }) as Record<
  string,
  string
>;

// the names Python gives algorithms, kernels and ops (docs/trace-schema.md): none may appear as a string in web/src
const ALGORITHMS = ["fa1", "fa2", "standard", "fa2-backward", "fa2_backward", "fa2-triton", "fa2_triton", "ring"];
const KERNELS = ["fa2_fwd", "fa2_bwd", "fa2_bwd_preprocess", "standard_scores", "standard_softmax", "standard_pv"];
const OPS = [
  "load_q",
  "load_kv",
  "scores",
  "online_softmax",
  "write_back",
  "init",
  "load_qi",
  "update",
  "load_k",
  "softmax_row",
  "load_pv",
  "accumulate",
  "write_o",
  "load_do_o",
  "write_d",
  "probs",
  "dv",
  "ds",
  "dk",
  "dq",
  "send",
  "attend",
  "finish", // the ring's ops (its "wait" is also the schedule's word for a gap)
];
const quoted = (names: string[]) => new RegExp(`["'\`](${names.join("|")})["'\`]`);

const RULES: [string, RegExp][] = [
  // comparing two configs' algorithms (sameConfig) is fine; comparing one with a name is not
  ["a comparison of the algorithm with a name", /(?<!typeof [\w.]*)\balgo\s*[!=]==\s*["'`]|["'`]\s*[!=]==\s*[\w.]*\balgo\b/],
  ["an algorithm named in a string", quoted(ALGORITHMS)],
  ["a kernel named in a string", quoted(KERNELS)],
  ["an op named in a string", quoted(OPS)],
  ["a kernel told apart by its loop indices", /["'][ijr]["']\s+in\s/],
  ["a switch over an algorithm, op, tensor or buffer", /switch\s*\([\w.]*\b(algo|op|tensor|name|buffer)\)/],
  [
    "a per-algorithm table or function of phase 1",
    /\b(algoSpec|endpoint|MULTI_WRITE|COPY_OF|SUB|VALUE_TEX|OP_NOTE|CHART_ALGOS|FALLBACK_ALGOS|unitOf|blockLetter|iOf|opKind|tagline\(|unwrittenNote\b|pairKind|kvWidth|firstBlock|lastTile|phaseCounters|repairedPhases)\b/,
  ],
];

describe("web/src knows no algorithm", () => {
  it("reads the sources", () => {
    expect(Object.keys(SOURCES).length).toBeGreaterThan(30);
  });

  it("has no algorithm in the page's markup or style", () => {
    const found: string[] = [];
    for (const [file, text] of Object.entries(MARKUP)) {
      text.split("\n").forEach((line, k) => {
        if (/\b(fa1|fa2|fa2-backward)\b|FlashAttention-[12]|\bs-standard\b/.test(line)) found.push(`${file}:${k + 1}: ${line.trim()}`);
      });
    }
    expect(Object.keys(MARKUP).length).toBe(2);
    expect(found).toEqual([]);
  });

  for (const [what, re] of RULES) {
    it(`has no ${what}`, () => {
      const found: string[] = [];
      for (const [file, text] of Object.entries(SOURCES)) {
        text.split("\n").forEach((line, k) => {
          if (re.test(line)) found.push(`${file.replace("../", "web/")}:${k + 1}: ${line.trim()}`);
        });
      }
      expect(found).toEqual([]);
    });
  }
});
