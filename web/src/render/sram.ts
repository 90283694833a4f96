// The SRAM footprint of one block against the 48 KB static limit and the 227 KB opt-in budget.
import { esc } from "../dom";
import { bytes } from "../format";
import type { Trace } from "../types";

export function showSram(el: HTMLElement, t: Trace): void {
  const s = t.sram;
  const max = Math.max(s.budget_bytes, s.bytes) * 1.05;
  const pct = (b: number) => `${Math.min(100, (100 * b) / max)}%`;
  const verdict = !s.fits
    ? `<p class="bad" data-testid="sram-verdict"><b>Would not fit:</b> ${bytes(s.bytes)} per block exceeds the ${bytes(s.budget_bytes)} a block can opt into on H100/H200. The kernel could not launch with Br = ${t.config.br}, Bc = ${t.config.bc}, D = ${t.config.d}; make the tiles smaller.</p>`
    : s.needs_opt_in
      ? `<p class="warn" data-testid="sram-verdict"><b>Fits with opt-in:</b> ${bytes(s.bytes)} is over the ${bytes(s.static_limit_bytes)} static limit, so the launch must raise <code>cudaFuncAttributeMaxDynamicSharedMemorySize</code> (up to ${bytes(s.budget_bytes)}).</p>`
      : `<p class="ok" data-testid="sram-verdict"><b>Fits:</b> ${bytes(s.bytes)} per block, under the ${bytes(s.static_limit_bytes)} static limit.</p>`;
  const list = (buffers: typeof s.buffers) =>
    Object.entries(buffers)
      .map(([name, b]) => `<li><code>${esc(name)}</code> ${b.shape.join("\u00d7")} \u00b7 ${bytes(b.bytes)}</li>`)
      .join("");
  const parts = s.kernels
    ? Object.entries(s.kernels)
        .map(([k, f]) => `<li class="kernel"><b>${esc(k)}</b> ${bytes(f.bytes)}${k === s.kernel ? " (the largest)" : ""}:</li>${list(f.buffers)}`)
        .join("")
    : list(s.buffers);
  el.innerHTML = `<div class="sram-bar" role="img" aria-label="${esc(`${bytes(s.bytes)} of shared memory per block; static limit ${bytes(s.static_limit_bytes)}, opt-in budget ${bytes(s.budget_bytes)}`)}">
      <span class="fill ${s.fits ? (s.needs_opt_in ? "warn" : "ok") : "bad"}" style="width:${pct(s.bytes)}"></span>
      <span class="mark" style="left:${pct(s.static_limit_bytes)}"><span>${bytes(s.static_limit_bytes)} static</span></span>
      <span class="mark" style="left:${pct(s.budget_bytes)}"><span>${bytes(s.budget_bytes)} opt-in</span></span>
    </div>${verdict}<ul class="buffers">${parts}</ul>`;
}
