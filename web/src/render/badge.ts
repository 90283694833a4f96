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

/** An output judged on a scale far above its own size (a gradient over its terms, which cancel): its absolute error
 *  is outside the tolerance of the answer's own size (max |ref|), so "within" needs saying why. */
export function cancels(e: ErrorCheck): boolean {
  return (
    !nonfinite(e) && e.over_value !== undefined && e.max_ref !== undefined && e.max_abs !== null && e.max_abs > e.tolerance_rel * e.max_ref
  );
}

/** The badge's words for one output: the relative error it is judged on against its tolerance ("O rel err 1.2e-7
 * ≤ 1e-5"), with the absolute error beside it where the answer is far smaller than what it is judged over, or how
 * many of its values are not numbers. */
export function badgeWords(name: string, e: ErrorCheck): string {
  const bad = nonfinite(e);
  if (bad) return `${name} ${bad} not finite`;
  const abs = cancels(e) ? ` (abs err ${sci(e.max_abs)})` : "";
  return `${name} rel err ${sci(e.max_rel)} ${e.ok ? "\u2264" : ">"} ${sci(e.tolerance_rel)}${abs}`;
}

/** Each dtype's unit roundoff: the largest relative error of rounding one value to it. */
const ROUNDOFF: Record<string, number> = { float64: 2 ** -53, float32: 2 ** -24, float16: 2 ** -11, bfloat16: 2 ** -8 };

/** Why an output that `cancels` is judged as it is, in words from the trace's numbers ("dQ passes on the size of its
 *  terms, not on its own: ..."); `dtype`: what the engine computed it in. */
export function whyText(name: string, e: ErrorCheck, dtype: string): string {
  const u = ROUNDOFF[dtype];
  const one = u === undefined ? 0 : u * e.over_value!; // one rounding of the largest term
  const times = one > 0 ? e.max_abs! / one : 0;
  const size =
    times <= 1
      ? `an absolute error of ${sci(e.max_abs)} is no more than that`
      : `the absolute error, ${sci(e.max_abs)}, is ${times.toFixed(1)} of those (a sum adds up the roundings of its terms)`;
  const rounding =
    u === undefined
      ? ""
      : ` Rounding a term to ${dtype} errs by up to ${sci(u)} of its size, ${sci(one)} for terms of ${sci(e.over_value)}: ${size}.`;
  const verdict = e.ok ? "within" : "outside";
  const answer = e.max_ref === 0 ? "is 0" : `is at most ${sci(e.max_ref)} in size`;
  return (
    `${name}: the float64 answer ${answer}, yet ${overOf(e)} is ${sci(e.over_value)}: the terms cancel.` +
    rounding +
    ` It is judged on the terms' scale, ${sci(e.max_rel)} against the tolerance ${sci(e.tolerance_rel)} (${verdict}), not on its own size.`
  );
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
  const dtype = (k: string) => t.tensors[k]?.dtype ?? "";
  const why = all.filter(([, e]) => cancels(e)).map(([k, e]) => whyText(k, e, dtype(k)));
  badge.title = `Against a float64 reference: relative error, judged against each output's tolerance. ${all.map(([k, e]) => judgedText(k, e)).join(" ")}${why.length ? ` ${why.join(" ")}` : ""}`;
  badge.setAttribute("aria-label", `${r.ok ? "Exact within tolerance" : "Outside tolerance"}: ${badge.title}`);
  const num = (x: string) => h("td", { class: "num" }, x);
  const row = ([name, e]: [string, ErrorCheck]) =>
    h(
      "tr",
      {},
      h("th", { scope: "row" }, name),
      num(nonfinite(e) ? `${nonfinite(e)} not finite` : sci(e.max_abs)),
      num(e.max_ref === undefined ? "\u2014" : sci(e.max_ref)),
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
        h(
          "tr",
          {},
          col("output"),
          col("max |x \u2212 ref|"),
          col("max |ref|"),
          col("over"),
          col("relative (judged)"),
          col("tolerance (rel)"),
          col(""),
        ),
      ),
      h("tbody", {}, ...all.map(row)),
    ),
    ...all
      .filter(([, e]) => cancels(e))
      .map(([k, e]) => h("p", { class: "small", "data-testid": `exactness-why-${k}` }, whyText(k, e, dtype(k)))),
    h(
      "p",
      { class: "muted small" },
      `The engine runs in float32 in the kernel's loop order; the reference is ${r.against} in ${String(r.dtype ?? "float64")}. Metric: ${String(r.metric)}.`,
    ),
  );
}
