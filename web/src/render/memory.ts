// The memory picture: HBM (the algorithm's tensors) and the watched block's SRAM (its buffers) on a canvas.
// Draws only: the layout comes from layout.ts, the numbers from the Trace (through derive.ts and hbm.ts).
// Two canvases: `base` (grids, redrawn once per step; HBM's grids cached as a layer that changes only when a
// write lands) and `overlay` (flying tiles and the hovered cell, per animation frame).
import { blockLetter, endpoint, iOf } from "../algos";
import { absMax, luminance, type Palette, rgbOf } from "../colors";
import {
  blockId,
  blockStatus,
  firstBlock,
  isMat,
  keyValid,
  kvWidth,
  lastPhase,
  pairKind,
  rowValid,
  sramAt,
  type TraceIndex,
} from "../derive";
import { h as el, frag } from "../dom";
import { cell, full, int, slice } from "../format";
import { HbmHistory } from "../hbm";
import {
  type Arc,
  connectors,
  fitOne,
  type Measure,
  NOTE_FONT,
  type Placed,
  placeLines,
  placeNote,
  regions,
  separatorSegments,
  separators,
  tileCaptionVariants,
  tipPlace,
  VEIL_FONT,
} from "../labels";
import {
  cellChars,
  cellRect,
  type GridBox,
  type GridName,
  HEAD,
  type Hit,
  hitTest,
  layoutMemory,
  type MemoryLayout,
  PAD,
  type Rect,
  TITLE,
} from "../layout";
import type { Mat, Num, Step, Trace, Transfer, Vec } from "../types";
import { Backbuffer, type Ctx2D } from "./backbuffer";

const LUT_STEPS = 255;
const IMAGE_CAP = 1024; // an HBM tensor's image is at most this many pixels a side (S and P at N = 4096)

const SUB: Record<string, string> = {
  Qi: "Q\u1d62",
  Kj: "K\u2c7c",
  Vj: "V\u2c7c",
  Sij: "S\u1d62\u2c7c",
  mi: "m\u1d62",
  li: "\u2113\u1d62",
  Oi: "O\u1d62",
  Pij: "P\u1d62\u2c7c",
  Sr: "S\u1d63",
  mr: "m\u1d63",
  lr: "\u2113\u1d63",
  dKj: "dK\u2c7c",
  dVj: "dV\u2c7c",
  dOi: "dO\u1d62",
  dSij: "dS\u1d62\u2c7c",
  Li: "L\u1d62",
  Di: "D\u1d62",
};

/** Buffers that are a copy of an HBM tensor's tile share its colour scale. */
const COPY_OF: Record<string, string> = { Qi: "Q", Kj: "K", Vj: "V", dOi: "dO", Li: "L" };

interface Flight {
  from: Rect;
  to: Rect;
  image: HTMLCanvasElement | null;
  crop: Rect | null; // region of `image` to draw
  colour: string;
}

/** What the picture drew besides cells, for the tests: each label's box, each boundary line, each connector's
 *  bounds (CSS pixels of the canvas). */
export interface Drawn {
  labels: { text: string; box: Rect; kind: string }[];
  lines: Rect[];
  arcs: Rect[];
}

const emptyDrawn = (): Drawn => ({ labels: [], lines: [], arcs: [] });

/** A text measure on a canvas of its own (setting a font there forces no style pass), cached per text. */
function measurer(): Measure {
  const c = typeof OffscreenCanvas !== "undefined" ? new OffscreenCanvas(1, 1) : document.createElement("canvas");
  const g = c.getContext("2d") as Ctx2D;
  const cache = new Map<string, number>();
  return (text, font) => {
    const key = `${font}|${text}`;
    let w = cache.get(key);
    if (w === undefined) {
      g.font = font;
      w = g.measureText(text).width;
      if (cache.size > 4000) cache.clear();
      cache.set(key, w);
    }
    return w;
  };
}

/** The box of text drawn at (x, y) with the given alignment and baseline, `size` px tall. */
function textBox(x: number, y: number, w: number, size: number, align: CanvasTextAlign, baseline: CanvasTextBaseline): Rect {
  const left = align === "center" ? x - w / 2 : align === "right" || align === "end" ? x - w : x;
  const top = baseline === "middle" ? y - size / 2 : baseline === "top" ? y : y - 0.8 * size;
  return { x: left, y: top, w, h: size };
}

interface Composite {
  canvas: HTMLCanvasElement;
  img: ImageData;
  px: Uint32Array;
  count: number; // events painted
  sx: number; // pixels per cell
  sy: number;
}

function dpr(): number {
  return Math.min(3, window.devicePixelRatio || 1);
}

function asRows(v: Vec | Mat, oneRow = false): Num[][] {
  if (isMat(v)) return v;
  return oneRow ? [v as Vec] : (v as Vec).map((x) => [x]);
}

/** Does this buffer belong to the kernel running at op (standard's three kernels, the backward's two)? */
function live(algo: string, box: GridBox, op: string): boolean {
  if (algo === "standard" && box.kernel) {
    const k =
      op === "softmax_row" ? "standard_softmax" : ["load_pv", "accumulate", "write_o"].includes(op) ? "standard_pv" : "standard_scores";
    return box.kernel === k;
  }
  if (algo === "fa2-backward") {
    const pre = op === "load_do_o" || op === "write_d";
    return pre ? ["dOi", "Oi", "Di"].includes(box.name) : box.name !== "Oi";
  }
  return true;
}

export class MemoryView {
  readonly root: HTMLDivElement;
  private readonly under: HTMLCanvasElement; // the panels and HBM's grids: redrawn only when a write lands
  private readonly base: HTMLCanvasElement; // the step: SRAM, the marks on HBM (transparent elsewhere)
  private readonly overlay: HTMLCanvasElement;
  private readonly tip: HTMLDivElement;
  private trace: Trace | null = null;
  private idx: TraceIndex | null = null;
  private history: HbmHistory | null = null;
  private step = 0;
  private layout: MemoryLayout | null = null;
  private palette: Palette = {} as Palette; // set by setPalette before anything is drawn
  private images = new Map<string, HTMLCanvasElement>();
  private composites = new Map<string, Composite>();
  private ranges = new Map<string, number>();
  private hatch: CanvasPattern | null = null;
  private flights: Flight[] = [];
  private flightStart = 0;
  private flightDur = 0;
  private raf = 0;
  private hover: Hit | null = null;
  private width = 0;
  private readonly back = new Backbuffer();
  private readonly hbmLayer = new Backbuffer();
  private hbmKey = "";
  private readonly measure = measurer();
  private hbmDrawn: Drawn = emptyDrawn(); // what the cached HBM layer holds
  private stepDrawn: Drawn = emptyDrawn(); // what the step's layer holds
  private rec: Drawn = emptyDrawn(); // the one being drawn

