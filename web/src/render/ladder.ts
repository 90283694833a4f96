// The ladder: one recorded GPU run (GET /api/ladder, the run that ships with flashviz; docs/ladder-schema.md) set
// out rung by rung, from the seed's fp32 scalar kernel to the Triton kernel on tensor cores and PyTorch's backends.
// The page shows the run's own numbers with its date and GPU and measures nothing; with no recorded run it says so.
// Every value from the document lands as a text node. The document itself, and its check, are ladderDoc.ts.
import { h } from "../dom";
import { bytes, kib } from "../format";
import type { LadderDoc, Tiles } from "../ladderDoc";

function tilesText(t: Tiles | null): string {
  return t === null ? "not reported" : `${t.br}×${t.bc}, ${t.warps} warps, ${t.stages} stage${t.stages === 1 ? "" : "s"}`;
}

/** The table of rungs and the run's provenance, as nodes. */
export function ladderNodes(doc: LadderDoc): Node[] {
  const s = doc.shape;
  const head = [
    "#",
    "rung",
    "dtype",
    "tensor cores",
    "tiles Br×Bc",
    "ms",
    "TFLOP/s",
    "of peak",
    "HBM (model)",
    "SRAM / block",
    "what changed from the rung below",
  ];
  // each cell carries its column's name (data-label): on a phone the table is a stack of cards, one per rung, each
  // value under its name (styles.css, table.stack), where the 11 columns would need 1,345 px (issue 17 item 19)
  const cell = (k: number, attrs: Record<string, string>, ...kids: (Node | string)[]) =>
    h("td", { ...attrs, "data-label": head[k]! }, ...kids);
  const rows = doc.rungs.map((r, i) =>
    h(
      "tr",
      { "data-testid": "ladder-rung", "data-rung": r.name },
      cell(0, { class: "rung-no" }, String(i + 1)),
      h("th", { scope: "row" }, r.label, h("div", { class: "muted small mono" }, r.kernel)),
      cell(2, {}, r.dtype),
      cell(3, {}, r.tensor_cores ? `yes${r.mma ? ` (${r.mma})` : ""}` : "no"),
      cell(4, {}, tilesText(r.tiles)),
      cell(5, { class: "num" }, r.ms.toPrecision(4)),
      cell(6, { class: "num", "data-testid": "ladder-tflops" }, r.tflops.toFixed(1)),
      cell(7, { class: "num" }, `${(100 * r.share_of_peak).toFixed(1)}% of ${r.peak}`),
      cell(8, { class: "num" }, r.hbm_bytes === null ? "not known" : bytes(r.hbm_bytes)),
      cell(9, { class: "num" }, r.sram_bytes_per_block === null ? "not known" : kib(r.sram_bytes_per_block)),
      cell(10, { class: "small" }, r.what_changed),
    ),
  );
  const peaks = Object.entries(doc.peaks)
    .map(([k, v]) => `${k} ${v.tflops.toFixed(1)} TFLOP/s (${v.what})`)
    .join("; ");
  return [
    h(
      "p",
      { class: "small", "data-testid": "ladder-provenance" },
      h("b", {}, `Recorded ${doc.date} on ${doc.gpu}`),
      `${doc.mode === "full" ? "" : ` (${doc.mode} run)`}${doc.complete ? "" : ", incomplete"}: not measured on this machine; these are that run's numbers. `,
      `Shape: N = ${s.n}, D = ${s.d}, batch ${s.batch} × ${s.heads} heads${s.causal ? ", causal" : ""}. Command: `,
      h("code", {}, doc.command),
    ),
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "final ladder stack", "data-testid": "ladder-table" },
        h("thead", {}, h("tr", {}, ...head.map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, ...rows),
      ),
    ),
    // the run's own sentences, quoted (data-verbatim: the page's junk check leaves them alone)
    h(
      "p",
      { class: "small muted", "data-verbatim": "ladder" },
      `Peaks measured in the same run: ${peaks}. Timing: ${doc.timing}. Check: ${doc.check}.`,
    ),
  ];
}

export class LadderView {
  constructor(private readonly host: HTMLElement) {}

  /** `doc`: the page's Source's answer (source.ts: the server's /api/ladder, or the run inlined in the file) */
  async load(ladder: () => Promise<LadderDoc | string>): Promise<void> {
    const doc = await ladder();
    this.host.replaceChildren(
      ...(typeof doc === "string"
        ? [h("p", { class: "small muted", "data-testid": "ladder-missing" }, `No recorded ladder run to show: ${doc}`)]
        : ladderNodes(doc)),
    );
    this.host.dataset.ready = "1";
  }
}
