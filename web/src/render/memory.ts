// The memory picture: HBM (Q K V O L) and the watched block's SRAM (Qi Kj Vj Sij mi li Oi) on a canvas.
// Draws only: the layout comes from layout.ts, the numbers from the Trace. Two canvases: `base`
// (grids, redrawn once per step) and `overlay` (flying tiles and the hovered cell, per animation frame).
import { absMax, cssOf, luminance, rgbOf, type Palette } from "../colors";
import { isMat, keyValid, rowValid, sramAt, tileAt, writtenBlocks, type TraceIndex } from "../derive";
import { cell, full, slice } from "../format";
import { cellChars, cellRect, hitTest, layoutMemory, PAD, HEAD, TITLE, type GridBox, type GridName,
  type Hit, type MemoryLayout, type Rect } from "../layout";
import type { BufferName, Mat, Num, Step, Trace, Transfer, Vec } from "../types";
import { Backbuffer, type Ctx2D } from "./backbuffer";

const LUT_STEPS = 255;

const SUB: Record<string, string> = { Qi: "Q\u1d62", Kj: "K\u2c7c", Vj: "V\u2c7c", Sij: "S\u1d62\u2c7c", mi: "m\u1d62", li: "\u2113\u1d62", Oi: "O\u1d62" };

interface Flight {
  from: Rect;
  to: Rect;
  image: HTMLCanvasElement | null;
  crop: Rect | null; // region of `image` to draw
  colour: string;
}

function dpr(): number {
  return Math.min(3, window.devicePixelRatio || 1);
}

function asRows(v: Vec | Mat): Num[][] {
  return isMat(v) ? v : (v as Vec).map((x) => [x]);
}

export class MemoryView {
  readonly root: HTMLDivElement;
  private readonly base: HTMLCanvasElement;
  private readonly overlay: HTMLCanvasElement;
  private readonly tip: HTMLDivElement;
  private trace: Trace | null = null;
  private idx: TraceIndex | null = null;
  private step = 0;
  private layout: MemoryLayout | null = null;
  private palette: Palette;
  private images = new Map<string, HTMLCanvasElement>();
  private ranges: Partial<Record<GridName, number>> = {};
  private hatch: CanvasPattern | null = null;
  private flights: Flight[] = [];
  private flightStart = 0;
  private flightDur = 0;
  private raf = 0;
  private hover: Hit | null = null;
  private width = 0;
  private readonly back = new Backbuffer();

  constructor(host: HTMLElement, palette: Palette) {
    this.palette = palette;
    this.root = document.createElement("div");
    this.root.className = "memory-canvas";
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
    this.root.append(this.base, this.overlay, this.tip);
    host.append(this.root);
    this.overlay.addEventListener("mousemove", (e) => this.onMove(e));
    this.overlay.addEventListener("mouseleave", () => this.setHover(null, 0, 0));
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
    this.images.clear();
    this.hatch = null;
    this.lutCache = null;
    this.hbmKey = "";
    this.drawBase();
    this.drawOverlay();
  }

  setTrace(trace: Trace, idx: TraceIndex): void {
    this.trace = trace;
    this.idx = idx;
    this.images.clear();
    this.stopFlights();
    const r = this.ranges;
    r.Q = r.Qi = absMax(trace.inputs.Q);
    r.K = r.Kj = absMax(trace.inputs.K);
    r.V = r.Vj = absMax(trace.inputs.V);
    r.O = absMax(trace.outputs.O);
    r.L = absMax(trace.outputs.L);
    this.width = Math.floor(this.root.clientWidth) || this.width || 1000;
    this.relayout();
  }

  /** Show step k; `flight` > 0 flies this step's transfers between HBM and SRAM for that many ms. */
  show(k: number, flight = 0): void {
    this.step = k;
    this.stopFlights();
    this.drawBase();
    if (flight > 0) this.startFlights(flight);
    this.drawOverlay();
  }

  get currentLayout(): MemoryLayout | null {
    return this.layout;
  }

