// The narrative: the step's sentence and its math, and for a compound step (one with `substeps`) its sub-operations
// with their values per row. The words are the trace's (`ops[op].note`, `substeps_note`, the values' TeX headings).
import { rowValid } from "../derive";
import { fill, h } from "../dom";
import { num } from "../format";
import { blockRows, qBlock } from "../geometry";
import type { Mat, Step, Trace, Vec } from "../types";
import { richNodes } from "./rich";
import { setTexCached, texEl, texLoaded } from "./tex";

const MAX_ROWS = 8;
const MAX_COLS = 4;

export class NarrativeView {
  constructor(
    private readonly caption: HTMLElement, // stage caption: math + sentence
    private readonly mathEl: HTMLElement,
    private readonly subs: HTMLElement, // the narrative card
  ) {}

  /** The stage caption: the step's math and sentence. */
  show(s: Step): void {
    setTexCached(this.mathEl, s.tex, false, s.math);
    if (this.mathEl.getAttribute("aria-label") !== s.math) this.mathEl.setAttribute("aria-label", s.math);
    if (this.caption.textContent !== s.text) this.caption.textContent = s.text;
  }

  /** The narrative card: the sub-operations of online_softmax with their values. */
  showSubsteps(t: Trace, s: Step): void {
    const key = `${s.index}:${t.config.algo}:${t.config.n}:${t.config.d}:${texLoaded()}`;
    if (this.subs.dataset.key === key) return;
    this.subs.dataset.key = key;
    if (!s.substeps) {
      fill(
        this.subs,
        h("p", { class: "muted" }, t.ops[s.op]?.note ?? ""),
        h("p", { class: "muted small" }, "Step ", h("code", {}, s.math), " \u2014 ", richNodes(t.substeps_note), "."),
      );
      return;
    }
    const rows = Math.min(t.config.br, MAX_ROWS);
    const i = qBlock(t, s);
    const r0 = i === null ? 0 : blockRows(t, i)[0];
    const tex = t.ops[s.op]?.value_tex ?? {};
    fill(
      this.subs,
      ...s.substeps.map((sub, n) => {
        const keys = Object.keys(sub.values ?? {});
        const body = h("tbody");
        for (let r = 0; r < rows; r++) {
          const pad = !rowValid(t, i, r);
          const tr = h("tr", pad ? { class: "pad", title: "row past N: padding" } : {}, h("th", { scope: "row" }, r0 + r));
          for (const k of keys) {
            const v = sub.values[k] as Vec | Mat;
            const x = Array.isArray(v) ? v[r] : undefined;
            const text = Array.isArray(x)
              ? x
                  .slice(0, MAX_COLS)
                  .map((y) => num(y))
                  .join(", ") + (x.length > MAX_COLS ? ", \u2026" : "")
              : num(x ?? null);
            tr.append(h("td", { class: k === "alpha" && typeof x === "number" && x < 1 ? "rescaled" : undefined }, text));
          }
          body.append(tr);
        }
        return h(
          "article",
          { class: "substep", "data-testid": `substep-${n}` },
          h("h4", {}, h("span", { class: "num" }, n + 1), " ", String(sub.name)),
          texEl(String(sub.tex), true, "div"),
          h(
            "div",
            { class: "table-wrap" },
            h(
              "table",
              { class: "values" },
              h(
                "thead",
                {},
                h("tr", {}, h("th", { scope: "col" }, "row"), ...keys.map((k) => h("th", { scope: "col" }, texEl(tex[k] ?? k)))),
              ),
              body,
            ),
          ),
          t.config.br > rows ? h("p", { class: "muted small" }, `first ${rows} of Br = ${t.config.br} rows`) : null,
        );
      }),
    );
  }
}
