// Counting trips across HBM: per-tensor counters that advance with the phases (launch-wide, all
// blocks in lockstep), then the final accounting against the closed-form model.
import { esc } from "../dom";
import type { TraceIndex } from "../derive";
import { bytes, int } from "../format";
import { TENSORS, type Step, type TensorName, type Trace } from "../types";

const FP32 = 4; // bytes per element: the kernel is fp32

/** The rule each tensor's final count follows, in the seed's words, and the count it predicts. */
export function rule(t: Trace, name: TensorName): { text: string; formula: string } {
  const { n, d, tr } = t.config;
  switch (name) {
    case "Q":
      return { text: "read once", formula: `N\u00b7D = ${n}\u00b7${d}` };
    case "K":
    case "V":
      return { text: `read once per block of Q (Tr = ${tr} time${tr === 1 ? "" : "s"})`, formula: `Tr\u00b7N\u00b7D = ${tr}\u00b7${n}\u00b7${d}` };
    case "O":
      return { text: "written once, never read back", formula: `N\u00b7D = ${n}\u00b7${d}` };
    case "L":
      return { text: "written once (mi and li leave as one array)", formula: `N = ${n}` };
  }
}

export class CountersView {
  private cells = new Map<TensorName, { row: HTMLElement; read: HTMLElement; written: HTMLElement; rbar: HTMLElement; wbar: HTMLElement }>();
  private finalKey = "";

  constructor(
    private readonly live: HTMLTableSectionElement,
    private readonly phaseNote: HTMLElement,
    private readonly final: HTMLElement,
  ) {
    for (const name of TENSORS) {
      const row = document.createElement("tr");
      row.dataset.testid = `counter-${name}`;
      row.dataset.tensor = name;
      row.innerHTML = `<th scope="row"><span class="tensor t-${name}">${name}</span></th>
        <td class="num"><span class="r"></span><span class="bar read"><span></span></span></td>
        <td class="num"><span class="w"></span><span class="bar write"><span></span></span></td>`;
      this.live.append(row);
      this.cells.set(name, {
        row,
        read: row.querySelector(".r")!,
        written: row.querySelector(".w")!,
        rbar: row.querySelector(".bar.read > span")!,
        wbar: row.querySelector(".bar.write > span")!,
      });
    }
  }

  show(t: Trace, idx: TraceIndex, s: Step): void {
    const now = idx.counters[s.phase];
    if (!now) return;
    let total = 0;
    for (const name of TENSORS) {
      const c = this.cells.get(name)!;
      const r = now[name].read;
      const w = now[name].written;
      total += r + w;
      c.row.dataset.read = String(r);
      c.row.dataset.written = String(w);
      c.read.textContent = `${int(r)} \u00b7 ${bytes(r * FP32)}`;
      c.written.textContent = `${int(w)} \u00b7 ${bytes(w * FP32)}`;
      const fr = t.hbm[name].read || 1;
      const fw = t.hbm[name].written || 1;
      c.rbar.style.width = `${(100 * r) / fr}%`;
      c.wbar.style.width = `${(100 * w) / fw}%`;
      c.row.classList.toggle("moved", s.transfers.some((x) => x.tensor === name));
    }
    this.phaseNote.innerHTML =
      `After phase ${s.phase + 1} of ${t.phases.length} in every block: <b>${int(total)}</b> elements (${bytes(total * FP32)}) have crossed HBM.` +
      (idx.repairedPhases
        ? ` <span class="warn" title="trace.phases disagreed with trace.hbm; counts rebuilt from the recorded transfers">(phase counters rebuilt from transfers)</span>`
        : "");
    this.showFinal(t);
  }

  private showFinal(t: Trace): void {
    const key = `${t.config.n}/${t.config.d}/${t.config.br}/${t.config.bc}`;
    if (key === this.finalKey) return;
    this.finalKey = key;
    let sum = 0;
    const rows = TENSORS.map((name) => {
      const e = t.hbm[name];
      const m = t.model[name];
      const ok = e.read === m.read && e.written === m.written;
      const count = e.read + e.written;
      sum += count;
      const r = rule(t, name);
      return `<tr data-testid="final-${name}"><th scope="row"><span class="tensor t-${name}">${name}</span></th>
        <td>${esc(r.text)}</td><td class="mono small">${esc(r.formula)}</td>
        <td class="num">${int(e.read)} / ${int(e.written)}</td><td class="num">${int(m.read)} / ${int(m.written)}</td>
        <td class="num">${bytes(count * FP32)}</td><td>${ok ? '<span class="ok">\u2713</span>' : '<span class="bad">\u2717</span>'}</td></tr>`;
    }).join("");
    this.final.innerHTML = `<table class="final">
      <thead><tr><th scope="col">tensor</th><th scope="col">rule</th><th scope="col">elements</th><th scope="col">engine read / written</th><th scope="col">model read / written</th><th scope="col">bytes</th><th scope="col"></th></tr></thead>
      <tbody>${rows}</tbody>
      <tfoot><tr><th scope="row">all</th><td colspan="4">${t.model.matches ? "the engine's per-element counters match the closed-form model" : "<b class=bad>the engine's counters differ from the model</b>"}</td><td class="num">${bytes(sum * FP32)}</td><td></td></tr></tfoot>
    </table>`;
  }
}
