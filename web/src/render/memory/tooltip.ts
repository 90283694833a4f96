// A cell's tooltip: where it is, its value, and what it means. `cellTip` is a pure function of the scene and the cell
// (testable without a page); `tipNodes` turns its answer into text nodes.
import { h as el, frag } from "../../dom";
import { full } from "../../format";
import type { Hit } from "../../layout";
import { hbmValues, rowBlock, type Scene, sramValues, tileHeld } from "./scene";

/** A cell's tooltip as text: `name = value` or `name: what`, then a note (where the cell is, or why). */
export interface CellTip {
  name: string;
  value?: string;
  what?: string;
  note: string;
}

const line = (name: string, value: string, note = ""): CellTip => ({ name, value, note });
const says = (name: string, what: string, note = ""): CellTip => ({ name, what, note });

/** What the cell under the pointer holds at the step shown, and where it sits in the launch. */
export function cellTip(sc: Scene, h: Hit): CellTip {
  const { trace: t, layout: l, s } = sc;
  const { br, bc, n } = t.config;
  const g = h.grid;
  const b = l.grids[g]!;
  const vec = b.cols === 1;
  if (b.area === "hbm") {
    const idx = vec ? `${g}[${h.r}]` : `${g}[${h.r}, ${h.c}]`;
    let where =
      b.axis === "kv" ? `tile j = ${Math.floor(h.r / bc)}, row ${h.r % bc}` : `block i = ${Math.floor(h.r / br)}, row ${h.r % br}`;
    if (b.colAxis === "kv") where += `; key ${h.c} (tile j = ${Math.floor(h.c / bc)})`;
    const hist = sc.history;
    if (hist.written(g)) {
      const v = hist.valueAt(g, h.r, h.c, hist.applied(g, s.phase));
      if (v === "unwritten") {
        const skipped = b.colAxis === "kv" && h.c >= (t.tiling.kv_width[Math.floor(h.r / br)] ?? n);
        return says(idx, skipped ? "never written (causal: a tile this row's block skips)" : "not written yet", where);
      }
      if (v === undefined) return says(idx, "written; its value is not in this trace", `${where} (block not recorded)`);
      const masked = v === null && b.colAxis === "kv" && t.config.causal && h.c > h.r ? " (masked: key > query)" : "";
      return line(idx, full(v) + masked, where);
    }
    const values = hbmValues(t, g);
    return line(idx, full(values?.[h.r]?.[h.c] ?? null), where);
  }
  const values = sramValues(sc, g);
  const idx = vec ? `${g}[${h.r}]` : b.rows === 1 ? `${g}[${h.c}]` : `${g}[${h.r}, ${h.c}]`;
  if (!values) return says(idx, "not loaded yet");
  const v = values[h.r]?.[vec ? 0 : h.c] ?? null;
  const j = tileHeld(sc);
  const i = rowBlock(sc);
  let note = "";
  if (b.axis === "kv" && j !== null) {
    const key = j * bc + h.r;
    note = key < n ? `key row ${key} (tile j = ${j})` : `row ${key} \u2265 N = ${n}: padding, zero`;
  } else if (b.axis === "q" && i !== null) {
    const qrow = i * br + h.r;
    note = qrow < n ? `query row ${qrow} (block i = ${i})` : `row ${qrow} \u2265 N = ${n}: padding, never stored`;
    if (b.colAxis === "kv" && j !== null) {
      const key = j * bc + h.c;
      note +=
        key >= n
          ? `; key ${key} \u2265 N: scores \u2212\u221e, weighs 0`
          : t.config.causal && key > qrow
            ? `, key ${key} > query: masked`
            : `, key ${key}`;
    }
  } else {
    const ri = t.buffers[g]?.row_index;
    const at = ri ? s.indices[ri] : undefined;
    if (ri && at !== undefined) note = `row ${ri} = ${at}${t.buffers[g]?.row_of ? ` of ${t.buffers[g]!.row_of}` : ""}; column ${h.c}`;
  }
  return line(idx, full(v), note);
}

/** The tooltip's nodes: the name in bold, its value (or what it is), the note on a line of its own. */
export function tipNodes(tip: CellTip): DocumentFragment {
  const noted = tip.note ? frag(el("br"), el("span", { class: "note" }, tip.note)) : null;
  const said = tip.value !== undefined ? frag(" = ", el("span", { class: "v" }, tip.value)) : `: ${tip.what}`;
  return frag(el("b", {}, tip.name), said, noted);
}
