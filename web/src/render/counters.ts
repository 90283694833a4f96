// Counting trips across HBM: per-tensor counters that advance with the phases (launch-wide, all blocks in
// lockstep), then the final accounting against the closed-form model, the rules in words, and under causal
// masking the bytes it saves (from GET /api/compare).
import type { CompareDoc } from "../api";
import type { TraceIndex } from "../derive";
import { type Child, fill, frag, h, sub } from "../dom";
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
          return {
            text: "initialised, then read and written back on every inner iteration",
            formula: f(`read Tc\u00b7N\u00b7D, written (Tc+1)\u00b7N\u00b7D, Tc = ${tc}`),
          };
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
          return {
            text: times(tc, "read once per tile of K/V that visits it"),
            formula: f(`Tc\u00b7N\u00b7D = ${tc}\u00b7${n}\u00b7${d}`),
          };
        case "K":
        case "V":
          return { text: "read once (the outer loop)", formula: `N\u00b7D = ${n}\u00b7${d}` };
        case "O":
          return { text: "read once, by the preprocessing kernel", formula: `N\u00b7D = ${n}\u00b7${d}` };
        case "L":
          return {
            text: "the forward's L, read on every visit: P = exp(S \u2212 L) is recomputed, never stored",
            formula: f(`Tc\u00b7N = ${tc}\u00b7${n}`),
          };
        case "dO":
          return { text: "read by the preprocessing kernel, then on every visit", formula: f(`(1+Tc)\u00b7N\u00b7D, Tc = ${tc}`) };
        case "D":
          return { text: "written once (rowsum(dO\u2218O)), read on every visit", formula: f(`written N, read Tc\u00b7N, Tc = ${tc}`) };
        case "dQ":
          return {
            text: "zeroed once, then each atomicAdd counts one read and one write",
            formula: f(`read Tc\u00b7N\u00b7D, written (1+Tc)\u00b7N\u00b7D`),
          };
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

