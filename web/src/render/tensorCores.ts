// The tensor cores at a step: for a kernel whose trace says how its matrix products run (`trace.tensor_cores`),
// the step's product as one matrix multiply-accumulate over its tiles, the warps that own its rows, the instruction
// Triton emits, and one element of the result as the instructions' k-steps add it up (`step.mma`). What the kernel's
// source does not show is said, not drawn. Everything comes from the trace; text lands as text nodes.
import { h, s } from "../dom";
import type { Step, TensorCores, TensorDot, Trace } from "../types";
import { richNodes } from "./rich";

const WIDTH = 360;
const ROW_H = 2; // px per row of the result tile (a 128-row tile is 256 px)

function figure(dot: TensorDot): SVGSVGElement {
  const height = Math.max(64, dot.m * ROW_H);
  const cols = Math.min(WIDTH - 120, Math.max(48, dot.n * 2));
  const svg = s("svg", {
    width: WIDTH,
    height: height + 20,
    viewBox: `0 0 ${WIDTH} ${height + 20}`,
    role: "img",
    "aria-label": `${dot.c}: ${dot.m} by ${dot.n}, rows owned by ${dot.owners.length} warps`,
    "data-testid": "tc-figure",
  });
  const scale = height / dot.m;
  dot.owners.forEach((o) => {
    for (const [first, end] of o.rows) {
      const y = first * scale;
      svg.append(
        s("rect", {
          x: 0,
          y,
          width: cols,
          height: Math.max(1, (end - first) * scale),
          class: `tc-band tc-warp${o.warp % 8}`,
          "data-warp": o.warp,
        }),
        s(
          "text",
          { x: cols + 6, y: y + Math.min(12, ((end - first) * scale) / 2 + 4), class: "tc-label" },
          `warp ${o.warp} · rows ${first}–${end - 1}`,
        ),
      );
    }
  });
  svg.append(s("rect", { x: 0, y: 0, width: 4, height: 4, class: "tc-element" }));
  svg.append(s("text", { x: 0, y: height + 14, class: "tc-label" }, `${dot.c}: ${dot.m} × ${dot.n} fp32, ${dot.k_steps} k-steps of 16`));
  return svg;
}

function elementLine(dot: TensorDot, m: NonNullable<Step["mma"]>): HTMLElement {
  const parts = m.parts.map((p) => p.toPrecision(4)).join(" + ");
  return h(
    "p",
    { class: "small", "data-testid": "tc-element" },
    `One element, ${dot.c}[${m.row}, ${m.col}]: each instruction adds the products of one 16-wide slice of the inner dimension (${dot.k} wide) into the fp32 accumulator: `,
    h("span", { class: "mono" }, `${parts} = ${m.value === null ? "not finite" : m.value.toPrecision(6)}`),
    m.value === null ? ", then masked to −∞ (key column past the query row, or past N)." : ".",
  );
}

export class TensorCoresView {
  private shown: TensorDot | null | undefined = undefined; // undefined: nothing drawn yet
  private built = new Map<TensorDot | null, Node[]>(); // this trace's descriptions, made once: steps alternate products

  constructor(
    private readonly section: HTMLElement,
    private readonly body: HTMLElement,
    private readonly hidden: HTMLElement,
    private readonly element: HTMLElement,
  ) {}

  setTrace(t: Trace): void {
    const tc = t.tensor_cores ?? null;
    this.section.hidden = tc === null;
    this.shown = undefined;
    this.built.clear();
    this.body.replaceChildren();
    this.element.replaceChildren();
    if (tc === null) return;
    this.hidden.replaceChildren(
      h("h3", {}, "What the kernel's source does not show"),
      h("ul", { class: "small muted", "data-testid": "tc-hidden" }, ...tc.hidden.map((x) => h("li", {}, x))),
      h("p", { class: "small" }, tc.why),
    );
  }

  show(t: Trace, step: Step): void {
    const tc: TensorCores | null = t.tensor_cores ?? null;
    if (tc === null) return;
    const dot = tc.ops[step.op] ?? null;
    if (dot !== this.shown) {
      this.shown = dot;
      let nodes = this.built.get(dot);
      if (!nodes) {
        nodes = dot ? this.describe(tc, dot) : [this.idle(tc)];
        this.built.set(dot, nodes);
      }
      this.body.replaceChildren(...nodes);
    }
    this.element.replaceChildren(dot && step.mma ? elementLine(dot, step.mma) : "");
  }

  private idle(tc: TensorCores): HTMLElement {
    const names = Object.values(tc.ops).map((d) => `${d.c} (${d.a} · ${d.b})`);
    return h(
      "p",
      { class: "small muted", "data-testid": "tc-idle" },
      `This step runs no matrix product; the tensor cores work at the steps that compute ${names.join(" and ")}.`,
    );
  }

  private describe(tc: TensorCores, dot: TensorDot): Node[] {
    const inst = dot.instruction;
    const count =
      inst.per_warpgroup !== undefined
        ? `${inst.per_warpgroup} per warpgroup (${tc.warpgroups} warpgroups)`
        : `${inst.per_warp ?? "?"} per warp (${tc.warps} warps)`;
    const owners = dot.replicated
      ? `The tile has fewer rows (${dot.m}) than ${tc.warps} warps × 16: Triton gives some rows to more than one warp, which compute them alike.`
      : `Each of the ${tc.warps} warps owns 16-row slices of the ${dot.m} rows (coloured at left); a warpgroup is 4 warps that issue one instruction together.`;
    return [
      h(
        "p",
        { "data-testid": "tc-dot" },
        richNodes(dot.title),
        `: (${dot.m} × ${dot.k}) · (${dot.k} × ${dot.n}) → ${dot.m} × ${dot.n}, bf16 in, fp32 accumulate; ${dot.flops.toLocaleString("en-US")} FLOPs in one tl.dot.`,
      ),
      h(
        "div",
        { class: "tc-grid" },
        figure(dot),
        h(
          "div",
          {},
          h("p", { class: "small", "data-testid": "tc-instruction" }, `Instruction: ${inst.text}, issued by ${inst.issued_by}: ${count}.`),
          h("p", { class: "small" }, owners),
        ),
      ),
    ];
  }
}
