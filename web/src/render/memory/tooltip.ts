// A cell's tooltip: where it is, its value, and what it means. `cellTip` is a pure function of the scene and the cell
// (testable without a page); `tipNodes` turns its answer into text nodes.
import { h as el, frag } from "../../dom";
import { full } from "../../format";
import { blockRows, kvRows, tileKeys } from "../../geometry";
import type { Hit } from "../../hitTest";
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
    let where = t.layout
      ? layoutWhere(sc, b.axis, h.r)
      : b.axis === "kv"
        ? `tile j = ${Math.floor(h.r / bc)}, row ${h.r % bc}`
        : `block i = ${Math.floor(h.r / br)}, row ${h.r % br}`;
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
  if (t.layout && (b.axis === "kv" || b.axis === "q")) {
    note = layoutNote(sc, b.axis, b.colAxis, h.r, h.c, v);
  } else if (b.axis === "kv" && j !== null) {
    const key = j * bc + h.r;
    const nk = kvRows(t);
    note = key < nk ? `key row ${key} (tile j = ${j})` : `row ${key} \u2265 N = ${nk}: padding, zero`;
  } else if (b.axis === "q" && i !== null) {
    const qrow = i * br + h.r;
    note = qrow < n ? `query row ${qrow} (block i = ${i})` : `row ${qrow} \u2265 N = ${n}: padding, never stored`;
    if (b.colAxis === "kv" && j !== null) {
      const key = j * bc + h.c;
      const band = t.config.window && (t.config.window[0] >= 0 || t.config.window[1] >= 0);
      note +=
        key >= n
          ? `; key ${key} \u2265 N: scores \u2212\u221e, weighs 0`
          : band && v === null
            ? `, key ${key}: outside the row's band, masked`
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

/** Where row r of an HBM grid is in a trace with a layout: its block (or tile) and the segment it belongs to. */
function layoutWhere(sc: Scene, axis: string, r: number): string {
  const t = sc.trace;
  const lay = t.layout!;
  if (axis === "q") {
    const k = t.blocks.findIndex((b) => r >= b.rows[0] && r < b.rows[1]);
    const seg = lay.segments.find((s) => r >= s.q[0] && r < s.q[1]);
    return k < 0 ? "" : `block ${k} (i = ${t.blocks[k]!.i ?? 0}), row ${r - t.blocks[k]!.rows[0]}${seg ? ` \u00b7 ${seg.label}` : ""}`;
  }
  const seg = lay.segments.find((s) => r >= s.kv[0] && r < s.kv[1]);
  if (!seg) return "";
  const j = Math.floor((r - seg.kv[0]) / t.config.bc);
  return `tile j = ${j}, row ${(r - seg.kv[0]) % t.config.bc} of its sequence's keys${lay.seqs.length > 1 ? ` (sequence ${seg.seq})` : ""}`;
}

/** An SRAM cell's note in a trace with a layout: its query row (of the packed Q) and key, and why a score is −∞. */
function layoutNote(sc: Scene, axis: string, colAxis: string, r: number, c: number, v: unknown): string {
  const t = sc.trace;
  const i = rowBlock(sc);
  const j = tileHeld(sc);
  if (axis === "kv") {
    if (j === null) return "";
    const [a, b] = tileKeys(t, i, j);
    return a + r < b ? `key row ${a + r} (tile j = ${j})` : `past its sequence's last key: padding, zero`;
  }
  if (i === null) return "";
  const [first, end] = blockRows(t, i);
  let note = first + r < end ? `query row ${first + r} (block ${i})` : "past its sequence's last row: padding, never stored";
  if (colAxis === "kv" && j !== null) {
    const [a, b] = tileKeys(t, i, j);
    note +=
      a + c >= b
        ? `; past the sequence's keys: \u2212\u221e, weighs 0`
        : `, key ${a + c}${v === null ? ": outside the row's band, masked" : ""}`;
  }
  return note;
}

/** The tooltip's nodes: the name in bold, its value (or what it is), the note on a line of its own. */
export function tipNodes(tip: CellTip): DocumentFragment {
  const noted = tip.note ? frag(el("br"), el("span", { class: "note" }, tip.note)) : null;
  const said = tip.value !== undefined ? frag(" = ", el("span", { class: "v" }, tip.value)) : `: ${tip.what}`;
  return frag(el("b", {}, tip.name), said, noted);
}
