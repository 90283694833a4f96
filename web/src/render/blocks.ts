// Same operations in another block: every block of the launch at the same phase (they run at once), the
// seed's table of operations with the current row marked (derived from the watched block's steps), the
// (i, j) tile map (which pairs run, which causal masking skips or masks), and the choice of block.
import { blockLetter, endpoint, iOf, unitOf } from "../algos";
import { blockId, blockStatus, lastPhase, pairKind, type TraceIndex } from "../derive";
import { fill, frag, h, sub } from "../dom";
import { int, slice } from "../format";
import type { Counters, Step, Trace } from "../types";
import { Backbuffer } from "./backbuffer";

const MAX_CHIPS = 64;

const bold = (x: string | number) => h("b", {}, x);

/** The seed's "Action" column for a step: what moves where, with its indices (FA2 in the seed's words). */
export function action(t: Trace, s: Step): string {
  const tr = (name: string) => s.transfers.find((x) => x.tensor === name);
  if (t.config.algo === "fa2") {
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
  // every other algorithm: its transfers, in the direction they go, else what changed in SRAM
  const moves = s.transfers.map((x) => {
    const buf = endpoint(t.config.algo, x.tensor, x.kind, s.op).join(", ");
    const hbm =
      x.cols[1] - x.cols[0] < (t.tensors[x.tensor]?.shape[1] ?? 1)
        ? `${x.tensor}[${x.rows[0]}:${x.rows[1]}, ${x.cols[0]}:${x.cols[1]}]`
        : slice(x.tensor, x.rows);
    return x.kind === "read" ? `${buf || "SRAM"} \u2190 ${hbm}` : `${hbm} \u2190 ${buf || (s.op === "write_d" ? "0" : "SRAM")}`;
  });
  if (moves.length) return moves.join("; ");
  const changed = Object.keys(s.sram);
  return changed.length ? `${changed.join(", ")} in SRAM` : s.math;
}

function delta(a: Counters | undefined, b: Counters): string {
  const parts: string[] = [];
  for (const name of Object.keys(b)) {
    const r = b[name]!.read - (a?.[name]?.read ?? 0);
    const w = b[name]!.written - (a?.[name]?.written ?? 0);
    if (r) parts.push(`${name} +${int(r)} read`);
    if (w) parts.push(`${name} +${int(w)} written`);
  }
  return parts.join(", ") || "\u2014";
}

function summary(t: Trace, s: Step, phases: number): Node {
  const p = s.phase;
  const { tr, tc, br, bc } = t.config;
  const plural = (k: number, w: string) => frag(h("b", {}, k), ` ${w}${k === 1 ? "" : "s"}`);
  const at = () => frag("phase ", h("b", { "data-testid": "blocks-phase" }, p + 1), ` of ${phases}`);
  const code = () => h("code", {}, s.math);
  const causal = t.config.causal
    ? " Under causal masking blocks run programs of different lengths: a block whose rows end early finishes early (its chip fills sooner)."
    : "";
  switch (t.config.algo) {
    case "fa1":
      return frag(
        "FlashAttention-1 runs ",
        h("b", {}, "one"),
        " CUDA block per head: it loops over the ",
        plural(tc, "tile"),
        " of K/V outside and visits the ",
        plural(tr, "block"),
        " of Q one after another inside, at ",
        at(),
        ": ",
        code(),
        ". The chips are the blocks of Q it visits; pick one to jump to its visit in this tile.",
      );
    case "standard":
      return frag(
        "Three kernels, one after another; in each, all ",
        plural(tr, "block"),
        ` of Q run at once on their own Br = ${br} rows. Every block is at `,
        at(),
        ", ",
        code(),
        `. Block i of a kernel reads only what block i of the one before wrote.${causal}`,
      );
    case "fa2-backward":
      return frag(
        "After the preprocessing kernel, all ",
        plural(tc, "block"),
        " of ",
        h("code", {}, "fa2_bwd"),
        ` run at once, each on its own tile of Bc = ${bc} keys: every one is at `,
        at(),
        ", ",
        code(),
        `. They share only dQ, which they add into with atomicAdd.${causal}`,
      );
    default: {
      const ph = t.phases[p];
      return frag(
        "All ",
        plural(tr, "block"),
        ` of Q run at once, each on its own Br = ${br} rows: every one is at `,
        at(),
        ", ",
        code(),
        ph?.j !== null && ph?.j !== undefined ? ` on tile j = ${ph.j}` : "",
        `. No block needs anything from another.${causal}`,
      );
    }
  }
}

export class BlocksView {
  private key = "";
  private rows: HTMLTableRowElement[] = [];
  private current: HTMLTableRowElement | null = null;
  private bars: HTMLElement[] = [];
  private chipEls: HTMLElement[] = [];
  private lastSummary = "";

  constructor(
    private readonly chips: HTMLElement,
    private readonly summaryEl: HTMLElement,
    private readonly table: HTMLTableSectionElement,
    private readonly onPick: (block: number) => void,
    private readonly onStep: (k: number) => void,
    private readonly map: TileMap,
  ) {
    this.chips.addEventListener("click", (e) => {
      const b = (e.target as HTMLElement).closest<HTMLElement>("[data-block]");
      if (b && !b.hasAttribute("disabled")) this.onPick(Number(b.dataset.block));
    });
    this.table.addEventListener("click", (e) => {
      const tr = (e.target as HTMLElement).closest<HTMLElement>("tr[data-step]");
      if (tr) this.onStep(Number(tr.dataset.step));
    });
    this.seen.observe(this.table);
  }

  private raf = 0;
  private tableVisible = false;
  private readonly seen = new IntersectionObserver((entries) => {
    for (const e of entries) this.tableVisible = e.isIntersecting;
    if (this.tableVisible && this.current) this.scrollLater(this.current);
  });

  /** Keep the current row in view of its own scroll box (not the page), after this frame's layout; only
   *  while the table is on screen (reading a row's position off screen would force that card's layout). */
  private scrollLater(row: HTMLElement): void {
    cancelAnimationFrame(this.raf);
    if (!this.tableVisible) return;
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
    const algo = t.config.algo;
    const text = `${t.config.algo}/${s.phase}/${phases}/${s.math}/${t.config.tr}/${t.config.tc}/${t.config.br}/${t.config.bc}/${t.config.causal}/${t.phases[s.phase]?.j}`;
    if (text !== this.lastSummary) {
      this.lastSummary = text;
      fill(this.summaryEl, summary(t, s, phases));
    }
    const letter = blockLetter(algo);
    const watched = algo === "fa1" ? iOf(algo, s) : s.block;
    const unit = unitOf(algo, s);

    // chips and the ops table: rebuilt only when the watched block or the trace changes
    const key = `${algo}/${t.config.n}/${t.config.br}/${t.config.bc}/${t.config.d}/${t.config.seed}/${t.config.causal}/${unit}/${watched}/${t.config.recorded_blocks.join(",")}`;
    if (key !== this.key) {
      this.key = key;
      const shown = t.blocks.slice(0, MAX_CHIPS);
      const full = letter === "i" ? t.config.br : t.config.bc;
      this.chipEls = [];
      this.bars = [];
      const chips = shown.map((b, k) => {
        const id = b.block ?? k;
        const on = id === watched;
        const title = b.recorded
          ? on
            ? `block ${letter} = ${id}: watching`
            : `look inside block ${letter} = ${id}`
          : `block ${id}: its values are not recorded in this trace (pick it in the block menu to fetch them)`;
        const bar = h("span");
        const chip = h(
          "button",
          {
            type: "button",
            class: `chip${on ? " watched" : ""}${b.recorded ? "" : " unrecorded"}`,
            "data-block": id,
            "aria-pressed": String(on),
            title,
          },
          h("span", { class: "chip-i" }, `${letter}=${id}`),
          h("span", { class: "chip-rows" }, `${b.rows[0]}\u2013${b.rows[1] - 1}${b.rows[1] - b.rows[0] < full ? "*" : ""}`),
          h("span", { class: "bar" }, bar),
        );
        this.chipEls.push(chip);
        this.bars.push(bar);
        return chip;
      });
      fill(
        this.chips,
        ...chips,
        t.blocks.length > MAX_CHIPS
          ? h("span", { class: "chip more" }, `+ ${int(t.blocks.length - MAX_CHIPS)} more, all at the same phase`)
          : null,
      );
      // the ops table for the watched block: one row per step of its program (fa1: the one block's); phases
      // counted from 1, as everywhere on the page
      const steps = t.steps.filter((x) => unitOf(algo, x) === unit);
      fill(
        this.table,
        ...steps.map((x) => {
          const prev = idx.counters[x.phase - 1];
          const ij = x.indices
            ? Object.entries(x.indices)
                .map(([k, v]) => `${k}=${v}`)
                .join(" ")
            : x.j !== null
              ? `j=${x.j}`
              : "";
          return h(
            "tr",
            { "data-step": x.index, "data-phase": x.phase + 1, tabindex: "-1" },
            h("td", { class: "ph" }, x.phase + 1),
            h("td", {}, h("code", {}, x.math), ij ? frag(" ", h("span", { class: "muted" }, ij)) : null),
            h("td", {}, action(t, x)),
            h("td", { class: "small" }, delta(prev, idx.counters[x.phase]!)),
          );
        }),
      );
      this.rows = Array.from(this.table.querySelectorAll("tr"));
      this.current = null;
    }
    // each chip's progress: its own program (causal programs differ in length)
    this.chipEls.forEach((chip, k) => {
      const id = t.blocks[k]?.block ?? k;
      const last = algo === "fa1" ? phases - 1 : lastPhase(t, id);
      const frac = Math.min(1, (s.phase + 1) / (last + 1));
      this.bars[k]!.style.transform = `scaleX(${frac})`;
      const st = algo === "fa1" ? "same" : blockStatus(t, blockId(t, k), s.phase);
      if (chip.dataset.status !== st) chip.dataset.status = st;
    });
    const row = this.rows.find((r) => Number(r.dataset.step) === s.index) ?? null;
    if (row !== this.current) {
      if (this.current) {
        this.current.classList.remove("current");
        this.current.removeAttribute("aria-current");
      }
      this.current = row;
      if (row) {
        row.classList.add("current");
        row.setAttribute("aria-current", "step");
        this.scrollLater(row);
      }
    }
    this.map.show(t, idx, s);
  }
}

/** The (i, j) pairs of the launch: computed, computed across the diagonal (masked), or skipped (causal). */
export class TileMap {
  private readonly back = new Backbuffer();
  private colours = new Map<string, string>();
  private key = "";

  constructor(
    private readonly canvas: HTMLCanvasElement,
    private readonly caption: HTMLElement,
  ) {}

  retheme(): void {
    this.colours.clear();
    this.key = "";
  }

  private colour(name: string): string {
    let c = this.colours.get(name);
    if (c === undefined) {
      c = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
      this.colours.set(name, c);
    }
    return c;
  }

  show(t: Trace, idx: TraceIndex, s: Step): void {
    const { tr, tc } = t.config;
    const algo = t.config.algo;
    const i = algo === "fa2-backward" && !(s.indices && "j" in s.indices) ? null : iOf(algo, s);
    const j = idx.tile[s.index] ?? null;
    const key = `${algo}/${t.config.n}/${t.config.br}/${t.config.bc}/${t.config.causal}/${i}/${j}/${s.block}`;
    if (key === this.key) return;
    this.key = key;
    const cell = Math.max(2, Math.min(16, Math.floor(260 / Math.max(tr, tc))));
    const lab = 18;
    const w = lab + tc * cell + 2;
    const h = lab + tr * cell + 2;
    const ratio = Math.min(3, window.devicePixelRatio || 1);
    if (this.canvas.width !== Math.round(w * ratio) || this.canvas.height !== Math.round(h * ratio)) {
      this.canvas.width = Math.round(w * ratio);
      this.canvas.height = Math.round(h * ratio);
      this.canvas.style.width = `${w}px`;
      this.canvas.style.height = `${h}px`;
    }
    const ctx = this.back.begin(this.canvas, ratio);
    ctx.clearRect(0, 0, w, h);
    ctx.font = "10px system-ui, sans-serif";
    ctx.fillStyle = this.colour("--ink-muted");
    ctx.textBaseline = "top";
    ctx.fillText("j \u2192", lab, 2);
    ctx.save();
    ctx.translate(2, lab);
    ctx.fillText("i", 2, 0);
    ctx.fillText("\u2193", 2, 10);
    ctx.restore();
    let skipped = 0;
    let masked = 0;
    for (let a = 0; a < tr; a++) {
      for (let b = 0; b < tc; b++) {
        const kind = pairKind(t, a, b);
        const x = lab + b * cell;
        const y = lab + a * cell;
        if (kind === "skipped") {
          skipped++;
          ctx.fillStyle = this.colour("--panel");
          ctx.fillRect(x, y, cell - 1, cell - 1);
          continue;
        }
        ctx.fillStyle = this.colour("--op-compute");
        ctx.globalAlpha = 0.55;
        ctx.fillRect(x, y, cell - 1, cell - 1);
        ctx.globalAlpha = 1;
        if (kind === "masked") {
          masked++;
          // the masked part: above the diagonal, in the −∞ colour
          ctx.fillStyle = this.colour("--cell-neginf");
          ctx.beginPath();
          ctx.moveTo(x, y);
          ctx.lineTo(x + cell - 1, y);
          ctx.lineTo(x + cell - 1, y + cell - 1);
          ctx.closePath();
          ctx.fill();
        }
      }
    }
    // the watched block's row (or column) and the pair now in SRAM
    ctx.strokeStyle = this.colour("--watch");
    ctx.lineWidth = 1.5;
    ctx.setLineDash([3, 2]);
    if (algo === "fa2-backward" && s.block !== null && s.indices && "j" in s.indices)
      ctx.strokeRect(lab + s.block * cell - 1, lab - 1, cell + 1, tr * cell + 1);
    else if (i !== null) ctx.strokeRect(lab - 1, lab + i * cell - 1, tc * cell + 1, cell + 1);
    ctx.setLineDash([]);
    if (i !== null && j !== null) {
      ctx.strokeStyle = this.colour("--accent");
      ctx.lineWidth = 2;
      ctx.strokeRect(lab + j * cell - 1, lab + i * cell - 1, cell + 1, cell + 1);
    }
    this.back.present(this.canvas);
    const total = tr * tc;
    this.canvas.setAttribute(
      "aria-label",
      `Tile map: ${total - skipped} of ${total} (i, j) pairs computed, ${masked} on the diagonal masked, ${skipped} skipped`,
    );
    if (t.config.causal) {
      fill(
        this.caption,
        bold(total - skipped),
        ` of ${total} (i, j) pairs run; `,
        bold(skipped),
        " wholly above the diagonal are skipped (never loaded), ",
        bold(masked),
        " crossing it are loaded and masked (\u2212\u221e where key > query).",
      );
    } else {
      fill(
        this.caption,
        `All ${total} (i, j) pairs run: `,
        sub("T", "r"),
        ` = ${tr} blocks of Q \u00d7 `,
        sub("T", "c"),
        ` = ${tc} tiles of K/V.`,
      );
    }
  }
}
