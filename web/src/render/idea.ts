// Section 1, the idea: what the algorithm on screen does, in a few sentences and formulas, from the trace
// (`trace.idea`, written by Python: algorithms.Idea). Text lands as text nodes; the TeX between dollars is
// typeset by KaTeX with trust off (render/tex.ts).
import { fill, h } from "../dom";
import type { Idea } from "../types";
import { texEl, texLoaded } from "./tex";

export interface Segment {
  tex: boolean;
  text: string;
}

/** A paragraph as text and inline TeX: "For $q$, stream" → text "For ", TeX "q", text ", stream". An unmatched
 *  dollar is text. */
export function segments(p: string): Segment[] {
  const out: Segment[] = [];
  let at = 0;
  while (at < p.length) {
    const open = p.indexOf("$", at);
    const close = open < 0 ? -1 : p.indexOf("$", open + 1);
    if (open < 0 || close < 0) {
      out.push({ tex: false, text: p.slice(at) });
      break;
    }
    if (open > at) out.push({ tex: false, text: p.slice(at, open) });
    out.push({ tex: true, text: p.slice(open + 1, close) });
    at = close + 1;
  }
  return out;
}

/** The displayed formula of a paragraph that is one `$$...$$`, else null. */
export function displayed(p: string): string | null {
  const t = p.trim();
  return t.length > 4 && t.startsWith("$$") && t.endsWith("$$") && !t.slice(2, -2).includes("$") ? t.slice(2, -2) : null;
}

/** A displayed formula as the equations it lists, split at its top-level `,\qquad` ("A,\qquad B" → "A,", "B"), so
 *  that a narrow screen wraps between equations instead of cutting one long line (the row of equations keeps the
 *  space between them). */
export function equations(tex: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let from = 0;
  for (let k = 0; k < tex.length; k++) {
    const ch = tex[k];
    if (ch === "\\") {
      k++; // an escaped character (\{, \,) is no brace and no comma
      continue;
    }
    if (ch === "{") depth++;
    else if (ch === "}") depth--;
    else if (ch === "," && depth === 0) {
      const rest = /^,\s*\\qquad(?![a-zA-Z])\s*/.exec(tex.slice(k));
      if (rest) {
        out.push(tex.slice(from, k + 1).trim());
        from = k + rest[0].length;
        k = from - 1;
      }
    }
  }
  out.push(tex.slice(from).trim());
  return out.filter((e) => e !== "");
}

/** Is this a well-formed idea (from a trace, which may be anything)? */
export function isIdea(x: unknown): x is Idea {
  if (!x || typeof x !== "object") return false;
  const i = x as Partial<Idea>;
  return typeof i.summary === "string" && Array.isArray(i.body) && i.body.every((p) => typeof p === "string");
}

export class IdeaView {
  private key = "";

  constructor(
    private readonly summary: HTMLElement,
    private readonly body: HTMLElement,
  ) {}

  show(algo: string, idea: unknown): void {
    const key = `${algo}\u0000${JSON.stringify(idea ?? null)}\u0000${texLoaded()}`;
    if (key === this.key) return;
    this.key = key;
    this.body.dataset.algo = algo;
    if (!isIdea(idea)) {
      this.summary.textContent = "";
      fill(this.body);
      return;
    }
    this.summary.textContent = idea.summary;
    // consecutive displayed formulas share one row of equations
    const nodes: HTMLElement[] = [];
    let eqs: HTMLElement | null = null;
    for (const p of idea.body) {
      const tex = displayed(p);
      if (tex === null) {
        eqs = null;
        nodes.push(h("p", {}, ...segments(p).map((seg) => (seg.tex ? texEl(seg.text) : seg.text))));
      } else {
        if (!eqs) {
          eqs = h("div", { class: "eqs" });
          nodes.push(eqs);
        }
        eqs.append(...equations(tex).map((e) => texEl(e, true)));
      }
    }
    fill(this.body, ...nodes);
  }
}
