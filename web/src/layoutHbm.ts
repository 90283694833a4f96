// HBM's side of the memory picture: every tensor N rows tall (with the padding rows the last block or tile covers)
// and aligned, N x D tensors at one cell width, N x N ones (standard's S and P) narrower, i= / j= labels left of the
// first tensor of each row axis.
import { GAP, type GridBox, HEAD, LABEL_W, MAX_CELL, type Rect, TITLE, VEC_MIN } from "./layoutBoxes";
import { colourPanel, isVec, type Panel } from "./layoutCells";
import type { PictureSpec, Shape } from "./picture";
import type { Axis } from "./types";

const ND_MIN_W = 24; // an N x D tensor next to N x N ones is at least this wide, room permitting

const ceilDiv = (a: number, b: number) => Math.floor((a + b - 1) / b);

/** Rows past N covered by the last block of Q (Tr*Br - N) and by the last tile of K/V (Tc*Bc - N). */
export function padding(s: Shape): { q: number; kv: number } {
  return { q: ceilDiv(s.n, s.br) * s.br - s.n, kv: ceilDiv(s.n, s.bc) * s.bc - s.n };
}

/** HBM's height in rows: its tallest tensor with the padding rows below it (N + the larger padding, one head). */
export function hbmRowsOf(spec: PictureSpec, s: Shape): number {
  const pad = padding(s);
  return Math.max(...spec.tensors.map((t) => t.rows + (t.padRows ?? (t.axis === "kv" ? pad.kv : pad.q))));
}

/** How many label columns HBM needs: one left of the first tensor of each row axis (i= for Q, j= for K). */
export function hbmLabels(spec: PictureSpec): Set<string> {
  const out = new Set<string>();
  const seen = new Set<Axis>();
  for (const t of spec.tensors) {
    if (!seen.has(t.axis)) {
      seen.add(t.axis);
      out.add(t.name);
    }
  }
  return out;
}

export function hbmWidth(spec: PictureSpec, p: Panel, vec: number): number {
  const labels = hbmLabels(spec);
  let w = (spec.tensors.length - 1) * GAP;
  for (const t of spec.tensors) {
    if (labels.has(t.name)) w += LABEL_W;
    w += isVec(t.cols) ? vec : t.colAxis === "kv" ? t.cols * (p.cwn ?? p.cw) : t.cols * p.cw;
  }
  return w;
}

/** HBM in colour: N x D tensors share `cw`; N x N ones (standard's S and P) get their own, narrower cells. */
export function hbmColour(spec: PictureSpec, widthForCells: number, heightForCells: number, rows: number): Panel {
  const dCols = spec.tensors.filter((t) => !isVec(t.cols) && t.colAxis !== "kv").reduce((a, t) => a + t.cols, 0);
  const nCols = spec.tensors.filter((t) => t.colAxis === "kv").reduce((a, t) => a + t.cols, 0);
  const vecs = spec.tensors.filter((t) => isVec(t.cols)).length;
  // cells up to twice as tall as wide: many tensors side by side (the backward's ten) stay legible
  if (!nCols) return colourPanel(dCols, rows, widthForCells, heightForCells, vecs, 2);
  widthForCells -= vecs * VEC_MIN;
  const ch = Math.max(0.05, Math.min(MAX_CELL, heightForCells / rows));
  const perD = dCols / Math.max(1, spec.tensors.filter((t) => !isVec(t.cols) && t.colAxis !== "kv").length);
  const cw = Math.max(0.25, Math.min(MAX_CELL, Math.max(ch, ND_MIN_W / perD), (0.45 * widthForCells) / dCols));
  const cwn = Math.max(0.01, Math.min(ch, cw, (widthForCells - cw * dCols) / nCols));
  return { cw, ch, text: false, cwn };
}

/** HBM's grids placed from (x0, y0): every tensor N rows tall, aligned. */
export function placeHbm(spec: PictureSpec, s: Shape, hbm: Panel, x0: number, y0: number, hbmRows: number) {
  const pad = padding(s);
  const grids: GridBox[] = [];
  const hv = Math.max(hbm.cw, VEC_MIN);
  const hy = y0 + HEAD + TITLE;
  const labels = hbmLabels(spec);
  let x = x0;
  spec.tensors.forEach((t, k) => {
    if (labels.has(t.name)) x += LABEL_W;
    const cw = isVec(t.cols) ? hv : t.colAxis === "kv" ? (hbm.cwn ?? hbm.cw) : hbm.cw;
    const group = t.axis === "kv" ? s.bc : s.br;
    grids.push({
      name: t.name,
      area: "hbm",
      x,
      y: hy,
      w: t.cols * cw,
      h: t.rows * hbm.ch,
      rows: t.rows,
      cols: t.cols,
      cw,
      ch: hbm.ch,
      text: hbm.text,
      padRows: t.padRows ?? (t.axis === "kv" ? pad.kv : pad.q),
      group,
      axis: t.axis,
      colAxis: t.colAxis,
      ...(t.cuts ? { cuts: t.cuts, bounds: t.bounds ?? [], marks: t.marks ?? [] } : {}),
    });
    x += t.cols * cw + (k < spec.tensors.length - 1 ? GAP : 0);
  });
  return { grids, rect: { x: x0, y: y0, w: x - x0, h: HEAD + TITLE + hbmRows * hbm.ch } as Rect };
}
