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

/** What an output's relative error is over (older traces do not say: max |ref|). */
export function overOf(e: ErrorCheck): string {
  return e.over ?? "max |ref|";
}

/** The badge's words for one output: the relative error it is judged on against its tolerance ("O rel err 1.2e-7
 * ≤ 1e-5"), or how many of its values are not numbers. */
export function badgeWords(name: string, e: ErrorCheck): string {
  const bad = nonfinite(e);
  if (bad) return `${name} ${bad} not finite`;
  return `${name} rel err ${sci(e.max_rel)} ${e.ok ? "\u2264" : ">"} ${sci(e.tolerance_rel)}`;
}

/** One output's check in words for the badge's title: what is judged against what. */
export function judgedText(name: string, e: ErrorCheck): string {
  if (nonfinite(e)) return `${name}: ${nonfinite(e)} values not finite.`;
  return `${name}: max |x \u2212 ref| ${sci(e.max_abs)} over ${overOf(e)} = ${sci(e.max_rel)}, judged against the tolerance ${sci(e.tolerance_rel)} (${e.ok ? "within" : "outside"}).`;
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
  for (const [q, [k, e]] of shown.entries()) parts.push(q ? " \u00b7 " : null, h("span", { class: "nw" }, badgeWords(k, e)));
  fill(badge, h("span", { "aria-hidden": "true" }, r.ok ? "\u2713" : "\u2717"), " ", ...parts);
  badge.title = `Against a float64 reference: relative error, judged against each output's tolerance. ${all.map(([k, e]) => judgedText(k, e)).join(" ")}`;
  badge.setAttribute("aria-label", `${r.ok ? "Exact within tolerance" : "Outside tolerance"}: ${badge.title}`);
  const num = (x: string) => h("td", { class: "num" }, x);
  const row = ([name, e]: [string, ErrorCheck]) =>
    h(
      "tr",
      {},
      h("th", { scope: "row" }, name),
      num(nonfinite(e) ? `${nonfinite(e)} not finite` : sci(e.max_abs)),
      h("td", {}, overOf(e)),
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
      h(
        "thead",
        {},
        h("tr", {}, col("output"), col("max |x \u2212 ref|"), col("over"), col("relative (judged)"), col("tolerance (rel)"), col("")),
      ),
      h("tbody", {}, ...all.map(row)),
    ),
    h(
      "p",
      { class: "muted small" },
      `The engine runs in float32 in the kernel's loop order; the reference is ${r.against} in ${String(r.dtype ?? "float64")}. Metric: ${String(r.metric)}.`,
    ),
  );
}
