// When does which algorithm move fewer bytes? The comparison's sweep of Bc/Br at this N and D: each
// forward algorithm's bytes ÷ the baseline's, the one that moves fewest at each point, and the terms that make up
// each one's traffic at the current tiles (from GET /api/compare's `regimes` and `terms`).

import type { CompareDoc, Term } from "../compareDoc";
import { fill, h } from "../dom";

export function termsText(terms: Term[], shown = 2): string {
  return terms
    .slice(0, shown)
    .map((x) => {
      const times = [
        x.times ? `read ${x.times.toPrecision(3).replace(/\.?0+$/, "")}\u00d7` : "",
        x.rewrites ? `written ${x.rewrites.toPrecision(3).replace(/\.?0+$/, "")}\u00d7` : "",
      ].filter(Boolean);
      return `${x.tensor} ${(100 * x.share).toFixed(0)}%${times.length ? ` (${times.join(", ")})` : ""}`;
    })
    .join(", ");
}

export function showRegimes(table: HTMLElement, note: HTMLElement, doc: CompareDoc): void {
  const r = doc.regimes;
  if (!r?.points.length) {
    fill(table);
    fill(note);
    return;
  }
  const base = doc.baseline ?? "";
  const names = Object.keys(r.points[0]!.bytes);
  const short = (n: string) => doc.algorithms[n]?.short ?? n;
  fill(
    table,
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Br \u00d7 Bc"),
        h("th", { scope: "col" }, "Bc/Br"),
        ...names.map((n) => h("th", { scope: "col" }, short(n))),
        h("th", { scope: "col" }, "fewest bytes"),
      ),
    ),
    h(
      "tbody",
      {},
      ...r.points.map((p) => {
        const ratios = (p[`vs_${base}`] ?? {}) as Record<string, number | null>;
        return h(
          "tr",
          { class: p.current ? "current" : "", "data-br": p.br, "data-bc": p.bc, "data-fewest": p.fewest },
          h("th", { scope: "row" }, `${p.br} \u00d7 ${p.bc}${p.current ? " (this config)" : ""}`),
          h("td", { class: "num" }, String(Number((p.bc / p.br).toPrecision(3)))),
          ...names.map((n) =>
            h(
              "td",
              { class: `num${n === p.fewest ? " fewest" : ""}` },
              ratios[n] === null || ratios[n] === undefined ? "\u2014" : `${ratios[n]!.toFixed(2)}\u00d7`,
            ),
          ),
          h("td", {}, short(p.fewest)),
        );
      }),
    ),
  );
  const terms = Object.entries(doc.algorithms)
    .filter(([, e]) => e.pass === "forward" && e.terms)
    .map(([, e]) => `${e.short}: ${termsText(e.terms ?? [])}`);
  fill(
    note,
    `Bytes \u00f7 ${short(base)}'s at N=${r.n}, D=${r.d}${r.causal ? ", causal" : ""}, Br held, Bc = Br\u00b7r. At the current tiles the traffic is mostly ${terms.join("; ")}. ${r.real_kernels}${r.left_out ? ` ${r.left_out}` : ""}`,
  );
}
