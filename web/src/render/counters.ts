// Counting trips across HBM: per-tensor counters that advance with the phases (launch-wide, all blocks in
// lockstep), then the final accounting against the closed-form model, the rules in words, and under causal
// masking the bytes it saves (from GET /api/compare).
import type { CompareDoc } from "../api";
import { esc } from "../dom";
import type { TraceIndex } from "../derive";
import { bytes, int } from "../format";
import type { Step, Trace } from "../types";

const FP32 = 4; // bytes per element: the kernels are fp32

/** The rule each tensor's final count follows, in words, and the count it predicts (without causal). */
export function rule(t: Trace, name: string): { text: string; formula: string } {
  const { n, d, tr, tc } = t.config;
  const causal = !!t.config.causal;
  const f = (s: string) => (causal ? "\u03a3 over the tiles each block visits" : s);
  const times = (k: number, what: string) => `${what} (${k} time${k === 1 ? "" : "s"})`;
  switch (t.config.algo) {
    case "fa1":
      switch (name) {
        case "Q":
          return { text: times(tc, "read once per tile of K/V"), formula: f(`Tc\u00b7N\u00b7D = ${tc}\u00b7${n}\u00b7${d}`) };
        case "K":
        case "V":
          return { text: "read once: the outer loop", formula: `N\u00b7D = ${n}\u00b7${d}` };
        case "O":
          return { text: "initialised, then read and written back on every inner iteration", formula: f(`read Tc\u00b7N\u00b7D, written (Tc+1)\u00b7N\u00b7D, Tc = ${tc}`) };
        default:
          return { text: "carried through HBM like O", formula: f(`read Tc\u00b7N, written (Tc+1)\u00b7N, Tc = ${tc}`) };
      }
    case "standard":
      switch (name) {
        case "Q":
          return { text: "read once", formula: `N\u00b7D = ${n}\u00b7${d}` };
        case "K":
        case "V":
          return { text: times(tr, "read once per block of Q"), formula: f(`Tr\u00b7N\u00b7D = ${tr}\u00b7${n}\u00b7${d}`) };
        case "S":
          return { text: "written by kernel 1, read back by kernel 2: N\u00b2 each way", formula: f(`N\u00b2 = ${n}\u00b2`) };
        case "P":
          return { text: "written by kernel 2, read back by kernel 3: N\u00b2 each way", formula: f(`N\u00b2 = ${n}\u00b2`) };
        default:
          return { text: "written once", formula: `N\u00b7D = ${n}\u00b7${d}` };
      }
    case "fa2-backward":
      switch (name) {
        case "Q":
          return { text: times(tc, "read once per tile of K/V that visits it"), formula: f(`Tc\u00b7N\u00b7D = ${tc}\u00b7${n}\u00b7${d}`) };
        case "K":
        case "V":
          return { text: "read once (the outer loop)", formula: `N\u00b7D = ${n}\u00b7${d}` };
        case "O":
          return { text: "read once, by the preprocessing kernel", formula: `N\u00b7D = ${n}\u00b7${d}` };
        case "L":
          return { text: "the forward's L, read on every visit: P = exp(S \u2212 L) is recomputed, never stored", formula: f(`Tc\u00b7N = ${tc}\u00b7${n}`) };
        case "dO":
          return { text: "read by the preprocessing kernel, then on every visit", formula: f(`(1+Tc)\u00b7N\u00b7D, Tc = ${tc}`) };
        case "D":
          return { text: "written once (rowsum(dO\u2218O)), read on every visit", formula: f(`written N, read Tc\u00b7N, Tc = ${tc}`) };
        case "dQ":
          return { text: "zeroed once, then each atomicAdd counts one read and one write", formula: f(`read Tc\u00b7N\u00b7D, written (1+Tc)\u00b7N\u00b7D`) };
        default:
          return { text: "accumulated in SRAM, written once", formula: `N\u00b7D = ${n}\u00b7${d}` };
      }
    default:
      switch (name) {
        case "Q":
          return { text: "read once", formula: `N\u00b7D = ${n}\u00b7${d}` };
        case "K":
        case "V":
          return { text: times(tr, "read once per block of Q"), formula: f(`Tr\u00b7N\u00b7D = ${tr}\u00b7${n}\u00b7${d}`) };
        case "O":
          return { text: "written once, never read back", formula: `N\u00b7D = ${n}\u00b7${d}` };
        default:
          return { text: "written once (mi and li leave as one array)", formula: `N = ${n}` };
      }
  }
}