  constructor(host: HTMLElement, palette: Palette | null) {
    if (palette) this.palette = palette;
    this.root = document.createElement("div");
    this.root.className = "memory-canvas";
    this.under = document.createElement("canvas");
    this.under.className = "under";
    this.under.setAttribute("aria-hidden", "true");
    this.base = document.createElement("canvas");
    this.base.setAttribute("role", "img");
    this.base.dataset.testid = "memory-canvas";
    this.overlay = document.createElement("canvas");
    this.overlay.className = "overlay";
    this.overlay.setAttribute("aria-hidden", "true");
    this.tip = document.createElement("div");
    this.tip.className = "cell-tip";
    this.tip.setAttribute("role", "tooltip");
    this.tip.dataset.testid = "cell-tooltip";
    this.tip.hidden = true;
    this.root.append(this.under, this.base, this.overlay, this.tip);
    host.append(this.root);
    this.overlay.addEventListener("mousemove", (e) => this.onMove(e));
    this.overlay.addEventListener("mouseleave", () => this.setHover(null, 0, 0));
    // a tap (touch or pen) shows the cell's tooltip too; a tap off the cells, or anywhere else, hides it
    this.overlay.addEventListener("pointerdown", (e) => {
      if (e.pointerType !== "mouse") this.onMove(e);
    });
    document.addEventListener(
      "pointerdown",
      (e) => {
        if (e.target !== this.overlay && this.hover) this.setHover(null, 0, 0);
      },
      { passive: true },
    );
    new ResizeObserver(() => {
      const w = Math.floor(this.root.clientWidth);
      if (w > 0 && w !== this.width) {
        this.width = w;
        this.relayout();
        this.drawBase();
        this.drawOverlay();
      }
    }).observe(this.root);
  }

  setPalette(p: Palette): void {
    this.palette = p;
    this.painted = true;
    this.images.clear();
    this.composites.clear();
    this.sramImages.clear();
    this.hatch = null;
    this.lutCache = null;
    this.hbmKey = "";
    this.drawBase();
    this.drawOverlay();
  }

  setTrace(trace: Trace, idx: TraceIndex): void {
    this.trace = trace;
    this.idx = idx;
    this.history = new HbmHistory(trace, idx);
    this.images.clear();
    this.composites.clear();
    this.sramImages.clear();
    this.stopFlights();
    this.ranges = this.colourRanges(trace);
    this.width = Math.floor(this.root.clientWidth) || this.width || 1000;
    this.relayout();
  }

  /** One colour scale per tensor and per buffer for the whole trace (a tile looks the same in HBM and SRAM). */
  private colourRanges(t: Trace): Map<string, number> {
    const r = new Map<string, number>();
    for (const [name, v] of [...Object.entries(t.inputs), ...Object.entries(t.outputs)]) r.set(name, absMax(v as Mat));
    const snap = new Map<string, number>();
    for (const s of t.steps) {
      for (const [b, v] of Object.entries(s.sram)) snap.set(b, Math.max(snap.get(b) ?? 0, absMax(v as Mat)));
    }
    for (const [b, m] of snap) r.set(b, COPY_OF[b] && r.has(COPY_OF[b]!) ? r.get(COPY_OF[b]!)! : m);
    if (!r.has("S")) r.set("S", snap.get("Sij") ?? 1);
    if (!r.has("P")) r.set("P", snap.get("Sr") ?? 1);
    if (!r.has("D")) r.set("D", snap.get("Di") ?? 1);
    return r;
  }

  /** Show step k; `flight` > 0 flies this step's transfers between HBM and SRAM for that many ms. */
  show(k: number, flight = 0): void {
    this.step = k;
    this.stopFlights();
    this.drawBase();
    if (flight > 0) this.startFlights(flight);
    this.drawOverlay();
  }

  /** The layout, with what the last frame drew besides cells (labels, boundaries, connectors) for the tests. */
  get currentLayout(): (MemoryLayout & { drawn: Drawn }) | null {
    if (!this.layout) return null;
    const h = this.hbmDrawn;
    const st = this.stepDrawn;
    return {
      ...this.layout,
      drawn: { labels: [...h.labels, ...st.labels], lines: [...h.lines, ...st.lines], arcs: [...h.arcs, ...st.arcs] },
    };
  }

  // ---- layout and sizing ----

  private relayout(): void {
    this.hbmKey = "";
    this.composites.clear(); // sized to the grids on screen
    if (!this.trace) return;
    const { n, d, br, bc, algo } = this.trace.config;
    const maxH = Math.max(300, Math.min(540, Math.round(window.innerHeight * 0.56)));
    this.layout = layoutMemory({ algo, n, d, br, bc }, Math.max(320, this.width), maxH);
    const ratio = dpr();
    for (const c of [this.under, this.base, this.overlay]) {
      c.width = Math.round(this.layout.width * ratio);
      c.height = Math.round(this.layout.height * ratio);
      c.style.width = `${this.layout.width}px`;
      c.style.height = `${this.layout.height}px`;
    }
    this.root.style.height = `${this.layout.height}px`;
  }

  private ctx(c: HTMLCanvasElement): CanvasRenderingContext2D {
    const ctx = c.getContext("2d")!;
    ctx.setTransform(dpr(), 0, 0, dpr(), 0, 0);
    return ctx;
  }

  // ---- images (one pixel per cell) ----

  private image(key: string, values: Num[][], range: number): HTMLCanvasElement {
    const hit = this.images.get(key);
    if (hit) return hit;
    const c = document.createElement("canvas");
    this.paint(c, values, range);
    this.images.set(key, c);
    return c;
  }

  /** Fill a canvas with one pixel per cell, through a 512-step colour table (no per-cell allocation). */
  private paint(c: HTMLCanvasElement, values: Num[][], range: number): void {
    const rows = values.length;
    const cols = values[0]?.length ?? 1;
    if (c.width !== Math.max(1, cols) || c.height !== Math.max(1, rows)) {
      c.width = Math.max(1, cols);
      c.height = Math.max(1, rows);
    }
    const g = c.getContext("2d")!;
    const img = g.createImageData(c.width, c.height);
    const px = new Uint32Array(img.data.buffer);
    const scale = range > 0 ? LUT_STEPS / range : 0;
    let o = 0;
    for (let r = 0; r < rows; r++) {
      const row = values[r]!;
      for (let q = 0; q < cols; q++) px[o++] = this.colour(row[q], scale);
    }
    g.putImageData(img, 0, 0);
  }

  /** Packed colour of a value: the scale, −∞ (null), or "written, value not in the trace" (undefined). */
  private colour(v: Num | undefined, scale: number): number {
    const lut = this.lut();
    if (v === undefined) return lut[LUT_STEPS * 2 + 2]!;
    if (v === null || Number.isNaN(v)) return lut[LUT_STEPS * 2 + 1]!;
    const k = Math.min(LUT_STEPS, Math.round(Math.abs(v) * scale));
    return lut[v < 0 ? LUT_STEPS + 1 + k : k]!;
  }

  private lutCache: Uint32Array | null = null;

  /** Packed RGBA (little-endian) for |x|/range = k/LUT_STEPS: positives, then negatives, then −∞, then unknown. */
  private lut(): Uint32Array {
    if (this.lutCache) return this.lutCache;
    const lut = new Uint32Array(2 * LUT_STEPS + 3);
    const pack = ([r, g, b]: [number, number, number], a = 255) => ((a << 24) | (b << 16) | (g << 8) | r) >>> 0;
    for (let k = 0; k <= LUT_STEPS; k++) {
      lut[k] = pack(rgbOf(k / LUT_STEPS, 1, this.palette));
      lut[LUT_STEPS + 1 + k] = pack(rgbOf(-k / LUT_STEPS, 1, this.palette));
    }
    lut[2 * LUT_STEPS + 1] = pack(this.palette.negInf);
    lut[2 * LUT_STEPS + 2] = pack(this.palette.neutral, 110);
    this.lutCache = lut;
    return lut;
  }

