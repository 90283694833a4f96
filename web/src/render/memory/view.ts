// The memory picture: HBM (the algorithm's tensors) and the watched block's SRAM (its buffers) on three canvases.
// `under`: both panels and HBM's grids, redrawn only when a write lands (or the block changes); `base`: the step
// (SRAM, the marks on HBM, the connectors; transparent elsewhere); `overlay`: flying tiles and the hovered cell, per
// animation frame. This view composes the layers (grids.ts, marks.ts, flights.ts, with raster.ts's images and
// words.ts's words) and handles the pointer (tooltip.ts). Draws only: the layout comes from layout.ts, the numbers
// from the Trace (through derive.ts and hbm.ts).

import type { Palette } from "../../colors";
import type { TraceIndex } from "../../derive";
import { HbmHistory } from "../../hbm";
import { cellRect, type Hit, hitTest } from "../../hitTest";
import { connectors, tipPlace } from "../../labels";
import { layoutMemory } from "../../layout";
import type { MemoryLayout } from "../../layoutBoxes";
import { pictureSpec } from "../../picture";
import type { Trace } from "../../types";
import { Backbuffer } from "../backbuffer";
import { connector, drawFlights, endpointRect, type Flight, planFlights } from "./flights";
import { emptyGrid, grid, hbmGrids, panel, tileCaption, title } from "./grids";
import { causalVeils, changedBox, lockstep, sramPadding, transferMark, watched } from "./marks";
import { type Drawn, dpr, emptyDrawn, Pen } from "./pen";
import { colourRanges, Raster } from "./raster";
import { live, rangeOf, type Scene, sramValues } from "./scene";
import { cellTip, tipNodes } from "./tooltip";
import { describe, hbmTitles, shortenings, sramNote, sramTitle } from "./words";

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
  private ranges = new Map<string, number>();
  private readonly pen = new Pen();
  private readonly raster = new Raster();
  private painted = false; // a palette has been set: the page's style is known
  private flights: Flight[] = [];
  private flightStart = 0;
  private flightDur = 0;
  private raf = 0;
  private hover: Hit | null = null;
  private overlayDirty = true;
  private width = 0;
  private readonly back = new Backbuffer();
  private readonly hbmLayer = new Backbuffer();
  private hbmKey = "";
  private hbmDrawn: Drawn = emptyDrawn(); // what the cached HBM layer holds
  private stepDrawn: Drawn = emptyDrawn(); // what the step's layer holds

  constructor(host: HTMLElement) {
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
    this.pen.setPalette(p);
    this.raster.setPalette(p);
    this.painted = true;
    this.hbmKey = "";
    this.drawBase();
    this.drawOverlay();
  }

  setTrace(trace: Trace, idx: TraceIndex): void {
    this.trace = trace;
    this.idx = idx;
    this.history = new HbmHistory(trace, idx);
    this.raster.forget();
    this.stopFlights();
    this.ranges = colourRanges(trace);
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

  /** What the step's frame is drawn from, or null before there is a trace, a layout and the step. */
  private scene(): Scene | null {
    const { trace, idx, history, layout } = this;
    const s = trace?.steps[this.step];
    if (!trace || !idx || !history || !layout || !s) return null;
    return { trace, idx, history, layout, ranges: this.ranges, k: this.step, s };
  }

  // ---- layout and sizing ----

  private relayout(): void {
    this.hbmKey = "";
    this.raster.resized(); // written tensors' images are sized to the grids on screen
    if (!this.trace) return;
    const maxH = Math.max(300, Math.min(540, Math.round(window.innerHeight * 0.56)));
    this.layout = layoutMemory(pictureSpec(this.trace), this.trace.config, Math.max(320, this.width), maxH);
    const ratio = dpr();
    for (const c of [this.under, this.base, this.overlay]) {
      c.width = Math.round(this.layout.width * ratio);
      c.height = Math.round(this.layout.height * ratio);
      c.style.width = `${this.layout.width}px`;
      c.style.height = `${this.layout.height}px`;
    }
    this.root.style.height = `${this.layout.height}px`;
  }

  // ---- the layers under the pointer: the panels and HBM, then the step ----

  private drawBase(): void {
    if (!this.painted) return;
    const sc = this.scene();
    if (!sc) return;
    const { trace: t, layout: l, s } = sc;
    const pen = this.pen;

    // the layer under: both panels and HBM's grids, which change only when a write lands (or the block does)
    const sramHead = sramTitle(t, s);
    const key = `${sc.history.key(s.phase)}|${l.width}|${sramHead}`;
    if (this.hbmKey !== key) {
      this.hbmKey = key;
      pen.rec = this.hbmDrawn = emptyDrawn();
      const hctx = this.hbmLayer.begin(this.under, dpr());
      hctx.clearRect(0, 0, l.width, l.height);
      panel(hctx, pen, l.hbm, hbmTitles(t));
      panel(hctx, pen, l.sram, shortenings(sramHead));
      hbmGrids(hctx, pen, this.raster, sc);
      this.hbmLayer.present(this.under);
    }

    const ctx = this.back.begin(this.base, dpr());
    ctx.clearRect(0, 0, l.width, l.height);
    pen.rec = this.stepDrawn = emptyDrawn();

    causalVeils(ctx, pen, sc);
    watched(ctx, pen, sc);
    lockstep(ctx, pen, sc);

    // SRAM buffers
    const bc = t.config.bc;
    for (const name of l.sramOrder) {
      const b = l.grids[name]!;
      const values = sramValues(sc, name);
      const changed = s.sram[name] !== undefined;
      const on = live(b, s);
      title(ctx, pen, l, b, t.buffers[name]?.label ?? name, "", on ? sramNote(t, s, name) : "(other kernel)", changed);
      ctx.save();
      if (!on) ctx.globalAlpha = 0.35;
      if (!values) emptyGrid(ctx, pen, b, bc, "empty");
      else {
        const range = rangeOf(sc, name, values);
        grid(ctx, pen, b, values, range, () => this.raster.sramImage(this.snapshotKey(name), values, range));
      }
      sramPadding(ctx, pen, sc, b);
      ctx.restore();
      if (changed) changedBox(ctx, pen, b);
    }

    tileCaption(ctx, pen, sc);

    // this step's transfers: highlighted in HBM, connected to their buffer through the band
    const ends: { hbmX: number; sramX: number; kind: "read" | "write" }[] = [];
    for (const tr of s.transfers) {
      const r = transferMark(ctx, pen, sc, tr);
      const e = r && endpointRect(l, tr);
      if (r && e) ends.push({ hbmX: r.x + r.w / 2, sramX: e.x + e.w / 2, kind: tr.kind });
    }
    for (const arc of connectors(l, ends)) connector(ctx, pen, arc);

    this.back.present(this.base);
    this.base.setAttribute("aria-label", describe(t, s));
  }

  /** The key of a buffer's contents at the step: the buffer and the step whose snapshot holds them. */
  private snapshotKey(name: string): string {
    const idx = this.idx!;
    const bi = idx.buffers.indexOf(name);
    const src = bi < 0 ? -1 : (idx.source[this.step]?.[bi] ?? -1);
    return `${name}:${src}`;
  }

  // ---- the overlay: flights and hover ----

  private startFlights(ms: number): void {
    const sc = this.scene();
    if (!sc) return;
    if (!sc.s.transfers.length || matchMedia("(prefers-reduced-motion: reduce)").matches) return;
    this.flights = planFlights(sc, this.pen, this.raster);
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

  private drawOverlay(): void {
    if (!this.painted) return;
    const l = this.layout;
    if (!l) return;
    if (!this.flights.length && !this.hover && !this.overlayDirty) return; // nothing on it, nothing to clear
    const ctx = this.overlay.getContext("2d")!;
    ctx.setTransform(dpr(), 0, 0, dpr(), 0, 0);
    ctx.clearRect(0, 0, l.width, l.height);
    this.overlayDirty = this.flights.length > 0 || this.hover !== null;
    if (this.flights.length) {
      drawFlights(ctx, this.flights, Math.min(1, (performance.now() - this.flightStart) / Math.max(1, this.flightDur)));
    }
    if (this.hover) {
      const b = l.grids[this.hover.grid]!;
      const r = cellRect(b, this.hover.r, this.hover.r + 1, this.hover.c, this.hover.c + 1);
      ctx.save();
      ctx.strokeStyle = this.pen.palette.ink;
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
      const sc = this.scene();
      if (sc) this.tip.replaceChildren(tipNodes(cellTip(sc, h)));
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
}
