import { describe, expect, it } from "vitest";
import type { CompareDoc } from "../src/compareDoc";
import { cellRect, hitTest } from "../src/hitTest";
import {
  connectors,
  crosses,
  fitOne,
  type Measure,
  NOTE_FONT,
  placeLines,
  placeNote,
  overlaps as rectsOverlap,
  regions,
  separatorSegments,
  tileCaptionVariants,
  tipPlace,
} from "../src/labels";
import { layoutMemory } from "../src/layout";
import { type GridBox, type MemoryLayout, STACK_BELOW, STACK_IF_TEXT_BELOW } from "../src/layoutBoxes";
import { padding } from "../src/layoutHbm";
import { wrapSram } from "../src/layoutSram";
import { pictureSpec, type Shape } from "../src/picture";
import { chartLayout } from "../src/render/compareChart";
import { BY_ALGO, COMPARE } from "./fixtures";

/** The memory picture of an algorithm (fa2 by default) at a shape: its fixture trace's own picture, laid out there. */
function lay(s: Shape & { algo?: string }, width: number, height: number): MemoryLayout {
  return layoutMemory(pictureSpec(BY_ALGO[s.algo ?? "fa2"]!, s), s, width, height);
}

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
    const l = lay({ n: 8, d: 4, br: 4, bc: 4 }, 1220, 440);
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
    const l = lay({ n: 1024, d: 64, br: 64, bc: 64 }, 1220, 440);
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
    const l = lay({ n: 10, d: 4, br: 8, bc: 3 }, 1220, 440);
    checkSane(l, 1220);
    expect(l.grids.Q.padRows).toBe(6);
    expect(l.grids.K.padRows).toBe(2);
    expect(l.grids.Q.group).toBe(8);
    expect(l.grids.K.group).toBe(3);
  });

  it("is a pure function of its inputs", () => {
    const a = lay({ n: 64, d: 16, br: 16, bc: 32 }, 900, 400);
    const b = lay({ n: 64, d: 16, br: 16, bc: 32 }, 900, 400);
    expect(a).toEqual(b);
  });

  it.each([
    [1, 1, 1, 1],
    [4096, 256, 256, 256],
    [4096, 1, 1, 1],
    [17, 3, 5, 7],
  ])("stays sane for N=%i D=%i Br=%i Bc=%i", (n, d, br, bc) => {
    const l = lay({ n, d, br, bc }, 1220, 440);
    checkSane(l, 1220);
    expect(Number.isFinite(l.height)).toBe(true);
  });
});

describe("cellRect and hitTest", () => {
  const l = lay({ n: 8, d: 4, br: 4, bc: 4 }, 1220, 440);

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
      const l = lay({ algo, n, d, br, bc }, 1220, 440);
      checkSane(l, 1220);
      expect(l.height).toBeLessThanOrEqual(440 + 60);
    });
  }

  it("holds each algorithm's own HBM tensors and SRAM buffers", () => {
    const names = (algo: string) => Object.keys(lay({ algo, n: 8, d: 4, br: 4, bc: 4 }, 1220, 440).grids);
    expect(names("standard")).toEqual(
      expect.arrayContaining(["Q", "K", "V", "S", "P", "O", "Qi", "Kj", "Sij", "Sr", "mr", "lr", "Pij", "Vj", "Oi"]),
    );
    expect(names("fa1")).toEqual(expect.arrayContaining(["O", "l", "m", "mi", "li"]));
    expect(names("fa1")).not.toContain("L");
    expect(names("fa2-backward")).toEqual(
      expect.arrayContaining(["dO", "Delta", "dQ", "dK", "dV", "dKj", "dVj", "dOi", "Oi", "Pij", "dSij", "Li", "Deltai"]),
    );
  });

  it("makes S and P N x N and lines every HBM tensor up on N rows", () => {
    const l = lay({ algo: "standard", n: 64, d: 16, br: 16, bc: 16 }, 1220, 440);
    expect([l.grids.S!.rows, l.grids.S!.cols]).toEqual([64, 64]);
    expect(l.grids.S!.colAxis).toBe("kv");
    for (const t of l.hbmOrder) expect(l.grids[t]!.y).toBe(l.grids.Q!.y);
    // the one row of S (Sr) fits the SRAM panel
    expect(l.grids.Sr!.x + l.grids.Sr!.w).toBeLessThanOrEqual(l.sram.x + l.sram.w + 1);
  });

  it("puts the backward's K/V-side buffers over its Q-side ones", () => {
    const l = lay({ algo: "fa2-backward", n: 8, d: 4, br: 4, bc: 4 }, 1220, 440);
    expect(l.grids.Kj!.x).toBe(l.grids.Qi!.x);
    expect(l.grids.Kj!.y).toBeLessThan(l.grids.Qi!.y);
    expect(l.grids.dK!.axis).toBe("kv");
    expect(l.grids.dQ!.axis).toBe("q");
  });
});

