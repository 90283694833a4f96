// The comparison view: the same config under every algorithm (GET /api/compare), their HBM counters
// advancing together, and a log–log chart of total HBM traffic against N for the algorithms the server sweeps (its
// `sweep.bytes`) from the closed-form models, with the current config marked. Draws only: every number and name comes
// from the server.
import type { CompareDoc, PhaseCurve } from "../compareDoc";
import { type Child, fill, frag, h, s, sub } from "../dom";
import { bytes, int, kib } from "../format";

/** The algorithms the chart draws: those the server swept, in its order. */
export function charted(doc: CompareDoc): string[] {
  return Object.keys(doc.sweep.bytes);
}

/** An algorithm's short name, as the server gives it. */
export function shortName(doc: CompareDoc, a: string): string {
  return doc.algorithms[a]?.short ?? a;
}

/** An algorithm's colour class: its place in the server's list (the chart's and the race's colours agree). */
export function series(doc: CompareDoc, a: string): string {
  return `s-${Math.max(0, Object.keys(doc.algorithms).indexOf(a))}`;
}

/** Where an algorithm stands at progress u in [0, 1] of its launch: u·P of its P phases done (rounded), so the
 *  watched launch after its phase p (u = (p + 1)/P) is read at that very phase p, and another algorithm at the
 *  same fraction of its own phases. `phase` is the last phase done (−1: none yet, nothing moved), its cumulative
 *  elements read and written (at the last sampled phase at or before it: long launches are sampled). */
export function curveAt(
  c: PhaseCurve,
  u: number,
): { phase: number; read: number; written: number; bytes: number | null; op: string | null } {
  const done = Math.round(Math.min(1, Math.max(0, Number.isFinite(u) ? u : 0)) * c.phases);
  if (done <= 0 || !c.phase.length || c.phase[0]! > done - 1) return { phase: -1, read: 0, written: 0, bytes: 0, op: null };
  const target = done - 1;
  let lo = 0;
  let hi = c.phase.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (c.phase[mid]! <= target) lo = mid;
    else hi = mid - 1;
  }
  return { phase: c.phase[lo]!, read: c.read[lo]!, written: c.written[lo]!, bytes: c.bytes?.[lo] ?? null, op: c.op[lo] ?? null };
}

/** How far a launch has got after its phase `phase` (0-based) of `phases`: what the comparison follows. */
export function progressAfter(phase: number, phases: number): number {
  return phases > 0 ? (phase + 1) / phases : 0;
}

/** Log–log axes: a value's position in [0, 1] between lo and hi. */
export function logPos(v: number, lo: number, hi: number): number {
  return (Math.log(v) - Math.log(lo)) / (Math.log(hi) - Math.log(lo));
}

/** The chart's domain: the sweep's N (and the current N), bytes rounded out to whole decades. */
export function chartDomain(doc: CompareDoc): { nLo: number; nHi: number; bLo: number; bHi: number } {
  const ns = [...doc.sweep.n, doc.config.n];
  const bs: number[] = [];
  for (const a of charted(doc)) {
    bs.push(...(doc.sweep.bytes[a] ?? []));
    const t = doc.algorithms[a]?.total?.bytes;
    if (t) bs.push(t);
  }
  const pos = bs.filter((b) => b > 0);
  return {
    nLo: Math.min(...ns),
    nHi: Math.max(...ns),
    bLo: 10 ** Math.floor(Math.log10(Math.min(...pos))),
    bHi: 10 ** Math.ceil(Math.log10(Math.max(...pos))),
  };
}

/** One algorithm's "SRAM per block" cell: shared memory in KiB (the hardware section's very string), or a dash. */
export function sramText(e: { sram_bytes?: number | null; sram_fits?: boolean | null }): string {
  return e.sram_bytes ? kib(e.sram_bytes) + (e.sram_fits === false ? " (too big)" : "") : "\u2014";
}

/** A power of ten of bytes in decimal units: 1 kB, 10 kB, 100 kB, 1 MB, ... */
export function decadeLabel(b: number): string {
  const units = ["B", "kB", "MB", "GB", "TB", "PB"];
  const e = Math.round(Math.log10(b));
  const u = Math.min(units.length - 1, Math.floor(e / 3));
  return `${10 ** (e - 3 * u)} ${units[u]}`;
}

