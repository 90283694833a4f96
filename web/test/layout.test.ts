import { describe, expect, it } from "vitest";
import { cellRect, hitTest, layoutMemory, padding, type GridBox, type MemoryLayout } from "../src/layout";

const overlaps = (a: GridBox, b: GridBox) =>
  a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h + b.padRows * b.ch && b.y < a.y + a.h + a.padRows * a.ch;

function checkSane(l: MemoryLayout, width: number) {
  const boxes = Object.values(l.grids);
  for (const a of boxes) {
    expect(a.w).toBeGreaterThan(0);
    expect(a.h).toBeGreaterThan(0);
    expect(a.x + a.w).toBeLessThanOrEqual(width);
    for (const b of boxes) if (a !== b) expect(overlaps(a, b), `${a.name} overlaps ${b.name}`).toBe(false);
  }
  // HBM entirely left of SRAM: tiles fly across the gap
  expect(l.hbm.x + l.hbm.w).toBeLessThan(l.sram.x);
}

describe("layoutMemory", () => {
  it("prints numbers for the seed's example and lines rows up", () => {
    const l = layoutMemory({ n: 8, d: 4, br: 4, bc: 4 }, 1220, 440);
    checkSane(l, 1220);
    expect(l.hbmText && l.sramText).toBe(true);
    const g = l.grids;
    // HBM tensors share their rows
    for (const t of ["K", "V", "O", "L"] as const) {
      expect(g[t].y).toBe(g.Q.y);
      expect(g[t].rows).toBe(8);
    }
    expect(g.L.cols).toBe(1);
    // SRAM: Qi, Sij, mi, li, Oi share rows; Kj over Qi, Vj over Oi
    for (const b of ["Sij", "mi", "li", "Oi"] as const) expect(g[b].y).toBe(g.Qi.y);
    expect(g.Kj.x).toBe(g.Qi.x);
    expect(g.Vj.x).toBe(g.Oi.x);
    expect(g.Kj.y).toBeLessThan(g.Qi.y);
    expect([g.Sij.rows, g.Sij.cols]).toEqual([4, 4]);
  });

  it("switches to a colour scale for N=1024, D=64, Br=Bc=64 and still fits", () => {
    const l = layoutMemory({ n: 1024, d: 64, br: 64, bc: 64 }, 1220, 440);
    checkSane(l, 1220);
    expect(l.hbmText).toBe(false);
    expect(l.sramText).toBe(false);
    expect(l.height).toBeLessThanOrEqual(440);
    // the zoomed-in block is drawn larger than HBM
    expect(l.grids.Qi.ch).toBeGreaterThan(l.grids.Q.ch);
    // vectors never vanish
    expect(l.grids.L.w).toBeGreaterThanOrEqual(12);
    expect(l.grids.mi.w).toBeGreaterThanOrEqual(12);
  });

  it("makes room below N for the ragged last block and tile", () => {
    expect(padding({ n: 10, d: 4, br: 4, bc: 4 })).toEqual({ q: 2, kv: 2 });
    expect(padding({ n: 10, d: 4, br: 8, bc: 3 })).toEqual({ q: 6, kv: 2 });
    const l = layoutMemory({ n: 10, d: 4, br: 8, bc: 3 }, 1220, 440);
    checkSane(l, 1220);
    expect(l.grids.Q.padRows).toBe(6);
    expect(l.grids.K.padRows).toBe(2);
    expect(l.grids.Q.group).toBe(8);
    expect(l.grids.K.group).toBe(3);
  });

  it("is a pure function of its inputs", () => {
    const a = layoutMemory({ n: 64, d: 16, br: 16, bc: 32 }, 900, 400);
    const b = layoutMemory({ n: 64, d: 16, br: 16, bc: 32 }, 900, 400);
    expect(a).toEqual(b);
  });

  it.each([
    [1, 1, 1, 1],
    [4096, 256, 256, 256],
    [4096, 1, 1, 1],
    [17, 3, 5, 7],
  ])("stays sane for N=%i D=%i Br=%i Bc=%i", (n, d, br, bc) => {
    const l = layoutMemory({ n, d, br, bc }, 1220, 440);
    checkSane(l, 1220);
    expect(Number.isFinite(l.height)).toBe(true);
  });
});

