// Same operations in another block: every block of the launch at the same phase (they run at once), the
// seed's table of operations with the current row marked (derived from the watched block's steps), the
// (i, j) tile map (which pairs run, which causal masking skips or masks), and the choice of block.
import { blockStatus, lastPhase, type TraceIndex } from "../derive";
import { fill, frag, h, sub } from "../dom";
import { int } from "../format";
import { qBlock } from "../geometry";
import { pickId, pickOf, unitKey } from "../picture";
import type { Counters, Step, Trace } from "../types";
import { Backbuffer } from "./backbuffer";
import { richNodes } from "./rich";

const MAX_CHIPS = 64;

const bold = (x: string | number) => h("b", {}, x);

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

/** The paragraph over the chips: the step's kernel's words, with the phase, the step's math and the phase's tile. */
function summary(t: Trace, s: Step, phases: number): Node {
  const j = t.phases[s.phase]?.j;
  return richNodes(t.kernels[s.kernel]?.summary ?? [], {
    phase: h("b", { "data-testid": "blocks-phase" }, s.phase + 1),
    phases,
    math: h("code", {}, s.math),
    j: j === null || j === undefined ? undefined : j,
  });
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
    const text = `${t.config.algo}/${s.kernel}/${s.phase}/${phases}/${s.math}/${t.config.tr}/${t.config.tc}/${t.config.br}/${t.config.bc}/${t.config.causal}/${t.phases[s.phase]?.j}`;
    if (text !== this.lastSummary) {
      this.lastSummary = text;
      fill(this.summaryEl, summary(t, s, phases));
    }
    const letter = t.picker.letter;
    const watched = pickOf(t, s);
    const unit = unitKey(t, s);

    // chips and the ops table: rebuilt only when the watched block or the trace changes
    const c = t.config;
    const key = `${c.algo}/${c.n}/${c.br}/${c.bc}/${c.d}/${c.seed}/${c.causal}/${c.window}/${c.nk}/${c.group}/${c.seqlens}/${c.seqlens_k}/${unit}/${watched}/${c.recorded_blocks.join(",")}`;
    if (key !== this.key) {
      this.key = key;
      const shown = t.blocks.slice(0, MAX_CHIPS);
      const full = t.picker.rows_per_block;
      this.chipEls = [];
      this.bars = [];
      const chips = shown.map((b) => {
        const id = pickId(t, b);
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
      const steps = t.steps.filter((_x, k) => idx.unit[k] === unit);
      fill(
        this.table,
        ...steps.map((x) => {
          const prev = idx.counters[x.phase - 1];
          const ij = Object.entries(x.indices)
            .map(([k, v]) => `${k}=${v}`)
            .join(" ");
          return h(
            "tr",
            { "data-step": x.index, "data-phase": x.phase + 1, tabindex: "-1" },
            h("td", { class: "ph" }, x.phase + 1),
            h("td", {}, h("code", {}, x.math), ij ? frag(" ", h("span", { class: "muted" }, ij)) : null),
            h("td", {}, x.action),
            h("td", { class: "small" }, delta(prev, idx.counters[x.phase]!)),
          );
        }),
      );
      this.rows = Array.from(this.table.querySelectorAll("tr"));
      this.current = null;
    }
    // each chip's progress: its own program (causal programs differ in length)
    this.chipEls.forEach((chip, k) => {
      const id = pickId(t, t.blocks[k]!);
      const last = lastPhase(t, id);
      const frac = Math.min(1, (s.phase + 1) / (last + 1));
      this.bars[k]!.style.transform = `scaleX(${frac})`;
      const st = blockStatus(t, id, s.phase);
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
    this.map.show(t, s);
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

  show(t: Trace, s: Step): void {
    // a row per pick's block of Q (of every q head and sequence, where the trace has a layout), a column per tile
    const tr = t.tiling.pairs.length || t.config.tr;
    const tc = Math.max(0, ...t.tiling.pairs.map((p) => p.length)) || t.config.tc;
    // the watched pick: a row of the map (a block of Q, i) or a column (a tile, j); the pair now in SRAM
    const pick = pickOf(t, s);
    const i = qBlock(t, s);
    const j = s.tile;
    const c = t.config;
    const key = `${c.algo}/${c.n}/${c.br}/${c.bc}/${c.causal}/${c.window}/${c.nk}/${c.group}/${c.seqlens}/${c.seqlens_k}/${i}/${j}/${pick}`;
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
    let left = 0;
    let total = 0;
    for (let a = 0; a < tr; a++) {
      const row = t.tiling.pairs[a] ?? "";
      const first = row.search(/[^s]/);
      for (let b = 0; b < tc; b++) {
        const kind = row[b];
        if (kind === undefined) continue; // past its sequence's keys: no tile there
        total++;
        if (kind === "s" && (first < 0 || b < first)) left++;
        const x = lab + b * cell;
        const y = lab + a * cell;
        if (kind === "s") {
          skipped++;
          ctx.fillStyle = this.colour("--panel");
          ctx.fillRect(x, y, cell - 1, cell - 1);
          continue;
        }
        ctx.fillStyle = this.colour("--op-compute");
        ctx.globalAlpha = 0.55;
        ctx.fillRect(x, y, cell - 1, cell - 1);
        ctx.globalAlpha = 1;
        if (kind === "m" || kind === "b") {
          // the masked part: above the diagonal (past each row's right edge), in the −∞ colour
          ctx.fillStyle = this.colour("--cell-neginf");
          ctx.beginPath();
          ctx.moveTo(x, y);
          ctx.lineTo(x + cell - 1, y);
          ctx.lineTo(x + cell - 1, y + cell - 1);
          ctx.closePath();
          ctx.fill();
        }
        if (kind === "l" || kind === "b") {
          // below the band's left edge (a window): the lower left, in the −∞ colour
          ctx.fillStyle = this.colour("--cell-neginf");
          ctx.beginPath();
          ctx.moveTo(x, y);
          ctx.lineTo(x, y + cell - 1);
          ctx.lineTo(x + cell - 1, y + cell - 1);
          ctx.closePath();
          ctx.fill();
        }
        if (kind === "m" || kind === "l" || kind === "b") masked++;
      }
    }
    // the watched block's row (or column) and the pair now in SRAM
    ctx.strokeStyle = this.colour("--watch");
    ctx.lineWidth = 1.5;
    ctx.setLineDash([3, 2]);
    if (pick !== null && t.picker.letter === "j") ctx.strokeRect(lab + pick * cell - 1, lab - 1, cell + 1, tr * cell + 1);
    else if (pick !== null && i !== null) ctx.strokeRect(lab - 1, lab + i * cell - 1, tc * cell + 1, cell + 1);
    ctx.setLineDash([]);
    if (i !== null && j !== null) {
      ctx.strokeStyle = this.colour("--accent");
      ctx.lineWidth = 2;
      ctx.strokeRect(lab + j * cell - 1, lab + i * cell - 1, cell + 1, cell + 1);
    }
    this.back.present(this.canvas);
    const band = t.layout || left > 0 || t.tiling.pairs.some((p) => /[lb]/.test(p));
    this.canvas.setAttribute(
      "aria-label",
      `Tile map: ${total - skipped} of ${total} (i, j) pairs computed, ${masked} on the diagonal masked, ${skipped} skipped`,
    );
    if (band && (skipped > 0 || masked > 0)) {
      fill(
        this.caption,
        bold(total - skipped),
        ` of ${total} (block, tile) pairs run; `,
        bold(skipped),
        ` are skipped (never loaded): `,
        bold(left),
        " left of a block's band (before its window) and ",
        bold(skipped - left),
        " right of it (past the diagonal or the window); ",
        bold(masked),
        " crossing its edges are loaded and masked (\u2212\u221e outside each row's band).",
        t.layout ? " A row per block of every q head and sequence; a column per tile of its sequence's keys." : "",
      );
    } else if (t.layout) {
      fill(
        this.caption,
        `All ${total} (block, tile) pairs run: a row per block of every q head and sequence, a column per tile of its sequence's keys.`,
      );
    } else if (t.config.causal) {
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