  /** A written tensor's image once the launch is past `phase`: its events painted in order (incrementally). */
  private composite(name: string, phase: number): HTMLCanvasElement {
    const h = this.history!;
    const b = this.layout!.grids[name]!;
    let c = this.composites.get(name);
    if (!c) {
      const canvas = document.createElement("canvas");
      // never more pixels than the grid shows on screen (nor than it has cells)
      canvas.width = Math.max(1, Math.min(IMAGE_CAP, b.cols, Math.ceil(b.w * dpr())));
      canvas.height = Math.max(1, Math.min(IMAGE_CAP, b.rows, Math.ceil(b.h * dpr())));
      const g = canvas.getContext("2d")!;
      const img = g.createImageData(canvas.width, canvas.height);
      c = { canvas, img, px: new Uint32Array(img.data.buffer), count: 0, sx: canvas.width / b.cols, sy: canvas.height / b.rows };
      this.composites.set(name, c);
    }
    const target = h.applied(name, phase);
    if (target === c.count) return c.canvas;
    if (target < c.count) {
      c.px.fill(0);
      c.count = 0;
    }
    const list = h.events.get(name) ?? [];
    const scale = (this.ranges.get(name) ?? 0) > 0 ? LUT_STEPS / this.ranges.get(name)! : 0;
    const W = c.canvas.width;
    let y0 = Infinity,
      y1 = 0,
      x0 = Infinity,
      x1 = 0;
    for (let k = c.count; k < target; k++) {
      const e = list[k]!;
      const at = h.sampler(e);
      const py0 = Math.floor(e.r0 * c.sy);
      const py1 = Math.min(c.canvas.height, Math.ceil(e.r1 * c.sy));
      const px0 = Math.floor(e.c0 * c.sx);
      const px1 = Math.min(W, Math.ceil(e.c1 * c.sx));
      for (let py = py0; py < py1; py++) {
        const r = Math.min(b.rows - 1, Math.floor((py + 0.5) / c.sy));
        if (r < e.r0 || r >= e.r1) continue;
        for (let px = px0; px < px1; px++) {
          const col = Math.min(b.cols - 1, Math.floor((px + 0.5) / c.sx));
          if (col < e.c0 || col >= e.c1) continue;
          c.px[py * W + px] = this.colour(at(r, col), scale);
        }
      }
      y0 = Math.min(y0, py0);
      y1 = Math.max(y1, py1);
      x0 = Math.min(x0, px0);
      x1 = Math.max(x1, px1);
    }
    c.count = target;
    const g = c.canvas.getContext("2d")!;
    if (y1 > y0 && x1 > x0 && target > 0) g.putImageData(c.img, 0, 0, x0, y0, x1 - x0, y1 - y0);
    else g.putImageData(c.img, 0, 0);
    return c.canvas;
  }

  /** An input's values (never written by the launch). */
  private hbmValues(name: GridName): Num[][] | null {
    const t = this.trace!;
    const v = t.inputs[name] ?? t.outputs[name];
    return v ? asRows(v) : null;
  }

  private sramValues(name: string, k = this.step): Num[][] | null {
    const v = sramAt(this.trace!, this.idx!, k, name);
    const b = this.layout?.grids[name];
    return v === null ? null : asRows(v, b !== undefined && b.rows === 1 && b.cols > 1);
  }

  private rangeOf(name: GridName, values: Num[][]): number {
    return this.ranges.get(name) ?? absMax(values);
  }

  private pattern(ctx: Ctx2D): CanvasPattern | null {
    if (this.hatch) return this.hatch;
    const c = typeof OffscreenCanvas !== "undefined" ? new OffscreenCanvas(8, 8) : document.createElement("canvas");
    c.width = c.height = 8;
    const g = c.getContext("2d") as Ctx2D;
    g.strokeStyle = this.palette.hatch;
    g.lineWidth = 1.5;
    g.beginPath();
    g.moveTo(-2, 10);
    g.lineTo(10, -2);
    g.moveTo(-2, 2);
    g.lineTo(2, -2);
    g.moveTo(6, 10);
    g.lineTo(10, 6);
    g.stroke();
    this.hatch = ctx.createPattern(c, "repeat");
    return this.hatch;
  }

  // ---- the base layer ----

  private get phase(): number {
    return this.trace!.steps[this.step]?.phase ?? 0;
  }

  private painted = false;

  private drawBase(): void {
    if (!this.painted) return;
    const t = this.trace;
    const l = this.layout;
    if (!t || !l || !this.idx || !this.history) return;
    const s = t.steps[this.step];
    if (!s) return;
    const p = this.palette;

    // the layer under: both panels and HBM's grids, which change only when a write lands (or the block does)
    const sramTitle = this.sramTitle(s);
    const key = `${this.history.key(s.phase)}|${l.width}|${sramTitle}`;
    if (this.hbmKey !== key) {
      this.hbmKey = key;
      this.rec = this.hbmDrawn = emptyDrawn();
      const hctx = this.hbmLayer.begin(this.under, dpr());
      hctx.clearRect(0, 0, l.width, l.height);
      const { n, d } = t.config;
      this.panel(hctx, l.hbm, [`HBM \u00b7 global memory \u00b7 N=${n}, D=${d}, fp32`, `HBM \u00b7 N=${n}, D=${d}, fp32`, "HBM"]);
      const parts = sramTitle.split(" \u00b7 ");
      this.panel(
        hctx,
        l.sram,
        parts.map((_, k) => parts.slice(0, parts.length - k).join(" \u00b7 ")),
      );
      this.drawHbm(hctx);
      this.hbmLayer.present(this.under);
    }

    const ctx = this.back.begin(this.base, dpr());
    ctx.clearRect(0, 0, l.width, l.height);
    this.rec = this.stepDrawn = emptyDrawn();

    this.causalVeils(ctx, s);
    this.watched(ctx, s);
    this.lockstep(ctx, s);

    // SRAM buffers
    const algo = t.config.algo;
    for (const name of l.sramOrder) {
      const b = l.grids[name]!;
      const values = this.sramValues(name);
      const changed = s.sram[name] !== undefined;
      const on = live(algo, b, s.op);
      this.title(ctx, b, SUB[name] ?? name, "", on ? this.sramNote(s, name) : "(other kernel)", changed);
      ctx.save();
      if (!on) ctx.globalAlpha = 0.35;
      if (!values) this.emptyGrid(ctx, b, "empty");
      else this.grid(ctx, b, values, this.rangeOf(name, values), name);
      this.sramPadding(ctx, b, s);
      ctx.restore();
      if (changed) {
        ctx.save();
        ctx.strokeStyle = p.changed;
        ctx.lineWidth = 2;
        ctx.strokeRect(b.x - 2, b.y - 2, b.w + 4, b.h + 4);
        ctx.restore();
      }
    }

    this.tileCaption(ctx, s);

    // this step's transfers: highlighted in HBM, connected to their buffer through the band
    const ends: { hbmX: number; sramX: number; kind: "read" | "write" }[] = [];
    for (const tr of s.transfers) {
      const end = this.transferMark(ctx, tr, s);
      if (end) ends.push(end);
    }
    for (const arc of connectors(l, ends)) this.connector(ctx, arc);

    this.back.present(this.base);
    this.base.setAttribute("aria-label", describe(t, s));
  }

