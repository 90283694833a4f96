// The hardware view's pure parts, on the fixtures Python generated (web/test/fixtures/generate.py).
import { describe, expect, it } from "vitest";
import { sci } from "../src/format";
import type { AlgoInfo } from "../src/launch";
import { badgeWords, cancels, judgedText, whyText } from "../src/render/badge";
import { sramText } from "../src/render/compareTable";
import { sizesNote, switchedSizes } from "../src/render/configForm";
import { placeOf, smemText, warpColour, wavesText } from "../src/render/hardware";
import { termsText } from "../src/render/regimes";
import type { ErrorCheck, Trace } from "../src/types";
import { BWD, COMPARE, FA1, FA2C, STD, TRITON } from "./fixtures";

describe("the trace's hardware and flops keys", () => {
  it("name every kernel the steps run, with a launch per heads value", () => {
    for (const t of [FA1, FA2C, STD, BWD, TRITON]) {
      const hw = t.hardware!;
      expect(hw.device.sms).toBe(132);
      for (const s of t.steps) expect(Object.keys(hw.kernels)).toContain(s.kernel);
      for (const k of Object.values(hw.kernels)) {
        expect(k.launches.map((l) => l.heads)).toEqual(hw.heads);
        for (const l of k.launches) {
          expect(l.resident.length).toBe(132);
          expect(l.busy_sms + l.idle_sms).toBe(132);
          expect(l.resident.reduce((a, b) => a + b, 0)).toBe(Math.min(l.blocks, k.occupancy.blocks_per_sm * 132));
        }
      }
      expect(t.flops!.matches).toBe(true);
      expect(t.flops!.non_matmul).toBeGreaterThan(0);
    }
  });

  it("gives fa1 one block per head and fa2 Tr per head", () => {
    const one = (t: Trace) => Object.values(t.hardware!.kernels)[0]!.launches[0]!;
    expect(one(FA1).blocks).toBe(1);
    expect(one(FA2C).blocks).toBe(FA2C.config.tr);
  });

  it("places block b on SM b mod 132, in waves of blocks_per_sm x 132", () => {
    expect(placeOf(0, 132, 2)).toEqual({ sm: 0, wave: 0 });
    expect(placeOf(133, 132, 2)).toEqual({ sm: 1, wave: 0 });
    expect(placeOf(264, 132, 2)).toEqual({ sm: 0, wave: 1 });
    expect(warpColour(-1)).toContain("cell-zero");
    expect(warpColour(0)).not.toBe(warpColour(1));
  });

  it("reads the comparison's regimes and terms", () => {
    const doc = COMPARE;
    expect(doc.regimes!.points.filter((p) => p.current).length).toBe(1);
    const e = Object.values(doc.algorithms).find((x) => x.pass === "forward") as { terms: never[] } | undefined;
    expect(termsText([{ tensor: "Q", share: 0.32, times: 32, rewrites: null }])).toBe("Q 32% (read 32\u00d7)");
    expect(e?.terms.length).toBeGreaterThan(0);
  });
});

describe("wavesText", () => {
  it("writes two decimals, and two significant digits where two decimals would read 0.00", () => {
    expect(wavesText(15.52)).toBe("15.52");
    expect(wavesText(0.5)).toBe("0.50");
    expect(wavesText(2 / 528)).toBe("0.0038");
    expect(wavesText(0)).toBe("0.00");
  });
});

describe("shared memory, one unit on the page (issue 17 item 8)", () => {
  it("writes the hardware section's shared memory as compare's SRAM row does, in KiB", () => {
    const fa2 = Object.values(FA2C.hardware!.kernels)[0]!;
    expect(smemText(fa2)).toBe(sramText(COMPARE.algorithms.fa2!));
    // N=4096, D=64, Br=Bc=64: the fa2 kernel's 82,432 bytes (the hardware section said "82.4 kB")
    expect(smemText({ smem_bytes: 82432 })).toBe("80.5 KiB");
    expect(sramText({ sram_bytes: 82432, sram_fits: true })).toBe("80.5 KiB");
    expect(sramText({ sram_bytes: 300 * 1024, sram_fits: false })).toBe("300.0 KiB (too big)");
  });
});