describe("cellRect and hitTest", () => {
  const l = layoutMemory({ n: 8, d: 4, br: 4, bc: 4 }, 1220, 440);

  it("maps a tile to its rectangle", () => {
    const K = l.grids.K;
    const r = cellRect(K, 4, 8);
    expect(r).toEqual({ x: K.x, y: K.y + 4 * K.ch, w: K.w, h: 4 * K.ch });
  });

  it("finds the cell under the pointer, and nothing between grids", () => {
    const K = l.grids.K;
    expect(hitTest(l, K.x + 2.5 * K.cw, K.y + 5.5 * K.ch)).toEqual({ grid: "K", r: 5, c: 2 });
    const Sij = l.grids.Sij;
    expect(hitTest(l, Sij.x + 0.1, Sij.y + 0.1)).toEqual({ grid: "Sij", r: 0, c: 0 });
    expect(hitTest(l, 1, 1)).toBeNull();
  });
});

describe("layoutMemory for every algorithm", () => {
  const algos = ["fa2", "fa1", "standard", "fa2-backward"] as const;
  const shapes: [number, number, number, number][] = [
    [8, 4, 4, 4],
    [10, 4, 4, 3],
    [1024, 64, 64, 64],
    [4096, 64, 32, 32],
    [17, 3, 5, 7],
  ];
  for (const algo of algos) {
    it.each(shapes)(`${algo}: N=%i D=%i Br=%i Bc=%i fits and never overlaps`, (n, d, br, bc) => {
      const l = layoutMemory({ algo, n, d, br, bc }, 1220, 440);
      checkSane(l, 1220);
      expect(l.height).toBeLessThanOrEqual(440 + 60);
    });
  }

  it("holds each algorithm's own HBM tensors and SRAM buffers", () => {
    const names = (algo: string) => Object.keys(layoutMemory({ algo, n: 8, d: 4, br: 4, bc: 4 }, 1220, 440).grids);
    expect(names("standard")).toEqual(expect.arrayContaining(["Q", "K", "V", "S", "P", "O", "Qi", "Kj", "Sij", "Sr", "mr", "lr", "Pij", "Vj", "Oi"]));
    expect(names("fa1")).toEqual(expect.arrayContaining(["O", "l", "m", "mi", "li"]));
    expect(names("fa1")).not.toContain("L");
    expect(names("fa2-backward")).toEqual(expect.arrayContaining(["dO", "D", "dQ", "dK", "dV", "dKj", "dVj", "dOi", "Pij", "dSij", "Li", "Di"]));
  });

  it("makes S and P N x N and lines every HBM tensor up on N rows", () => {
    const l = layoutMemory({ algo: "standard", n: 64, d: 16, br: 16, bc: 16 }, 1220, 440);
    expect([l.grids.S!.rows, l.grids.S!.cols]).toEqual([64, 64]);
    expect(l.grids.S!.colAxis).toBe("kv");
    for (const t of l.hbmOrder) expect(l.grids[t]!.y).toBe(l.grids.Q!.y);
    // the one row of S (Sr) fits the SRAM panel
    expect(l.grids.Sr!.x + l.grids.Sr!.w).toBeLessThanOrEqual(l.sram.x + l.sram.w + 1);
  });

  it("puts the backward's K/V-side buffers over its Q-side ones", () => {
    const l = layoutMemory({ algo: "fa2-backward", n: 8, d: 4, br: 4, bc: 4 }, 1220, 440);
    expect(l.grids.Kj!.x).toBe(l.grids.Qi!.x);
    expect(l.grids.Kj!.y).toBeLessThan(l.grids.Qi!.y);
    expect(l.grids.dK!.axis).toBe("kv");
    expect(l.grids.dQ!.axis).toBe("q");
  });
});
