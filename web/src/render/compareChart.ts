// The comparison's chart: a log–log chart of total HBM traffic against N for the algorithms the server sweeps (its
// `sweep.bytes`) from the closed-form models, with the current config marked; its layout (every position and the
// boxes of its words) apart from the SVG drawn at it.
import type { CompareDoc } from "../compareDoc";
import { s } from "../dom";
import { bytes, int } from "../format";
import { charted, series, shortName } from "./compareSeries";

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
