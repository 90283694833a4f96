// The schedule view (issue 20): for a trace with a `schedule` (a warp-specialized kernel's partitions), one lane per
// partition with time across, each piece of the tiles' work as a bar (colour by piece; modelled bars hatched,
// measured ones filled), the lanes' waits as labelled gaps, the ring's slots filling and draining, the current
// step's bars outlined in every lane; below, the document's baseline (the same tiles in one lane) on the same axis;
// the ablation's rungs as a radio group that redraws the lanes; where the document carries a recorded run, its
// measured lanes each beside the model's lane at the run's shape on one axis, with the document's per-piece
// disagreement, and the recorded tensor pipe of the kernels side by side. Everything comes from the trace; text
// lands as text nodes.
import { h, s } from "../dom";
import type { LaneRow, MeasuredDoc, ScheduleBar, ScheduleBlock, ScheduleDoc, TensorPipeDoc } from "../scheduleDoc";
import type { Step, Trace } from "../types";
import {
  blockOf,
  current,
  disagreementLines,
  legend,
  type PlacedBar,
  pipeSentence,
  place,
  rowsOf,
  slots,
  ticks,
  waits,
} from "./scheduleLayout";

const WIDTH = 760;
const LABEL = 170; // px of lane names at the left
const LANE_H = 22;
const SLOT_H = 9;
const AXIS_H = 22;
const KINDS = 10; // colours sched-k0 .. sched-k9

function us(ns: number): string {
  return ns >= 1000 ? `${(ns / 1000).toFixed(2)} µs` : `${ns.toFixed(0)} ns`;
}

function barTitle(doc: ScheduleDoc, b: ScheduleBar, source: string): string {
  const words = doc.pieces?.[b.piece ?? b.what] ?? b.what;
  const tile = b.j === null ? "" : `, tile ${b.j}`;
  return `${b.what}${tile}: ${words}, ${us(b.start_ns)} – ${us(b.end_ns)} (${us(b.end_ns - b.start_ns)}, ${source})`;
}

interface Drawn {
  svg: SVGSVGElement;
  bars: [PlacedBar, SVGRectElement][];
}

/** One block's rows of lanes as an SVG: rows, bars, waits, ring slots (when `stages` and a `fromLane` are given),
 *  axis. */
