// Exactness: the max error of O and L against the float64 reference, as a badge and as a table.
import { esc } from "../dom";
import { sci } from "../format";
import type { Trace } from "../types";

export function showBadge(badge: HTMLElement, detail: HTMLElement, t: Trace): void {
  const r = t.reference;
  badge.dataset.ok = String(r.ok);
  badge.className = `badge ${r.ok ? "ok" : "bad"}`;
  badge.innerHTML = `<span aria-hidden="true">${r.ok ? "\u2713" : "\u2717"}</span> O err ${sci(r.O.max_abs)} \u00b7 L err ${sci(r.L.max_abs)}`;
  badge.title = `Against a float64 reference (${r.metric}). O: max abs ${r.O.max_abs}, max rel ${r.O.max_rel} (tolerance ${r.O.tolerance_rel}). L: max abs ${r.L.max_abs}, max rel ${r.L.max_rel} (tolerance ${r.L.tolerance_rel}).`;
  badge.setAttribute("aria-label", `${r.ok ? "Exact within tolerance" : "Outside tolerance"}: ${badge.title}`);
  const row = (name: "O" | "L") => {
    const e = r[name];
    return `<tr><th scope="row">${name}</th><td class="num">${sci(e.max_abs)}</td><td class="num">${sci(e.max_rel)}</td><td class="num">${sci(e.tolerance_rel)}</td><td>${e.ok ? '<span class="ok">\u2713 within</span>' : '<span class="bad">\u2717 outside</span>'}</td></tr>`;
  };
  detail.innerHTML = `<table class="final"><thead><tr><th scope="col">output</th><th scope="col">max |x \u2212 ref|</th><th scope="col">relative</th><th scope="col">tolerance (rel)</th><th scope="col"></th></tr></thead>
    <tbody>${row("O")}${row("L")}</tbody></table>
    <p class="muted small">The engine runs in float32 in the kernel's loop order; the reference is plain softmax attention in ${esc(r.dtype ?? "float64")}. Metric: ${esc(r.metric)}.</p>`;
}
