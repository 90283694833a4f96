// Same operations in another block: every block of the launch at the same phase (they run at once),
// the seed's table of operations with the current row marked, and the choice of block to look inside.
import { esc } from "../dom";
import type { TraceIndex } from "../derive";
import { int, slice } from "../format";
import { TENSORS, type Counters, type Step, type Trace } from "../types";

const MAX_CHIPS = 64;

/** The seed's "Action" column for a step of the watched block: what moves where, with its indices. */
export function action(t: Trace, s: Step): string {
  const tr = (name: string) => s.transfers.find((x) => x.tensor === name);
  switch (s.op) {
    case "load_q": {
      const q = tr("Q");
      return `Qi \u2190 ${q ? slice("Q", q.rows) : "Q[i]"}; Oi \u2190 0; mi \u2190 \u2212\u221e; li \u2190 0`;
    }
    case "load_kv": {
      const k = tr("K");
      const v = tr("V");
      return `Kj \u2190 ${k ? slice("K", k.rows) : "K[j]"}, Vj \u2190 ${v ? slice("V", v.rows) : "V[j]"}`;
    }
    case "scores":
      return `Sij \u2190 Qi\u00b7Kj\u1d40 \u00d7 ${t.config.scale.toPrecision(3).replace(/\.?0+$/, "")}  (${t.config.br}\u00d7${t.config.bc} in SRAM)`;
    case "online_softmax":
      return `new max, rescale li and Oi by \u03b1, add tile j = ${s.j}`;
    case "write_back": {
      const o = tr("O");
      const l = tr("L");
      return `${o ? slice("O", o.rows) : "O[i]"} \u2190 Oi/li; ${l ? slice("L", l.rows) : "L[i]"} \u2190 mi + log(li)`;
    }
  }
}

function delta(a: Counters | undefined, b: Counters): string {
  const parts: string[] = [];
  for (const name of TENSORS) {
    const r = b[name].read - (a?.[name].read ?? 0);
    const w = b[name].written - (a?.[name].written ?? 0);
    if (r) parts.push(`${name} +${int(r)} read`);
    if (w) parts.push(`${name} +${int(w)} written`);
  }
  return parts.join(", ") || "\u2014";
}

export class BlocksView {
  private key = "";
  private rows: HTMLTableRowElement[] = [];

  constructor(
    private readonly chips: HTMLElement,
    private readonly summary: HTMLElement,
    private readonly table: HTMLTableSectionElement,
    private readonly onPick: (block: number) => void,
    private readonly onStep: (k: number) => void,
  ) {
    this.chips.addEventListener("click", (e) => {
      const b = (e.target as HTMLElement).closest<HTMLElement>("[data-block]");
      if (b && !b.hasAttribute("disabled")) this.onPick(Number(b.dataset.block));
    });
    this.table.addEventListener("click", (e) => {
      const tr = (e.target as HTMLElement).closest<HTMLElement>("tr[data-step]");
      if (tr) this.onStep(Number(tr.dataset.step));
    });
  }

  private raf = 0;

  /** Keep the current row in view of its own scroll box (not the page), after this frame's layout. */
  private scrollLater(row: HTMLElement): void {
    cancelAnimationFrame(this.raf);
    this.raf = requestAnimationFrame(() => {
      const box = row.closest<HTMLElement>(".table-scroll");
      if (!box || box.scrollHeight <= box.clientHeight + 2) return;
      const top = row.offsetTop;
      if (top < box.scrollTop + 30 || top > box.scrollTop + box.clientHeight - 40) {
        box.scrollTop = Math.max(0, top - box.clientHeight / 2);
      }
    });
  }

  show(t: Trace, idx: TraceIndex, s: Step): void {
    const phases = t.phases.length;
    const p = s.phase;
    const ph = t.phases[p];
    this.summary.innerHTML =
      `All <b>${t.config.tr}</b> block${t.config.tr === 1 ? "" : "s"} of Q run at once, each on its own Br = ${t.config.br} rows: ` +
      `every one is at phase <b>${p + 1}</b> of ${phases}, <code>${esc(s.math)}</code>` +
      (ph?.j !== null && ph?.j !== undefined ? ` on tile j = ${ph.j}` : "") +
      `. No block needs anything from another.`;

    // chips: rebuilt only when the watched block or trace changes; progress updated every step
    const key = `${t.config.n}/${t.config.br}/${t.config.bc}/${t.config.d}/${t.config.seed}/${s.block}/${t.config.recorded_blocks.join(",")}`;
    if (key !== this.key) {
      this.key = key;
      const shown = t.blocks.slice(0, MAX_CHIPS);
      this.chips.innerHTML =
        shown
          .map((b) => {
            const watched = b.i === s.block;
            const title = b.recorded
              ? watched ? `block ${b.i}: watching` : `look inside block ${b.i}`
              : `block ${b.i}: its values are not recorded in this trace (pick it in the block menu to fetch them)`;
            return `<button type="button" class="chip${watched ? " watched" : ""}${b.recorded ? "" : " unrecorded"}" data-block="${b.i}" aria-pressed="${watched}" title="${esc(title)}">
              <span class="chip-i">i=${b.i}</span><span class="chip-rows">${b.rows[0]}\u2013${b.rows[1] - 1}${b.rows[1] - b.rows[0] < t.config.br ? "*" : ""}</span><span class="bar"><span></span></span></button>`;
          })
          .join("") +
        (t.blocks.length > MAX_CHIPS
          ? `<span class="chip more">+ ${int(t.blocks.length - MAX_CHIPS)} more, all at the same phase</span>`
          : "");
      // the ops table for the watched block: one row per phase
      const steps = t.steps.filter((x) => x.block === s.block);
      this.table.innerHTML = steps
        .map((x) => {
          const prev = idx.counters[x.phase - 1];
          return `<tr data-step="${x.index}" tabindex="-1"><td class="ph">${x.phase}</td><td><code>${esc(x.math)}</code>${x.j !== null ? ` <span class="muted">j=${x.j}</span>` : ""}</td>` +
            `<td>${esc(action(t, x))}</td><td class="small">${esc(delta(prev, idx.counters[x.phase]!))}</td></tr>`;
        })
        .join("");
      this.rows = Array.from(this.table.querySelectorAll("tr"));
    }
    const frac = `${(100 * (p + 1)) / phases}%`;
    this.chips.querySelectorAll<HTMLElement>(".bar > span").forEach((el) => (el.style.width = frac));
    for (const row of this.rows) {
      const on = Number(row.dataset.step) === s.index;
      row.classList.toggle("current", on);
      if (on) {
        row.setAttribute("aria-current", "step");
        this.scrollLater(row);
      } else row.removeAttribute("aria-current");
    }
  }
}
