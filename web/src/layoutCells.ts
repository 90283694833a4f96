// The memory picture's cells: a panel's cell size, text (numbers printed in the cells) when they fit, a colour scale
// otherwise.
import { MAX_CELL, TEXT_H, TEXT_MIN_H, TEXT_MIN_W, TEXT_W, VEC_MIN } from "./layoutBoxes";

/** One panel's cells: HBM's or SRAM's. */
export interface Panel {
  cw: number; // N x D and buffer cells
  ch: number;
  text: boolean;
  cwn?: number; // HBM's N x N tensors (S, P), when not text
}

/** A vector (L, mi, li): one column, drawn at least VEC_MIN wide. */
export const isVec = (cols: number) => cols === 1;

/** Largest text cell width in [TEXT_MIN_W, TEXT_W] for which `fits(cw)`, or 0. */
export function textWidth(fits: (cw: number) => boolean): number {
  for (let cw = TEXT_W; cw >= TEXT_MIN_W; cw--) if (fits(cw)) return cw;
  return 0;
}

/** A text-mode row height for `rows` rows within `avail` pixels, or 0. */
export function textHeight(rows: number, avail: number): number {
  const ch = Math.min(TEXT_H, Math.floor(avail / rows));
  return ch >= TEXT_MIN_H ? ch : 0;
}

/** Colour cells for `cols` columns plus `vecs` vector columns (never thinner than VEC_MIN) in the width, at most
 *  `aspect` times as tall as wide. */
export function colourPanel(cols: number, rows: number, widthForCells: number, heightForCells: number, vecs = 0, aspect = 1): Panel {
  const even = widthForCells / (cols + vecs); // vectors as wide as a cell, when cells are wider than VEC_MIN
  const cw = Math.max(0.05, Math.min(MAX_CELL, even >= VEC_MIN ? even : (widthForCells - vecs * VEC_MIN) / cols));
  const ch = Math.max(0.05, Math.min(aspect * cw, MAX_CELL, heightForCells / rows));
  return { cw, ch, text: false };
}
