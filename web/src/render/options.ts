// The options of real models a launch runs (issue 22; docs/trace-schema.md `options` and `layout`): what each does in
// words and numbers (the trace's, made in Python from the closed forms), the q heads that share one K/V head, and the
// packed sequences with the blocks that start and end inside each. Drawn from the trace alone: it names no option
// and no algorithm, and shows nothing for a trace that has none.
import { fill, h } from "../dom";
import type { Layout, OptionItem, Trace } from "../types";
import { headGroups } from "./heads";
import { richNodes } from "./rich";

/** Fill `host` with the trace's options section, or hide it (a plain launch). */
export function showOptions(host: HTMLElement, t: Trace): void {
  const o = t.options;
  if (!o?.items.length) {
    host.hidden = true;
    fill(host);
    return;
  }
  host.hidden = false;
  fill(
    host,
    h("h3", {}, o.title),
    ...o.items.map((item) => itemNodes(item)),
    t.layout && t.layout.group > 1 ? headsFigure(t.layout) : null,
    t.layout && t.layout.seqs.length > 1 ? sequencesFigure(t) : null,
  );
}

function itemNodes(item: OptionItem): HTMLElement {
  return h(
    "div",
    { class: "option", "data-option": item.option, "data-testid": `option-${item.option}` },
    h("h4", {}, item.title),
    h("p", { class: "small" }, richNodes(item.text)),
    item.rows.length
      ? h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { class: "option-rows small" },
            h("tbody", {}, ...item.rows.map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", { class: "num" }, v)))),
          ),
        )
      : null,
  );
}

/** The q heads of this trace's K/V head (the rows of Q, O and L one above the other). */
function headsFigure(lay: Layout): HTMLElement {
  return h(
    "figure",
    { class: "option-figure", "data-testid": "option-heads" },
    headGroups(lay.group, lay.group),
    h("figcaption", { class: "small muted" }, `This trace runs K/V head 0 and the ${lay.group} q heads that read it.`),
  );
}

/** The packed sequences as one bar per tensor: each sequence's rows, and the blocks of Q that start and end inside it. */
function sequencesFigure(t: Trace): HTMLElement {
  const lay = t.layout!;
  const head0 = lay.segments.filter((s) => s.head === 0);
  const totalQ = head0.reduce((a, s) => a + (s.q[1] - s.q[0]), 0);
  const totalK = head0.reduce((a, s) => a + (s.kv[1] - s.kv[0]), 0);
  const pct = (x: number, of: number) => `${((100 * x) / Math.max(1, of)).toFixed(3)}%`;
  const qBar = h(
    "div",
    { class: "seq-bar", "data-testid": "seq-bar-q", "aria-label": "rows of Q of q head 0, packed" },
    ...head0.map((s, k) => {
      const seg = lay.segments.indexOf(s);
      const blocks = t.blocks.filter((b) => b.segment === seg);
      return h(
        "span",
        {
          class: "seq",
          "data-seq": s.seq,
          style: `width: ${pct(s.q[1] - s.q[0], totalQ)}`,
          title: `sequence ${s.seq}: rows ${s.q[0]}\u2013${s.q[1] - 1}`,
        },
        ...blocks.map((b) =>
          h("span", {
            class: `blk${(b.rows[1] - b.rows[0]) < t.config.br ? " ragged" : ""}`,
            "data-block": b.block,
            style: `width: ${pct(b.rows[1] - b.rows[0], s.q[1] - s.q[0])}`,
            title: b.label ?? `block ${b.block}`,
          }),
        ),
        h("span", { class: "seq-label" }, `s${s.seq}${k === 0 ? " (Q)" : ""}`),
      );
    }),
  );
  const kBar = h(
    "div",
    { class: "seq-bar keys", "data-testid": "seq-bar-k", "aria-label": "rows of K and V, packed" },
    ...head0.map((s, k) =>
      h(
        "span",
        {
          class: "seq",
          "data-seq": s.seq,
          style: `width: ${pct(s.kv[1] - s.kv[0], totalK)}`,
          title: `sequence ${s.seq}: keys ${s.kv[0]}\u2013${s.kv[1] - 1}`,
        },
        h("span", { class: "seq-label" }, `s${s.seq}${k === 0 ? " (K, V)" : ""}`),
      ),
    ),
  );
  return h(
    "figure",
    { class: "option-figure", "data-testid": "option-sequences" },
    qBar,
    kBar,
    h(
      "figcaption",
      { class: "small muted" },
      `${lay.seqs.length} sequences packed one after another: each block of Q (a box) starts at its sequence's first row and ends inside it (a hatched box is a last block cut short by the sequence's end, its other rows zeros); its queries see only its own sequence's keys.`,
    ),
  );
}