function nLabel(n: number): string {
  return n >= 1024 && n % 1024 === 0 ? `${n / 1024}k` : String(n);
}

/** A text box in the chart (SVG user units), for keeping labels apart. */
export interface ChartBox {
  text: string;
  kind: "ytick" | "xtick" | "ytitle" | "xtitle" | "series" | "now";
  x: number;
  y: number;
  w: number;
  h: number;
}

const TICK_PX = 10.5; // .chart .tick
const AXIS_PX = 11.5; // .chart .axis
const LABEL_PX = 11.5; // .chart .label (bold)

/** The box of a line of text at `px` whose baseline is at `y`: the line box a browser gives it (ascent 0.95 em,
 *  descent 0.25 em). */
function lineBox(y: number, px: number): { y: number; h: number } {
  return { y: y - 0.95 * px, h: 1.2 * px };
}

/** A generous width for sans-serif text at `px` (SVG text is laid out by the browser; this only keeps room). */
export function textWidth(text: string, px: number, bold = false): number {
  return text.length * px * (bold ? 0.72 : 0.66); // DejaVu Sans (CI's font) averages ~0.63 em a character
}

/** Every position the chart uses: margins, scales, ticks, and the boxes of all its words (none overlap). */
export function chartLayout(doc: CompareDoc, width = 560, height = 300) {
  const { nLo, nHi, bLo, bHi } = chartDomain(doc);
  const decades: number[] = [];
  for (let e = Math.round(Math.log10(bLo)); e <= Math.round(Math.log10(bHi)); e++) decades.push(10 ** e);
  const tickW = Math.max(...decades.map((b) => textWidth(decadeLabel(b), TICK_PX)));
  const algos = charted(doc);
  const labelW = Math.max(0, ...algos.map((a) => textWidth(shortName(doc, a), LABEL_PX, true)));
  // left: the rotated axis title, a gap, the tick labels, a gap; right: the series' names; top: the "N = " label
  const m = { l: Math.ceil(2 + 1.2 * AXIS_PX + 6 + tickW + 6), r: Math.ceil(6 + labelW + 4), t: 20, b: 38 };
  const W = width - m.l - m.r;
  const H = height - m.t - m.b;
  const X = (n: number) => m.l + logPos(n, nLo, nHi) * W;
  const Y = (b: number) => m.t + (1 - logPos(b, bLo, bHi)) * H;
  const boxes: ChartBox[] = [];
  const yTicks = decades.map((b) => {
    const y = Y(b);
    const text = decadeLabel(b);
    const w = textWidth(text, TICK_PX);
    boxes.push({ text, kind: "ytick", x: m.l - 6 - w, w, ...lineBox(y + 3.5, TICK_PX) });
    return { b, y, text };
  });
  // N ticks every 2 octaves, or every 4 when they would crowd
  const first = 2 ** Math.ceil(Math.log2(nLo));
  const octaves = Math.max(1, Math.log2(nHi / nLo));
  const widest = textWidth(nLabel(2 ** Math.floor(Math.log2(nHi))), TICK_PX);
  const step = (2 * W) / octaves >= widest + 10 ? 4 : (4 * W) / octaves >= widest + 10 ? 16 : 256;
  const xTicks: { n: number; x: number; text: string }[] = [];
  for (let n = first; n <= nHi; n *= step) {
    const x = X(n);
    const text = nLabel(n);
    const w = textWidth(text, TICK_PX);
    boxes.push({ text, kind: "xtick", x: x - w / 2, w, ...lineBox(m.t + H + 17, TICK_PX) });
    xTicks.push({ n, x, text });
  }
  const xTitle = "sequence length N (log)";
  const xtw = textWidth(xTitle, AXIS_PX);
  boxes.push({ text: xTitle, kind: "xtitle", x: m.l + W / 2 - xtw / 2, w: xtw, ...lineBox(height - 4, AXIS_PX) });
  const yTitle = "HBM traffic, bytes (log)";
  const ytw = textWidth(yTitle, AXIS_PX);
  const ytx = 2 + 0.95 * AXIS_PX; // baseline of the title turned a quarter left: its ascent points left
  boxes.push({ text: yTitle, kind: "ytitle", x: 2, y: m.t + H / 2 - ytw / 2, w: 1.2 * AXIS_PX, h: ytw });
  // the series' names at the right end of their lines, pushed apart
  const last = doc.sweep.n.length - 1;
  const ends = algos.map((a) => ({ a, y: Y(doc.sweep.bytes[a]![last]!) }));
  ends.sort((p, q) => p.y - q.y);
  for (let k = 1; k < ends.length; k++) ends[k]!.y = Math.max(ends[k]!.y, ends[k - 1]!.y + 1.2 * LABEL_PX + 2);
  const lx = X(doc.sweep.n[last]!) + 6;
  for (const e of ends) {
    const text = shortName(doc, e.a);
    boxes.push({ text, kind: "series", x: lx, w: textWidth(text, LABEL_PX, true), ...lineBox(e.y + 4, LABEL_PX) });
  }
  // the current N: its label in the top margin, right of the line (left of it near the right edge)
  const cx = X(doc.config.n);
  const now = `N = ${int(doc.config.n)}`;
  const nw = textWidth(now, TICK_PX);
  const nx = cx + 5 + nw <= width - 2 ? cx + 5 : cx - 5 - nw;
  boxes.push({ text: now, kind: "now", x: nx, w: nw, ...lineBox(m.t - 6, TICK_PX) });
  return { m, W, H, X, Y, yTicks, xTicks, ends, lx, cx, nx, ytx, boxes, width, height };
}