  private sramTitle(s: Step): string {
    const t = this.trace!;
    const bytes = `${int(t.sram.bytes)} bytes`;
    switch (t.config.algo) {
      case "fa1": {
        const i = iOf("fa1", s);
        return `SRAM of the one block per head \u00b7 ${i === null ? "outer loop over j" : `now on block i = ${i}`} \u00b7 ${bytes}`;
      }
      case "fa2-backward": {
        const pre = !(s.indices && "j" in s.indices);
        const rows = pre
          ? [s.block! * t.config.br, Math.min(t.config.n, (s.block! + 1) * t.config.br)]
          : (t.blocks.find((b, k) => (b.block ?? k) === s.block)?.rows ?? [0, 0]);
        return pre
          ? `SRAM of fa2_bwd_preprocess block i = ${s.block} \u00b7 rows ${rows[0]}\u2013${rows[1]! - 1}`
          : `SRAM of fa2_bwd block j = ${s.block} \u00b7 K/V rows ${rows[0]}\u2013${rows[1]! - 1} \u00b7 ${bytes}`;
      }
      default: {
        const rows = t.blocks.find((b, k) => (b.block ?? k) === s.block)?.rows ?? [0, 1];
        const kernel = t.config.algo === "standard" ? ` \u00b7 three kernels, ${int(t.sram.bytes)} bytes at most` : ` \u00b7 ${bytes}`;
        return `SRAM of block i = ${s.block} \u00b7 rows ${rows[0]}\u2013${rows[1] - 1}${kernel}`;
      }
    }
  }

  private drawHbm(ctx: Ctx2D): void {
    const t = this.trace!;
    const l = this.layout!;
    const h = this.history!;
    const phase = this.phase;
    let firstQ = true;
    let firstKV = true;
    for (const name of l.hbmOrder) {
      const b = l.grids[name]!;
      const shape = b.cols === 1 ? "N" : b.colAxis === "kv" ? "N\u00d7N" : "N\u00d7D";
      this.title(ctx, b, name, shape, "");
      if (h.written(name)) {
        const count = h.applied(name, phase);
        if (count === 0) {
          const once = (t.config.algo === "fa2" || t.config.algo === "standard") && (name === "O" || name === "L");
          this.emptyGrid(ctx, b, once ? "not written yet:\nwritten once,\nat write-back" : "not written yet");
        } else if (b.text) this.textCells(ctx, b, (r, c) => h.valueAt(name, r, c, count), this.ranges.get(name) ?? 1);
        else {
          ctx.save();
          ctx.imageSmoothingEnabled = b.cw < 1 || b.ch < 1;
          ctx.fillStyle = this.palette.panel;
          ctx.fillRect(b.x, b.y, b.w, b.h);
          ctx.drawImage(this.composite(name, phase), b.x, b.y, b.w, b.h);
          ctx.restore();
        }
      } else {
        const values = this.hbmValues(name);
        if (values) this.grid(ctx, b, values, this.rangeOf(name, values), name);
        else this.emptyGrid(ctx, b, "");
      }
      this.padRows(ctx, b);
      this.separators(ctx, b);
      if (b.axis === "q" && firstQ) {
        firstQ = false;
        this.blockLabels(ctx, b, "i", t.config.br, t.config.tr);
      }
      if (b.axis === "kv" && firstKV) {
        firstKV = false;
        this.blockLabels(ctx, b, "j", t.config.bc, t.config.tc);
      }
    }
  }

  /** Causal: what the watched block never touches is veiled, with the reason. */
  private causalVeils(ctx: Ctx2D, s: Step): void {
    const t = this.trace!;
    if (!t.config.causal) return;
    const l = this.layout!;
    const { br, n } = t.config;
    const algo = t.config.algo;
    const veil = (r: Rect, label: string, b: GridBox) => {
      if (r.w <= 0 || r.h <= 0) return;
      ctx.save();
      ctx.fillStyle = this.palette.panel;
      ctx.globalAlpha = 0.72;
      ctx.fillRect(r.x, r.y, r.w, r.h);
      ctx.globalAlpha = 0.5;
      ctx.fillStyle = this.pattern(ctx) ?? this.palette.hatch;
      ctx.fillRect(r.x, r.y, r.w, r.h);
      ctx.globalAlpha = 1;
      ctx.restore();
      if (!label) return;
      // in the first block or tile of the veiled rows, between its boundaries
      const inside = regions(b, t.config.bc).filter(
        (q) => q.y >= r.y - 0.5 && q.y + q.h <= r.y + r.h + 1 && q.x >= r.x - 0.5 && q.x + q.w <= r.x + r.w + 0.5,
      );
      for (const q of inside) {
        const placed = placeLines(q, [[label]], this.measure, VEIL_FONT, 12);
        if (placed) {
          this.lines(ctx, placed, this.palette.inkMuted, "veil");
          break;
        }
      }
    };
    if (algo === "fa2" || algo === "standard") {
      const i = s.block ?? 0;
      const w = kvWidth(t, i);
      if (w >= n) return;
      for (const name of l.hbmOrder) {
        const b = l.grids[name]!;
        if (b.axis === "kv") veil(cellRect(b, w, n), "skipped", b);
        if (b.colAxis === "kv") veil(cellRect(b, i * br, Math.min(n, (i + 1) * br), w, n), "", b);
      }
    } else {
      const main = algo === "fa1" || (s.indices !== undefined && "j" in s.indices);
      const j = algo === "fa1" ? (this.idx!.tile[this.step] ?? null) : s.block;
      if (!main || j === null) return;
      const info = t.blocks.find((b, k) => (b.block ?? k) === j);
      const f = algo === "fa2-backward" ? (info?.first_i ?? firstBlock(t, j)) : firstBlock(t, j);
      if (f <= 0) return;
      for (const name of l.hbmOrder) {
        const b = l.grids[name]!;
        if (b.axis !== "q" || (algo === "fa2-backward" && name === "O")) continue;
        veil(cellRect(b, 0, Math.min(n, f * br)), "skipped", b);
      }
    }
  }

  /** The watched block's rows and the tile now in SRAM, dashed. */
  private watched(ctx: Ctx2D, s: Step): void {
    const t = this.trace!;
    const l = this.layout!;
    const { br, bc, n } = t.config;
    const i = t.config.algo === "fa2-backward" && !(s.indices && "j" in s.indices) ? s.block : iOf(t.config.algo, s);
    const j = this.idx!.tile[this.step] ?? null;
    ctx.save();
    ctx.strokeStyle = this.palette.watch;
    ctx.lineWidth = 1.5;
    ctx.setLineDash([4, 3]);
    for (const name of l.hbmOrder) {
      const b = l.grids[name]!;
      const k = b.axis === "q" ? i : j;
      if (k === null || k === undefined) continue;
      const g = b.axis === "q" ? br : bc;
      const r = cellRect(b, k * g, Math.min(k * g + g, n + b.padRows));
      ctx.strokeRect(r.x - 1.5, r.y - 1.5, r.w + 3, r.h + 3);
    }
    ctx.restore();
  }

  /** Lockstep: every other block moves its own rows in the same phase (dashed, fainter). */
  private lockstep(ctx: Ctx2D, s: Step): void {
    const t = this.trace!;
    const algo = t.config.algo;
    if (algo === "fa1" || s.block === null) return;
    const l = this.layout!;
    const pre = algo === "fa2-backward" && !(s.indices && "j" in s.indices);
    const axis = algo === "fa2-backward" && !pre ? "kv" : "q";
    const g = axis === "kv" ? t.config.bc : t.config.br;
    const own0 = s.block * g;
    const myLast = s.phase === lastPhase(t, s.block);
    const ids = pre ? Array.from({ length: t.config.tr }, (_, k) => k) : t.blocks.map((_, k) => blockId(t, k));
    ctx.save();
    ctx.globalAlpha = 0.55;
    ctx.setLineDash([2, 3]);
    for (const tr of s.transfers) {
      const b = l.grids[tr.tensor];
      if (!b || b.axis !== axis || tr.rows[0] < own0 || tr.rows[1] > own0 + g) continue;
      ctx.strokeStyle = tr.kind === "read" ? this.palette.read : this.palette.write;
      for (const o of ids) {
        if (o === s.block) continue;
        if (!pre) {
          const st = blockStatus(t, o, s.phase);
          if (myLast ? st !== "last" : st !== "same") continue;
        }
        const r0 = tr.rows[0] - own0 + o * g;
        const r1 = Math.min(t.config.n, tr.rows[1] - own0 + o * g);
        if (r1 <= r0) continue;
        const r = cellRect(b, r0, r1, tr.cols[0], tr.cols[1]);
        ctx.strokeRect(r.x + 0.5, r.y + 0.5, r.w - 1, Math.max(1, r.h - 1));
      }
    }
    ctx.restore();
  }

