// The memory picture's words: the buffers' names with their subscripts, the panels' titles, the notes beside a
// buffer's name and inside an empty grid, and the canvas's text alternative. Pure functions of the trace and the step.
import { blockLetter, endpoint, iOf } from "../../algos";
import { pairKind } from "../../derive";
import { int, slice } from "../../format";
import type { Step, Trace } from "../../types";

/** A buffer's name as the picture writes it (Qi → Qᵢ). */
export const SUB: Record<string, string> = {
  Qi: "Q\u1d62",
  Kj: "K\u2c7c",
  Vj: "V\u2c7c",
  Sij: "S\u1d62\u2c7c",
  mi: "m\u1d62",
  li: "\u2113\u1d62",
  Oi: "O\u1d62",
  Pij: "P\u1d62\u2c7c",
  Sr: "S\u1d63",
  mr: "m\u1d63",
  lr: "\u2113\u1d63",
  dKj: "dK\u2c7c",
  dVj: "dV\u2c7c",
  dOi: "dO\u1d62",
  dSij: "dS\u1d62\u2c7c",
  Li: "L\u1d62",
  Di: "D\u1d62",
};

/** HBM's panel title, longest first (the panel shows the first that fits). */
export function hbmTitles(t: Trace): string[] {
  const { n, d } = t.config;
  return [`HBM \u00b7 global memory \u00b7 N=${n}, D=${d}, fp32`, `HBM \u00b7 N=${n}, D=${d}, fp32`, "HBM"];
}

/** SRAM's panel title: whose SRAM it is (the block and kernel of the step), its rows and its bytes. */
export function sramTitle(t: Trace, s: Step): string {
  const bytes = `${int(t.sram.bytes)} bytes`;
  switch (t.config.algo) {
    case "fa1": {
      const i = iOf("fa1", s);
      return `SRAM of the one block per head \u00b7 ${i === null ? "outer loop over j" : `now on block i = ${i}`} \u00b7 ${bytes}`;
    }
    case "fa2-backward": {
      const pre = !(s.indices && "j" in s.indices);
      const rows = pre
        ? [s.block! * t.config.br, Math.min(t.config.n, (s.block! + 1) * t.config.br)]
        : (t.blocks.find((b, k) => (b.block ?? k) === s.block)?.rows ?? [0, 0]);
      return pre
        ? `SRAM of fa2_bwd_preprocess block i = ${s.block} \u00b7 rows ${rows[0]}\u2013${rows[1]! - 1}`
        : `SRAM of fa2_bwd block j = ${s.block} \u00b7 K/V rows ${rows[0]}\u2013${rows[1]! - 1} \u00b7 ${bytes}`;
    }
    default: {
      const rows = t.blocks.find((b, k) => (b.block ?? k) === s.block)?.rows ?? [0, 1];
      const kernel = t.config.algo === "standard" ? ` \u00b7 three kernels, ${int(t.sram.bytes)} bytes at most` : ` \u00b7 ${bytes}`;
      return `SRAM of block i = ${s.block} \u00b7 rows ${rows[0]}\u2013${rows[1] - 1}${kernel}`;
    }
  }
}

/** A title's variants, longest first: the whole, then with its last " · " parts dropped one by one. */
export function shortenings(title: string): string[] {
  const parts = title.split(" \u00b7 ");
  return parts.map((_, k) => parts.slice(0, parts.length - k).join(" \u00b7 "));
}

/** The note inside a written HBM tensor's grid before its first write. */
export function unwrittenNote(algo: string, name: string): string {
  const once = (algo === "fa2" || algo === "standard") && (name === "O" || name === "L");
  return once ? "not written yet:\nwritten once,\nat write-back" : "not written yet";
}

/** The note beside an SRAM buffer's name at the step: what fills or empties it, or what it now holds. `j` is the
 *  tile held. */
export function sramNote(t: Trace, s: Step, j: number | null, name: string): string {
  const algo = t.config.algo;
  for (const tr of s.transfers) {
    if (!endpoint(algo, tr.tensor, tr.kind, s.op).includes(name)) continue;
    if (tr.kind === "read") return `\u2190 ${slice(tr.tensor, tr.rows)}`;
    return `\u2192 ${slice(tr.tensor, tr.rows)}${algo === "fa2" && tr.tensor === "O" ? " (\u00f7 \u2113\u1d62)" : ""}`;
  }
  const i = iOf(algo, s);
  const masked = t.config.causal && i !== null && j !== null && pairKind(t, i, j) === "masked";
  if (name === "Sij" && s.op === "online_softmax") return "holds P = exp(S \u2212 m\u1d62)";
  if (name === "Sij" && s.op === "update") return "holds P\u0303 = exp(S \u2212 m\u0303)";
  if (name === "Sij" && s.op === "scores") return masked ? "masked: key > query \u2192 \u2212\u221e" : "= \u03c4 Q\u1d62K\u2c7c\u1d40";
  if (name === "Pij" && s.op === "probs" && masked) return "0 where key > query";
  if (name === "Oi" && s.op === "online_softmax") return "rescaled + PV";
  if ((name === "mi" || name === "li") && s.op === "write_back" && algo === "fa2") return name === "li" ? "\u2192 L" : "";
  return s.sram[name] !== undefined ? "updated" : "";
}

/** The canvas's text alternative: what moved this step. */
export function describe(t: Trace, s: Step): string {
  const algo = t.config.algo;
  const moves = s.transfers.map((tr) => {
    const buf = endpoint(algo, tr.tensor, tr.kind, s.op).join(", ") || "SRAM";
    return tr.kind === "read"
      ? `${slice(tr.tensor, tr.rows)} read from HBM into ${buf}`
      : `${slice(tr.tensor, tr.rows)} written from ${buf} to HBM`;
  });
  const changed = Object.keys(s.sram).join(", ");
  const who = s.block === null ? "the block's outer loop" : `block ${blockLetter(algo)} = ${s.block}`;
  return `Memory picture, ${who}, step ${s.index + 1} of ${t.steps.length}: ${moves.length ? moves.join("; ") : "no trip across HBM"}. SRAM buffers changed: ${changed || "none"}. N=${t.config.n}, D=${t.config.d}, Br=${t.config.br}, Bc=${t.config.bc}.`;
}