// ---- issue 8, items 20 and 21: nothing cut off, nothing written across a line, a phone layout ----

/** A stand-in for canvas text metrics: 0.6 em per character at the font's size. */
const measure: Measure = (text, font) => text.length * 0.6 * Number(/(\d+(?:\.\d+)?)px/.exec(font)![1]);

const ALGOS = ["fa2", "fa1", "standard", "fa2-backward"] as const;
const SHAPES: [number, number, number, number][] = [
  [8, 4, 4, 4],
  [10, 4, 4, 3],
  [12, 4, 4, 4],
  [64, 16, 16, 16],
  [1024, 64, 64, 64],
  [17, 3, 5, 7],
];
const WIDTHS = [1220, 1340, 900, 352, 330];
const NOTES = ["not written yet:\nwritten once,\nat write-back", "not written yet", "empty"];

describe("notes inside grids (item 20: 'written once,' struck through by the block boundary)", () => {
  it("sits between the seed's block boundaries in O, not across the one at row 4", () => {
    const l = lay({ n: 8, d: 4, br: 4, bc: 4 }, 1220, 440);
    const O = l.grids.O!;
    const placed = placeNote(O, NOTES[0]!, 4, measure)!;
    expect(placed.lines).toEqual(["not written yet:", "written once,", "at write-back"]);
    const boundary = separatorSegments(O, 4)[0]!;
    expect(Math.abs(boundary.y - (O.y + 4 * O.ch))).toBeLessThanOrEqual(1);
    expect(crosses(placed.box, boundary)).toBe(false);
    // what the old renderer did (the lines centred on the whole grid) crossed it
    const oldBox = { x: placed.box.x, y: O.y + O.h / 2 - 21, w: placed.box.w, h: 42 };
    expect(crosses(oldBox, boundary)).toBe(true);
  });

  for (const algo of ALGOS) {
    it(`never crosses a boundary or leaves its grid: ${algo}, every shape and width`, () => {
      for (const [n, d, br, bc] of SHAPES) {
        for (const width of WIDTHS) {
          const l = lay({ algo, n, d, br, bc }, width, 440);
          for (const b of Object.values(l.grids)) {
            const lines = b.area === "hbm" ? separatorSegments(b, bc) : [];
            for (const text of NOTES) {
              const p = placeNote(b, text, bc, measure);
              if (!p) continue;
              for (const seg of lines) expect(crosses(p.box, seg), `${algo} ${b.name} N=${n} w=${width}: "${text}"`).toBe(false);
              expect(p.box.x).toBeGreaterThanOrEqual(b.x);
              expect(p.box.y).toBeGreaterThanOrEqual(b.y);
              expect(p.box.x + p.box.w).toBeLessThanOrEqual(b.x + b.w);
              expect(p.box.y + p.box.h).toBeLessThanOrEqual(b.y + b.h);
              for (const line of p.lines) expect(measure(line, NOTE_FONT)).toBeLessThanOrEqual(p.box.w + 1e-9);
            }
          }
        }
      }
    });
  }

  it("wraps words to a narrow tile (standard's S, P) and leaves the note out where nothing fits", () => {
    const l = lay({ algo: "standard", n: 8, d: 4, br: 4, bc: 4 }, 1340, 440);
    const S = l.grids.S!;
    const p = placeNote(S, "not written yet", 4, measure);
    if (p) {
      expect(p.lines.length).toBeGreaterThan(1);
      const rs = regions(S, 4);
      expect(rs.some((r) => p.box.x >= r.x && p.box.x + p.box.w <= r.x + r.w)).toBe(true);
    }
    const tiny = { ...S, w: 10, h: 10, cw: 1.25, ch: 1.25 };
    expect(placeNote(tiny, "not written yet", 4, measure)).toBeNull();
  });
});

