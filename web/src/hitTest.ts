// Reading a laid-out grid: the rectangle of a range of its cells, the cell under a point, the characters a cell holds.
import type { GridBox, GridName, MemoryLayout, Rect } from "./layoutBoxes";

/** The rectangle covering rows [r0, r1) and cols [c0, c1) of a grid. */
export function cellRect(b: GridBox, r0: number, r1: number, c0 = 0, c1 = b.cols): Rect {
  return { x: b.x + c0 * b.cw, y: b.y + r0 * b.ch, w: (c1 - c0) * b.cw, h: (r1 - r0) * b.ch };
}

export interface Hit {
  grid: GridName;
  r: number;
  c: number;
}

/** Which cell is under (x, y), if any. */
export function hitTest(l: MemoryLayout, x: number, y: number): Hit | null {
  for (const b of Object.values(l.grids)) {
    if (x < b.x || y < b.y || x >= b.x + b.w || y >= b.y + b.h) continue;
    const r = Math.min(b.rows - 1, Math.floor((y - b.y) / b.ch));
    const c = Math.min(b.cols - 1, Math.floor((x - b.x) / b.cw));
    return { grid: b.name, r, c };
  }
  return null;
}

/** Characters a text cell can hold at the 10px monospace font the renderer uses. */
export function cellChars(cw: number): number {
  return Math.max(1, Math.floor((cw - 4) / 6));
}
