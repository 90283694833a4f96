// The SRAM footprint of one block against the 48 KiB static limit and the 227 KiB opt-in budget (shared memory
// in KiB, as CUDA sizes it).
import { fill, h } from "../dom";
import { kib } from "../format";
import type { Trace } from "../types";

export function showSram(el: HTMLElement, t: Trace): void {
  const s = t.sram;
  const max = Math.max(s.budget_bytes, s.bytes) * 1.05;
  const pct = (b: number) => `${Math.min(100, (100 * b) / max)}%`;
  const code = (x: string) => h("code", {}, x);
  const verdict = !s.fits
    ? h(
        "p",
        { class: "bad", "data-testid": "sram-verdict" },
        h("b", {}, "Would not fit:"),
        ` ${kib(s.bytes)} per block exceeds the ${kib(s.budget_bytes)} a block can opt into on H100/H200. The kernel could not launch with Br = ${t.config.br}, Bc = ${t.config.bc}, D = ${t.config.d}; make the tiles smaller.`,
      )
    : s.needs_opt_in
      ? h(
          "p",
          { class: "warn", "data-testid": "sram-verdict" },
          h("b", {}, "Fits with opt-in:"),
          ` ${kib(s.bytes)} is over the ${kib(s.static_limit_bytes)} static limit, so the launch must raise `,
          code("cudaFuncAttributeMaxDynamicSharedMemorySize"),
          ` (up to ${kib(s.budget_bytes)}).`,
        )
      : h(
          "p",
          { class: "ok", "data-testid": "sram-verdict" },
          h("b", {}, "Fits:"),
          ` ${kib(s.bytes)} per block, under the ${kib(s.static_limit_bytes)} static limit.`,
        );
  const list = (buffers: typeof s.buffers) =>
    Object.entries(buffers).map(([name, b]) =>
      h("li", {}, code(name), ` ${b.shape.join("\u00d7")} \u00b7 ${kib(b.bytes)}${b.in ? ` in ${b.in}, not shared memory` : ""}`),
    );
  const parts = s.kernels
    ? Object.entries(s.kernels).flatMap(([k, f]) => [
        h("li", { class: "kernel" }, h("b", {}, k), ` ${kib(f.bytes)}${k === s.kernel ? " (the largest)" : ""}:`),
        ...list(f.buffers),
      ])
    : list(s.buffers);
  const fillClass = s.fits ? (s.needs_opt_in ? "warn" : "ok") : "bad";
  const bar = h(
    "div",
    {
      class: "sram-bar",
      role: "img",
      "aria-label": `${kib(s.bytes)} of shared memory per block; static limit ${kib(s.static_limit_bytes)}, opt-in budget ${kib(s.budget_bytes)}`,
    },
    h("span", { class: `fill ${fillClass}` }),
    h("span", { class: "mark" }, h("span", {}, `${kib(s.static_limit_bytes)} static`)),
    h("span", { class: "mark" }, h("span", {}, `${kib(s.budget_bytes)} opt-in`)),
  );
  const [fillEl, staticMark, budgetMark] = Array.from(bar.children) as HTMLElement[];
  fillEl!.style.width = pct(s.bytes);
  staticMark!.style.left = pct(s.static_limit_bytes);
  budgetMark!.style.left = pct(s.budget_bytes);
  fill(el, bar, verdict, h("ul", { class: "buffers" }, ...parts));
}
