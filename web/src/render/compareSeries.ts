// What the comparison view calls each algorithm, as the server gives it: which ones the chart draws, their short
// names (the table's heads, the race's rows, the chart's labels), their colours (the chart's and the race's agree).
import type { CompareDoc } from "../compareDoc";

/** The algorithms the chart draws: those the server swept, in its order. */
export function charted(doc: CompareDoc): string[] {
  return Object.keys(doc.sweep.bytes);
}

/** An algorithm's short name, as the server gives it. */
export function shortName(doc: CompareDoc, a: string): string {
  return doc.algorithms[a]?.short ?? a;
}

/** An algorithm's colour class: its place in the server's list (the chart's and the race's colours agree). */
export function series(doc: CompareDoc, a: string): string {
  return `s-${Math.max(0, Object.keys(doc.algorithms).indexOf(a))}`;
}
