// The devices view ("Across GPUs"): for a trace with a `devices` key (a run spread over several devices), the
// devices round a ring, each with the chunks of Q it keeps and the K/V shard it holds at the cursor's phase, the
// arrows of the transfers in flight, the sequence's chunks by owner (the layout), each device's work at the step
// (blocks computed, masked or skipped) and its carries as of the cursor, the bytes sent against the closed form, and
// the merged result against float64 (the trace's reference). It follows the page's cursor: the step's phase picks the
// moment, its block the watched device. Everything comes from the trace; text lands as text nodes.
import { fill, h, s as svg } from "../dom";
import { num } from "../format";
import type { Step, Trace } from "../types";
import {
  arrow,
  chunkNames,
  chunkOwners,
  type DevicesDoc,
  devicesProblem,
  type Num,
  placeDevices,
  type RingMoment,
  ringAt,
  workCounts,
} from "./ringLayout";

const SIZE = 360; // the ring's SVG, square
const NODE = 34; // a device's node radius
const COLOURS = 8; // ring-d0 .. ring-d7

function bytes(b: number): string {
  return b >= 1024 ? `${(b / 1024).toFixed(1)} KiB` : `${b} B`;
}

function lse(x: Num): string {
  return x === null ? "\u2212\u221e" : num(x);
}

export class DevicesView {
  private trace: Trace | null = null;
  private doc: DevicesDoc | null = null;

  constructor(
    private readonly section: HTMLElement,
    private readonly body: HTMLElement,
  ) {}

  /** Draw the moment of step `s` (a new trace is read first). Hidden when the trace has no `devices`. */
  show(t: Trace, s: Step): void {
    if (t !== this.trace) this.setTrace(t);
    const doc = this.doc;
    if (doc === null) return;
    const m = ringAt(doc, s.phase);
    const watched = t.picker.index === "block" ? s.block : (s.indices.i ?? s.block);
    this.draw(doc, m, watched, s);
  }

  private setTrace(t: Trace): void {
    this.trace = t;
    const raw = t.devices ?? null;
    const problem = devicesProblem(raw);
    this.doc = raw !== null && problem === null ? (raw as DevicesDoc) : null;
    this.section.hidden = raw === null;
    if (problem !== null) fill(this.body, h("p", { class: "muted" }, `This trace's devices cannot be drawn: ${problem}.`));
    else this.body.replaceChildren();
  }

  private draw(doc: DevicesDoc, m: RingMoment, watched: number, s: Step): void {
    const label = doc.label ?? "device";
    const last = doc.steps.length - 1;
    const where =
      m.step === null
        ? "before the ring's first step: every device holds its own shard"
        : m.stage === "done"
          ? "after the ring's last step: every shard seen, the carries are the answer"
          : `ring step ${m.step} (the code's step = ${m.step}, of 0\u2013${last}): ${
              m.stage === "posted"
                ? "the sends are posted"
                : m.stage === "arrived"
                  ? "the shards in flight have arrived"
                  : "computing while the shards travel"
            }`;
    this.section.dataset.step = m.step === null ? "" : String(m.step);
    this.section.dataset.stage = m.stage;
    this.section.dataset.watch = String(watched);
    fill(
      this.body,
      doc.note ? h("p", { class: "small", "data-testid": "devices-note" }, doc.note) : null,
      h(
        "p",
        { class: "ring-moment", "data-testid": "ring-moment" },
        h("b", {}, `Phase ${s.phase + 1} of ${this.trace?.phases.length ?? 0}, `),
        where,
        `; watching ${label} ${watched}.`,
      ),
      h(
        "div",
        { class: "ring-grid" },
        this.ring(doc, m, watched),
        h("div", { class: "ring-side" }, this.strip(doc, m), this.table(doc, m, watched)),
      ),
      this.check(doc),
    );
  }