describe("connectors (item 20: dashed arrows crossed labels)", () => {
  for (const algo of ALGOS) {
    it(`stay in their band, clear of every panel: ${algo}`, () => {
      for (const width of WIDTHS) {
        const l = lay({ algo, n: 8, d: 4, br: 4, bc: 4 }, width, 440);
        // one connector from every HBM tensor to every SRAM buffer, both ways
        const ends = l.hbmOrder.flatMap((t) =>
          l.sramOrder.flatMap((b) =>
            (["read", "write"] as const).map((kind) => {
              const g = l.grids[t]!;
              const s = l.grids[b]!;
              return { hbmX: g.x + g.w / 2, sramX: s.x + s.w / 2, kind };
            }),
          ),
        );
        const band = l.band;
        const arcs = connectors(l, ends);
        expect(arcs).toHaveLength(ends.length);
        arcs.forEach((arc, k) => {
          expect(arc.box.y).toBeGreaterThanOrEqual(band.y - 0.01);
          expect(arc.box.y + arc.box.h).toBeLessThanOrEqual(band.y + band.h + 0.01);
          // panels (with the padding they are drawn with) and their titles lie outside the band
          for (const p of [l.hbm, l.sram]) expect(rectsOverlap(arc.box, { x: p.x - 6, y: p.y + 0.5, w: p.w + 12, h: p.h })).toBe(false);
          // from the tile's column to the buffer's, the head where the data goes: SRAM on a read, HBM on a write
          const e = ends[k]!;
          expect([arc.a.x, arc.z.x]).toEqual(e.kind === "read" ? [e.hbmX, e.sramX] : [e.sramX, e.hbmX]);
          const intoSram = e.kind === "read";
          expect(arc.z.y).toBeCloseTo(!l.stacked ? band.y + band.h - 1 : intoSram ? band.y + band.h - 1 : band.y + 1, 5);
        });
      }
    });
  }
});

describe("the tile caption (item 20: 'K[4:8], V[…] held')", () => {
  it("names both tiles' rows", () => {
    const v = tileCaptionVariants(1, 2, [4, 8], "tile");
    expect(v[0]).toEqual(["tile j = 1 of Tc = 2", "K[4:8], V[4:8] held"]);
    expect(v.flat().join(" ")).not.toContain("\u2026");
  });

  it("is shortened to fit, never squeezed", () => {
    const v = tileCaptionVariants(12, 16, [768, 832], "tile");
    const room = { x: 0, y: 0, w: 130, h: 60 };
    const p = placeLines(room, v, measure)!;
    for (const line of p.lines) expect(measure(line, p.font)).toBeLessThanOrEqual(room.w - 8);
    expect(placeLines({ x: 0, y: 0, w: 20, h: 60 }, v, measure)).toBeNull();
    expect(fitOne(["HBM · global memory · N=8", "HBM"], 40, "11px x", measure)).toBe("HBM");
  });
});

describe("the cell tooltip (item 20: clipped)", () => {
  const bounds = { x: 0, y: 0, w: 1000, h: 400 };
  it("stays inside the picture near every edge", () => {
    for (const [x, y] of [
      [5, 5],
      [990, 5],
      [5, 395],
      [990, 395],
      [500, 200],
    ] as const) {
      const at = tipPlace(x, y, 260, 70, bounds);
      expect(at.left).toBeGreaterThanOrEqual(0);
      expect(at.top).toBeGreaterThanOrEqual(0);
      expect(at.left + 260).toBeLessThanOrEqual(1000);
      expect(at.top + 70).toBeLessThanOrEqual(400);
    }
    // below-right of the pointer when there is room, above it near the bottom (not over the cell)
    expect(tipPlace(100, 100, 200, 60, bounds)).toEqual({ left: 114, top: 116 });
    expect(tipPlace(100, 380, 200, 60, bounds).top).toBe(380 - 14 - 60);
  });
});

