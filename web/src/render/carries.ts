// The carries: mi, li and each row of Oi as the block holds them, with the rescale factor
// alpha = exp(m_old − m_new) on each online_softmax (FA2) or update (FA1) step. For standard attention and
// the backward pass: the values the step carries (a row's max and sum; Li, Di, dQ's share), per row.
// All values from the Trace.
import { iOf } from "../algos";
import { isMat, rowValid, sramAt, sramBefore, type TraceIndex } from "../derive";
import { type Child, fill, h, sub } from "../dom";
import { num } from "../format";
import type { Mat, Num, Step, Trace, Vec } from "../types";

const MAX_COLS = 6;

function vec(v: Vec | Mat | null | undefined): Vec | null {
  return v && !isMat(v) ? (v as Vec) : null;
}
function mat(v: Vec | Mat | null | undefined): Mat | null {
  return v && isMat(v) ? v : null;
}

/** A row of numbers as text nodes: each number in an unbreakable span, the row free to wrap between them (never
 *  cut off). */
function rowNodes(row: Num[] | undefined): Child[] {
  if (!row) return ["\u2014"];
  const out: Child[] = [];
  for (const [q, x] of row.slice(0, MAX_COLS).entries()) out.push(q ? " " : null, h("span", { class: "n" }, num(x)));
  if (row.length > MAX_COLS) out.push(" ", h("span", { class: "n" }, "\u2026"));
  return out;
}

/** "old → new", free to wrap before the arrow. */
function change(before: string, now: string): Child[] {
  return [h("span", { class: "old n" }, before), " ", h("span", { class: "n" }, `\u2192 ${now}`)];
}

const LABEL: Record<string, string> = {
  mr: "m\u1d63 (row max)",
  lr: "\u2113\u1d63 (row sum)",
  Li: "L\u1d62",
  Di: "D\u1d62 = rowsum(dO\u2218O)",
  Sij: "S\u1d62\u2c7c row",
  dPij: "dP\u1d62\u2c7c row",
  dQi_add: "this block's share of dQ row",
  dQi: "dQ row after the add",
};

export class CarriesView {
  constructor(
    private readonly table: HTMLElement,
    private readonly note: HTMLElement,
  ) {}

  show(t: Trace, idx: TraceIndex, s: Step): void {
    const algo = t.config.algo;
    if (algo === "fa2" || algo === "fa1") this.online(t, idx, s);
    else this.generic(t, s);
  }

