// The scrubbable timeline: one bar per step, coloured by op, grouped by block i and tile j.
// An ARIA slider; drawing on a canvas keeps it cheap for thousands of steps.
import { unitKey } from "../picture";
import type { Step, Trace } from "../types";
import { Backbuffer } from "./backbuffer";

export class Timeline {
  readonly el: HTMLDivElement;
  private readonly canvas: HTMLCanvasElement;
  private trace: Trace | null = null;
  private units: string[] = []; // per step, the unit it belongs to (steps are grouped by it)
  private step = 0;
  private dragging = false;
  private width = 0;
  private height = 34; // the element's height (taller on a phone, for the thumb); read by the observer, never mid-step
  private readonly back = new Backbuffer();

  constructor(
    host: HTMLElement,
    private readonly onSeek: (k: number) => void,
  ) {
    this.el = document.createElement("div");
    this.el.className = "timeline";
    this.el.tabIndex = 0;
    this.el.setAttribute("role", "slider");
    this.el.setAttribute("aria-label", "Step timeline, marked by block i and tile j");
    this.el.dataset.testid = "timeline";
    this.canvas = document.createElement("canvas");
    this.el.append(this.canvas);
    host.append(this.el);
    this.el.addEventListener("pointerdown", (e) => {
      this.dragging = true;
      this.el.setPointerCapture(e.pointerId);
      this.seekAt(e.clientX);
    });
    this.el.addEventListener("pointermove", (e) => {
      if (this.dragging) this.seekAt(e.clientX);
      else this.el.title = this.tooltipAt(e.clientX);
    });
    this.el.addEventListener("pointerup", () => (this.dragging = false));
    this.el.addEventListener("pointercancel", () => (this.dragging = false));
    new ResizeObserver(() => {
      const w = Math.floor(this.el.clientWidth);
      const h = Math.floor(this.el.clientHeight) || 34;
      if (w !== this.width || h !== this.height) {
        this.width = w;
        this.height = h;
        this.draw();
      }
    }).observe(this.el);
  }

  private indexAt(clientX: number): number {
    const t = this.trace;
    if (!t) return 0;
    const r = this.el.getBoundingClientRect();
    const u = (clientX - r.left) / Math.max(1, r.width);
    return Math.min(t.steps.length - 1, Math.max(0, Math.floor(u * t.steps.length)));
  }

  private seekAt(clientX: number): void {
    const k = this.indexAt(clientX);
    if (k !== this.step) this.onSeek(k);
  }

  private tooltipAt(clientX: number): string {
    const k = this.indexAt(clientX);
    const s = this.trace?.steps[k];
    return s ? `step ${k + 1}: ${label(s)}` : "";
  }

  private colours = new Map<string, string>();

  /** A theme colour, read once per theme (getComputedStyle mid-repaint would force a style pass). */
  private colour(name: string): string {
    let c = this.colours.get(name);
    if (c === undefined) {
      c = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
      this.colours.set(name, c);
    }
    return c;
  }

  /** The theme changed: forget the colours and redraw. */
  retheme(): void {
    this.colours.clear();
    this.draw();
  }

  setTrace(t: Trace): void {
    this.trace = t;
    this.units = t.steps.map((s) => unitKey(t, s));
    // steps counted from 1, as the step counter shows them
    this.el.setAttribute("aria-valuemin", "1");
    this.el.setAttribute("aria-valuemax", String(t.steps.length));
    this.draw();
  }

  show(k: number): void {
    this.step = k;
    const s = this.trace?.steps[k];
    this.el.setAttribute("aria-valuenow", String(k + 1));
    if (s) this.el.setAttribute("aria-valuetext", `step ${k + 1} of ${this.trace!.steps.length}: ${label(s)}`);
    this.draw();
  }

  private draw(): void {
    const t = this.trace;
    const w = this.width || Math.floor(this.el.clientWidth);
    if (!t || w <= 0) return;
    const h = this.height;
    const ratio = Math.min(3, window.devicePixelRatio || 1);
    if (this.canvas.width !== Math.round(w * ratio) || this.canvas.height !== Math.round(h * ratio)) {
      this.canvas.width = Math.round(w * ratio);
      this.canvas.height = Math.round(h * ratio);
      this.canvas.style.width = `${w}px`;
      this.canvas.style.height = `${h}px`;
    }
    const ctx = this.back.begin(this.canvas, ratio);
    const col = (v: string) => this.colour(v);
    const colours: Record<string, string> = {
      read: col("--read"),
      write: col("--write"),
      compute: col("--op-compute"),
      softmax: col("--op-softmax"),
    };
    ctx.clearRect(0, 0, w, h);
    const n = t.steps.length;
    const bw = w / n;
    const top = 14;
    const barH = h - top - 4;
    // group labels: block i, then tile j inside it when there is room
    ctx.font = "10px system-ui, sans-serif";
    ctx.textBaseline = "top";
    const units = this.units;
    // block labels when several blocks run at once and more than one is recorded
    const several = t.config.recorded_blocks.length > 1 && t.picker.lockstep;
    let k = 0;
    while (k < n) {
      const s = t.steps[k]!;
      let e = k;
      while (e + 1 < n && units[e + 1] === units[k]) e++;
      const x0 = k * bw;
      const x1 = (e + 1) * bw;
      ctx.fillStyle = col("--ink-muted");
      const letter = t.kernels[s.kernel]?.grid.letter ?? "block";
      if (several && x1 - x0 > 40) ctx.fillText(`${letter}=${s.block}`, x0 + 2, 1);
      // tile groups
      let a = k;
      while (a <= e) {
        const j = t.steps[a]!.j;
        let b = a;
        while (b + 1 <= e && t.steps[b + 1]!.j === j) b++;
        if (j !== null && (b - a + 1) * bw > 26) {
          ctx.fillStyle = col("--ink-muted");
          const lx = a * bw + ((b - a + 1) * bw) / 2 - 8;
          if (!(several && lx < x0 + 26)) ctx.fillText(`j=${j}`, lx, 1);
        }
        if (j !== null && a > k) {
          ctx.fillStyle = col("--grid-line");
          ctx.fillRect(a * bw - 0.5, top - 2, 1, barH + 4);
        }
        a = b + 1;
      }
      if (k > 0) {
        ctx.fillStyle = col("--ink");
        ctx.fillRect(x0 - 1, 0, 2, h);
      }
      k = e + 1;
    }
    const gap = bw > 6 ? 1.5 : 0;
    for (let q = 0; q < n; q++) {
      const s = t.steps[q]!;
      ctx.globalAlpha = q <= this.step ? 1 : 0.35;
      ctx.fillStyle = colours[t.ops[s.op]?.kind ?? ""] ?? col("--ink-muted");
      ctx.fillRect(q * bw + gap / 2, top, Math.max(1, bw - gap), barH);
    }
    ctx.globalAlpha = 1;
    // the playhead
    const x = (this.step + 0.5) * bw;
    ctx.fillStyle = col("--ink");
    ctx.fillRect(x - 1, top - 3, 2, barH + 6);
    ctx.beginPath();
    ctx.moveTo(x - 5, top - 5);
    ctx.lineTo(x + 5, top - 5);
    ctx.lineTo(x, top + 1);
    ctx.fill();
    this.back.present(this.canvas);
  }
}

export function label(s: Step): string {
  const where = Object.entries(s.indices)
    .map(([k, v]) => `${k} = ${v}`)
    .join(", ");
  return `${where}: ${s.math}`;
}
