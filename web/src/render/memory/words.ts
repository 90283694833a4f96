// The memory picture's words: the panels' titles, the notes beside a buffer's name and inside an empty grid, and the
// canvas's text alternative. Pure functions of the trace and the step; the words themselves are the trace's.
import { slice } from "../../format";
import { blockRows, qBlock } from "../../geometry";
import type { Step, Trace } from "../../types";

/** A dtype as the panel's title writes it: float32 → fp32. */
export function dtypeShort(dtype: string): string {
  return dtype.replace(/^float/, "fp");
}

/** HBM's panel title, longest first (the panel shows the first that fits). */
export function hbmTitles(t: Trace): string[] {
  const { n, d } = t.config;
  const dt = dtypeShort(t.config.dtype);
  const lay = t.layout;
  if (lay) {
    const heads = lay.group > 1 ? `${lay.group} q heads \u00d7 ` : "";
    const seqs = lay.seqs.length > 1 ? ` in ${lay.seqs.length} sequences` : "";
    return [
      `HBM \u00b7 global memory \u00b7 Q: ${heads}N=${n}${seqs}, K, V: Nk=${lay.kv_rows}, D=${d}, ${dt}`,
      `HBM \u00b7 Q ${heads}N=${n}, Nk=${lay.kv_rows}, D=${d}`,
      "HBM",
    ];
  }
  return [`HBM \u00b7 global memory \u00b7 N=${n}, D=${d}, ${dt}`, `HBM \u00b7 N=${n}, D=${d}, ${dt}`, "HBM"];
}

/** The values a step gives a title's placeholders: {block}, its loop indices, {rows} (the block's rows). */
function placeholders(t: Trace, s: Step): Record<string, string> {
  const out: Record<string, string> = { block: String(s.block) };
  for (const [k, v] of Object.entries(s.indices)) out[k] = String(v);
  const g = t.kernels[s.kernel]?.grid;
  if (t.layout && g?.axis === "q") {
    const [a, b] = blockRows(t, s.block);
    out.rows = `${a}\u2013${b - 1}`;
  } else if (g?.rows_per_block) {
    const a = s.block * g.rows_per_block;
    out.rows = `${a}\u2013${Math.min(t.config.n, a + g.rows_per_block) - 1}`;
  }
  return out;
}

/** SRAM's panel title: the first of the kernel's templates whose placeholders the step has, filled in. */
export function sramTitle(t: Trace, s: Step): string {
  const values = placeholders(t, s);
  for (const tmpl of t.kernels[s.kernel]?.sram_title ?? []) {
    const names = Array.from(tmpl.matchAll(/\{(\w+)\}/g), (m) => m[1]!);
    if (names.every((k) => values[k] !== undefined)) return tmpl.replace(/\{(\w+)\}/g, (_m, k: string) => values[k]!);
  }
  return "SRAM";
}

/** A title's variants, longest first: the whole, then with its last " · " parts dropped one by one. */
export function shortenings(title: string): string[] {
  const parts = title.split(" \u00b7 ");
  return parts.map((_, k) => parts.slice(0, parts.length - k).join(" \u00b7 "));
}

/** The note inside a written HBM tensor's grid before its first write. */
export function unwrittenNoteOf(t: Trace, name: string): string {
  return t.tensors[name]?.unwritten_note ?? "";
}

/** Does the step work on a pair of a block of Q and a tile that crosses the band's edge (masked)? */
export function onMaskedPair(t: Trace, s: Step): boolean {
  const i = qBlock(t, s);
  const j = s.tile;
  const kind = i === null || j === null ? undefined : t.tiling.pairs[i]?.[j];
  return kind === "m" || kind === "l" || kind === "b";
}

/** The note beside an SRAM buffer's name at the step: what fills or empties it, or what it now holds. */
export function sramNote(t: Trace, s: Step, name: string): string {
  for (const tr of s.transfers) {
    if (!tr.buffers.includes(name)) continue;
    if (tr.kind === "read") return `\u2190 ${slice(tr.tensor, tr.rows)}`;
    return `\u2192 ${slice(tr.tensor, tr.rows)}${tr.note ?? ""}`;
  }
  const op = t.ops[s.op];
  const masked = op && onMaskedPair(t, s) ? op.notes_masked[name] : undefined;
  const note = masked ?? op?.notes[name];
  if (note !== undefined) return note;
  return s.sram[name] !== undefined ? "updated" : "";
}

/** The canvas's text alternative: what moved this step. */
export function describe(t: Trace, s: Step): string {
  const moves = s.transfers.map((tr) => {
    const buf = tr.buffers.join(", ") || "SRAM";
    return tr.kind === "read"
      ? `${slice(tr.tensor, tr.rows)} read from HBM into ${buf}`
      : `${slice(tr.tensor, tr.rows)} written from ${buf} to HBM`;
  });
  const changed = Object.keys(s.sram).join(", ");
  const letter = t.kernels[s.kernel]?.grid.letter;
  const who = `block ${letter ? `${letter} = ` : ""}${s.block}`;
  return `Memory picture, ${who}, step ${s.index + 1} of ${t.steps.length}: ${moves.length ? moves.join("; ") : "no trip across HBM"}. SRAM buffers changed: ${changed || "none"}. N=${t.config.n}, D=${t.config.d}, Br=${t.config.br}, Bc=${t.config.bc}.`;
}
