// The carries: mi, li and each row of Oi as the block holds them, with the rescale factor
// alpha = exp(m_old − m_new) on each online_softmax step (all values from the Trace).
import { esc } from "../dom";
import { isMat, rowValid, sramAt, sramBefore, type TraceIndex } from "../derive";
import { num } from "../format";
import type { Mat, Num, Step, Trace, Vec } from "../types";

const MAX_COLS = 6;

function vec(v: Vec | Mat | null): Vec | null {
  return v && !isMat(v) ? (v as Vec) : null;
}
function mat(v: Vec | Mat | null): Mat | null {
  return v && isMat(v) ? v : null;
}

function rowText(row: Num[] | undefined): string {
  if (!row) return "\u2014";
  const shown = row.slice(0, MAX_COLS).map((x) => num(x)).join("  ");
  return row.length > MAX_COLS ? `${shown}  \u2026` : shown;
}

export class CarriesView {
  constructor(
    private readonly table: HTMLElement,
    private readonly note: HTMLElement,
  ) {}

  show(t: Trace, idx: TraceIndex, s: Step): void {
    const k = s.index;
    const c = s.carries;
    const mi = vec(sramAt(t, idx, k, "mi"));
    const li = vec(sramAt(t, idx, k, "li"));
    const oi = mat(sramAt(t, idx, k, "Oi"));
    const soft = s.op === "online_softmax" && c;
    const back = s.op === "write_back" && c;
    const mOld = soft ? c.m_old : vec(sramBefore(t, idx, k, "mi"));
    const lOld = soft ? c.l_old : vec(sramBefore(t, idx, k, "li"));
    const oOld = mat(sramBefore(t, idx, k, "Oi"));
    const alpha = soft ? c.alpha : null;
    const cols = ["row", "m\u1d62", "\u03b1 = e^(m_old \u2212 m_new)", "\u2113\u1d62", back ? "L = m\u1d62 + log \u2113\u1d62" : null, back ? "O row = O\u1d62 / \u2113\u1d62" : "O\u1d62 row (unnormalised)"].filter(Boolean) as string[];
    let html = `<thead><tr>${cols.map((x) => `<th scope="col">${esc(x)}</th>`).join("")}</tr></thead><tbody>`;
    for (let r = 0; r < t.config.br; r++) {
      const pad = !rowValid(t, s.block, r);
      const changedM = soft && mOld?.[r] !== mi?.[r];
      const changedL = (soft || s.op === "load_q") && lOld?.[r] !== li?.[r];
      const a = alpha?.[r];
      const rescaled = typeof a === "number" && a < 1 && (lOld?.[r] ?? 0) !== 0;
      const cell = (now: Num | undefined, before: Num | undefined, changed: boolean | null | undefined) =>
        changed && before !== undefined
          ? `<td class="changed"><span class="old">${esc(num(before ?? null))}</span> \u2192 ${esc(num(now ?? null))}</td>`
          : `<td>${esc(num(now ?? null))}</td>`;
      html += `<tr${pad ? ' class="pad" title="row past N: padding, never stored"' : ""}>`;
      html += `<th scope="row">${s.block * t.config.br + r}</th>`;
      html += cell(mi?.[r], mOld?.[r], changedM);
      html += a === undefined || a === null ? `<td class="muted">\u2014</td>` : `<td class="${rescaled ? "rescaled" : ""}">${esc(num(a))}</td>`;
      html += cell(li?.[r], lOld?.[r], changedL);
      if (back) html += `<td>${esc(num(c.L?.[r] ?? null))}</td>`;
      const changedO = s.sram.Oi !== undefined && oOld;
      html += changedO
        ? `<td class="mono changed"><span class="old">${esc(rowText(oOld[r]))}</span><br>\u2192 ${esc(rowText(oi?.[r]))}</td>`
        : `<td class="mono">${esc(rowText(oi?.[r]))}</td>`;
      html += "</tr>";
    }
    this.table.innerHTML = html + "</tbody>";
    this.note.innerHTML = this.explain(t, s);
  }

  private explain(t: Trace, s: Step): string {
    switch (s.op) {
      case "load_q":
        return "The carries start empty: m\u1d62 = \u2212\u221e, \u2113\u1d62 = 0, O\u1d62 = 0. They stay in SRAM for the whole loop.";
      case "load_kv":
      case "scores":
        return `The carries wait: this step ${s.op === "load_kv" ? "brings in tile j" : "computes S\u1d62\u2c7c"} and leaves m\u1d62, \u2113\u1d62, O\u1d62 as they were.`;
      case "online_softmax":
        return s.j === 0
          ? "First tile: m_old = \u2212\u221e, so \u03b1 = e^(\u2212\u221e) = 0 wipes the empty carries and the tile's values move in."
          : "Everything held is stale: where the max grew (\u03b1 < 1, highlighted), \u2113\u1d62 and O\u1d62 are rescaled by \u03b1 before this tile is added.";
      case "write_back":
        return `The only division: O = O\u1d62 / \u2113\u1d62, once. m\u1d62 and \u2113\u1d62 leave together as L = m\u1d62 + log \u2113\u1d62 (${t.config.br} values per block).`;
    }
  }
}