  /** The devices round a circle, the transfers in flight as arrows between them. */
  private ring(doc: DevicesDoc, m: RingMoment, watched: number): SVGSVGElement {
    const c = { x: SIZE / 2, y: SIZE / 2 };
    const at = placeDevices(doc.count, c.x, c.y, SIZE / 2 - NODE - 14);
    const root = svg("svg", {
      viewBox: `0 0 ${SIZE} ${SIZE}`,
      width: SIZE,
      height: SIZE,
      class: "ring-svg",
      role: "img",
      "data-testid": "ring-svg",
      "aria-label": `${doc.count} devices in a ring; ${m.flying.length} transfers in flight`,
    });
    root.append(
      svg(
        "defs",
        {},
        svg(
          "marker",
          { id: "ring-head", viewBox: "0 0 10 10", refX: 8, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
          svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "ring-head" }),
        ),
      ),
      svg("circle", { cx: c.x, cy: c.y, r: SIZE / 2 - NODE - 14, class: "ring-track" }),
    );
    for (const t of m.flying) {
      const a = arrow(at[t.from]!, at[t.to]!, NODE, c);
      root.append(
        svg(
          "g",
          {
            class: `ring-arrow ring-d${t.owner % COLOURS}`,
            "data-testid": "ring-arrow",
            "data-from": t.from,
            "data-to": t.to,
            "data-owner": t.owner,
          },
          svg(
            "title",
            {},
            `device ${t.from} \u2192 device ${t.to}: device ${t.owner}'s shard (${chunkNames(t.chunks)}), ${bytes(t.bytes)}`,
          ),
          svg("path", { d: a.d, "marker-end": "url(#ring-head)" }),
          svg("text", { x: a.label.x, y: a.label.y, class: "ring-arrow-label", "text-anchor": "middle" }, chunkNames(t.chunks)),
        ),
      );
    }
    at.forEach((p, r) => {
      const held = m.holds[r];
      const mine = doc.own[r] ?? [];
      const w = workCounts(m.work[r] ?? []);
      const idle = (m.work[r]?.length ?? 0) > 0 && w.full + w.causal === 0;
      root.append(
        svg(
          "g",
          {
            class: `ring-node ring-d${r % COLOURS}${r === watched ? " ring-watch" : ""}${idle ? " ring-idle" : ""}`,
            "data-testid": "ring-device",
            "data-device": r,
            "data-holds": held?.owner ?? "",
            "data-watch": r === watched ? "true" : "false",
            transform: `translate(${p.x.toFixed(1)},${p.y.toFixed(1)})`,
          },
          svg("title", {}, `device ${r}: Q ${chunkNames(mine)}; holds device ${held?.owner}'s K/V (${chunkNames(held?.chunks ?? [])})`),
          svg("circle", { r: NODE, class: "ring-disc" }),
          svg("text", { y: -14, class: "ring-name", "text-anchor": "middle" }, `device ${r}`),
          svg("text", { y: 1, class: "ring-q", "text-anchor": "middle" }, `Q ${chunkNames(mine)}`),
          svg(
            "text",
            { y: 16, class: `ring-kv ring-d${(held?.owner ?? 0) % COLOURS}`, "text-anchor": "middle", "data-testid": "ring-held" },
            `KV ${chunkNames(held?.chunks ?? [])}`,
          ),
          idle ? svg("text", { y: NODE + 12, class: "ring-idle-label", "text-anchor": "middle" }, "skips this shard") : null,
        ),
      );
    });
    return root;
  }

  /** The sequence, chunk by chunk, each coloured by the device that owns it: the layout. */
  private strip(doc: DevicesDoc, m: RingMoment): HTMLElement {
    const owners = chunkOwners(doc);
    const held = new Set<number>();
    for (const x of m.holds) for (const c of x.chunks) held.add(c);
    return h(
      "div",
      { class: "ring-strip-wrap" },
      h(
        "div",
        { class: "small muted" },
        `The sequence in ${doc.chunks} chunks of ${doc.chunk_rows} rows, by the device that keeps it (${doc.layout}):`,
      ),
      h(
        "div",
        { class: "ring-strip", "data-testid": "ring-strip" },
        ...owners.map((r, c) =>
          h(
            "span",
            { class: `ring-chunk ring-d${r % COLOURS}`, "data-testid": "ring-chunk", "data-owner": r, title: `chunk ${c}: device ${r}` },
            `c${c}`,
          ),
        ),
      ),
      doc.layout_note ? h("p", { class: "small muted", "data-testid": "ring-layout-note" }, doc.layout_note) : null,
    );
  }

  /** Per device: the shard held, the step's blocks (computed, masked, skipped), its carries L, the bytes sent. */
  private table(doc: DevicesDoc, m: RingMoment, watched: number): HTMLElement {
    const rows = Array.from({ length: doc.count }, (_, r) => {
      const held = m.holds[r];
      const work = m.work[r] ?? [];
      const w = workCounts(work);
      const carry = m.carries[r];
      const blocks = work.length
        ? work.map((x) =>
            h("span", { class: `ring-block ring-${x.kind}`, title: `Q c${x.q} \u00d7 K c${x.k}: ${x.kind}` }, `c${x.q}\u00d7c${x.k}`),
          )
        : [h("span", { class: "muted" }, "\u2014")];
      const L = carry ? carry.L : [];
      return h(
        "tr",
        { class: r === watched ? "ring-watch-row" : "", "data-testid": "ring-row", "data-device": r },
        h("th", { scope: "row" }, `device ${r}`),
        h("td", {}, held ? `device ${held.owner}'s (${chunkNames(held.chunks)})` : "\u2014"),
        h("td", { "data-testid": "ring-work", "data-full": w.full, "data-causal": w.causal, "data-skip": w.skip }, ...blocks),
        h(
          "td",
          {
            class: "mono",
            "data-testid": "ring-carries",
            "data-phase": carry ? carry.phase : "",
            // O, row by row, on hover: the other half of the carries (normalised over the keys seen so far)
            title: carry ? carry.O.map((row, k) => `O row ${k}: ${row.slice(0, 8).map(lse).join(" ")}`).join("\n") : "",
          },
          L.slice(0, 8).map(lse).join(" ") + (L.length > 8 ? " \u2026" : ""),
        ),
        h("td", { class: "num", "data-testid": "ring-sent" }, bytes(m.sent[r] ?? 0)),
      );
    });
    return h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "ring-table small", "data-testid": "ring-table" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", {}, ""),
            h("th", {}, "K/V shard held"),
            h("th", {}, "blocks this step (full \u00b7 masked \u00b7 skipped)"),
            h("th", {}, "carries L (log-sum-exp per row)"),
            h("th", {}, "sent so far"),
          ),
        ),
        h("tbody", {}, ...rows),
      ),
    );
  }

  /** The bytes sent against the link's closed form, and the merged result against float64. */
  private check(doc: DevicesDoc): HTMLElement {
    const t = this.trace!;
    const lines: (HTMLElement | null)[] = [];
    if (doc.link) {
      const same = doc.link.sent_bytes.length === doc.sent_bytes.length && doc.link.sent_bytes.every((b, r) => b === doc.sent_bytes[r]);
      lines.push(
        h(
          "p",
          { class: `small ${same ? "ok" : "bad"}`, "data-testid": "ring-link" },
          `Bytes each device sent: counted ${doc.sent_bytes.map(bytes).join(", ")}; closed form ${doc.link.sent_bytes.map(bytes).join(", ")} (${doc.link.source}) \u2014 ${same ? "equal" : "they differ"}.`,
        ),
      );
    }
    const parts: string[] = [];
    for (const name of t.reference.headline ?? []) {
      const e = t.reference[name] as { max_rel?: number | null; tolerance_rel?: number; ok?: boolean } | undefined;
      if (!e || typeof e !== "object") continue;
      parts.push(
        `${name}: max error ${e.max_rel === null || e.max_rel === undefined ? "not finite" : e.max_rel.toExponential(1)} of its scale (tolerance ${e.tolerance_rel})`,
      );
    }
    lines.push(
      h(
        "p",
        { class: `small ${t.reference.ok ? "ok" : "bad"}`, "data-testid": "ring-check" },
        `The merged result against ${t.reference.against}: ${parts.join("; ")} \u2014 ${t.reference.ok ? "within tolerance" : "outside tolerance"}.`,
      ),
    );
    return h("div", { class: "ring-checks" }, ...lines);
  }
}