/** Why the counts are what they are, per algorithm: list items (fixed text, built as DOM). */
export function why(algo: string): HTMLLIElement[] {
  const b = (t: string) => h("b", {}, t);
  const li = (...c: Child[]) => h("li", {}, ...c);
  const Xi = (x: string) => sub(x, "i");
  const ell = () => sub("\u2113", "i");
  switch (algo) {
    case "fa1":
      return [
        li(b("K"), " and ", b("V"), " stream once, on the outer loop over j."),
        li(
          b("Carried back and forth."),
          " Every inner iteration reads ",
          Xi("Q"),
          ", ",
          Xi("O"),
          ", ",
          ell(),
          ", ",
          Xi("m"),
          " from HBM and writes ",
          Xi("O"),
          ", ",
          ell(),
          ", ",
          Xi("m"),
          " back: the carries make ",
          sub("T", "c"),
          " round trips, and O is divided by \u2113 on every visit.",
        ),
        li(
          b("What FA2 changes:"),
          " it swaps the loops. With ",
          Xi("Q"),
          " on the outer loop one block of O is built start to finish in SRAM, so ",
          Xi("O"),
          ", ",
          Xi("m"),
          ", ",
          ell(),
          " never make the trip; the division happens once, and m and \u2113 leave as the single array L.",
        ),
      ];
    case "standard":
      return [
        li(
          b("S"),
          " and ",
          b("P"),
          " are N\u00d7N: written to HBM and read back, once each, by three separate kernels. That is 4N\u00b2 elements against FA2's O(",
          sub("T", "r"),
          "\u00b7N\u00b7D), and N\u00b2 floats of memory each.",
        ),
        li(b("K"), " and ", b("V"), " are streamed once per block of Q, exactly as in FA2: the difference is all in S and P."),
        li(
          b("What FlashAttention changes:"),
          " one fused kernel keeps each tile of S and P in SRAM and never writes them; the online softmax (m, \u2113 carried per row) is what makes the row-at-a-time softmax unnecessary.",
        ),
      ];
    case "fa2-backward":
      return [
        li(
          b("L"),
          " from the forward pass is what makes this possible: ",
          sub("P", "ij"),
          " = exp(",
          sub("S", "ij"),
          " \u2212 ",
          sub("L", "i"),
          ") is recomputed tile by tile, never stored.",
        ),
        li(b("D"), " = rowsum(dO \u2218 O) is computed once by a small preprocessing kernel and read by every tile."),
        li(
          b("K/V on the outer loop:"),
          " each block owns one tile j and accumulates ",
          sub("dK", "j"),
          ", ",
          sub("dV", "j"),
          " in SRAM, written once. ",
          b("dQ"),
          " is shared by every tile, so it is accumulated in HBM with atomicAdd: each element added counts one read and one write.",
        ),
      ];
    default:
      return [
        li(b("Q"), " is read once, and ", b("O"), " and ", b("L"), " are written once and never read back."),
        li(b("K"), " and ", b("V"), " are read once per block of Q: ", sub("T", "r"), " times."),
        li(
          b("Why is nothing carried back and forth?"),
          " ",
          Xi("Q"),
          " sits on the outer loop, so one block of O is built from start to finish in SRAM. It is already the real answer when it is written, and ",
          Xi("O"),
          ", ",
          Xi("m"),
          ", ",
          ell(),
          " never make the trip. (FlashAttention-1 loops over K/V outside and re-reads and re-writes ",
          Xi("O"),
          ", ",
          ell(),
          ", ",
          Xi("m"),
          " on every inner iteration.)",
        ),
        li(
          b("Two smaller wins."),
          " The division by ",
          ell(),
          " happens once, at write-back, instead of on every step; and ",
          Xi("m"),
          " and ",
          ell(),
          " leave as the single array L = m + log \u2113, which is what the backward pass needs.",
        ),
      ];
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
      c.read.textContent = `${int(r)} \u00b7 ${bytes(r * FP32)}`;
      c.written.textContent = `${int(w)} \u00b7 ${bytes(w * FP32)}`;
      const fr = t.hbm[name]?.read || 1;
      const fw = t.hbm[name]?.written || 1;
      c.rbar.style.transform = `scaleX(${r / fr})`;
      c.wbar.style.transform = `scaleX(${w / fw})`;
      c.row.classList.toggle("moved", moved.has(name));
    }
    const note = `${s.phase}/${t.phases.length}/${total}/${idx.repairedPhases}`;
    if (note !== this.last.note) {
      this.last.note = note;
      this.phaseNote.dataset.bytes = String(total * FP32);
      this.phaseNote.dataset.phase = String(s.phase + 1);
      fill(
        this.phaseNote,
        `After phase ${s.phase + 1} of ${t.phases.length} in every block: `,
        h("b", {}, int(total)),
        ` elements (${bytes(total * FP32)}) have crossed HBM.`,
        idx.repairedPhases
          ? frag(
              " ",
              h(
                "span",
                { class: "warn", title: "trace.phases disagreed with trace.hbm; counts rebuilt from the recorded transfers" },
                "(phase counters rebuilt from transfers)",
              ),
            )
          : null,
      );
    }
    this.showFinal(t);
  }

  /** Under causal masking: the bytes it saves against the same launch without it (from /api/compare). */
  showSaving(t: Trace, doc: CompareDoc | null): void {
    const c = doc?.config;
    const entry = doc?.algorithms[t.config.algo];
    const same =
      c && c.n === t.config.n && c.d === t.config.d && c.br === t.config.br && c.bc === t.config.bc && c.causal === !!t.config.causal;
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
    fill(this.whyList, ...why(t.config.algo));
    let sum = 0;
    const rows = Object.keys(t.tensors).map((name) => {
      const e = t.hbm[name] ?? { read: 0, written: 0 };
      const m = t.model[name] ?? { read: 0, written: 0 };
      const ok = e.read === m.read && e.written === m.written;
      const count = e.read + e.written;
      sum += count;
      const r = rule(t, name);
      return h(
        "tr",
        { "data-testid": `final-${name}` },
        h("th", { scope: "row" }, h("span", { class: `tensor t-${name}` }, name)),
        h("td", {}, r.text),
        h("td", { class: "mono small" }, r.formula),
        h("td", { class: "num" }, `${int(e.read)} / ${int(e.written)}`),
        h("td", { class: "num" }, `${int(m.read)} / ${int(m.written)}`),
        h("td", { class: "num" }, bytes(count * FP32)),
        h("td", {}, ok ? h("span", { class: "ok" }, "\u2713") : h("span", { class: "bad" }, "\u2717")),
      );
    });
    const matches =
      t.model.matches ??
      Object.keys(t.tensors).every((k) => t.hbm[k]?.read === t.model[k]?.read && t.hbm[k]?.written === t.model[k]?.written);
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
            h("td", { class: "num" }, bytes(sum * FP32)),
            h("td"),
          ),
        ),
      ),
    );
  }
}
