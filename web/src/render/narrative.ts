// The narrative: the step's sentence and its math, and for online_softmax its three sub-operations
// (new max, rescaled sum, rescaled output) with their values per row.
import { iOf } from "../algos";
import { rowValid } from "../derive";
import { fill, frag, h } from "../dom";
import { num } from "../format";
import type { Mat, Step, Trace, Vec } from "../types";
import { setTexCached, texEl, texLoaded } from "./tex";

const MAX_ROWS = 8;
const MAX_COLS = 4;

const VALUE_TEX: Record<string, string> = {
  m_old: "m_i^{\\text{old}}",
  m_ij: "\\mathrm{rowmax}(S_{ij})",
  m_new: "m_i^{\\text{new}}",
  alpha: "\\alpha = e^{m^{\\text{old}} - m^{\\text{new}}}",
  l_old: "\\ell_i^{\\text{old}}",
  rowsum: "\\mathrm{rowsum}(P)",
  l_new: "\\ell_i^{\\text{new}}",
  PV: "P\\,V_j",
  m_ij_tile: "\\tilde m_{ij}",
  l_ij: "\\tilde\\ell_{ij}",
  beta: "\\beta = e^{\\tilde m_{ij} - m^{\\text{new}}}",
};

const OP_NOTE: Record<string, string> = {
  load_q: "Before the loop: Qi comes in once and the three carries start empty. online_softmax, later, has three visible parts.",
  load_kv: "A tile of K and V arrives in SRAM. Nothing is computed yet.",
  scores: "One matrix product in SRAM: the scores of this block's Br queries against the tile's Bc keys.",
  write_back: "After the loop: one division, and mi and li leave as the single array L.",
  init: "FA1 begins by writing O = 0, l = 0, m = \u2212\u221e to HBM: the carries live there between visits.",
  load_qi: "Qi and the carries Oi, li, mi come in from HBM: the round trip FA2 removes.",
  load_k: "A tile of K arrives in SRAM (kernel 1 of 3).",
  softmax_row: "One row of S comes back from HBM whole; its softmax goes out as a row of P (kernel 2 of 3).",
  load_pv: "A tile of P comes back from HBM with its tile of V (kernel 3 of 3).",
  accumulate: "Oi += Pij Vj in SRAM.",
  write_o: "O leaves once. S and P, N\u00d7N each, have made two trips each.",
  load_do_o: "Preprocessing: dOi and Oi come in to compute D = rowsum(dO \u2218 O).",
  write_d: "D goes out (N values) and dQ is zeroed for the atomic adds to come.",
  probs: "Pij is recomputed from the forward's L: exp(Qi Kj\u1d40 \u00b7 scale \u2212 Li); P was never stored.",
  dv: "dVj += Pij\u1d40 dOi, in SRAM.",
  ds: "dSij = Pij \u2218 (dOi Vj\u1d40 \u2212 Di).",
  dk: "dKj += scale \u00b7 dSij\u1d40 Qi, in SRAM.",
  dq: "dQ[i] += scale \u00b7 dSij Kj, with atomicAdd in HBM: a read and a write of each element.",
};

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
      const own = t.config.algo === "fa2" || t.config.algo === "fa1";
      fill(
        this.subs,
        h("p", { class: "muted" }, OP_NOTE[s.op] ?? ""),
        h(
          "p",
          { class: "muted small" },
          "Step ",
          h("code", {}, s.math),
          " \u2014 ",
          own
            ? frag("the sub-operations appear on each ", h("code", {}, "mi, li, Oi = \u2026"), " step")
            : "this algorithm's steps have no sub-operations",
          ".",
        ),
      );
      return;
    }
    const rows = Math.min(t.config.br, MAX_ROWS);
    const i = iOf(t.config.algo, s);
    fill(
      this.subs,
      ...s.substeps.map((sub, n) => {
        const keys = Object.keys(sub.values ?? {});
        const body = h("tbody");
        for (let r = 0; r < rows; r++) {
          const pad = !rowValid(t, i, r);
          const tr = h(
            "tr",
            pad ? { class: "pad", title: "row past N: padding" } : {},
            h("th", { scope: "row" }, (i ?? 0) * t.config.br + r),
          );
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
                h("tr", {}, h("th", { scope: "col" }, "row"), ...keys.map((k) => h("th", { scope: "col" }, texEl(VALUE_TEX[k] ?? k)))),
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