export function lanesSvg(
  doc: ScheduleDoc,
  lanes: LaneRow[],
  block: Pick<ScheduleBlock, "bars" | "end_ns">,
  span: number,
  id: string,
  stages: number,
  fromLane: string | null,
): Drawn {
  const inner = WIDTH - LABEL - 8;
  const slotRows = fromLane ? stages : 0;
  const height = lanes.length * LANE_H + (slotRows ? slotRows * SLOT_H + 16 : 0) + AXIS_H;
  const svg = s("svg", {
    width: WIDTH,
    height,
    viewBox: `0 0 ${WIDTH} ${height}`,
    role: "img",
    class: "sched-svg",
    "data-testid": `${id}-svg`,
    "aria-label": `${lanes.length} lanes, ${block.bars.length} pieces of work, ${us(block.end_ns)} in all`,
  });
  const defs = s("defs");
  for (let k = 0; k < KINDS; k++) {
    defs.append(
      s(
        "pattern",
        { id: `${id}-hatch-${k}`, width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
        s("rect", { width: 6, height: 6, class: `sched-k${k}` }),
        s("line", { x1: 0, y1: 0, x2: 0, y2: 6, class: "sched-hatch-line" }),
      ),
    );
  }
  svg.append(defs);
  const placed = place(doc, lanes, block.bars, span, inner);
  lanes.forEach((row, k) => {
    svg.append(
      s("text", { x: 0, y: k * LANE_H + LANE_H / 2 + 4, class: "sched-lane-label" }, row.label ?? row.lane),
      s("line", { x1: LABEL, x2: WIDTH - 8, y1: (k + 1) * LANE_H - 0.5, y2: (k + 1) * LANE_H - 0.5, class: "sched-grid" }),
    );
  });
  const g = s("g", { transform: `translate(${LABEL},0)` });
  for (const w of waits(doc, lanes, block.bars, span, inner, 0)) {
    const y = w.lane * LANE_H + LANE_H / 2;
    const gap = s(
      "g",
      { class: "sched-wait", "data-testid": `${id}-wait` },
      s("title", {}, `waits ${us(w.ns)} before ${w.before.what}${w.before.j === null ? "" : ` of tile ${w.before.j}`}`),
      s("line", { x1: w.x, x2: w.x + w.width, y1: y, y2: y }),
    );
    if (w.width > 34) gap.append(s("text", { x: w.x + w.width / 2, y: y - 3, class: "sched-wait-label" }, "wait"));
    g.append(gap);
  }
  const bars: [PlacedBar, SVGRectElement][] = [];
  for (const p of placed) {
    const kind = Math.max(0, p.kind) % KINDS;
    const rect = s(
      "rect",
      {
        x: p.x,
        y: p.lane * LANE_H + 3,
        width: p.width,
        height: LANE_H - 7,
        class: p.source === "measured" ? `sched-bar sched-k${kind} sched-measured` : "sched-bar sched-modelled",
        fill: p.source === "measured" ? undefined : `url(#${id}-hatch-${kind})`,
        "data-testid": `${id}-bar`,
        "data-lane": p.bar.lane,
        "data-piece": p.bar.piece ?? p.bar.what,
        "data-j": p.bar.j ?? "",
        "data-source": p.source,
        "data-x": p.x.toFixed(2),
        "data-width": p.width.toFixed(2),
      },
      s("title", {}, barTitle(doc, p.bar, p.source)),
    );
    bars.push([p, rect]);
    g.append(rect);
  }
  let y = lanes.length * LANE_H;
  if (fromLane && stages > 0) {
    y += 12;
    g.append(
      s("text", { x: 0, y: y - 2, class: "sched-slot-label" }, `shared-memory ring: ${stages} stages (Kj, Vj held from load to last use)`),
    );
    for (const sl of slots(block.bars, fromLane, stages, span, inner)) {
      g.append(
        s(
          "rect",
          { x: sl.x, y: y + sl.slot * SLOT_H + 1, width: sl.width, height: SLOT_H - 2, class: "sched-slot", "data-testid": `${id}-slot` },
          s("title", {}, `slot ${sl.slot} holds tile ${sl.j}`),
        ),
      );
    }
    y += stages * SLOT_H + 4;
  }
  for (const t of ticks(span, inner)) {
    g.append(
      s("line", { x1: t.x, x2: t.x, y1: y, y2: y + 4, class: "sched-grid" }),
      s("text", { x: t.x, y: y + 16, class: "sched-tick", "text-anchor": "middle" }, t.label),
    );
  }
  svg.append(g);
  return { svg, bars };
}

export class ScheduleView {
  private doc: ScheduleDoc | null = null;
  private variant = "";
  private block: number | null = null;
  private drawn: [PlacedBar, SVGRectElement][] = [];
  private last: Step | null = null;

  constructor(
    private readonly section: HTMLElement,
    private readonly controls: HTMLElement,
    private readonly body: HTMLElement,
    private readonly note: HTMLElement,
    private readonly pipe: HTMLElement,
  ) {}

  setTrace(t: Trace): void {
    const doc = t.schedule ?? null;
    this.doc = doc;
    this.section.hidden = doc === null;
    this.block = null;
    this.drawn = [];
    this.controls.replaceChildren();
    this.body.replaceChildren();
    this.note.replaceChildren();
    this.pipe.replaceChildren();
    if (doc === null) return;
    const variants = doc.variants ?? [];
    this.variant = doc.variant ?? variants[variants.length - 1]?.name ?? "";
    if (variants.length) {
      const group = h(
        "fieldset",
        { class: "sched-variants", "data-testid": "sched-variants" },
        h("legend", {}, "Kernel features (the ablation)"),
      );
      for (const v of variants) {
        const input = h("input", {
          type: "radio",
          name: "sched-variant",
          value: v.name,
          checked: v.name === this.variant,
          "data-testid": "sched-variant",
        });
        input.addEventListener("change", () => {
          if (!input.checked) return;
          this.variant = v.name;
          this.block = null;
          if (this.last) this.show(this.last);
        });
        const measured = v.tflops === null ? "" : ` · ${v.tflops.toFixed(1)} TFLOP/s measured`;
        group.append(h("label", {}, input, ` ${v.name}${measured}`));
      }
      this.controls.append(group);
    }
    this.showPipe(doc);
  }

  private blocks(): ScheduleBlock[] {
    const doc = this.doc!;
    const v = (doc.variants ?? []).find((x) => x.name === this.variant);
    return v ? v.blocks : doc.blocks;
  }

  show(step: Step): void {
    this.last = step;
    const doc = this.doc;
    if (doc === null) return;
    if (this.block !== step.block) this.draw(doc, step.block);
    for (const [p, rect] of this.drawn) {
      const on = current(p.bar, step.op, step.j);
      if (rect.classList.contains("sched-current") !== on) rect.classList.toggle("sched-current", on);
    }
    this.section.dataset.op = step.op;
    this.section.dataset.j = step.j === null ? "" : String(step.j);
  }

  private draw(doc: ScheduleDoc, i: number): void {
    this.block = i;
    const block = blockOf(this.blocks(), i);
    const base = doc.baseline ? blockOf(doc.baseline.blocks, i) : null;
    if (block === null) {
      this.body.replaceChildren();
      this.drawn = [];
      return;
    }
    const span = Math.max(block.end_ns, base?.end_ns ?? 0);
    const lanes = rowsOf(doc.lanes, doc.lane_labels ?? {});
    const main = lanesSvg(doc, lanes, block, span, "sched", doc.stages ?? 0, doc.lanes[0] ?? null);
    this.drawn = [...main.bars];
    const parts: Node[] = [
      h("h3", { class: "small" }, `Block i = ${block.i}: ${this.variant || "the model"}, ${us(block.end_ns)}`),
      main.svg,
    ];
    if (doc.baseline && base) {
      const rows = rowsOf(doc.baseline.lanes, doc.baseline.lane_labels ?? {});
      const b = lanesSvg(doc, rows, base, span, "sched-base", 0, null);
      this.drawn.push(...b.bars);
      parts.push(
        h("h3", { class: "small", "data-testid": "sched-base-title" }, `${doc.baseline.title ?? doc.baseline.algo}, ${us(base.end_ns)}`),
        b.svg,
      );
    }
    parts.push(key(doc, block.bars, "sched-legend"));
    if (doc.measured) parts.push(...this.measuredPanel(doc, doc.measured, i));
    this.body.replaceChildren(...parts);
    this.note.replaceChildren(...this.sentences(doc, block, base));
  }

  /** The recorded run's block (block i where it has it, else its first): each lane measured beside the model's, on
   *  one axis; what it checked; and the document's per-piece disagreement. */
  private measuredPanel(doc: ScheduleDoc, m: MeasuredDoc, i: number): Node[] {
    const mb = m.blocks.find((b) => b.i === i) ?? m.blocks[0];
    if (!mb) return [];
    const panelDoc: ScheduleDoc = { ...doc, pieces: { ...(doc.pieces ?? {}), ...m.pieces } };
    const drawn = lanesSvg(panelDoc, m.lane_rows, mb, mb.end_ns, "sched-meas", 0, null);
    this.drawn.push(...drawn.bars);
    const sh = m.shape;
    const shape = `N=${sh.n}, D=${sh.d}, Bc=${sh.bc}${sh.causal ? ", causal" : ""}, ${sh.heads * sh.batch} head${sh.heads * sh.batch === 1 ? "" : "s"}`;
    const out: Node[] = [
      h(
        "h3",
        { class: "small", "data-testid": "sched-meas-title" },
        `Measured on the ${m.gpu} (filled) beside the model (hatched): block i = ${mb.i}, run by program ${mb.program}, at ${shape}; ${us(mb.measured_ns)} measured, ${us(mb.modelled_ns)} modelled`,
      ),
    ];
    if (m.note)
      out.push(h("p", { class: "small muted", "data-testid": "sched-meas-note" }, `${m.note}: the lanes below are that launch's.`));
    out.push(drawn.svg, key(panelDoc, mb.bars, "sched-meas-legend"));
    const c = m.check;
    out.push(
      h(
        "p",
        { class: "small", "data-testid": "sched-meas-run" },
        `Recorded ${m.recorded_at} on the ${m.gpu} (driver ${m.driver}) by ${m.command} (${m.record_command}), ${m.clock}, the first block of ${m.programs} programs (${m.config}); ` +
          `installed as ${m.file} from ${m.results}. The timestamped build's O: ${c.o_same_bits_as_plain ? "the same bits as the plain build's" : "not the same bits as the plain build's"}, ` +
          `max |O − float64| ${c.max_abs_err_timestamped_vs_float64.toExponential(2)} (tolerance ${c.tolerance}): ${c.ok ? "checked" : "CHECK FAILED"}. ` +
          `Per launch ${m.time_us.plain.toFixed(1)} µs plain, ${m.time_us.timestamped.toFixed(1)} µs timestamped.`,
      ),
      h(
        "p",
        { class: "small" },
        `Where they disagree, over the ${m.programs} recorded blocks (measured mean against the model's same piece):`,
      ),
      h("ul", { class: "small", "data-testid": "sched-disagree" }, ...disagreementLines(m).map((line) => h("li", {}, line))),
    );
    return out;
  }

  private sentences(doc: ScheduleDoc, block: ScheduleBlock, base: ScheduleBlock | null): Node[] {
    const out: Node[] = [];
    const lines: string[] = [];
    lines.push(`The tensor cores are busy ${(100 * block.tensor_busy).toFixed(0)}% of this block's ${us(block.end_ns)}.`);
    if (base) {
      lines.push(
        `The same tiles one after another (${doc.baseline!.algo}'s order) take ${us(base.end_ns)}: ${(base.end_ns / block.end_ns).toFixed(2)}× as long, the tensor cores busy ${(100 * base.tensor_busy).toFixed(0)}%.`,
      );
    }
    const v = (doc.variants ?? []).find((x) => x.name === this.variant);
    const bench = doc.benchmark;
    if (v && bench) {
      const rungs = (doc.variants ?? [])
        .map((x) => `${x.name} ${x.tflops === null ? "not measured" : `${x.tflops.toFixed(1)}`}`)
        .join(", ");
      lines.push(
        `Measured (${bench.gpu}, ${bench.date}, D=${bench.d}, N=${bench.n}${bench.causal ? ", causal" : ""}, TFLOP/s forward, ${bench.source}): ${rungs}. The lanes are the model's; the TFLOP/s are the run's.`,
      );
    }
    if (doc.measured)
      lines.push(
        `The lanes above are the model's (hatched). The measured lanes (filled) are those of the run recorded on the ${doc.measured.gpu} on ${doc.measured.date}, each beside the model's lane at that run's shape.`,
      );
    else
      lines.push(
        "Every bar here is modelled (no measured timestamps in this trace): the cost model's parameters are in the trace's schedule.params.",
      );
    for (const line of lines) out.push(h("p", { class: "small", "data-testid": "sched-sentence" }, line));
    return out;
  }

  private showPipe(doc: ScheduleDoc): void {
    const tp: TensorPipeDoc | null = doc.tensor_pipe ?? null;
    if (tp === null || tp.rows.length === 0) return;
    const pct = (x: number | undefined) => (x === undefined ? "—" : `${x.toFixed(1)}%`);
    const rows = tp.rows.map((r) =>
      h(
        "tr",
        { "data-testid": "sched-pipe-row", "data-algo": r.algo },
        h("td", {}, r.algo),
        h("td", {}, r.kernel),
        h("td", {}, `N=${r.n}, D=${r.d}, ${r.heads * r.batch} heads${r.causal ? ", causal" : ""}`),
        ...tp.shown.map((name) => h("td", { class: "num", "data-metric": name }, pct(r.metrics[name]))),
        h("td", { class: "num" }, us(r.time_ns)),
        h("td", { class: "small" }, r.top_stalls.map((x) => `${x.reason} ${x.per_issue.toFixed(2)}`).join(", ")),
      ),
    );
    const sentence = pipeSentence(tp);
    this.pipe.append(
      h("h3", { class: "small" }, `Tensor-pipe utilisation, measured (Nsight Compute ${tp.ncu}, ${tp.gpu}, ${tp.date})`),
      // wider than a phone: it scrolls sideways inside the card
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "small", "data-testid": "sched-pipe" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", {}, "algorithm"),
              h("th", {}, "kernel"),
              h("th", {}, "launch"),
              ...tp.shown.map((name) => h("th", { class: "num", title: tp.metrics[name] ?? name }, name)),
              h("th", { class: "num" }, "time"),
              h("th", {}, "top issue stalls (warps per issue)"),
            ),
          ),
          h("tbody", {}, ...rows),
        ),
      ),
    );
    if (sentence) this.pipe.append(h("p", { class: "small", "data-testid": "sched-pipe-sentence" }, sentence));
    this.pipe.append(
      h(
        "p",
        { class: "small muted long-words", "data-testid": "sched-pipe-metrics" },
        `ncu metrics: ${tp.shown.map((name) => `${name} = ${tp.metrics[name] ?? "?"}`).join("; ")}. From ${tp.command}, installed as ${tp.file} from ${tp.results}.`,
      ),
    );
  }
}

/** The legend of a block's pieces, and what hatched, filled and outlined mean. */
function key(doc: ScheduleDoc, bars: ScheduleBar[], testid: string): HTMLElement {
  const kinds = legend(doc, bars);
  return h(
    "ul",
    { class: "sched-legend small", "data-testid": testid },
    ...kinds.map((k, n) => h("li", {}, h("span", { class: `sched-swatch sched-k${n % KINDS}` }), ` ${doc.pieces?.[k] ?? k}`)),
    h("li", {}, h("span", { class: "sched-swatch sched-swatch-modelled" }), " hatched: modelled"),
    h("li", {}, h("span", { class: "sched-swatch sched-swatch-measured" }), " filled: measured"),
    h("li", {}, h("span", { class: "sched-swatch sched-swatch-current" }), " outlined: the current step's work"),
  );
}