/** The chart, as SVG elements at chartLayout()'s positions (CSS classes carry the colours, so it follows the theme). */
export function chartSvg(doc: CompareDoc, width = 560, height = 300): SVGSVGElement {
  const L = chartLayout(doc, width, height);
  const { m, W, H, X, Y } = L;
  const c = doc.config;
  const svg = s("svg", {
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    class: "chart",
    role: "img",
    "data-testid": "traffic-chart",
    "aria-label": `Total HBM traffic against N, log-log, for ${charted(doc)
      .map((a) => doc.algorithms[a]?.title ?? a)
      .join(", ")} at D=${c.d}, Br=${c.br}, Bc=${c.bc}${c.causal ? ", causal" : ""}; the current N=${c.n} marked`,
  });
  // grid and axes
  for (const t of L.yTicks) {
    svg.append(
      s("line", { class: "grid", x1: m.l, x2: m.l + W, y1: t.y, y2: t.y }),
      s("text", { class: "tick", x: m.l - 6, y: t.y + 3.5, "text-anchor": "end" }, t.text),
    );
  }
  for (const t of L.xTicks) {
    svg.append(
      s("line", { class: "grid", x1: t.x, x2: t.x, y1: m.t, y2: m.t + H }),
      s("text", { class: "tick", x: t.x, y: m.t + H + 17, "text-anchor": "middle" }, t.text),
    );
  }
  svg.append(
    s("text", { class: "axis", x: m.l + W / 2, y: height - 4, "text-anchor": "middle" }, "sequence length N (log)"),
    s(
      "text",
      { class: "axis", transform: `translate(${L.ytx} ${m.t + H / 2}) rotate(-90)`, "text-anchor": "middle" },
      "HBM traffic, bytes (log)",
    ),
  );
  // the current N
  svg.append(s("line", { class: "now", x1: L.cx, x2: L.cx, y1: m.t, y2: m.t + H, "data-testid": "chart-now", "data-n": c.n }));
  // one line per algorithm through the sweep (which holds the current N), its point there, its name at the end
  for (const a of charted(doc)) {
    const ys = doc.sweep.bytes[a]!;
    const pts = doc.sweep.n.map((n, k) => `${X(n).toFixed(1)},${Y(ys[k]!).toFixed(1)}`).join(" ");
    svg.append(s("polyline", { class: `series ${series(doc, a)}`, points: pts, "data-algo": a }));
    const ly = L.ends.find((e) => e.a === a)!.y;
    svg.append(s("text", { class: `label ${series(doc, a)}`, x: L.lx, y: ly + 4, "text-anchor": "start" }, shortName(doc, a)));
    const here = doc.algorithms[a]?.total?.bytes;
    if (here) {
      svg.append(
        s(
          "circle",
          { class: `dot ${series(doc, a)}`, cx: L.cx, cy: Y(here), r: 4.5, "data-algo": a },
          s("title", {}, `${shortName(doc, a)} at N=${c.n}: ${bytes(here)}`),
        ),
      );
    }
  }
  svg.append(s("text", { class: "now-label", x: L.nx, y: m.t - 6 }, `N = ${int(c.n)}`));
  return svg;
}