/** Why the counts are what they are, per algorithm (HTML, fixed text). */
export function why(algo: string): string {
  switch (algo) {
    case "fa1":
      return `<li><b>K</b> and <b>V</b> stream once, on the outer loop over j.</li>
        <li><b>Carried back and forth.</b> Every inner iteration reads Q<sub>i</sub>, O<sub>i</sub>, \u2113<sub>i</sub>, m<sub>i</sub> from HBM and writes O<sub>i</sub>, \u2113<sub>i</sub>, m<sub>i</sub> back: the carries make T<sub>c</sub> round trips, and O is divided by \u2113 on every visit.</li>
        <li><b>What FA2 changes:</b> it swaps the loops. With Q<sub>i</sub> on the outer loop one block of O is built start to finish in SRAM, so O<sub>i</sub>, m<sub>i</sub>, \u2113<sub>i</sub> never make the trip; the division happens once, and m and \u2113 leave as the single array L.</li>`;
    case "standard":
      return `<li><b>S</b> and <b>P</b> are N\u00d7N: written to HBM and read back, once each, by three separate kernels. That is 4N\u00b2 elements against FA2's O(T<sub>r</sub>\u00b7N\u00b7D), and N\u00b2 floats of memory each.</li>
        <li><b>K</b> and <b>V</b> are streamed once per block of Q, exactly as in FA2: the difference is all in S and P.</li>
        <li><b>What FlashAttention changes:</b> one fused kernel keeps each tile of S and P in SRAM and never writes them; the online softmax (m, \u2113 carried per row) is what makes the row-at-a-time softmax unnecessary.</li>`;
    case "fa2-backward":
      return `<li><b>L</b> from the forward pass is what makes this possible: P<sub>ij</sub> = exp(S<sub>ij</sub> \u2212 L<sub>i</sub>) is recomputed tile by tile, never stored.</li>
        <li><b>D</b> = rowsum(dO \u2218 O) is computed once by a small preprocessing kernel and read by every tile.</li>
        <li><b>K/V on the outer loop:</b> each block owns one tile j and accumulates dK<sub>j</sub>, dV<sub>j</sub> in SRAM, written once. <b>dQ</b> is shared by every tile, so it is accumulated in HBM with atomicAdd: each element added counts one read and one write.</li>`;
    default:
      return `<li><b>Q</b> is read once, and <b>O</b> and <b>L</b> are written once and never read back.</li>
        <li><b>K</b> and <b>V</b> are read once per block of Q: T<sub>r</sub> times.</li>
        <li><b>Why is nothing carried back and forth?</b> Q<sub>i</sub> sits on the outer loop, so one block of O is built from start to finish in SRAM. It is already the real answer when it is written, and O<sub>i</sub>, m<sub>i</sub>, \u2113<sub>i</sub> never make the trip. (FlashAttention-1 loops over K/V outside and re-reads and re-writes O<sub>i</sub>, \u2113<sub>i</sub>, m<sub>i</sub> on every inner iteration.)</li>
        <li><b>Two smaller wins.</b> The division by \u2113<sub>i</sub> happens once, at write-back, instead of on every step; and m<sub>i</sub> and \u2113<sub>i</sub> leave as the single array L = m + log \u2113, which is what the backward pass needs.</li>`;
  }
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
      row.innerHTML = `<th scope="row"><span class="tensor t-${esc(name)}">${esc(name)}</span></th>
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
      c.read.textContent = `${int(r)} \u00b7 ${bytes(r * FP32)}`;
      c.written.textContent = `${int(w)} \u00b7 ${bytes(w * FP32)}`;
      const fr = t.hbm[name]?.read || 1;
      const fw = t.hbm[name]?.written || 1;
      c.rbar.style.transform = `scaleX(${r / fr})`;
      c.wbar.style.transform = `scaleX(${w / fw})`;
      c.row.classList.toggle("moved", moved.has(name));
    }
    const note =
      `After phase ${s.phase + 1} of ${t.phases.length} in every block: <b>${int(total)}</b> elements (${bytes(total * FP32)}) have crossed HBM.` +
      (idx.repairedPhases
        ? ` <span class="warn" title="trace.phases disagreed with trace.hbm; counts rebuilt from the recorded transfers">(phase counters rebuilt from transfers)</span>`
        : "");
    if (note !== this.last.note) {
      this.last.note = note;
      this.phaseNote.innerHTML = note;
    }
    this.showFinal(t);
  }

  /** Under causal masking: the bytes it saves against the same launch without it (from /api/compare). */
  showSaving(t: Trace, doc: CompareDoc | null): void {
    const c = doc?.config;
    const entry = doc?.algorithms[t.config.algo];
    const same = c && c.n === t.config.n && c.d === t.config.d && c.br === t.config.br && c.bc === t.config.bc && c.causal === !!t.config.causal;
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
    this.saving.innerHTML = `<b>Causal masking saves ${bytes(entry.saved_bytes)}</b> (${pct.toFixed(1)}%): this launch moves ${bytes(mine)} across HBM, the same launch without the mask ${bytes(base)}. Tiles wholly above the diagonal are never loaded; the diagonal tiles are loaded and masked.`;
  }

  private showFinal(t: Trace): void {
    const key = `${t.config.algo}/${t.config.n}/${t.config.d}/${t.config.br}/${t.config.bc}/${t.config.causal}`;
    if (key === this.finalKey) return;
    this.finalKey = key;
    this.whyList.innerHTML = why(t.config.algo);
    let sum = 0;
    const rows = Object.keys(t.tensors).map((name) => {
      const e = t.hbm[name] ?? { read: 0, written: 0 };
      const m = t.model[name] ?? { read: 0, written: 0 };
      const ok = e.read === m.read && e.written === m.written;
      const count = e.read + e.written;
      sum += count;
      const r = rule(t, name);
      return `<tr data-testid="final-${esc(name)}"><th scope="row"><span class="tensor t-${esc(name)}">${esc(name)}</span></th>
        <td>${esc(r.text)}</td><td class="mono small">${esc(r.formula)}</td>
        <td class="num">${int(e.read)} / ${int(e.written)}</td><td class="num">${int(m.read)} / ${int(m.written)}</td>
        <td class="num">${bytes(count * FP32)}</td><td>${ok ? '<span class="ok">\u2713</span>' : '<span class="bad">\u2717</span>'}</td></tr>`;
    }).join("");
    const matches = t.model.matches ?? Object.keys(t.tensors).every((k) => t.hbm[k]?.read === t.model[k]?.read && t.hbm[k]?.written === t.model[k]?.written);
    this.final.innerHTML = `<table class="final">
      <thead><tr><th scope="col">tensor</th><th scope="col">rule</th><th scope="col">elements</th><th scope="col">engine read / written</th><th scope="col">model read / written</th><th scope="col">bytes</th><th scope="col"></th></tr></thead>
      <tbody>${rows}</tbody>
      <tfoot><tr><th scope="row">all</th><td colspan="4">${matches ? "the engine's per-element counters match the closed-form model" : "<b class=bad>the engine's counters differ from the model</b>"}</td><td class="num">${bytes(sum * FP32)}</td><td></td></tr></tfoot>
    </table>`;
  }
}