  // ---- layout and sizing ----

  private relayout(): void {
    this.hbmKey = "";
    if (!this.trace) return;
    const { n, d, br, bc } = this.trace.config;
    const maxH = Math.max(300, Math.min(540, Math.round(window.innerHeight * 0.56)));
    this.layout = layoutMemory({ n, d, br, bc }, Math.max(320, this.width), maxH);
    const ratio = dpr();
    for (const c of [this.base, this.overlay]) {
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
    const lut = this.lut();
    const inf = lut[LUT_STEPS * 2 + 1]!;
    const scale = range > 0 ? LUT_STEPS / range : 0;
    let o = 0;
    for (let r = 0; r < rows; r++) {
      const row = values[r]!;
      for (let q = 0; q < cols; q++) {
        const v = row[q];
        if (v === null || v === undefined || Number.isNaN(v)) px[o++] = inf;
        else {
          const k = Math.min(LUT_STEPS, Math.round(Math.abs(v) * scale));
          px[o++] = lut[v < 0 ? LUT_STEPS + 1 + k : k]!;
        }
      }
    }
    g.putImageData(img, 0, 0);
  }

  private lutCache: Uint32Array | null = null;

  /** Packed RGBA (little-endian) for |x|/range = k/LUT_STEPS: positives, then negatives, then −∞. */
  private lut(): Uint32Array {
    if (this.lutCache) return this.lutCache;
    const lut = new Uint32Array(2 * LUT_STEPS + 2);
    const pack = ([r, g, b]: [number, number, number]) => ((255 << 24) | (b << 16) | (g << 8) | r) >>> 0;
    for (let k = 0; k <= LUT_STEPS; k++) {
      lut[k] = pack(rgbOf(k / LUT_STEPS, 1, this.palette));
      lut[LUT_STEPS + 1 + k] = pack(rgbOf(-k / LUT_STEPS, 1, this.palette));
    }
    lut[2 * LUT_STEPS + 1] = pack(this.palette.negInf);
    this.lutCache = lut;
    return lut;
  }

  private hbmValues(name: GridName): Num[][] | null {
    const t = this.trace!;
    switch (name) {
      case "Q":
      case "K":
      case "V":
        return t.inputs[name];
      case "O":
        return t.outputs.O;
      case "L":
        return asRows(t.outputs.L);
      default:
        return null;
    }
  }

  private sramValues(name: BufferName, k = this.step): Num[][] | null {
    const v = sramAt(this.trace!, this.idx!, k, name);
    return v === null ? null : asRows(v);
  }

  private rangeOf(name: GridName, values: Num[][]): number {
    return this.ranges[name] ?? absMax(values);
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

  private drawBase(): void {
    const t = this.trace;
    const l = this.layout;
    if (!t || !l || !this.idx) return;
    const s = t.steps[this.step];
    if (!s) return;
    const ctx = this.back.begin(this.base, dpr());
    const p = this.palette;
    ctx.clearRect(0, 0, l.width, l.height);

    // panels
    this.panel(ctx, l.hbm, `HBM \u00b7 global memory \u00b7 N=${t.config.n}, D=${t.config.d}, fp32`);
    this.panel(ctx, l.sram, `SRAM of block i = ${s.block} \u00b7 rows ${t.blocks[s.block]?.rows[0]}\u2013${(t.blocks[s.block]?.rows[1] ?? 1) - 1} \u00b7 ${t.sram.bytes.toLocaleString("en-US")} bytes`);

    // HBM's grids change only when outputs get written: drawn once per state, then copied
    const written = writtenBlocks(t, this.step);
    const mask = t.blocks.map((b) => (written(b.i) ? "1" : "0")).join("");
    if (this.hbmKey !== mask) {
      this.hbmKey = mask;
      const hctx = this.hbmLayer.begin(this.base, dpr());
      hctx.clearRect(0, 0, l.width, l.height);
      this.drawHbm(hctx, written, mask.includes("1"));
    }
    ctx.save();
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(this.hbmLayer.canvas, 0, 0);
    ctx.restore();

    // the watched block's rows and the tile now in SRAM
    ctx.save();
    ctx.strokeStyle = p.watch;
    ctx.lineWidth = 1.5;
    ctx.setLineDash([4, 3]);
    for (const name of ["Q", "O", "L"] as const) {
      const b = l.grids[name];
      const r = cellRect(b, s.block * t.config.br, s.block * t.config.br + t.config.br);
      ctx.strokeRect(r.x - 1.5, r.y - 1.5, r.w + 3, Math.min(r.h, b.h + b.padRows * b.ch - r.y + b.y) + 3);
    }
    const j = tileAt(t, this.step);
    if (j !== null && s.op !== "load_q") {
      for (const name of ["K", "V"] as const) {
        const b = l.grids[name];
        const r = cellRect(b, j * t.config.bc, j * t.config.bc + t.config.bc);
        ctx.strokeRect(r.x - 1.5, r.y - 1.5, r.w + 3, r.h + 3);
      }
    }
    ctx.restore();

    // lockstep: every other block moves its own rows in the same phase
    if (s.op === "load_q" || s.op === "write_back") {
      ctx.save();
      ctx.strokeStyle = s.op === "load_q" ? p.read : p.write;
      ctx.globalAlpha = 0.55;
      ctx.setLineDash([2, 3]);
      for (const blk of t.blocks) {
        if (blk.i === s.block || blk.rows[1] <= blk.rows[0]) continue;
        for (const name of s.op === "load_q" ? (["Q"] as const) : (["O", "L"] as const)) {
          const r = cellRect(l.grids[name], blk.rows[0], blk.rows[1]);
          ctx.strokeRect(r.x + 0.5, r.y + 0.5, r.w - 1, Math.max(1, r.h - 1));
        }
      }
      ctx.restore();
    }

    // SRAM buffers
    for (const name of ["Kj", "Vj", "Qi", "Sij", "mi", "li", "Oi"] as const) {
      const b = l.grids[name];
      const values = this.sramValues(name);
      const changed = s.sram[name] !== undefined;
      const note = this.sramNote(s, name);
      this.title(ctx, b, SUB[name] ?? name, "", note, changed);
      if (!values) this.emptyGrid(ctx, b, "empty");
      else this.grid(ctx, b, values, this.rangeOf(name, values), name);
      this.sramPadding(ctx, b, s, name);
      if (changed) {
        ctx.save();
        ctx.strokeStyle = p.changed;
        ctx.lineWidth = 2;
        ctx.strokeRect(b.x - 2, b.y - 2, b.w + 4, b.h + 4);
        ctx.restore();
      }
    }

    this.tileCaption(ctx, s);

    // this step's transfers: highlighted in HBM, connected to their buffer
    for (const tr of s.transfers) this.transferMark(ctx, tr);

    this.back.present(this.base);
    this.base.setAttribute("aria-label", describe(t, s));
  }

  private readonly hbmLayer = new Backbuffer();
  private hbmKey = "";

  private drawHbm(ctx: Ctx2D, written: (block: number) => boolean, anyWritten: boolean): void {
    const t = this.trace!;
    const l = this.layout!;
    for (const name of ["Q", "K", "V", "O", "L"] as const) {
      const b = l.grids[name];
      const values = this.hbmValues(name)!;
      const output = name === "O" || name === "L";
      this.title(ctx, b, name, name === "L" ? "N" : "N\u00d7D", "");
      if (output && !anyWritten) this.emptyGrid(ctx, b, "not written yet:\nwritten once,\nat write-back");
      else {
        this.grid(ctx, b, values, this.rangeOf(name, values), name);
        if (output) this.unwritten(ctx, b, written);
      }
      this.padRows(ctx, b);
      this.separators(ctx, b);
    }
    this.blockLabels(ctx, l.grids.Q, "i", t.config.br, t.config.tr);
    this.blockLabels(ctx, l.grids.K, "j", t.config.bc, t.config.tc);
  }

  /** In SRAM's top row, between Kj and Vj: which tile is held, and what the loop is doing. */
  private tileCaption(ctx: Ctx2D, s: Step): void {
    const l = this.layout!;
    const t = this.trace!;
    const kj = l.grids.Kj;
    const vj = l.grids.Vj;
    const x0 = kj.x + kj.w + 14;
    const room = vj.x - 14 - x0;
    if (room < 90) return;
    const j = tileAt(t, this.step);
    const { bc, n, tc } = t.config;
    const lines =
      s.op === "load_q"
        ? ["no tile yet:", "the loop over j starts next"]
        : s.op === "write_back"
          ? ["loop over j done:", `all ${tc} tiles seen`]
          : [`tile j = ${j} of Tc = ${tc}`, `K[${j! * bc}:${Math.min(n, (j! + 1) * bc)}], V[\u2026] held`];
    ctx.save();
    ctx.fillStyle = this.palette.inkMuted;
    ctx.font = "12px system-ui, sans-serif";
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    const cy = kj.y + kj.h / 2;
    lines.forEach((line, k) => ctx.fillText(line, x0 + room / 2, cy + (k - (lines.length - 1) / 2) * 16, room));
    ctx.restore();
  }

  private panel(ctx: Ctx2D, r: Rect, title: string): void {
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
    ctx.font = "600 11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    ctx.fillText(title, r.x + 2, y + HEAD / 2 + 2, w - 8);
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
    ctx.fillText(name, b.x, y);
    let x = b.x + ctx.measureText(name).width + 5;
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = p.inkMuted;
    if (shape && x + ctx.measureText(shape).width <= b.x + room) {
      ctx.fillText(shape, x, y);
      x += ctx.measureText(shape).width + 5;
    }
    if (note && x + ctx.measureText(note).width <= b.x + room) {
      ctx.fillStyle = hot ? p.changed : p.inkMuted;
      ctx.fillText(note, x, y);
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
    if (text) {
      ctx.font = "11px system-ui, sans-serif";
      ctx.fillStyle = this.palette.inkMuted;
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      const lines = text.split("\n");
      const wide = Math.max(...lines.map((t) => ctx.measureText(t).width));
      if (wide + 8 <= b.w && lines.length * 14 + 4 <= b.h) {
        lines.forEach((t, k) => ctx.fillText(t, b.x + b.w / 2, b.y + b.h / 2 + (k - (lines.length - 1) / 2) * 14));
      }
    }
    ctx.restore();
  }

  private grid(ctx: Ctx2D, b: GridBox, values: Num[][], range: number, name: GridName): void {
    const p = this.palette;
    if (!b.text) {
      const key = b.area === "hbm" ? `hbm:${name}` : `sram:${name}:${this.step}`;
      const img = b.area === "hbm" ? this.image(key, values, range) : this.freshImage(values, range, name);
      ctx.save();
      ctx.imageSmoothingEnabled = b.cw < 1 || b.ch < 1;
      ctx.drawImage(img, b.x, b.y, b.w, b.h);
      ctx.restore();
      return;
    }
    const chars = cellChars(b.cw);
    ctx.save();
    ctx.font = `${b.cw >= 36 ? 10 : 9.5}px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace`;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    for (let r = 0; r < b.rows; r++) {
      const row = values[r];
      for (let c = 0; c < b.cols; c++) {
        const v = row?.[c] ?? 0;
        const rgb = rgbOf(v, range, p);
        const x = b.x + c * b.cw;
        const y = b.y + r * b.ch;
        ctx.fillStyle = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
        ctx.fillRect(x, y, b.cw, b.ch);
        ctx.fillStyle = luminance(rgb) < 0.5 ? "#fff" : "#111";
        ctx.fillText(cell(v, chars), x + b.cw / 2, y + b.ch / 2 + 0.5);
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

  /** Cover the rows of O or L whose block has not stored them yet. */
  private unwritten(ctx: Ctx2D, b: GridBox, written: (block: number) => boolean): void {
    ctx.save();
    ctx.fillStyle = this.palette.panel;
    for (const blk of this.trace!.blocks) {
      if (written(blk.i)) continue;
      const r = cellRect(b, blk.rows[0], blk.rows[1]);
      ctx.fillRect(r.x, r.y, r.w, r.h);
    }
    ctx.restore();
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
    if (b.group <= 0 || b.group * b.ch < 3) return;
    ctx.save();
    ctx.strokeStyle = this.palette.ink;
    ctx.globalAlpha = 0.45;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let r = b.group; r < b.rows + b.padRows; r += b.group) {
      const y = Math.round(b.y + r * b.ch) + 0.5;
      ctx.moveTo(b.x - 3, y);
      ctx.lineTo(b.x + b.w + 3, y);
    }
    ctx.stroke();
    ctx.restore();
  }

  private blockLabels(ctx: Ctx2D, b: GridBox, letter: string, group: number, count: number): void {
    const h = group * b.ch;
    if (h < 11) {
      // too many blocks to label each: label the first and say how many
      ctx.save();
      ctx.fillStyle = this.palette.inkMuted;
      ctx.font = "10px system-ui, sans-serif";
      ctx.textAlign = "right";
      ctx.textBaseline = "top";
      ctx.fillText(`${letter}=0`, b.x - 5, b.y);
      ctx.fillText(`\u2026${count - 1}`, b.x - 5, b.y + b.h - 10);
      ctx.restore();
      return;
    }
    ctx.save();
    ctx.fillStyle = this.palette.inkMuted;
    ctx.font = "10px system-ui, sans-serif";
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (let k = 0; k < count; k++) {
      const y = b.y + (k + 0.5) * h;
      ctx.fillText(`${letter}=${k}`, b.x - 5, y);
    }
    ctx.restore();
  }

  private sramPadding(ctx: Ctx2D, b: GridBox, s: Step, name: BufferName): void {
    const t = this.trace!;
    const pat = this.pattern(ctx);
    ctx.save();
    ctx.fillStyle = pat ?? this.palette.hatch;
    const j = tileAt(t, this.step);
    if (name === "Kj" || name === "Vj") {
      for (let r = 0; r < b.rows; r++) if (!keyValid(t, j, r)) this.veil(ctx, cellRect(b, r, r + 1));
    } else {
      for (let r = 0; r < b.rows; r++) if (!rowValid(t, s.block, r)) this.veil(ctx, cellRect(b, r, r + 1));
      if (name === "Sij" && j !== null) {
        for (let c = 0; c < b.cols; c++) if (!keyValid(t, j, c)) this.veil(ctx, cellRect(b, 0, b.rows, c, c + 1));
      }
    }
    ctx.restore();
  }

  private veil(ctx: Ctx2D, r: Rect): void {
    const fill = ctx.fillStyle;
    ctx.globalAlpha = 0.55;
    ctx.fillStyle = this.palette.panel;
    ctx.fillRect(r.x, r.y, r.w, r.h);
    ctx.globalAlpha = 1;
    ctx.fillStyle = fill;
    ctx.fillRect(r.x, r.y, r.w, r.h);
  }

  private sramNote(s: Step, name: BufferName): string {
    const rows = (tr: Transfer) => slice(tr.tensor, tr.rows);
    const find = (tensor: string) => s.transfers.find((tr) => tr.tensor === tensor);
    if (name === "Qi" && find("Q")) return `\u2190 ${rows(find("Q")!)}`;
    if (name === "Kj" && find("K")) return `\u2190 ${rows(find("K")!)}`;
    if (name === "Vj" && find("V")) return `\u2190 ${rows(find("V")!)}`;
    if (name === "Oi" && find("O")) return `\u2192 ${rows(find("O")!)} (\u00f7 \u2113\u1d62)`;
    if (name === "Sij" && s.op === "online_softmax") return "holds P = exp(S \u2212 m\u1d62)";
    if (name === "Sij" && s.op === "scores") return "= \u03c4 Q\u1d62K\u2c7c\u1d40";
    if (name === "Oi" && s.op === "online_softmax") return "rescaled + PV";
    if ((name === "mi" || name === "li") && s.op === "write_back") return name === "li" ? "\u2192 L" : "";
    return "";
  }

  /** The buffer a transfer fills or empties, and the rows of it involved. */
  private endpoint(tr: Transfer): Rect | null {
    const l = this.layout!;
    const n = tr.rows[1] - tr.rows[0];
    switch (tr.tensor) {
      case "Q":
        return cellRect(l.grids.Qi, 0, n);
      case "K":
        return cellRect(l.grids.Kj, 0, n);
      case "V":
        return cellRect(l.grids.Vj, 0, n);
      case "O":
        return cellRect(l.grids.Oi, 0, n);
      case "L": {
        const m = cellRect(l.grids.mi, 0, n);
        const li = cellRect(l.grids.li, 0, n);
        return { x: m.x, y: m.y, w: li.x + li.w - m.x, h: m.h };
      }
    }
  }

  private transferMark(ctx: Ctx2D, tr: Transfer): void {
    const l = this.layout!;
    const p = this.palette;
    const b = l.grids[tr.tensor];
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
    // a connector arcing over the panels from the HBM tile to its SRAM buffer
    const e = this.endpoint(tr);
    if (e) {
      const a = { x: r.x + r.w / 2, y: r.y - 2 };
      const z = { x: e.x + e.w / 2, y: e.y - TITLE + 2 };
      const top = PAD + HEAD - 4;
      ctx.globalAlpha = 0.7;
      ctx.lineWidth = 1.5;
      ctx.setLineDash([5, 4]);
      ctx.beginPath();
      ctx.moveTo(a.x, a.y);
      ctx.bezierCurveTo(a.x, top - 10, z.x, top - 10, z.x, z.y);
      ctx.stroke();
      ctx.setLineDash([]);
      // arrowhead at the destination end
      const [hx, hy, dir] = tr.kind === "read" ? [z.x, z.y, 1] : [a.x, a.y, 1];
      ctx.beginPath();
      ctx.moveTo(hx, hy);
      ctx.lineTo(hx - 4, hy - 7 * dir);
      ctx.lineTo(hx + 4, hy - 7 * dir);
      ctx.closePath();
      ctx.fillStyle = colour;
      ctx.fill();
    }
    ctx.restore();
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
      const hbm = cellRect(l.grids[tr.tensor], tr.rows[0], tr.rows[1], tr.cols[0], tr.cols[1]);
      const sram = this.endpoint(tr)!;
      let image: HTMLCanvasElement | null = null;
      let crop: Rect | null = null;
      if (tr.kind === "read") {
        const values = this.hbmValues(tr.tensor)!;
        image = this.image(`hbm:${tr.tensor}`, values, this.rangeOf(tr.tensor, values));
        crop = { x: tr.cols[0], y: tr.rows[0], w: tr.cols[1] - tr.cols[0], h: tr.rows[1] - tr.rows[0] };
      } else if (tr.tensor === "O") {
        const values = this.sramValues("Oi");
        if (values) {
          image = this.freshImage(values, this.rangeOf("O", values));
          crop = { x: 0, y: 0, w: tr.cols[1] - tr.cols[0], h: tr.rows[1] - tr.rows[0] };
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

  get flying(): boolean {
    return this.flights.length > 0;
  }

  private drawOverlay(): void {
    const l = this.layout;
    if (!l) return;
    const ctx = this.ctx(this.overlay);
    ctx.clearRect(0, 0, l.width, l.height);
    if (this.flights.length) {
      const u = Math.min(1, (performance.now() - this.flightStart) / Math.max(1, this.flightDur));
      const e = u < 0.5 ? 2 * u * u : 1 - Math.pow(-2 * u + 2, 2) / 2; // ease in-out
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
      const b = l.grids[this.hover.grid];
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
      this.tip.innerHTML = this.describeCell(h);
      if (!this.flights.length) this.drawOverlay();
    }
    this.tip.hidden = false;
    const w = this.tip.offsetWidth;
    const lw = this.layout!.width;
    this.tip.style.left = `${Math.min(lw - w - 4, x + 14)}px`;
    this.tip.style.top = `${y + 16}px`;
  }

  /** Tooltip HTML for a cell: where it is, its value, and what it means. */
  describeCell(h: Hit): string {
    const t = this.trace!;
    const s = t.steps[this.step]!;
    const { br, bc, n } = t.config;
    const esc = (x: string) => x.replace(/&/g, "&amp;").replace(/</g, "&lt;");
    const line = (a: string, v: string, note = "") =>
      `<b>${esc(a)}</b> = <span class="v">${esc(v)}</span>${note ? `<br><span class="note">${esc(note)}</span>` : ""}`;
    const g = h.grid;
    if (g === "Q" || g === "K" || g === "V" || g === "O" || g === "L") {
      const idx = g === "L" ? `L[${h.r}]` : `${g}[${h.r}, ${h.c}]`;
      const where = g === "K" || g === "V" ? `tile j = ${Math.floor(h.r / bc)}, row ${h.r % bc} of ${g}j`
        : `block i = ${Math.floor(h.r / br)}, row ${h.r % br} of ${g === "L" ? "the block" : g + "i"}`;
      if ((g === "O" || g === "L") && !writtenBlocks(t, this.step)(Math.floor(h.r / br))) {
        return `<b>${idx}</b>: not written yet<br><span class="note">${where}; written once, at write-back</span>`;
      }
      const values = this.hbmValues(g)!;
      return line(idx, full(values[h.r]?.[h.c] ?? null), where);
    }
    const values = this.sramValues(g as BufferName);
    const vec = g === "mi" || g === "li";
    const idx = vec ? `${g}[${h.r}]` : `${g}[${h.r}, ${h.c}]`;
    if (!values) return `<b>${idx}</b>: not loaded yet`;
    const v = values[h.r]?.[vec ? 0 : h.c] ?? null;
    const j = tileAt(t, this.step);
    const qrow = s.block * br + h.r;
    let note = "";
    if ((g === "Kj" || g === "Vj") && j !== null) {
      const key = j * bc + h.r;
      note = key < n ? `key row ${key} (tile j = ${j})` : `row ${key} \u2265 N = ${n}: padding, zero`;
    } else {
      note = qrow < n ? `query row ${qrow} (block i = ${s.block})` : `row ${qrow} \u2265 N = ${n}: padding, never stored`;
      if (g === "Sij" && j !== null) {
        const key = j * bc + h.c;
        note += key < n ? `, key ${key}` : `; key ${key} \u2265 N: scores \u2212\u221e, weighs 0`;
      }
      if (g === "mi") note = `running max of ${note}`;
      if (g === "li") note = `running denominator of ${note}`;
    }
    return line(idx, full(v), note);
  }
}

/** The canvas's text alternative: what moved this step. */
export function describe(t: Trace, s: Step): string {
  const moves = s.transfers.map((tr) =>
    tr.kind === "read"
      ? `${slice(tr.tensor, tr.rows)} read from HBM into ${tr.tensor}${tr.tensor === "Q" ? "i" : "j"}`
      : `${slice(tr.tensor, tr.rows)} written from SRAM to HBM`,
  );
  const changed = Object.keys(s.sram).join(", ");
  return `Memory picture, block ${s.block}, step ${s.index}: ${moves.length ? moves.join("; ") : "no trip across HBM"}. SRAM buffers changed: ${changed || "none"}. N=${t.config.n}, D=${t.config.d}, Br=${t.config.br}, Bc=${t.config.bc}.`;
}

export { cssOf };
