// The carries: for an online softmax (the trace's `carries.view` "online"), the running max, sum and each row of the
// output as the block holds them, with the rescale factor alpha = exp(m_old − m_new) on the steps that rescale; else
// ("table") whatever values the step carries, per row. The notes and headings are the trace's; all values too.
import { isMat, rowValid, sramAt, sramBefore, type TraceIndex } from "../derive";
import { type Child, fill, h } from "../dom";
import { num } from "../format";
import { blockRows, qBlock } from "../geometry";
import type { Mat, Num, Step, Trace, Vec } from "../types";
import { richNodes } from "./rich";

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

/** The panel's note at the step (the trace's), with the step's row r where it says one. */
function noteOf(t: Trace, s: Step): DocumentFragment {
  const rich = s.carries_note === null ? [] : (t.carries.notes[s.carries_note] ?? []);
  return richNodes(rich, { r: s.indices.r });
}

/** The first row of Q that block i holds (0 when there is none). */
function firstRow(t: Trace, i: number | null): number {
  return i === null ? 0 : blockRows(t, i)[0];
}

export class CarriesView {
  constructor(
    private readonly table: HTMLElement,
    private readonly note: HTMLElement,
  ) {}

  show(t: Trace, idx: TraceIndex, s: Step): void {
    if (t.carries.view === "online") this.online(t, idx, s);
    else this.generic(t, s);
  }

  /** Whatever the step carries, one row per row of the block (or the one row r). */
  private generic(t: Trace, s: Step): void {
    const c = s.carries;
    const i = qBlock(t, s);
    if (!c || !Object.keys(c).length) {
      fill(this.table, h("tbody", {}, h("tr", {}, h("td", { class: "muted" }, "This step carries no values between steps."))));
      fill(this.note, noteOf(t, s));
      return;
    }
    const keys = Object.keys(c);
    const rows = Math.max(0, ...keys.map((k) => (Array.isArray(c[k]) ? (c[k] as unknown[]).length : 0)));
    const r0 = s.indices.r ?? firstRow(t, i);
    const arrays = keys.map((k) => Array.isArray(c[k]) && (c[k] as unknown[]).some((v) => Array.isArray(v)));
    const body = h("tbody");
    for (let r = 0; r < rows; r++) {
      const pad = s.indices.r === undefined && !rowValid(t, i, r);
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
          ...keys.map((k, q) => h("th", { scope: "col", class: arrays[q] ? "c-vec" : "c-num" }, t.carries.labels?.[k] ?? k)),
        ),
      ),
      body,
    );
    fill(this.note, noteOf(t, s));
  }

  /** An online softmax: the running max, sum and output rows, from the buffers the trace names. */
  private online(t: Trace, idx: TraceIndex, s: Step): void {
    const k = s.index;
    const c = s.carries;
    const names = t.carries.buffers!;
    const how = t.ops[s.op]?.online ?? null;
    const mi = vec(sramAt(t, idx, k, names.m));
    const li = vec(sramAt(t, idx, k, names.l));
    const oi = mat(sramAt(t, idx, k, names.o));
    const soft = how?.rescales && c;
    const back = how?.out && c ? how.out : null;
    const mOld = soft ? vec(c.m_old) : vec(sramBefore(t, idx, k, names.m));
    const lOld = soft ? vec(c.l_old) : vec(sramBefore(t, idx, k, names.l));
    const oOld = mat(sramBefore(t, idx, k, names.o));
    const alpha = soft ? vec(c.alpha) : null;
    const i = qBlock(t, s);
    const r0 = firstRow(t, i);
    const cols: [string, string][] = [
      ["row", "c-row"],
      [t.buffers[names.m]?.label ?? names.m, "c-num"],
      ["\u03b1 = e^(m_old \u2212 m_new)", "c-alpha"],
      [t.buffers[names.l]?.label ?? names.l, "c-num"],
    ];
    if (back) cols.push([how?.out_heading ?? back, "c-num"]);
    cols.push([how?.o_heading ?? t.carries.o_heading ?? names.o, "c-vec"]);
    const body = h("tbody");
    const changedO = s.sram[names.o] !== undefined && oOld;
    for (let r = 0; r < t.config.br; r++) {
      const pad = !rowValid(t, i, r);
      const changedM = soft && mOld?.[r] !== mi?.[r];
      const changedL = (soft || how?.reloads) && lOld?.[r] !== li?.[r];
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
          h("th", { scope: "row" }, r0 + r),
          cell(mi?.[r], mOld?.[r], changedM),
          a === undefined || a === null
            ? h("td", { class: "muted" }, "\u2014")
            : h("td", { class: rescaled ? "rescaled" : undefined }, num(a)),
          cell(li?.[r], lOld?.[r], changedL),
          back ? h("td", {}, num(vec(c?.[back])?.[r] ?? null)) : null,
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
      if (rowValid(t, i, r) && typeof l === "number" && Number.isNaN(l)) lost.push(r0 + r);
    }
    const why = lost.length
      ? ` Row${lost.length === 1 ? "" : "s"} ${lost.join(", ")}: no finite score (every score \u2212\u221e), so m\u1d62 stays \u2212\u221e and \u03b1 = e^(\u2212\u221e \u2212 (\u2212\u221e)) is NaN: \u2113\u1d62 and O\u1d62 are NaN from then on, as the kernel computes them.`
      : "";
    fill(this.note, noteOf(t, s), why);
  }
}
