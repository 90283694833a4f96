// Counting trips across HBM: per-tensor counters that advance with the phases (launch-wide, all blocks in
// lockstep), then the final accounting against the closed-form model, the rules in words, and under causal
// masking the bytes it saves (from GET /api/compare).
import type { CompareDoc } from "../compareDoc";
import type { TraceIndex } from "../derive";
import { fill, h } from "../dom";
import { bytes, int } from "../format";
import type { Step, Trace } from "../types";
import { richNodes } from "./rich";

/** Why the counts are what they are: the trace's paragraphs, one list item each. */
export function why(t: Trace): HTMLLIElement[] {
  return t.counting.map((p) => h("li", {}, richNodes(p)));
}

interface Cells {
  row: HTMLElement;
  read: HTMLElement;
  written: HTMLElement;
  rbar: HTMLElement;
  wbar: HTMLElement;
}

export class CountersView {
  private cells = new Map<string, Cells>();
  private rowsKey = "";
  private finalKey = "";
  private last = { note: "" };

  constructor(
    private readonly live: HTMLTableSectionElement,
    private readonly phaseNote: HTMLElement,
    private readonly final: HTMLElement,
    private readonly whyList: HTMLElement,
    private readonly saving: HTMLElement,
  ) {}

  /** One row per HBM tensor of this algorithm (rebuilt only when the tensors change). */
  private rows(t: Trace): void {
    const names = Object.keys(t.tensors);
    const key = names.join(",");
    if (key === this.rowsKey) return;
    this.rowsKey = key;
    this.cells.clear();
    this.live.replaceChildren();
    for (const name of names) {
      const row = document.createElement("tr");
      row.dataset.testid = `counter-${name}`;
      row.dataset.tensor = name;
      const read = h("span", { class: "r" });
      const written = h("span", { class: "w" });
      const rbar = h("span");
      const wbar = h("span");
      row.append(
        h("th", { scope: "row" }, h("span", { class: `tensor t-${name}` }, name)),
        h("td", { class: "num" }, read, h("span", { class: "bar read" }, rbar)),
        h("td", { class: "num" }, written, h("span", { class: "bar write" }, wbar)),
      );
      this.live.append(row);
      this.cells.set(name, { row, read, written, rbar, wbar });
    }
  }

  show(t: Trace, idx: TraceIndex, s: Step): void {
    this.rows(t);
    const now = idx.counters[s.phase];
    if (!now) return;
    let total = 0;
    const moved = new Set(s.transfers.map((x) => x.tensor));
    for (const [name, c] of this.cells) {
      const r = now[name]?.read ?? 0;
      const w = now[name]?.written ?? 0;
      total += r + w;
      if (c.row.dataset.read === String(r) && c.row.dataset.written === String(w)) {
        c.row.classList.toggle("moved", moved.has(name));
        continue; // nothing changed: no DOM writes
      }
      c.row.dataset.read = String(r);
      c.row.dataset.written = String(w);
      c.read.textContent = `${int(r)} \u00b7 ${bytes(r * t.config.element_bytes)}`;
      c.written.textContent = `${int(w)} \u00b7 ${bytes(w * t.config.element_bytes)}`;
      const fr = t.hbm[name]?.read || 1;
      const fw = t.hbm[name]?.written || 1;
      c.rbar.style.transform = `scaleX(${r / fr})`;
      c.wbar.style.transform = `scaleX(${w / fw})`;
      c.row.classList.toggle("moved", moved.has(name));
    }
    const note = `${s.phase}/${t.phases.length}/${total}`;
    if (note !== this.last.note) {
      this.last.note = note;
      this.phaseNote.dataset.bytes = String(total * t.config.element_bytes);
      this.phaseNote.dataset.phase = String(s.phase + 1);
      fill(
        this.phaseNote,
        `After phase ${s.phase + 1} of ${t.phases.length} in every block: `,
        h("b", {}, int(total)),
        ` elements (${bytes(total * t.config.element_bytes)}) have crossed HBM.`,
      );
    }
    this.showFinal(t);
  }

  /** Under causal masking: the bytes it saves against the same launch without it (from /api/compare). */
  showSaving(t: Trace, doc: CompareDoc | null): void {
    const c = doc?.config;
    const entry = doc?.algorithms[t.config.algo];
    // the comparison is of one head of plain attention: a launch with options of real models says its own savings
    const same =
      c &&
      !t.options &&
      c.n === t.config.n &&
      c.d === t.config.d &&
      c.br === t.config.br &&
      c.bc === t.config.bc &&
      c.causal === !!t.config.causal;
    if (!t.config.causal || !same || !entry?.total || entry.noncausal_bytes === null || entry.saved_bytes === null) {
      this.saving.hidden = true;
      this.saving.textContent = "";
      return;
    }
    const mine = entry.total.bytes;
    const base = entry.noncausal_bytes;
    const pct = base > 0 ? (100 * entry.saved_bytes) / base : 0;
    this.saving.hidden = false;
    this.saving.dataset.saved = String(entry.saved_bytes);
    fill(
      this.saving,
      h("b", {}, `Causal masking saves ${bytes(entry.saved_bytes)}`),
      ` (${pct.toFixed(1)}%): this launch moves ${bytes(mine)} across HBM, the same launch without the mask ${bytes(base)}. Tiles wholly above the diagonal are never loaded; the diagonal tiles are loaded and masked.`,
    );
  }

  private showFinal(t: Trace): void {
    const key = `${t.config.algo}/${t.config.n}/${t.config.d}/${t.config.br}/${t.config.bc}/${t.config.causal}`;
    if (key === this.finalKey) return;
    this.finalKey = key;
    fill(this.whyList, ...why(t));
    let sum = 0;
    const rows = Object.keys(t.tensors).map((name) => {
      const e = t.hbm[name] ?? { read: 0, written: 0 };
      const m = t.model[name] ?? { read: 0, written: 0 };
      const ok = e.read === m.read && e.written === m.written;
      const count = e.read + e.written;
      sum += count;
      const r = t.tensors[name]!.rule;
      return h(
        "tr",
        { "data-testid": `final-${name}` },
        h("th", { scope: "row" }, h("span", { class: `tensor t-${name}` }, name)),
        h("td", {}, r.text),
        h("td", { class: "mono small" }, r.formula),
        h("td", { class: "num" }, `${int(e.read)} / ${int(e.written)}`),
        h("td", { class: "num" }, `${int(m.read)} / ${int(m.written)}`),
        h("td", { class: "num" }, bytes(count * t.config.element_bytes)),
        h("td", {}, ok ? h("span", { class: "ok" }, "\u2713") : h("span", { class: "bad" }, "\u2717")),
      );
    });
    const matches = t.model.matches;
    const col = (x: string) => h("th", { scope: "col" }, x);
    fill(
      this.final,
      h(
        "table",
        { class: "final" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            col("tensor"),
            col("rule"),
            col("elements"),
            col("engine read / written"),
            col("model read / written"),
            col("bytes"),
            col(""),
          ),
        ),
        h("tbody", {}, ...rows),
        h(
          "tfoot",
          {},
          h(
            "tr",
            {},
            h("th", { scope: "row" }, "all"),
            h(
              "td",
              { colspan: 4 },
              matches
                ? "the engine's per-element counters match the closed-form model"
                : h("b", { class: "bad" }, "the engine's counters differ from the model"),
            ),
            h("td", { class: "num" }, bytes(sum * t.config.element_bytes)),
            h("td"),
          ),
        ),
      ),
    );
  }
}