  /** In SRAM's top row, right of its buffers: which tile is held, and what the loop is doing. */
  private tileCaption(ctx: Ctx2D, s: Step): void {
    const l = this.layout!;
    const t = this.trace!;
    const row = l.sramOrder.filter((n) => Math.abs(l.grids[n]!.y - l.grids[l.sramOrder[0]!]!.y) < 1).map((n) => l.grids[n]!);
    const first = row[0]!;
    const last = row[row.length - 1]!;
    // room between the first two boxes of the top row (fa2: between Kj and Vj), else after the last
    const second = row[1] ?? null;
    // down to the next row's titles (or the panel's foot): the row itself may be only a few pixels tall
    const below = l.sramOrder
      .map((n) => l.grids[n]!)
      .filter((g) => g.y > first.y + 1)
      .map((g) => g.y - TITLE);
    const tall = Math.min(...below, l.sram.y + l.sram.h) - first.y;
    let room: Rect = {
      x: first.x + first.w + 6,
      y: first.y,
      w: (second ? second.x : l.sram.x + l.sram.w) - 12 - first.x - first.w,
      h: tall,
    };
    if (room.w < 90) room = { x: last.x + last.w + 6, y: first.y, w: l.sram.x + l.sram.w + PAD / 2 - 10 - last.x - last.w, h: tall };
    if (room.w < 40) return;
    const j = this.idx!.tile[this.step] ?? null;
    const { bc, n, tc } = t.config;
    const state = j === null ? "before" : s.op === "write_back" && t.config.algo === "fa2" ? "after" : "tile";
    const rows: [number, number] = [(j ?? 0) * bc, Math.min(n, ((j ?? 0) + 1) * bc)];
    const placed = placeLines(room, tileCaptionVariants(j, tc, rows, state, t.config.algo === "fa2-backward"), this.measure);
    if (placed) this.lines(ctx, placed, this.palette.inkMuted, "caption");
  }

  /** Centre-aligned lines placed by labels.ts, drawn and recorded. */
  private lines(ctx: Ctx2D, p: Placed, colour: string, kind: string): void {
    ctx.save();
    ctx.fillStyle = colour;
    ctx.font = p.font;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    p.lines.forEach((line, k) => {
      const y = p.cy + (k - (p.lines.length - 1) / 2) * p.lineH;
      ctx.fillText(line, p.cx, y);
      this.rec.labels.push({ text: line, box: textBox(p.cx, y, this.measure(line, p.font), p.lineH - 2, "center", "middle"), kind });
    });
    ctx.restore();
  }

  /** fillText at the context's alignment, recorded with its box. */
  private text(ctx: Ctx2D, text: string, x: number, y: number, font: string, size: number, kind: string): void {
    ctx.font = font;
    ctx.fillText(text, x, y);
    this.rec.labels.push({ text, box: textBox(x, y, this.measure(text, font), size, ctx.textAlign, ctx.textBaseline), kind });
  }

  private panel(ctx: Ctx2D, r: Rect, titles: string[]): void {
    const p = this.palette;
    ctx.save();
    ctx.fillStyle = p.panel;
    ctx.strokeStyle = p.panelEdge;
    ctx.lineWidth = 1;
    const x = r.x - PAD / 2;
    const y = r.y;
    const w = r.w + PAD;
    const h = r.h + PAD / 2;
    ctx.beginPath();
    ctx.roundRect(x, y, w, h, 8);
    ctx.fill();
    ctx.stroke();
    ctx.fillStyle = p.inkMuted;
    ctx.textBaseline = "middle";
    const font = "600 11px system-ui, sans-serif";
    const title = fitOne(titles, w - 10, font, this.measure);
    if (title) this.text(ctx, title, r.x + 2, y + HEAD / 2 + 2, font, 11, "panel-title");
    ctx.restore();
  }

  /** A grid's title: name, then shape, then a note, each only if it fits before the next grid. */
  private title(ctx: Ctx2D, b: GridBox, name: string, shape: string, note: string, hot = false): void {
    const p = this.palette;
    const room = this.titleRoom(b);
    ctx.save();
    ctx.textBaseline = "alphabetic";
    ctx.font = "700 13px system-ui, sans-serif";
    ctx.fillStyle = hot ? p.changed : p.ink;
    const y = b.y - 5;
    const small = "11px system-ui, sans-serif";
    // the name in the largest size that fits before the next grid (many narrow tensors: smaller), else left out
    const size = [13, 11, 9].find((px) => this.measure(name, `700 ${px}px system-ui, sans-serif`) <= room);
    if (size === undefined) {
      ctx.restore();
      return;
    }
    const bold = `700 ${size}px system-ui, sans-serif`;
    this.text(ctx, name, b.x, y, bold, size, "title");
    let x = b.x + this.measure(name, bold) + 5;
    ctx.fillStyle = p.inkMuted;
    if (shape && x + this.measure(shape, small) <= b.x + room) {
      this.text(ctx, shape, x, y, small, 11, "title");
      x += this.measure(shape, small) + 5;
    }
    if (note && x + this.measure(note, small) <= b.x + room) {
      ctx.fillStyle = hot ? p.changed : p.inkMuted;
      this.text(ctx, note, x, y, small, 11, "title");
    }
    ctx.restore();
  }

  /** Horizontal room for a grid's title: up to the next grid on the same row, or the panel's edge. */
  private titleRoom(b: GridBox): number {
    const l = this.layout!;
    let right = b.area === "hbm" ? l.hbm.x + l.hbm.w : l.sram.x + l.sram.w + PAD / 2;
    for (const o of Object.values(l.grids)) {
      if (o !== b && Math.abs(o.y - b.y) < 1 && o.x > b.x && o.x < right) right = o.x;
    }
    return right - b.x - 6;
  }

  private emptyGrid(ctx: Ctx2D, b: GridBox, text = ""): void {
    ctx.save();
    ctx.fillStyle = this.palette.panel;
    ctx.fillRect(b.x, b.y, b.w, b.h);
    ctx.strokeStyle = this.palette.grid;
    ctx.setLineDash([3, 3]);
    ctx.strokeRect(b.x + 0.5, b.y + 0.5, b.w - 1, b.h - 1);
    ctx.restore();
    // between the block and tile boundaries (drawn over the grid later), never across one
    const placed = text ? placeNote(b, text, this.trace!.config.bc, this.measure, NOTE_FONT) : null;
    if (placed) this.lines(ctx, placed, this.palette.inkMuted, "note");
  }

  private grid(ctx: Ctx2D, b: GridBox, values: Num[][], range: number, name: GridName): void {
    if (!b.text) {
      const img = b.area === "hbm" ? this.image(`hbm:${name}`, values, range) : this.sramImage(name, values, range);
      ctx.save();
      ctx.imageSmoothingEnabled = b.cw < 1 || b.ch < 1;
      ctx.drawImage(img, b.x, b.y, b.w, b.h);
      ctx.restore();
      return;
    }
    // null is −∞ (masked or past N) and must show as such; only a missing cell counts as 0
    this.textCells(
      ctx,
      b,
      (r, c) => {
        const v = values[r]?.[c];
        return v === undefined ? 0 : v;
      },
      range,
    );
  }

