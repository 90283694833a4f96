// Rich text from the trace (docs/trace-schema.md): runs of text, bold, subscripted names, code, slots the page fills in
// and runs shown only when a slot has a value. Built as DOM with dom.ts: every run lands as text nodes, never as HTML.
import { type Child, frag, h, sub } from "../dom";
import type { Rich, Run } from "../types";

/** What the page puts in a slot: text, or a node of its own (the phase number with its test hook). */
export type SlotValues = Record<string, Child | undefined>;

/** Rich text as nodes; a slot without a value shows nothing, and so do the `when` runs that wait for it. */
export function richNodes(r: Rich, slots: SlotValues = {}): DocumentFragment {
  return frag(...r.map((run) => runNode(run, slots)));
}

function runNode(run: Run, slots: SlotValues): Child {
  if (typeof run === "string") return run;
  if ("b" in run) return h("b", {}, run.b);
  if ("sub" in run) return sub(run.sub[0], run.sub[1]);
  if ("code" in run) return h("code", {}, run.code);
  if ("slot" in run) {
    const v = slots[run.slot];
    return v === undefined || v === false ? null : v;
  }
  const v = slots[run.when];
  return v === undefined || v === null || v === false ? null : richNodes(run.runs, slots);
}
