// SRAM's side of the memory picture: its rows of buffers, a buffer over the one it aligns under (so that row r of a
// block lines up across the buffers of a row), a buffer of one long row squeezed to the panel's width; on a phone the
// rows wrap.
import { GAP, type GridBox, TEXT_MIN_W, TITLE, VEC_MIN } from "./layoutBoxes";
import { isVec, type Panel } from "./layoutCells";
import type { BufferSpec, PictureSpec } from "./picture";

export interface Placed {
  boxes: GridBox[];
  w: number;
  h: number;
}

/** SRAM's rows, placed from (x0, y0): measures as it goes (the width and height are what the panel needs). */
export function placeSram(spec: PictureSpec, p: Panel, x0: number, y0: number): Placed {
  const vec = Math.max(p.cw, VEC_MIN);
  const boxes: GridBox[] = [];
  const wide = (b: BufferSpec) => b.rows === 1 && b.cols > 1; // Sr: one row of N, sized to the panel below
  const widthOf = (b: BufferSpec, cw: number) => (isVec(b.cols) ? vec : b.cols * cw);
  // the widest ordinary row sets the panel's width; a buffer of one long row is squeezed into it
  let panelW = 0;
  for (const row of spec.sram) {
    const ordinary = row.filter((b) => !wide(b) && !spec.align[b.name]);
    if (!ordinary.length) continue;
    panelW = Math.max(panelW, ordinary.reduce((acc, b) => acc + widthOf(b, p.cw), 0) + (ordinary.length - 1) * GAP);
  }
  // x of every buffer: rows without aligned buffers first, left to right; then the rows whose buffers sit over
  // another (Kj over Qi), each aligned one at its target's x and the rest of the row after them
  const wideCw = (b: BufferSpec) => (wide(b) ? Math.min(p.cw, Math.max(0.05, (panelW - 2 * (vec + GAP)) / b.cols)) : p.cw);
  const xs = new Map<string, number>();
  const hasAligned = (row: BufferSpec[]) => row.some((b) => spec.align[b.name] !== undefined);
  for (const row of spec.sram.filter((r) => !hasAligned(r))) {
    let x = x0;
    for (const b of row) {
      xs.set(b.name, x);
      x += widthOf(b, wideCw(b)) + GAP;
    }
  }
  for (const row of spec.sram.filter(hasAligned)) {
    let cursor = x0;
    for (const b of row) {
      const target = spec.align[b.name];
      if (target === undefined) continue;
      const x = xs.get(target) ?? x0;
      xs.set(b.name, x);
      cursor = Math.max(cursor, x + widthOf(b, p.cw) + GAP);
    }
    for (const b of row) {
      if (spec.align[b.name] !== undefined) continue;
      xs.set(b.name, cursor);
      cursor += widthOf(b, wideCw(b)) + GAP;
    }
  }
  let y = y0;
  let right = x0 + panelW;
  spec.sram.forEach((row, k) => {
    y += TITLE;
    let x = x0;
    let tallest = 0;
    for (const b of row) {
      const cw = wideCw(b);
      const bx = xs.get(b.name) ?? x;
      const cellW = isVec(b.cols) ? vec : cw;
      const box: GridBox = {
        name: b.name,
        area: "sram",
        x: bx,
        y,
        w: b.cols * cellW,
        h: b.rows * p.ch,
        rows: b.rows,
        cols: b.cols,
        cw: cellW,
        ch: p.ch,
        text: p.text && cellW >= TEXT_MIN_W,
        padRows: 0,
        group: 0,
        axis: b.rowAxis,
        colAxis: b.colAxis,
        kernels: b.kernels,
      };
      boxes.push(box);
      x = Math.max(x, bx + box.w + GAP);
      right = Math.max(right, bx + box.w);
      tallest = Math.max(tallest, box.h);
    }
    y += tallest + (k < spec.sram.length - 1 ? GAP : 0);
  });
  return { boxes, w: right - x0, h: y - y0 };
}

export function sramRowsOf(spec: PictureSpec): number {
  return spec.sram.reduce((acc, row) => acc + Math.max(...row.map((b) => b.rows)), 0);
}

/** The widest ordinary SRAM row as cells, vectors and gaps (the colour scale's budget). */
export function widestSramRow(spec: PictureSpec): { cols: number; vecs: number; gaps: number } {
  let cols = 0;
  let vecs = 0;
  let gaps = 0;
  for (const row of spec.sram) {
    const ord = row.filter((b) => !(b.rows === 1 && b.cols > 1));
    const c = ord.filter((b) => !isVec(b.cols)).reduce((a, b) => a + b.cols, 0);
    const v = ord.filter((b) => isVec(b.cols)).length;
    if (c + v > cols + vecs) {
      cols = c;
      vecs = v;
      gaps = Math.max(0, ord.length - 1) * GAP;
    }
  }
  return { cols, vecs, gaps };
}

/** SRAM's rows wrapped so that each line fits `avail` at the narrowest text cells: as few lines as greedy wrapping
 *  needs, split where the widest line is narrowest (fa2 on a phone: Qi Sij / mi li Oi). Alignment is dropped. */
export function wrapSram(spec: PictureSpec, avail: number): PictureSpec {
  const widthAt = (b: BufferSpec) => (b.rows === 1 && b.cols > 1 ? 0 : isVec(b.cols) ? TEXT_MIN_W : b.cols * TEXT_MIN_W);
  const lineW = (line: BufferSpec[]) => line.reduce((a, b) => a + widthAt(b), 0) + (line.length - 1) * GAP;
  const rows: BufferSpec[][] = [];
  for (const row of spec.sram) {
    // greedy: how many lines it takes
    let count = 1;
    let used = 0;
    row.forEach((b, k) => {
      const w = widthAt(b);
      if (k > 0 && used + GAP + w > avail) {
        count++;
        used = w;
      } else used += (k > 0 ? GAP : 0) + w;
    });
    // every way to cut the row into `count` lines, the one whose widest line is narrowest
    let best: BufferSpec[][] = [row];
    let bestW = Infinity;
    const cut = (from: number, left: number, acc: BufferSpec[][]) => {
      if (left === 1) {
        const lines = [...acc, row.slice(from)];
        const w = Math.max(...lines.map(lineW));
        if (w < bestW) [best, bestW] = [lines, w];
        return;
      }
      for (let end = from + 1; end <= row.length - left + 1; end++) cut(end, left - 1, [...acc, row.slice(from, end)]);
    };
    if (count > 1) cut(0, Math.min(count, row.length), []);
    rows.push(...best);
  }
  return rows.length === spec.sram.length ? spec : { ...spec, sram: rows, align: {} };
}
