// The narrative: the step's sentence and its math, and for online_softmax its three sub-operations
// (new max, rescaled sum, rescaled output) with their values per row.
import { iOf } from "../algos";
import { esc } from "../dom";
import { rowValid } from "../derive";
import { num } from "../format";
import type { Mat, Step, Trace, Vec } from "../types";
import { setTexCached, texHtml, texLoaded } from "./tex";

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
    private readonly subs: HTMLElement, // section 5
  ) {}

  /** The stage caption: the step's math and sentence. */
  show(t: Trace, s: Step): void {
    void t;
    setTexCached(this.mathEl, s.tex, false, s.math);
    if (this.mathEl.getAttribute("aria-label") !== s.math) this.mathEl.setAttribute("aria-label", s.math);
    if (this.caption.textContent !== s.text) this.caption.textContent = s.text;
  }

  /** Section 5: the sub-operations of online_softmax with their values. */
  showSubsteps(t: Trace, s: Step): void {
    const key = `${s.index}:${t.config.algo}:${t.config.n}:${t.config.d}:${texLoaded()}`;
    if (this.subs.dataset.key === key) return;
    this.subs.dataset.key = key;
    if (!s.substeps) {
      this.subs.innerHTML = `<p class="muted">${esc(OP_NOTE[s.op] ?? "")}</p>` +
        `<p class="muted small">Step <code>${esc(s.math)}</code> \u2014 ${t.config.algo === "fa2" || t.config.algo === "fa1" ? "the sub-operations appear on each <code>mi, li, Oi = \u2026</code> step" : "this algorithm's steps have no sub-operations"}.</p>`;
      return;
    }
    const rows = Math.min(t.config.br, MAX_ROWS);
    this.subs.innerHTML = s.substeps
      .map((sub, n) => {
        const keys = Object.keys(sub.values);
        const head = keys.map((k) => `<th scope="col">${texHtml(VALUE_TEX[k] ?? k)}</th>`).join("");
        let body = "";
        for (let r = 0; r < rows; r++) {
          const pad = !rowValid(t, iOf(t.config.algo, s), r);
          const cells = keys
            .map((k) => {
              const v = sub.values[k] as Vec | Mat;
              const x = v[r];
              const text = Array.isArray(x)
                ? x.slice(0, MAX_COLS).map((y) => num(y)).join(", ") + (x.length > MAX_COLS ? ", \u2026" : "")
                : num(x ?? null);
              const cls = k === "alpha" && typeof x === "number" && x < 1 ? ' class="rescaled"' : "";
              return `<td${cls}>${esc(text)}</td>`;
            })
            .join("");
          body += `<tr${pad ? ' class="pad" title="row past N: padding"' : ""}><th scope="row">${(iOf(t.config.algo, s) ?? 0) * t.config.br + r}</th>${cells}</tr>`;
        }
        const more = t.config.br > rows ? `<p class="muted small">first ${rows} of Br = ${t.config.br} rows</p>` : "";
        return `<article class="substep" data-testid="substep-${n}">
          <h4><span class="num">${n + 1}</span> ${esc(sub.name)}</h4>
          <div class="tex">${texHtml(sub.tex, true)}</div>
          <div class="table-wrap"><table class="values"><thead><tr><th scope="col">row</th>${head}</tr></thead><tbody>${body}</tbody></table></div>${more}
        </article>`;
      })
      .join("");
  }
}
