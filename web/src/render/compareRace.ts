// The comparison's race: every algorithm's HBM traffic as a bar that fills as its launch runs, all at the same fraction
// of their launches (read off the server's per-phase curves), with the phase each has reached.
import type { CompareDoc, PhaseCurve } from "../compareDoc";
import { fill, h } from "../dom";
import { bytes, int } from "../format";
import { series, shortName } from "./compareSeries";

/** Where an algorithm stands at progress u in [0, 1] of its launch: u·P of its P phases done (rounded), so the
 *  watched launch after its phase p (u = (p + 1)/P) is read at that very phase p, and another algorithm at the
 *  same fraction of its own phases. `phase` is the last phase done (−1: none yet, nothing moved), its cumulative
 *  elements read and written (at the last sampled phase at or before it: long launches are sampled). */
export function curveAt(
  c: PhaseCurve,
  u: number,
): { phase: number; read: number; written: number; bytes: number | null; op: string | null } {
  const done = Math.round(Math.min(1, Math.max(0, Number.isFinite(u) ? u : 0)) * c.phases);
  if (done <= 0 || !c.phase.length || c.phase[0]! > done - 1) return { phase: -1, read: 0, written: 0, bytes: 0, op: null };
  const target = done - 1;
  let lo = 0;
  let hi = c.phase.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (c.phase[mid]! <= target) lo = mid;
    else hi = mid - 1;
  }
  return { phase: c.phase[lo]!, read: c.read[lo]!, written: c.written[lo]!, bytes: c.bytes?.[lo] ?? null, op: c.op[lo] ?? null };
}

/** How far a launch has got after its phase `phase` (0-based) of `phases`: what the comparison follows. */
export function progressAfter(phase: number, phases: number): number {
  return phases > 0 ? (phase + 1) / phases : 0;
}

/** A race row's moving parts, by algorithm. */
export type RaceBars = Map<string, { bar: HTMLElement; text: HTMLElement; op: HTMLElement }>;

/** One row per supported algorithm of `d` into `host`; `bars` (cleared first) gets each row's moving parts. */
export function drawRace(host: HTMLElement, d: CompareDoc, bars: RaceBars): void {
  bars.clear();
  const names = Object.keys(d.algorithms).filter((a) => d.algorithms[a]!.supported);
  const rows = names.map((a) => {
    const curve = d.curves?.[a];
    const skipped = curve && "skipped" in curve ? curve.skipped : null;
    const bar = h("span", { class: `race-bar ${series(d, a)}` });
    const text = h("span", { class: "race-text num" });
    const op = h("span", { class: "race-op muted small" }, skipped ? `counters not animated: ${skipped}` : "");
    bars.set(a, { bar, text, op });
    return h(
      "div",
      { class: "race-row", "data-testid": `race-${a}`, "data-algo": a },
      h("span", { class: "race-name" }, shortName(d, a)),
      h("span", { class: "race-track" }, bar),
      text,
      op,
    );
  });
  fill(host, ...rows);
}

/** Every algorithm's counters at the same fraction u of its launch. */
export function raceAt(d: CompareDoc, bars: RaceBars, u: number): void {
  const max = Math.max(...Object.values(d.algorithms).map((e) => e.total?.bytes ?? 0), 1);
  const per = d.bytes_per_element;
  for (const [a, el] of bars) {
    const curve = d.curves?.[a];
    const total = d.algorithms[a]?.total?.bytes ?? 0;
    let moved = total * u;
    let phase = "";
    let done = "";
    if (curve && !("skipped" in curve)) {
      const at = curveAt(curve, u);
      done = String(at.phase + 1);
      moved = at.bytes ?? (at.read + at.written) * per; // the curve's own bytes where it gives them (bf16: 2 per element)
      phase =
        at.phase < 0
          ? `before phase 1 of ${int(curve.phases)}`
          : `after phase ${int(at.phase + 1)} of ${int(curve.phases)}${at.op ? ` \u00b7 ${at.op}` : ""}`;
    }
    el.bar.style.transform = `scaleX(${moved / max})`;
    el.text.textContent = `${bytes(Math.round(moved))} of ${bytes(total)}`;
    el.text.dataset.bytes = String(Math.round(moved));
    if (phase) {
      el.op.textContent = phase;
      el.op.dataset.phase = done; // phases done, 1-based: "after phase 3" is 3
    }
  }
}