  /** Standard and the backward: whatever the step carries, one row per row of the block (or the one row r). */
  private generic(t: Trace, s: Step): void {
    const c = s.carries;
    const i = iOf(t.config.algo, s);
    const code = (x: string) => h("code", {}, x);
    if (!c || !Object.keys(c).length) {
      fill(this.table, h("tbody", {}, h("tr", {}, h("td", { class: "muted" }, "This step carries no values between steps."))));
      if (t.config.algo === "standard") {
        fill(
          this.note,
          "Standard attention keeps no running carries: each row's max and sum are computed in one go by the softmax kernel (",
          code("softmax_row"),
          " steps).",
        );
      } else {
        fill(
          this.note,
          "The backward's per-row values: ",
          sub("L", "i"),
          " and ",
          sub("D", "i"),
          " on ",
          code("load_q"),
          ", the scores on ",
          code("probs"),
          ", dP on ",
          code("ds"),
          ", dQ's share on ",
          code("dq"),
          ".",
        );
      }
      return;
    }
    const keys = Object.keys(c);
    const rows = Math.max(0, ...keys.map((k) => (Array.isArray(c[k]) ? (c[k] as unknown[]).length : 0)));
    const r0 = s.indices?.r ?? (i === null ? 0 : i * t.config.br);
    const arrays = keys.map((k) => Array.isArray(c[k]) && (c[k] as unknown[]).some((v) => Array.isArray(v)));
    const body = h("tbody");
    for (let r = 0; r < rows; r++) {
      const pad = s.indices?.r === undefined && !rowValid(t, i, r);
      const tr = h("tr", pad ? { class: "pad", title: "row past N: padding" } : {}, h("th", { scope: "row" }, r0 + r));
      for (const k of keys) {
        const v = (c[k] as (Num | Num[])[])[r];
        tr.append(Array.isArray(v) ? h("td", { class: "mono" }, ...rowNodes(v)) : h("td", {}, num(v ?? null)));
      }
      body.append(tr);
    }
    fill(
      this.table,
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          h("th", { scope: "col", class: "c-row" }, "row"),
          ...keys.map((k, q) => h("th", { scope: "col", class: arrays[q] ? "c-vec" : "c-num" }, LABEL[k] ?? k)),
        ),
      ),
      body,
    );
    fill(
      this.note,
      t.config.algo === "standard"
        ? `Row ${s.indices?.r ?? r0} of S: its max m\u1d63 and sum \u2113\u1d63 of exp(S \u2212 m\u1d63), computed from the whole row at once (the row was written to HBM first, and is read back whole).`
        : "Per row of the block: what this step carries, from the Trace.",
    );
  }

  /** FA2 and FA1: the online softmax's carries. */
  private online(t: Trace, idx: TraceIndex, s: Step): void {
    const k = s.index;
    const c = s.carries;
    const mi = vec(sramAt(t, idx, k, "mi"));
    const li = vec(sramAt(t, idx, k, "li"));
    const oi = mat(sramAt(t, idx, k, "Oi"));
    const soft = (s.op === "online_softmax" || s.op === "update") && c;
    const back = s.op === "write_back" && c && t.config.algo === "fa2";
    const mOld = soft ? vec(c.m_old) : vec(sramBefore(t, idx, k, "mi"));
    const lOld = soft ? vec(c.l_old) : vec(sramBefore(t, idx, k, "li"));
    const oOld = mat(sramBefore(t, idx, k, "Oi"));
    const alpha = soft ? vec(c.alpha) : null;
    const i = iOf(t.config.algo, s);
    const cols: [string, string][] = [
      ["row", "c-row"],
      ["m\u1d62", "c-num"],
      ["\u03b1 = e^(m_old \u2212 m_new)", "c-alpha"],
      ["\u2113\u1d62", "c-num"],
    ];
    if (back) cols.push(["L = m\u1d62 + log \u2113\u1d62", "c-num"]);
    cols.push([
      back
        ? "O row = O\u1d62 / \u2113\u1d62"
        : t.config.algo === "fa1"
          ? "O\u1d62 row (normalised each visit)"
          : "O\u1d62 row (unnormalised)",
      "c-vec",
    ]);
    const body = h("tbody");
    const changedO = s.sram.Oi !== undefined && oOld;
    for (let r = 0; r < t.config.br; r++) {
      const pad = !rowValid(t, i, r);
      const changedM = soft && mOld?.[r] !== mi?.[r];
      const changedL = (soft || s.op === "load_q" || s.op === "load_qi") && lOld?.[r] !== li?.[r];
      const a = alpha?.[r];
      const rescaled = typeof a === "number" && a < 1 && (lOld?.[r] ?? 0) !== 0;
      const cell = (now: Num | undefined, before: Num | undefined, changed: boolean | null | undefined) =>
        changed && before !== undefined
          ? h("td", { class: "changed" }, ...change(num(before ?? null), num(now ?? null)))
          : h("td", {}, num(now ?? null));
      body.append(
        h(
          "tr",
          pad ? { class: "pad", title: "row past N: padding, never stored" } : {},
          h("th", { scope: "row" }, i === null ? r : i * t.config.br + r),
          cell(mi?.[r], mOld?.[r], changedM),
          a === undefined || a === null
            ? h("td", { class: "muted" }, "\u2014")
            : h("td", { class: rescaled ? "rescaled" : undefined }, num(a)),
          cell(li?.[r], lOld?.[r], changedL),
          back ? h("td", {}, num(vec(c.L)?.[r] ?? null)) : null,
          changedO
            ? h(
                "td",
                { class: "mono changed" },
                h("span", { class: "old" }, ...rowNodes(oOld[r])),
                h("br"),
                "\u2192 ",
                ...rowNodes(oi?.[r]),
              )
            : h("td", { class: "mono" }, ...rowNodes(oi?.[r])),
        ),
      );
    }
    fill(this.table, h("thead", {}, h("tr", {}, ...cols.map(([x, cls]) => h("th", { scope: "col", class: cls }, x)))), body);
    // rows with no finite score (every score −∞): the kernel's exp(−∞ − (−∞)) makes their ℓ and O NaN
    const lost: number[] = [];
    for (let r = 0; r < t.config.br; r++) {
      const l = li?.[r];
      if (rowValid(t, i, r) && typeof l === "number" && Number.isNaN(l)) lost.push(i === null ? r : i * t.config.br + r);
    }
    const why = lost.length
      ? ` Row${lost.length === 1 ? "" : "s"} ${lost.join(", ")}: no finite score (every score \u2212\u221e), so m\u1d62 stays \u2212\u221e and \u03b1 = e^(\u2212\u221e \u2212 (\u2212\u221e)) is NaN: \u2113\u1d62 and O\u1d62 are NaN from then on, as the kernel computes them.`
      : "";
    this.note.textContent = this.explain(t, s) + why;
  }

  private explain(t: Trace, s: Step): string {
    const fa1 = t.config.algo === "fa1";
    switch (s.op) {
      case "load_q":
        return "The carries start empty: m\u1d62 = \u2212\u221e, \u2113\u1d62 = 0, O\u1d62 = 0. They stay in SRAM for the whole loop.";
      case "init":
        return "FA1 starts by writing O = 0, \u2113 = 0, m = \u2212\u221e to HBM: the carries live there between visits.";
      case "load_qi":
        return "The carries come back from HBM: O\u1d62, \u2113\u1d62, m\u1d62 as the last visit (tile j \u2212 1) left them. This is the trip FA2 removes.";
      case "load_kv":
      case "scores":
        return `The carries wait: this step ${s.op === "load_kv" ? "brings in tile j" : "computes S\u1d62\u2c7c"} and leaves m\u1d62, \u2113\u1d62, O\u1d62 as they were.`;
      case "online_softmax":
      case "update":
        return s.j === 0 || (fa1 && s.carries && vec(s.carries.m_old)?.every((x) => x === null))
          ? "First tile: m_old = \u2212\u221e, so \u03b1 = e^(\u2212\u221e) = 0 wipes the empty carries and the tile's values move in."
          : `Everything held is stale: where the max grew (\u03b1 < 1, highlighted), \u2113\u1d62 and O\u1d62 are rescaled by \u03b1 before this tile is added${fa1 ? ", and O\u1d62 is divided by the new \u2113\u1d62 (FA1 normalises on every visit)" : ""}.`;
      case "write_back":
        return fa1
          ? "The carries go back to HBM: O\u1d62, \u2113\u1d62, m\u1d62 written, to be read again by the next tile's visit."
          : `The only division: O = O\u1d62 / \u2113\u1d62, once. m\u1d62 and \u2113\u1d62 leave together as L = m\u1d62 + log \u2113\u1d62 (${t.config.br} values per block).`;
      default:
        return "";
    }
  }
}