describe("the exactness badge (issue 17 item 11)", () => {
  it("writes the relative error it judges and the tolerance it is judged against, not an absolute error", () => {
    const o = FA2C.reference.O as ErrorCheck;
    expect(badgeWords("O", o)).toBe(`O rel err ${sci(o.max_rel)} \u2264 ${sci(o.tolerance_rel)}`);
    expect(badgeWords("O", o)).not.toContain(sci(o.max_abs!));
    const bad: ErrorCheck = { max_abs: 0.5, max_rel: 3e-4, tolerance_rel: 1e-5, nonfinite: 0, ok: false, over: "max |ref|" };
    expect(badgeWords("l", bad)).toBe(`l rel err ${sci(3e-4)} > ${sci(1e-5)}`);
    expect(judgedText("dQ", { ...bad, over: "the largest sum of the magnitudes of its terms" })).toContain(
      "over the largest sum of the magnitudes of its terms",
    );
    expect(badgeWords("O", { ...bad, nonfinite: 3, max_abs: null, max_rel: null })).toBe("O 3 not finite");
  });

  it("adds the absolute error, and says why it passes, where a gradient's terms cancel to far less than it", () => {
    // fa2-backward at --scale 1e6: terms of 1.6e7 cancel to a dQ of 0; float32's rounding of them is ~1 in absolute
    const dq: ErrorCheck = {
      max_abs: 0.82,
      max_rel: 5.3e-8,
      tolerance_rel: 1e-4,
      nonfinite: 0,
      ok: true,
      over: "the largest sum of the magnitudes of its terms",
      over_value: 1.56e7,
      max_ref: 0,
    };
    expect(cancels(dq)).toBe(true);
    expect(badgeWords("dQ", dq)).toBe(`dQ rel err ${sci(5.3e-8)} ≤ ${sci(1e-4)} (abs err ${sci(0.82)})`);
    const why = whyText("dQ", dq, "float32");
    expect(why).toContain("the float64 answer is 0");
    expect(why).toContain(`is ${sci(1.56e7)}: the terms cancel`);
    expect(why).toContain(`${sci(2 ** -24 * 1.56e7)} for terms of ${sci(1.56e7)}: an absolute error of ${sci(0.82)} is no more than that`);
    expect(whyText("dQ", { ...dq, max_abs: 3.1 }, "float32")).toContain("is 3.3 of those");
    // an ordinary gradient (its error small beside its own size) and an output judged on its own size say nothing more
    const plain = { ...dq, max_abs: 1e-7, max_rel: 1e-9, max_ref: 2.5 };
    expect(cancels(plain)).toBe(false);
    expect(badgeWords("dQ", plain)).not.toContain("abs err");
    expect(cancels({ ...dq, over_value: undefined })).toBe(false);
    expect(cancels({ ...dq, max_ref: undefined })).toBe(false); // an older trace: no size to compare with
  });
});

describe("picking an algorithm brings its own sizes (issue 17 item 13)", () => {
  const triton: AlgoInfo = {
    name: "fa2-triton",
    title: "FA2 in Triton",
    causal: true,
    pass: "forward",
    max_n: 4096,
    allowed: { d: [32, 64, 96, 128, 256], br: [16, 32, 64, 128, 256], bc: [16, 32, 64, 128, 256] },
    launch_rule: "powers of two",
    example: { n: 128, d: 32, br: 64, bc: 32 },
    example_why: "its kernel runs D of 32 to 256",
  };
  const fa2: AlgoInfo = { name: "fa2", title: "FA2", causal: true, pass: "forward", max_n: 4096 };
  const runs = (f: string, v: number) => (triton.allowed![f] ? triton.allowed![f]!.includes(v) : true);
  it("moves every size still at the seed's default, and says so", () => {
    const changed = switchedSizes({ n: "8", d: "4", br: "4", bc: "4" }, fa2, triton, runs);
    expect(changed.map((c) => [c.field, c.to])).toEqual([
      ["n", 128],
      ["d", 32],
      ["br", 64],
      ["bc", 32],
    ]);
    const note = sizesNote(triton, changed);
    expect(note).toContain("N 8 \u2192 128, D 4 \u2192 32, Br 4 \u2192 64, Bc 4 \u2192 32");
    expect(note).toContain("fa2-triton's own defaults: its kernel runs D of 32 to 256");
  });
  it("keeps a size the user typed that the kernel runs, and replaces one it does not", () => {
    const changed = switchedSizes({ n: "300", d: "64", br: "4", bc: "128" }, fa2, triton, runs);
    expect(changed.map((c) => [c.field, c.from, c.to])).toEqual([["br", 4, 64]]);
  });
  it("goes back to the seed's sizes from the algorithm's own, and changes nothing between two without their own", () => {
    const back = switchedSizes({ n: "128", d: "32", br: "64", bc: "32" }, triton, fa2, () => true);
    expect(back.map((c) => c.to)).toEqual([8, 4, 4, 4]);
    expect(switchedSizes({ n: "8", d: "4", br: "4", bc: "4" }, fa2, { ...fa2, name: "fa1" }, () => true)).toEqual([]);
  });
});
