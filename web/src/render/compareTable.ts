// The comparison's table: each supported algorithm's HBM read, written and total, its traffic against the
// baseline's, its SRAM per block, its steps (and what causal masking saves), then its tensors one by one; and the
// note under it that says what config and units the numbers are.
import type { CompareDoc } from "../compareDoc";
import { type Child, fill, frag, h, sub } from "../dom";
import { bytes, int, kib } from "../format";
import { shortName } from "./compareSeries";

/** One algorithm's "SRAM per block" cell: shared memory in KiB (the hardware section's very string), or a dash. */
export function sramText(e: { sram_bytes?: number | null; sram_fits?: boolean | null }): string {
  return e.sram_bytes ? kib(e.sram_bytes) + (e.sram_fits === false ? " (too big)" : "") : "\u2014";
}

/** The table of `d` into `table`, and the note that goes with it into `note`. */
export function drawTable(table: HTMLElement, note: HTMLElement, d: CompareDoc): void {
  const names = Object.keys(d.algorithms).filter((a) => d.algorithms[a]!.supported);
  const e = (a: string) => d.algorithms[a]!;
  const row = (label: Child, cell: (a: string) => Child, testid?: string) =>
    h(
      "tr",
      { "data-testid": testid },
      h("th", { scope: "row" }, label),
      // data-label: on a phone each row is a card, each algorithm's value under its name (styles.css, table.stack)
      ...names.map((a) => h("td", { class: "num", "data-algo": a, "data-label": shortName(d, a) }, cell(a))),
    );
  const head = h(
    "thead",
    {},
    h(
      "tr",
      {},
      h("th", { scope: "col" }),
      ...names.map((a) =>
        h(
          "th",
          { scope: "col", class: "num" },
          shortName(d, a),
          e(a).pass === "backward" ? frag(h("br"), h("span", { class: "muted" }, "(backward pass)")) : null,
        ),
      ),
    ),
  );
  const body = h(
    "tbody",
    {},
    row("HBM read", (a) => bytes(e(a).total?.read_bytes ?? 0)),
    row("HBM written", (a) => bytes(e(a).total?.written_bytes ?? 0)),
    row(h("b", {}, "HBM traffic"), (a) => h("b", {}, bytes(e(a).total?.bytes ?? 0)), "compare-total"),
    row(`traffic \u00f7 ${d.baseline ? `${shortName(d, d.baseline)}'s` : "the baseline's"}`, (a) =>
      typeof e(a).traffic_vs_fa2 === "number" ? `${e(a).traffic_vs_fa2!.toFixed(2)}\u00d7` : "\u2014",
    ),
    row("SRAM per block", (a) => sramText(e(a)), "compare-sram"),
    row("steps", (a) => (e(a).steps ? int(e(a).steps!) : "\u2014")),
    d.config.causal ? row("causal saves", (a) => (e(a).saved_bytes ? bytes(e(a).saved_bytes!) : "\u2014"), "compare-saved") : null,
  );
  // the tensors, each algorithm's own
  const tensors: string[] = [];
  for (const a of names) for (const t of Object.keys(e(a).tensors ?? {})) if (!tensors.includes(t)) tensors.push(t);
  const per = h(
    "tbody",
    { class: "tensors" },
    h("tr", {}, h("th", { scope: "rowgroup", colspan: names.length + 1 }, "per tensor: read / written")),
    ...tensors.map((t) =>
      row(h("span", { class: "tensor" }, t), (a) => {
        const x = e(a).tensors?.[t];
        return x ? `${bytes(x.read_bytes)} / ${bytes(x.written_bytes)}` : "\u2014";
      }),
    ),
  );
  fill(table, head, body, per);
  const c = d.config;
  fill(
    note,
    `N = ${int(c.n)}, D = ${c.d}, `,
    sub("B", "r"),
    ` = ${c.br}, `,
    sub("B", "c"),
    ` = ${c.bc} (`,
    sub("T", "r"),
    ` = ${c.tr}, `,
    sub("T", "c"),
    ` = ${c.tc})${c.causal ? ", causal" : ""}; fp32, one head. Closed-form models, each equal to its engine's per-element counters (the same numbers as `,
    h("code", {}, "flashviz compare"),
    "). Bytes moved in decimal units (1 kB = 1000 B), shared memory in KiB (1024 B), as Nsight Compute and CUDA write them.",
  );
}