export class CompareView {
  private doc: CompareDoc | null = null;
  private bars = new Map<string, { bar: HTMLElement; text: HTMLElement; op: HTMLElement }>();
  private u = 0;
  private own = 0; // rAF of its own playback
  private playing = false;
  private ownStart = 0;
  private followU = 0;

  constructor(
    private readonly table: HTMLElement,
    private readonly race: HTMLElement,
    private readonly chart: HTMLElement,
    private readonly note: HTMLElement,
    private readonly playBtn: HTMLButtonElement,
  ) {
    this.playBtn.addEventListener("click", () => (this.playing ? this.stop() : this.play()));
  }

  /** Draw `doc`; one its views cannot read (what the checks let through) throws, and the view goes back to the
   *  document it drew before, so that the page's render (follow) never meets it. */
  setDoc(doc: CompareDoc): void {
    const before = this.doc;
    try {
      this.draw(doc);
    } catch (e) {
      this.doc = null;
      try {
        if (before && before !== doc) this.draw(before);
      } catch {
        this.doc = null; // nothing it can draw: the race and the chart stay as they are, follow() draws nothing
      }
      throw e;
    }
  }

  private draw(doc: CompareDoc): void {
    this.doc = doc;
    this.renderTable();
    this.renderRace();
    this.drawChart();
    this.progress(this.followU);
  }

  private chartWidth = 0;
  private observed = false;

  /** The chart at its container's width (a phone's is narrower than the default 560), redrawn when that changes. */
  private drawChart(): void {
    if (!this.observed) {
      this.observed = true;
      new ResizeObserver((entries) => {
        const w = Math.floor(entries[0]?.contentRect.width ?? 0);
        if (w > 0 && w !== this.chartWidth) {
          this.chartWidth = w;
          if (this.doc) this.drawChart();
        }
      }).observe(this.chart);
    }
    const w = Math.max(300, Math.min(580, this.chartWidth || 560));
    fill(this.chart, chartSvg(this.doc!, w, Math.round(Math.min(300, Math.max(240, w * 0.56)))));
  }

  /** Follow the main view: u = how far the watched launch has got (progressAfter: its phases done over its phases). */
  follow(u: number): void {
    this.followU = u;
    if (!this.playing) this.progress(u);
  }

  private play(): void {
    this.playing = true;
    this.playBtn.textContent = "Pause";
    this.playBtn.setAttribute("aria-pressed", "true");
    this.ownStart = performance.now() - this.u * 6000;
    if (this.u >= 1) this.ownStart = performance.now();
    const tick = () => {
      const u = Math.min(1, (performance.now() - this.ownStart) / 6000);
      this.progress(u);
      if (u < 1 && this.playing) this.own = requestAnimationFrame(tick);
      else this.stop();
    };
    this.own = requestAnimationFrame(tick);
  }

  private stop(): void {
    cancelAnimationFrame(this.own);
    this.playing = false;
    this.playBtn.textContent = "Run all together";
    this.playBtn.setAttribute("aria-pressed", "false");
  }

