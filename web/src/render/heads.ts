// Which q heads share one K/V head (grouped-query attention): chips of q heads boxed by the K/V head they read.
// Drawn from two numbers the trace gives (its layout's group, the heads shown), naming no algorithm.
import { h } from "../dom";

const SHOWN = 8; // K/V heads drawn before "… and N more"

/** `heads` q heads in groups of `group` per K/V head: q head h reads K/V head floor(h / group). */
export function headGroups(heads: number, group: number): HTMLElement {
  const kv = Math.ceil(heads / group);
  const boxes = [];
  for (let g = 0; g < Math.min(kv, SHOWN); g++) {
    const qs = [];
    for (let q = g * group; q < Math.min(heads, (g + 1) * group); q++) qs.push(h("span", { class: "qhead", "data-q": q }, `q${q}`));
    boxes.push(
      h(
        "span",
        { class: "kvgroup", "data-kv": g, title: `q heads ${g * group}\u2013${Math.min(heads, (g + 1) * group) - 1} read K/V head ${g}` },
        h("b", {}, `K/V ${g}`),
        ...qs,
      ),
    );
  }
  const more = kv > SHOWN ? h("span", { class: "muted" }, `\u2026 and ${kv - SHOWN} more K/V heads`) : null;
  const partial =
    heads % group && heads > group
      ? h("span", { class: "muted" }, ` (the last K/V head has ${heads % group} of its ${group} q heads here)`)
      : null;
  const words =
    heads < group
      ? `${heads} q head${heads === 1 ? "" : "s"}: fewer than the ${group} that share one K/V head: `
      : `${heads} q heads, ${kv} K/V head${kv === 1 ? "" : "s"} (${group} q heads share each): `;
  return h(
    "span",
    { class: "head-groups", "data-testid": "head-groups", "data-group": group, "data-heads": heads },
    words,
    ...boxes,
    more,
    partial,
  );
}
