// Counting FLOPs: the launch's matmul and non-matmul FLOPs by kind as the phases advance (the trace's
// `phases[p].flops`, counted by the engine), the launch's totals against the closed form (`flops`), and the FA2
// paper's argument with the ratio measured on the recorded GPU (`flops.anchor`).
import { fill, h } from "../dom";
import { int } from "../format";
import type { Step, Trace } from "../types";

export class FlopsView {
  private trace: Trace | null = null; // the trace whose table is built
  private nowCells = new Map<string, Text>(); // "after this phase", by kind: the only cells a step changes

  constructor(
    private readonly table: HTMLElement,
    private readonly note: HTMLElement,
  ) {}

  show(t: Trace, s: Step): void {
    if (t !== this.trace) {
      this.trace = t;
      this.nowCells.clear();
      this.build(t);
    }
    if (!this.nowCells.size) return;
    const now = t.phases[s.phase]?.flops ?? {};
    for (const [kind, cell] of this.nowCells) {
      const text = int(now[kind] ?? 0);
      if (cell.data !== text) cell.data = text;
    }
  }

  /** The table and the note, once per trace; a step changes only the "after this phase" column. */
  private build(t: Trace): void {
    const f = t.flops;
    if (!f) {
      fill(this.table);
      fill(this.note, "This trace carries no FLOP counts (made by an older flashviz).");
      return;
    }
    if (f.model === null) {
      // counts no closed form checks are not shown (an engine that does not count would show zeros)
      fill(this.table);
      fill(this.note, f.uncounted ?? "This algorithm's FLOPs are not shown: it has no closed form to check them against.");
      return;
    }
    const row = (kind: string) => {
      const now = document.createTextNode("");
      this.nowCells.set(kind, now);
      return h(
        "tr",
        { "data-kind": kind, title: f.formulas[kind] ?? "" },
        h("th", { scope: "row" }, kind),
        h("td", { class: "num", "data-testid": `flops-now-${kind}` }, now),
        h("td", { class: "num" }, int(f.counted[kind] ?? 0)),
      );
    };
    fill(
      this.table,
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col" }, "kind"),
          h("th", { scope: "col" }, "after this phase"),
          h("th", { scope: "col" }, "whole launch"),
        ),
      ),
      h("tbody", {}, ...f.kinds.map(row)),
      h(
        "tfoot",
        {},
        h("tr", {}, h("th", { scope: "row" }, "matmul"), h("td"), h("td", { class: "num", "data-testid": "flops-matmul" }, int(f.matmul))),
        h(
          "tr",
          {},
          h("th", { scope: "row" }, "non-matmul"),
          h("td"),
          h("td", { class: "num", "data-testid": "flops-non-matmul" }, int(f.non_matmul)),
        ),
      ),
    );
    const a = f.anchor;
    const share = f.matmul ? (100 * f.non_matmul) / f.matmul : 0;
    fill(
      this.note,
      `Counted by the engine as it computed, ${f.matches ? "equal to" : "NOT equal to"} the closed form (hover a kind for its formula). `,
      `Non-matmul FLOPs are ${share.toFixed(1)}% of the matmul FLOPs here, but a GPU runs them slower: ${a.paper}. `,
      `On the ${a.gpu} (${a.date}, ${a.source}) bf16 tensor-core matmul ran at ${a.matmul_tflops} TFLOP/s and fp32 FMA at ${a.fma_tflops} TFLOP/s: `,
      h("b", { "data-testid": "flops-ratio" }, `${a.measured_ratio}\u00d7`),
      ` (accurate expf: ${a.exp_ratio}\u00d7${a.exp_source && a.exp_source !== a.source ? `, measured in ${a.exp_source}` : ""}). At that ratio these ${int(f.non_matmul)} non-matmul FLOPs take as long as ${int(f.non_matmul_as_matmul.measured)} matmul FLOPs. `,
      f.runs_on ??
        "The teaching kernels here run everything in fp32 on the CUDA cores, so the ratio describes real (tensor-core) kernels, not these.",
    );
  }
}
