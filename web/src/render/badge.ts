// Exactness: the max error of each output against the float64 reference (O and L for FA2; O, l, m for FA1;
// dQ, dK, dV and the forward's O, L for the backward), as a badge and as a table.
import { esc } from "../dom";
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

export function showBadge(badge: HTMLElement, detail: HTMLElement, t: Trace): void {
  const r = t.reference;
  const all = checks(t);
  // the badge names the outputs the algorithm is for: the gradients of the backward, else the first two
  const grads = all.filter(([k]) => k.startsWith("d"));
  const shown = (grads.length ? grads : all).slice(0, 3);
  badge.dataset.ok = String(r.ok);
  badge.className = `badge ${r.ok ? "ok" : "bad"}`;
  badge.innerHTML = `<span aria-hidden="true">${r.ok ? "\u2713" : "\u2717"}</span> ` + shown.map(([k, e]) => `<span class="nw">${esc(k)} err ${sci(e.max_abs)}</span>`).join(" \u00b7 ");
  badge.title = `Against a float64 reference (${r.metric}). ` + all.map(([k, e]) => `${k}: max abs ${e.max_abs}, max rel ${e.max_rel} (tolerance ${e.tolerance_rel}).`).join(" ");
  badge.setAttribute("aria-label", `${r.ok ? "Exact within tolerance" : "Outside tolerance"}: ${badge.title}`);
  const row = ([name, e]: [string, ErrorCheck]) =>
    `<tr><th scope="row">${esc(name)}</th><td class="num">${sci(e.max_abs)}</td><td class="num">${sci(e.max_rel)}</td><td class="num">${sci(e.tolerance_rel)}</td><td>${e.ok ? '<span class="ok">\u2713 within</span>' : '<span class="bad">\u2717 outside</span>'}</td></tr>`;
  detail.innerHTML = `<table class="final"><thead><tr><th scope="col">output</th><th scope="col">max |x \u2212 ref|</th><th scope="col">relative</th><th scope="col">tolerance (rel)</th><th scope="col"></th></tr></thead>
    <tbody>${all.map(row).join("")}</tbody></table>
    <p class="muted small">The engine runs in float32 in the kernel's loop order; the reference is ${t.config.algo === "fa2-backward" ? "the float64 gradients of plain softmax attention" : "plain softmax attention"} in ${esc(String(r.dtype ?? "float64"))}. Metric: ${esc(r.metric)}.</p>`;
}