  private renderTable(): void {
    const d = this.doc!;
    const names = Object.keys(d.algorithms).filter((a) => d.algorithms[a]!.supported);
    const e = (a: string) => d.algorithms[a]!;
    const row = (label: Child, cell: (a: string) => Child, testid?: string) =>
      h(
        "tr",
        { "data-testid": testid },
        h("th", { scope: "row" }, label),
        // data-label: on a phone each row is a card, each algorithm's value under its name (styles.css, table.stack)
        ...names.map((a) => h("td", { class: "num", "data-algo": a, "data-label": shortName(d, a) }, cell(a))),
      );
    const head = h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }),
        ...names.map((a) =>
          h(
            "th",
            { scope: "col", class: "num" },
            shortName(d, a),
            e(a).pass === "backward" ? frag(h("br"), h("span", { class: "muted" }, "(backward pass)")) : null,
          ),
        ),
      ),
    );
    const body = h(
      "tbody",
      {},
      row("HBM read", (a) => bytes(e(a).total?.read_bytes ?? 0)),
      row("HBM written", (a) => bytes(e(a).total?.written_bytes ?? 0)),
      row(h("b", {}, "HBM traffic"), (a) => h("b", {}, bytes(e(a).total?.bytes ?? 0)), "compare-total"),
      row(`traffic \u00f7 ${d.baseline ? `${shortName(d, d.baseline)}'s` : "the baseline's"}`, (a) =>
        typeof e(a).traffic_vs_fa2 === "number" ? `${e(a).traffic_vs_fa2!.toFixed(2)}\u00d7` : "\u2014",
      ),
      row("SRAM per block", (a) => sramText(e(a)), "compare-sram"),
      row("steps", (a) => (e(a).steps ? int(e(a).steps!) : "\u2014")),
      d.config.causal ? row("causal saves", (a) => (e(a).saved_bytes ? bytes(e(a).saved_bytes!) : "\u2014"), "compare-saved") : null,
    );
    // the tensors, each algorithm's own
    const tensors: string[] = [];
    for (const a of names) for (const t of Object.keys(e(a).tensors ?? {})) if (!tensors.includes(t)) tensors.push(t);
    const per = h(
      "tbody",
      { class: "tensors" },
      h("tr", {}, h("th", { scope: "rowgroup", colspan: names.length + 1 }, "per tensor: read / written")),
      ...tensors.map((t) =>
        row(h("span", { class: "tensor" }, t), (a) => {
          const x = e(a).tensors?.[t];
          return x ? `${bytes(x.read_bytes)} / ${bytes(x.written_bytes)}` : "\u2014";
        }),
      ),
    );
    fill(this.table, head, body, per);
    const c = d.config;
    fill(
      this.note,
      `N = ${int(c.n)}, D = ${c.d}, `,
      sub("B", "r"),
      ` = ${c.br}, `,
      sub("B", "c"),
      ` = ${c.bc} (`,
      sub("T", "r"),
      ` = ${c.tr}, `,
      sub("T", "c"),
      ` = ${c.tc})${c.causal ? ", causal" : ""}; fp32, one head. Closed-form models, each equal to its engine's per-element counters (the same numbers as `,
      h("code", {}, "flashviz compare"),
      "). Bytes moved in decimal units (1 kB = 1000 B), shared memory in KiB (1024 B), as Nsight Compute and CUDA write them.",
    );
  }

  private renderRace(): void {
    const d = this.doc!;
    this.bars.clear();
    const names = Object.keys(d.algorithms).filter((a) => d.algorithms[a]!.supported);
    const rows = names.map((a) => {
      const curve = d.curves?.[a];
      const skipped = curve && "skipped" in curve ? curve.skipped : null;
      const bar = h("span", { class: `race-bar ${series(d, a)}` });
      const text = h("span", { class: "race-text num" });
      const op = h("span", { class: "race-op muted small" }, skipped ? `counters not animated: ${skipped}` : "");
      this.bars.set(a, { bar, text, op });
      return h(
        "div",
        { class: "race-row", "data-testid": `race-${a}`, "data-algo": a },
        h("span", { class: "race-name" }, shortName(d, a)),
        h("span", { class: "race-track" }, bar),
        text,
        op,
      );
    });
    fill(this.race, ...rows);
  }

  /** Every algorithm's counters at the same fraction u of its launch. */
  private progress(u: number): void {
    this.u = u;
    const d = this.doc;
    if (!d) return;
    const max = Math.max(...Object.values(d.algorithms).map((e) => e.total?.bytes ?? 0), 1);
    const per = d.bytes_per_element;
    for (const [a, el] of this.bars) {
      const curve = d.curves?.[a];
      const total = d.algorithms[a]?.total?.bytes ?? 0;
      let moved = total * u;
      let phase = "";
      let done = "";
      if (curve && !("skipped" in curve)) {
        const at = curveAt(curve, u);
        done = String(at.phase + 1);
        moved = at.bytes ?? (at.read + at.written) * per; // the curve's own bytes where it gives them (bf16: 2 per element)
        phase =
          at.phase < 0
            ? `before phase 1 of ${int(curve.phases)}`
            : `after phase ${int(at.phase + 1)} of ${int(curve.phases)}${at.op ? ` \u00b7 ${at.op}` : ""}`;
      }
      el.bar.style.transform = `scaleX(${moved / max})`;
      el.text.textContent = `${bytes(Math.round(moved))} of ${bytes(total)}`;
      el.text.dataset.bytes = String(Math.round(moved));
      if (phase) {
        el.op.textContent = phase;
        el.op.dataset.phase = done; // phases done, 1-based: "after phase 3" is 3
      }
    }
  }
}
