// Exactness: the max error of each output against the float64 reference (every output the trace checks), as a badge
// naming the ones the trace heads it with (`reference.headline`) and as a table.
import { type Child, fill, h } from "../dom";
import { sci } from "../format";
import type { ErrorCheck, Trace } from "../types";

/** The reference's per-output checks, in the trace's order. */
export function checks(t: Trace): [string, ErrorCheck][] {
  const out: [string, ErrorCheck][] = [];
  for (const [k, v] of Object.entries(t.reference)) {
    if (v && typeof v === "object" && "max_abs" in v) out.push([k, v as ErrorCheck]);
  }
  return out;
}

/** How many of an output's values are NaN or ±∞ (a row with no finite score), 0 when all are numbers. */
function nonfinite(e: ErrorCheck): number {
  return e.nonfinite;
}

/** The badge's words for one output: its max error, or how many of its values are not numbers. */
function err(e: ErrorCheck): string {
  const bad = nonfinite(e);
  return bad ? `${bad} not finite` : `err ${sci(e.max_abs)}`;
}

export function showBadge(badge: HTMLElement, detail: HTMLElement, t: Trace): void {
  const r = t.reference;
  const all = checks(t);
  // the badge names the outputs the algorithm is for (the trace says which)
  const shown = all.filter(([k]) => r.headline.includes(k));
  badge.dataset.ok = String(r.ok);
  badge.className = `badge ${r.ok ? "ok" : "bad"}`;
  // each output's error in a no-wrap span: the badge wraps between outputs, never inside one
  const parts: Child[] = [];
  for (const [q, [k, e]] of shown.entries()) parts.push(q ? " \u00b7 " : null, h("span", { class: "nw" }, `${k} ${err(e)}`));
  fill(badge, h("span", { "aria-hidden": "true" }, r.ok ? "\u2713" : "\u2717"), " ", ...parts);
  badge.title =
    `Against a float64 reference (${r.metric}). ` +
    all
      .map(
        ([k, e]) =>
          `${k}: ${nonfinite(e) ? `${nonfinite(e)} values not finite` : `max abs ${sci(e.max_abs)}, max rel ${sci(e.max_rel)}`} (tolerance ${sci(e.tolerance_rel)}).`,
      )
      .join(" ");
  badge.setAttribute("aria-label", `${r.ok ? "Exact within tolerance" : "Outside tolerance"}: ${badge.title}`);
  const num = (x: string) => h("td", { class: "num" }, x);
  const row = ([name, e]: [string, ErrorCheck]) =>
    h(
      "tr",
      {},
      h("th", { scope: "row" }, name),
      num(nonfinite(e) ? `${nonfinite(e)} not finite` : sci(e.max_abs)),
      num(nonfinite(e) ? "\u2014" : sci(e.max_rel)),
      num(sci(e.tolerance_rel)),
      h("td", {}, e.ok ? h("span", { class: "ok" }, "\u2713 within") : h("span", { class: "bad" }, "\u2717 outside")),
    );
  const col = (x: string) => h("th", { scope: "col" }, x);
  fill(
    detail,
    h(
      "table",
      { class: "final" },
      h("thead", {}, h("tr", {}, col("output"), col("max |x \u2212 ref|"), col("relative"), col("tolerance (rel)"), col(""))),
      h("tbody", {}, ...all.map(row)),
    ),
    h(
      "p",
      { class: "muted small" },
      `The engine runs in float32 in the kernel's loop order; the reference is ${r.against} in ${String(r.dtype ?? "float64")}. Metric: ${String(r.metric)}.`,
    ),
  );
}