describe("the phone layout (item 21)", () => {
  for (const algo of ALGOS) {
    it.each(SHAPES)(`${algo}: HBM above SRAM within the width, N=%i D=%i Br=%i Bc=%i`, (n, d, br, bc) => {
      for (const width of [352, 330]) {
        const l = lay({ algo, n, d, br, bc }, width, 472);
        expect(l.stacked).toBe(true);
        expect(l.width).toBeLessThanOrEqual(width);
        expect(l.hbm.y + l.hbm.h).toBeLessThanOrEqual(l.band.y);
        expect(l.band.y + l.band.h).toBeLessThanOrEqual(l.sram.y);
        const boxes = Object.values(l.grids);
        for (const a of boxes) {
          expect(a.x).toBeGreaterThanOrEqual(0);
          expect(a.x + a.w).toBeLessThanOrEqual(width);
          for (const b of boxes) if (a !== b) expect(rectsOverlap(a, b), `${a.name} overlaps ${b.name}`).toBe(false);
        }
      }
    });
  }

  it("prints numbers in the seed's SRAM on a phone, wrapping its rows", () => {
    const l = lay({ n: 8, d: 4, br: 4, bc: 4 }, 352, 472);
    expect(l.sramText).toBe(true);
    for (const b of ["Qi", "Sij", "mi", "li", "Oi", "Kj", "Vj"]) expect(l.grids[b]!.cw).toBeGreaterThanOrEqual(30);
    // Qi and Sij on one line, mi, li and Oi on the next: no line wider than the others need
    expect(l.grids.Sij!.y).toBe(l.grids.Qi!.y);
    expect(l.grids.mi!.y).toBe(l.grids.Oi!.y);
    expect(l.grids.mi!.y).toBeGreaterThan(l.grids.Qi!.y);
    const wrapped = wrapSram(pictureSpec(BY_ALGO.fa2!, { n: 8, d: 4, br: 4, bc: 4 }), 328);
    expect(wrapped.sram.map((r) => r.map((b) => b.name))).toEqual([
      ["Kj", "Vj"],
      ["Qi", "Sij"],
      ["mi", "li", "Oi"],
    ]);
  });

  it("stacks on a tablet only when that prints numbers, and keeps a desktop side by side", () => {
    // 706 px (a 768 px tablet's card): side by side would be colours only; stacked, both panels print numbers
    const tablet = lay({ n: 8, d: 4, br: 4, bc: 4 }, 706, 440);
    expect([tablet.stacked, tablet.hbmText, tablet.sramText]).toEqual([true, true, true]);
    // large N prints no numbers either way: side by side, shorter
    expect(lay({ n: 1024, d: 64, br: 64, bc: 64 }, 706, 440).stacked).toBe(false);
    expect(lay({ n: 1024, d: 64, br: 64, bc: 64 }, STACK_BELOW - 1, 440).stacked).toBe(true);
    for (const algo of ALGOS) expect(lay({ algo, n: 8, d: 4, br: 4, bc: 4 }, STACK_IF_TEXT_BELOW, 440).stacked).toBe(false);
  });
});

describe("the traffic chart's words (item 20: the y-axis title collided with a tick)", () => {
  const doc = (n: number, d: number, sweepN: number[], bytes: (n: number) => [number, number, number]) =>
    ({
      config: { n, d, br: 4, bc: 4, causal: false, tr: 2, tc: 2 },
      sweep: {
        n: sweepN,
        bytes: {
          standard: sweepN.map((x) => bytes(x)[0]),
          fa1: sweepN.map((x) => bytes(x)[1]),
          fa2: sweepN.map((x) => bytes(x)[2]),
        },
      },
      algorithms: {
        fa2: { total: { bytes: bytes(n)[2] } },
        standard: { total: { bytes: bytes(n)[0] } },
        fa1: { total: { bytes: bytes(n)[1] } },
      },
    }) as unknown as CompareDoc;
  const pow2 = (lo: number, hi: number) => Array.from({ length: hi - lo + 1 }, (_, k) => 2 ** (lo + k));
  const traffic =
    (d: number) =>
    (n: number): [number, number, number] => [8 * n * n + 16 * n * d, 4 * n * d * (n / 4), 16 * n * d];
  const docs = [
    doc(8, 4, pow2(3, 16), traffic(4)),
    doc(1, 4, pow2(0, 16), traffic(4)),
    doc(1024, 64, pow2(6, 16), traffic(64)),
    doc(65536, 256, pow2(6, 16), traffic(256)),
    doc(876706528, 4, [...pow2(6, 16), 876706528], traffic(4)),
    COMPARE, // a real /api/compare document (N=12, causal)
  ];
  for (const width of [300, 352, 420, 560, 580]) {
    it(`keeps every word apart and inside at ${width} px`, () => {
      for (const d of docs) {
        const L = chartLayout(d, width, 300);
        for (const a of L.boxes) {
          expect(a.x, a.text).toBeGreaterThanOrEqual(0);
          expect(a.y, a.text).toBeGreaterThanOrEqual(0);
          expect(a.x + a.w, a.text).toBeLessThanOrEqual(width);
          expect(a.y + a.h, a.text).toBeLessThanOrEqual(300);
          for (const b of L.boxes)
            if (a !== b) expect(rectsOverlap(a, b), `"${a.text}" overlaps "${b.text}" (N=${d.config.n})`).toBe(false);
        }
        // the plot (lines, dots) stays clear of the words on its left, below and above
        const plot = { x: L.m.l, y: L.m.t, w: L.W, h: L.H };
        for (const b of L.boxes.filter((x) => x.kind !== "series")) expect(rectsOverlap(b, plot), b.text).toBe(false);
      }
    });
  }

  it("puts the current N on the lines' domain", () => {
    const L = chartLayout(docs[0]!, 560, 300);
    expect(L.cx).toBeCloseTo(L.X(8));
    expect(L.X(8)).toBeCloseTo(L.m.l);
  });
});