  /** Cells with their numbers (small sizes): a value, −∞ (null), unknown (undefined) or not written yet. */
  private textCells(ctx: Ctx2D, b: GridBox, at: (r: number, c: number) => Num | undefined | "unwritten", range: number): void {
    const p = this.palette;
    const chars = cellChars(b.cw);
    ctx.save();
    ctx.font = `${b.cw >= 36 ? 10 : 9.5}px ui-monospace, monospace`;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    for (let r = 0; r < b.rows; r++) {
      for (let c = 0; c < b.cols; c++) {
        const v = at(r, c);
        const x = b.x + c * b.cw;
        const y = b.y + r * b.ch;
        if (v === "unwritten") {
          ctx.fillStyle = p.panel;
          ctx.fillRect(x, y, b.cw, b.ch);
          continue;
        }
        const rgb = v === undefined ? p.neutral : rgbOf(v, range, p);
        ctx.fillStyle = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
        ctx.fillRect(x, y, b.cw, b.ch);
        ctx.fillStyle = luminance(rgb) < 0.5 ? "#fff" : "#111";
        ctx.fillText(v === undefined ? "?" : cell(v, chars), x + b.cw / 2, y + b.ch / 2 + 0.5);
      }
    }
    ctx.strokeStyle = p.grid;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let r = 1; r < b.rows; r++) {
      ctx.moveTo(b.x, Math.round(b.y + r * b.ch) + 0.5);
      ctx.lineTo(b.x + b.w, Math.round(b.y + r * b.ch) + 0.5);
    }
    for (let c = 1; c < b.cols; c++) {
      ctx.moveTo(Math.round(b.x + c * b.cw) + 0.5, b.y);
      ctx.lineTo(Math.round(b.x + c * b.cw) + 0.5, b.y + b.h);
    }
    ctx.stroke();
    ctx.restore();
  }

  private sramImages = new Map<string, HTMLCanvasElement>();

  /** An SRAM buffer's image, kept per snapshot (the step that wrote it): a buffer a step left alone costs
   *  nothing to draw again. A few dozen kept; the oldest dropped. */
  private sramImage(name: string, values: Num[][], range: number): HTMLCanvasElement {
    const bi = this.idx!.buffers.indexOf(name);
    const src = bi < 0 ? -1 : (this.idx!.source[this.step]?.[bi] ?? -1);
    const key = `${name}:${src}`;
    const hit = this.sramImages.get(key);
    if (hit) return hit;
    const c = document.createElement("canvas");
    this.paint(c, values, range);
    this.sramImages.set(key, c);
    if (this.sramImages.size > 48) this.sramImages.delete(this.sramImages.keys().next().value!);
    return c;
  }

  private scratch = new Map<string, HTMLCanvasElement>();

  /** A one-pixel-per-cell image of an SRAM buffer, repainted into a canvas kept per buffer. */
  private freshImage(values: Num[][], range: number, name = "flight"): HTMLCanvasElement {
    let c = this.scratch.get(name);
    if (!c) {
      c = document.createElement("canvas");
      this.scratch.set(name, c);
    }
    this.paint(c, values, range);
    return c;
  }

  private padRows(ctx: Ctx2D, b: GridBox): void {
    if (b.padRows <= 0) return;
    const y = b.y + b.h;
    const h = b.padRows * b.ch;
    ctx.save();
    ctx.fillStyle = this.pattern(ctx) ?? this.palette.hatch;
    ctx.fillRect(b.x, y, b.w, h);
    ctx.strokeStyle = this.palette.hatch;
    ctx.setLineDash([3, 2]);
    ctx.strokeRect(b.x + 0.5, y + 0.5, b.w - 1, Math.max(1, h - 1));
    ctx.restore();
  }

  private separators(ctx: Ctx2D, b: GridBox): void {
    const { ys, xs } = separators(b, this.trace!.config.bc);
    if (!ys.length && !xs.length) return;
    ctx.save();
    ctx.strokeStyle = this.palette.ink;
    ctx.globalAlpha = 0.45;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const y of ys) {
      ctx.moveTo(b.x - 3, y);
      ctx.lineTo(b.x + b.w + 3, y);
    }
    for (const x of xs) {
      ctx.moveTo(x, b.y);
      ctx.lineTo(x, b.y + b.h);
    }
    ctx.stroke();
    ctx.restore();
    this.rec.lines.push(...separatorSegments(b, this.trace!.config.bc));
  }

  private blockLabels(ctx: Ctx2D, b: GridBox, letter: string, group: number, count: number): void {
    const h = group * b.ch;
    ctx.save();
    ctx.fillStyle = this.palette.inkMuted;
    ctx.font = "10px system-ui, sans-serif";
    ctx.textAlign = "right";
    const font = "10px system-ui, sans-serif";
    if (h < 11) {
      // too many blocks to label each: label the first and say how many
      ctx.textBaseline = "top";
      this.text(ctx, `${letter}=0`, b.x - 5, b.y, font, 10, "block");
      this.text(ctx, `\u2026${count - 1}`, b.x - 5, b.y + b.h - 10, font, 10, "block");
    } else {
      ctx.textBaseline = "middle";
      for (let k = 0; k < count; k++) this.text(ctx, `${letter}=${k}`, b.x - 5, b.y + (k + 0.5) * h, font, 10, "block");
    }
    ctx.restore();
  }

  private sramPadding(ctx: Ctx2D, b: GridBox, s: Step): void {
    const t = this.trace!;
    ctx.save();
    ctx.fillStyle = this.pattern(ctx) ?? this.palette.hatch;
    const j = this.idx!.tile[this.step] ?? null;
    const i = t.config.algo === "fa2-backward" && !(s.indices && "j" in s.indices) ? s.block : iOf(t.config.algo, s);
    if (b.axis === "kv") {
      for (let r = 0; r < b.rows; r++) if (!keyValid(t, j, r)) this.veil(ctx, cellRect(b, r, r + 1));
    } else if (b.axis === "q") {
      for (let r = 0; r < b.rows; r++) if (!rowValid(t, i, r)) this.veil(ctx, cellRect(b, r, r + 1));
    }
    if (b.colAxis === "kv" && j !== null) {
      for (let c = 0; c < b.cols; c++) if (!keyValid(t, j, c)) this.veil(ctx, cellRect(b, 0, b.rows, c, c + 1));
    }
    ctx.restore();
  }

  private veil(ctx: Ctx2D, r: Rect): void {
    const fill = ctx.fillStyle;
    const alpha = ctx.globalAlpha;
    ctx.globalAlpha = 0.55 * alpha;
    ctx.fillStyle = this.palette.panel;
    ctx.fillRect(r.x, r.y, r.w, r.h);
    ctx.globalAlpha = alpha;
    ctx.fillStyle = fill;
    ctx.fillRect(r.x, r.y, r.w, r.h);
  }

  private sramNote(s: Step, name: string): string {
    const t = this.trace!;
    const algo = t.config.algo;
    for (const tr of s.transfers) {
      if (!endpoint(algo, tr.tensor, tr.kind, s.op).includes(name)) continue;
      if (tr.kind === "read") return `\u2190 ${slice(tr.tensor, tr.rows)}`;
      return `\u2192 ${slice(tr.tensor, tr.rows)}${algo === "fa2" && tr.tensor === "O" ? " (\u00f7 \u2113\u1d62)" : ""}`;
    }
    const j = this.idx!.tile[this.step] ?? null;
    const i = iOf(algo, s);
    const masked = t.config.causal && i !== null && j !== null && pairKind(t, i, j) === "masked";
    if (name === "Sij" && s.op === "online_softmax") return "holds P = exp(S \u2212 m\u1d62)";
    if (name === "Sij" && s.op === "update") return "holds P\u0303 = exp(S \u2212 m\u0303)";
    if (name === "Sij" && s.op === "scores") return masked ? "masked: key > query \u2192 \u2212\u221e" : "= \u03c4 Q\u1d62K\u2c7c\u1d40";
    if (name === "Pij" && s.op === "probs" && masked) return "0 where key > query";
    if (name === "Oi" && s.op === "online_softmax") return "rescaled + PV";
    if ((name === "mi" || name === "li") && s.op === "write_back" && algo === "fa2") return name === "li" ? "\u2192 L" : "";
    return s.sram[name] !== undefined ? "updated" : "";
  }

  /** The buffer rectangle a transfer fills or empties, or null. */
  private endpointRect(tr: Transfer, op: string): Rect | null {
    const l = this.layout!;
    const names = endpoint(this.trace!.config.algo, tr.tensor, tr.kind, op).filter((n) => l.grids[n]);
    if (!names.length) return null;
    const rows = tr.rows[1] - tr.rows[0];
    const cols = tr.cols[1] - tr.cols[0];
    let out: Rect | null = null;
    for (const n of names) {
      const b = l.grids[n]!;
      const r =
        b.rows === 1 ? cellRect(b, 0, 1, 0, Math.min(b.cols, cols)) : cellRect(b, 0, Math.min(b.rows, rows), 0, Math.min(b.cols, cols));
      out = out
        ? {
            x: Math.min(out.x, r.x),
            y: Math.min(out.y, r.y),
            w: Math.max(out.x + out.w, r.x + r.w) - Math.min(out.x, r.x),
            h: Math.max(out.h, r.h),
          }
        : r;
    }
    return out;
  }

  /** The HBM tile a transfer moves, highlighted; returns the columns its connector joins (or null). */
  private transferMark(ctx: Ctx2D, tr: Transfer, s: Step): { hbmX: number; sramX: number; kind: "read" | "write" } | null {
    const l = this.layout!;
    const p = this.palette;
    const b = l.grids[tr.tensor];
    if (!b) return null;
    const r = cellRect(b, tr.rows[0], tr.rows[1], tr.cols[0], tr.cols[1]);
    const colour = tr.kind === "read" ? p.read : p.write;
    ctx.save();
    ctx.fillStyle = colour;
    ctx.globalAlpha = 0.22;
    ctx.fillRect(r.x, r.y, r.w, r.h);
    ctx.globalAlpha = 1;
    ctx.strokeStyle = colour;
    ctx.lineWidth = 2.5;
    ctx.strokeRect(r.x - 1, r.y - 1, r.w + 2, r.h + 2);
    ctx.restore();
    const e = this.endpointRect(tr, s.op);
    return e ? { hbmX: r.x + r.w / 2, sramX: e.x + e.w / 2, kind: tr.kind } : null;
  }

  /** A dashed connector in the band, from the HBM tile's column to its buffer's, its head where the data goes. */
  private connector(ctx: Ctx2D, arc: Arc): void {
    const colour = arc.kind === "read" ? this.palette.read : this.palette.write;
    ctx.save();
    ctx.strokeStyle = colour;
    ctx.fillStyle = colour;
    ctx.globalAlpha = 0.8;
    ctx.lineWidth = 1.5;
    ctx.setLineDash([5, 4]);
    ctx.beginPath();
    ctx.moveTo(arc.a.x, arc.a.y);
    ctx.bezierCurveTo(arc.c1.x, arc.c1.y, arc.c2.x, arc.c2.y, arc.z.x, arc.z.y);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.beginPath();
    const [h0, h1, h2] = arc.head;
    ctx.moveTo(h0![0], h0![1]);
    ctx.lineTo(h1![0], h1![1]);
    ctx.lineTo(h2![0], h2![1]);
    ctx.closePath();
    ctx.fill();
    ctx.restore();
    this.rec.arcs.push(arc.box);
  }

  // ---- the overlay: flights and hover ----

  private startFlights(ms: number): void {
    const t = this.trace!;
    const s = t.steps[this.step]!;
    const l = this.layout!;
    const p = this.palette;
    if (!s.transfers.length || matchMedia("(prefers-reduced-motion: reduce)").matches) return;
    this.flights = [];
    for (const tr of s.transfers) {
      const b = l.grids[tr.tensor];
      const sram = this.endpointRect(tr, s.op);
      if (!b || !sram) continue;
      const hbm = cellRect(b, tr.rows[0], tr.rows[1], tr.cols[0], tr.cols[1]);
      let image: HTMLCanvasElement | null = null;
      let crop: Rect | null = null;
      if (tr.kind === "read") {
        if (this.history!.written(tr.tensor)) {
          image = this.composite(tr.tensor, s.phase);
          const c = this.composites.get(tr.tensor)!;
          crop = {
            x: tr.cols[0] * c.sx,
            y: tr.rows[0] * c.sy,
            w: Math.max(1, (tr.cols[1] - tr.cols[0]) * c.sx),
            h: Math.max(1, (tr.rows[1] - tr.rows[0]) * c.sy),
          };
        } else {
          const values = this.hbmValues(tr.tensor);
          if (values) {
            image = this.image(`hbm:${tr.tensor}`, values, this.rangeOf(tr.tensor, values));
            crop = { x: tr.cols[0], y: tr.rows[0], w: tr.cols[1] - tr.cols[0], h: tr.rows[1] - tr.rows[0] };
          }
        }
      } else {
        const src = endpoint(t.config.algo, tr.tensor, "write", s.op)[0];
        const values = src ? this.sramValues(src) : null;
        if (values && src) {
          image = this.freshImage(values, this.rangeOf(src, values));
          crop = { x: 0, y: 0, w: Math.min(image.width, tr.cols[1] - tr.cols[0]), h: Math.min(image.height, tr.rows[1] - tr.rows[0]) };
        }
      }
      this.flights.push({
        from: tr.kind === "read" ? hbm : sram,
        to: tr.kind === "read" ? sram : hbm,
        image,
        crop,
        colour: tr.kind === "read" ? p.read : p.write,
      });
    }
    if (!this.flights.length) return;
    this.flightStart = performance.now();
    this.flightDur = ms;
    const tick = () => {
      this.drawOverlay();
      if (performance.now() - this.flightStart < this.flightDur) this.raf = requestAnimationFrame(tick);
      else {
        this.flights = [];
        this.drawOverlay();
      }
    };
    this.raf = requestAnimationFrame(tick);
  }

  private stopFlights(): void {
    cancelAnimationFrame(this.raf);
    this.flights = [];
  }

  private overlayDirty = true;

  private drawOverlay(): void {
    if (!this.painted) return;
    const l = this.layout;
    if (!l) return;
    if (!this.flights.length && !this.hover && !this.overlayDirty) return; // nothing on it, nothing to clear
    const ctx = this.ctx(this.overlay);
    ctx.clearRect(0, 0, l.width, l.height);
    this.overlayDirty = this.flights.length > 0 || this.hover !== null;
    if (this.flights.length) {
      const u = Math.min(1, (performance.now() - this.flightStart) / Math.max(1, this.flightDur));
      const e = u < 0.5 ? 2 * u * u : 1 - (-2 * u + 2) ** 2 / 2; // ease in-out
      const lift = Math.sin(Math.PI * e) * 36; // arc up on the way
      for (const f of this.flights) {
        const r = {
          x: f.from.x + (f.to.x - f.from.x) * e,
          y: f.from.y + (f.to.y - f.from.y) * e - lift,
          w: f.from.w + (f.to.w - f.from.w) * e,
          h: f.from.h + (f.to.h - f.from.h) * e,
        };
        ctx.save();
        ctx.shadowColor = f.colour;
        ctx.shadowBlur = 12;
        if (f.image && f.crop) {
          ctx.imageSmoothingEnabled = false;
          ctx.drawImage(f.image, f.crop.x, f.crop.y, f.crop.w, f.crop.h, r.x, r.y, Math.max(2, r.w), Math.max(2, r.h));
        } else {
          ctx.globalAlpha = 0.6;
          ctx.fillStyle = f.colour;
          ctx.fillRect(r.x, r.y, Math.max(2, r.w), Math.max(2, r.h));
          ctx.globalAlpha = 1;
        }
        ctx.shadowBlur = 0;
        ctx.strokeStyle = f.colour;
        ctx.lineWidth = 2;
        ctx.strokeRect(r.x, r.y, Math.max(2, r.w), Math.max(2, r.h));
        ctx.restore();
      }
    }
    if (this.hover) {
      const b = l.grids[this.hover.grid]!;
      const r = cellRect(b, this.hover.r, this.hover.r + 1, this.hover.c, this.hover.c + 1);
      ctx.save();
      ctx.strokeStyle = this.palette.ink;
      ctx.lineWidth = 1.5;
      ctx.strokeRect(r.x - 1, r.y - 1, Math.max(2, r.w) + 2, Math.max(2, r.h) + 2);
      ctx.restore();
    }
  }

  private onMove(e: MouseEvent): void {
    const l = this.layout;
    if (!l) return;
    const box = this.overlay.getBoundingClientRect();
    const x = e.clientX - box.left;
    const y = e.clientY - box.top;
    this.setHover(hitTest(l, x, y), x, y);
  }

  private setHover(h: Hit | null, x: number, y: number): void {
    const same = h && this.hover && h.grid === this.hover.grid && h.r === this.hover.r && h.c === this.hover.c;
    this.hover = h;
    if (!h) {
      this.tip.hidden = true;
      if (!this.flights.length) this.drawOverlay();
      return;
    }
    if (!same) {
      this.tip.replaceChildren(this.describeCell(h));
      if (!this.flights.length) this.drawOverlay();
    }
    this.tip.hidden = false;
    // inside the picture (its card clips whatever leaves it) and inside the part of it scrolled into view
    const l = this.layout!;
    const host = this.root.parentElement;
    const sx = host ? host.scrollLeft : 0;
    const vw = host ? Math.min(l.width, host.clientWidth) : l.width;
    const at = tipPlace(x, y, this.tip.offsetWidth, this.tip.offsetHeight, { x: sx + 2, y: 2, w: vw - 4, h: l.height - 4 });
    this.tip.style.left = `${at.left}px`;
    this.tip.style.top = `${at.top}px`;
  }

  /** Tooltip for a cell (text nodes): where it is, its value, and what it means. */
  describeCell(h: Hit): DocumentFragment {
    const t = this.trace!;
    const s = t.steps[this.step]!;
    const l = this.layout!;
    const { br, bc, n } = t.config;
    const noted = (note: string) => (note ? frag(el("br"), el("span", { class: "note" }, note)) : null);
    const line = (a: string, v: string, note = "") => frag(el("b", {}, a), " = ", el("span", { class: "v" }, v), noted(note));
    const says = (a: string, what: string, note = "") => frag(el("b", {}, a), `: ${what}`, noted(note));
    const g = h.grid;
    const b = l.grids[g]!;
    const vec = b.cols === 1;
    if (b.area === "hbm") {
      const idx = vec ? `${g}[${h.r}]` : `${g}[${h.r}, ${h.c}]`;
      let where =
        b.axis === "kv" ? `tile j = ${Math.floor(h.r / bc)}, row ${h.r % bc}` : `block i = ${Math.floor(h.r / br)}, row ${h.r % br}`;
      if (b.colAxis === "kv") where += `; key ${h.c} (tile j = ${Math.floor(h.c / bc)})`;
      const hist = this.history!;
      if (hist.written(g)) {
        const v = hist.valueAt(g, h.r, h.c, hist.applied(g, s.phase));
        if (v === "unwritten") {
          const skipped = t.config.causal && b.colAxis === "kv" && h.c >= kvWidth(t, Math.floor(h.r / br));
          return says(idx, skipped ? "never written (causal: a tile this row's block skips)" : "not written yet", where);
        }
        if (v === undefined) return says(idx, "written; its value is not in this trace", `${where} (block not recorded)`);
        const masked = v === null && b.colAxis === "kv" && t.config.causal && h.c > h.r ? " (masked: key > query)" : "";
        return line(idx, full(v) + masked, where);
      }
      const values = this.hbmValues(g);
      return line(idx, full(values?.[h.r]?.[h.c] ?? null), where);
    }
    const values = this.sramValues(g);
    const idx = vec ? `${g}[${h.r}]` : b.rows === 1 ? `${g}[${h.c}]` : `${g}[${h.r}, ${h.c}]`;
    if (!values) return says(idx, "not loaded yet");
    const v = values[h.r]?.[vec ? 0 : h.c] ?? null;
    const j = this.idx!.tile[this.step] ?? null;
    const i = t.config.algo === "fa2-backward" && !(s.indices && "j" in s.indices) ? s.block : iOf(t.config.algo, s);
    let note = "";
    if (b.axis === "kv" && j !== null) {
      const key = j * bc + h.r;
      note = key < n ? `key row ${key} (tile j = ${j})` : `row ${key} \u2265 N = ${n}: padding, zero`;
    } else if (b.axis === "q" && i !== null) {
      const qrow = i * br + h.r;
      note = qrow < n ? `query row ${qrow} (block i = ${i})` : `row ${qrow} \u2265 N = ${n}: padding, never stored`;
      if (b.colAxis === "kv" && j !== null) {
        const key = j * bc + h.c;
        note +=
          key >= n
            ? `; key ${key} \u2265 N: scores \u2212\u221e, weighs 0`
            : t.config.causal && key > qrow
              ? `, key ${key} > query: masked`
              : `, key ${key}`;
      }
    } else if (g === "Sr" && s.indices?.r !== undefined) {
      note = `row r = ${s.indices.r} of S, then of P; column ${h.c}`;
    }
    return line(idx, full(v), note);
  }
}

/** The canvas's text alternative: what moved this step. */
export function describe(t: Trace, s: Step): string {
  const algo = t.config.algo;
  const moves = s.transfers.map((tr) => {
    const buf = endpoint(algo, tr.tensor, tr.kind, s.op).join(", ") || "SRAM";
    return tr.kind === "read"
      ? `${slice(tr.tensor, tr.rows)} read from HBM into ${buf}`
      : `${slice(tr.tensor, tr.rows)} written from ${buf} to HBM`;
  });
  const changed = Object.keys(s.sram).join(", ");
  const who = s.block === null ? "the block's outer loop" : `block ${blockLetter(algo)} = ${s.block}`;
  return `Memory picture, ${who}, step ${s.index + 1} of ${t.steps.length}: ${moves.length ? moves.join("; ") : "no trip across HBM"}. SRAM buffers changed: ${changed || "none"}. N=${t.config.n}, D=${t.config.d}, Br=${t.config.br}, Bc=${t.config.bc}.`;
}
