// The hardware view: the current step's kernel laid onto the GPU's SMs — its grid for the chosen
// number of heads (B·H), the blocks one SM holds at once and why, the first wave's busy and idle SMs, the SM the
// current step's block runs on — and inside one block, which warp computes which element of the step's tile,
// beside the two splits of the FlashAttention papers. Everything is read from the trace's `hardware` key.
import { fill, h } from "../dom";
import { int, kib } from "../format";
import type { HardwareDoc, KernelOnGpu, LaunchOnSms, WarpOp } from "../hardwareDoc";
import type { Step, Trace } from "../types";
import { headGroups } from "./heads";

const pct = (x: number | null | undefined, digits = 1): string => (x === null || x === undefined ? "\u2014" : `${x.toFixed(digits)}%`);

/** The colour of warp w in the owner maps (-1: no thread). */
export function warpColour(w: number): string {
  return w < 0 ? "var(--cell-zero)" : `hsl(${(w * 67) % 360} 62% 56%)`;
}

/** A kernel's shared memory per block, in KiB as CUDA sizes it: the same string as compare's "SRAM per block" row. */
export function smemText(k: Pick<KernelOnGpu, "smem_bytes">): string {
  return kib(k.smem_bytes);
}

/** Where block b (blockIdx.x of head 0) lands, as the trace's `placement` draws it: SM b mod sms, in turn. */
export function placeOf(block: number, sms: number, perSm: number): { sm: number; wave: number } {
  const slots = Math.max(1, sms * perSm);
  return { sm: block % sms, wave: Math.floor(block / slots) };
}

export class HardwareView {
  private heads: number | null = null;
  private trace: Trace | null = null;
  private step: Step | null = null;
  private readonly select: HTMLSelectElement;
  // What is on screen, so a step redraws only what its kernel, launch, block or op changed (issue 11's view was
  // rebuilt whole on every step: ~6 ms of the repaint, its owner maps re-read the theme and refilled 4096 cells each)
  private smsOf: LaunchOnSms | null = null; // the launch whose SM grid is drawn
  private smCells: HTMLElement[] = [];
  private hereCell: HTMLElement | null = null;
  private summaryKey = "";
  private occupancyOf: KernelOnGpu | null = null;
  private warpsKey: string | null = null; // the op whose owner maps are shown (null: none drawn for this trace)
  private figures = new Map<string, HTMLElement>(); // the figures of this trace, by op and by scheme
  private idle: string | null = null; // the theme's colour of an element no thread computes
  private groupsKey = ""; // the q heads' groups drawn under the heads control (GQA), "" for none

  constructor(
    private readonly controls: HTMLElement,
    private readonly summary: HTMLElement,
    private readonly sms: HTMLElement,
    private readonly occupancy: HTMLElement,
    private readonly warps: HTMLElement,
    private readonly measured: HTMLElement,
  ) {
    this.select = h("select", { "data-testid": "hw-heads", "aria-label": "heads (B·H) in the launch" });
    this.select.addEventListener("change", () => {
      this.heads = Number(this.select.value);
      if (this.trace && this.step) this.show(this.trace, this.step);
    });
    fill(this.controls, h("label", {}, "heads B\u00b7H ", this.select));
  }

  show(t: Trace, s: Step): void {
    const hw = t.hardware;
    const traceChanged = t !== this.trace;
    this.trace = t;
    this.step = s;
    if (!hw) {
      this.controls.hidden = true;
      fill(this.summary, "This algorithm has no GPU launch: there is nothing to lay onto the SMs.");
      for (const el of [this.sms, this.occupancy, this.warps, this.measured]) fill(el);
      return;
    }
    this.controls.hidden = false;
    if (traceChanged) {
      this.options(hw);
      this.forget();
    }
    this.groups(t.layout?.group ?? 1);
    const k = hw.kernels[s.kernel] ?? Object.values(hw.kernels)[0];
    if (!k) return;
    const launch = k.launches.find((l) => l.heads === this.heads) ?? k.launches[0]!;
    this.drawSms(hw, k, launch, s);
    if (k !== this.occupancyOf) {
      this.occupancyOf = k;
      this.drawOccupancy(k);
    }
    if (s.op !== this.warpsKey) {
      this.warpsKey = s.op;
      this.drawWarps(hw, s);
    }
    if (traceChanged) this.drawMeasured(hw);
  }

  /** Draw everything afresh at the next show (a new trace, or the theme's colours changed). */
  forget(): void {
    this.smsOf = null;
    this.smCells = [];
    this.hereCell = null;
    this.summaryKey = "";
    this.occupancyOf = null;
    this.warpsKey = null;
    this.figures.clear();
    this.idle = null;
  }

  /** The theme changed: the owner maps' idle colour is the theme's. */
  retheme(): void {
    this.forget();
    if (this.trace && this.step) this.show(this.trace, this.step);
  }

  /** Grouped-query attention: under the heads control, which of its q heads share each K/V head. */
  private groups(group: number): void {
    const key = group > 1 ? `${group}/${this.heads}` : "";
    if (key === this.groupsKey) return;
    this.groupsKey = key;
    const label = this.controls.firstElementChild!;
    fill(this.controls, label, group > 1 && this.heads !== null ? headGroups(this.heads, group) : null);
  }

  private options(hw: HardwareDoc): void {
    if (this.heads === null || !hw.heads.includes(this.heads)) this.heads = hw.heads_default;
    this.select.replaceChildren(...hw.heads.map((x) => new Option(String(x), String(x), false, x === this.heads)));
    this.select.value = String(this.heads);
  }

  private drawSms(hw: HardwareDoc, k: KernelOnGpu, l: LaunchOnSms, s: Step): void {
    const per = k.occupancy.blocks_per_sm;
    const program = k.program_of_block === "reversed" ? k.grid_x - 1 - s.block : s.block;
    const here = placeOf(program, hw.device.sms, per);
    const waves = Math.ceil(l.waves);
    const summaryKey = `${s.kernel}|${k.template}|${l.heads}|${s.block}`;
    if (summaryKey !== this.summaryKey) {
      this.summaryKey = summaryKey;
      this.drawSummary(hw, k, l, s, program, here, waves);
    }
    if (l !== this.smsOf) {
      this.smsOf = l;
      this.drawSmGrid(hw, k, l);
    }
    // the SM the step's block runs on: moved, not redrawn
    const cell = here.wave === 0 ? (this.smCells[here.sm] ?? null) : null;
    if (cell !== this.hereCell) {
      if (this.hereCell) {
        this.hereCell.classList.remove("here");
        delete this.hereCell.dataset.testid;
      }
      if (cell) {
        cell.classList.add("here");
        cell.dataset.testid = "hw-sm-here";
      }
      this.hereCell = cell;
    }
  }

  private drawSummary(
    hw: HardwareDoc,
    k: KernelOnGpu,
    l: LaunchOnSms,
    s: Step,
    program: number,
    here: { sm: number; wave: number },
    waves: number,
  ): void {
    const per = k.occupancy.blocks_per_sm;
    fill(
      this.summary,
      h("b", {}, k.template),
      ` at B\u00b7H = ${l.heads}: a grid of ${l.grid.filter((x) => x > 1).join(" \u00d7 ") || "1"} = ${int(l.blocks)} block${l.blocks === 1 ? "" : "s"}; `,
      `one SM holds ${per} at once, so ${hw.device.sms} SMs hold ${int(per * hw.device.sms)}: `,
      `${wavesText(l.waves)} waves. In the first wave ${l.busy_sms} SM${l.busy_sms === 1 ? " is" : "s are"} busy and `,
      h("b", { "data-testid": "hw-idle" }, `${l.idle_sms} idle`),
      k.program_of_block === "reversed"
        ? `. This step's block i = ${s.block} runs as program ${program} of head 0 (under causal masking the longest blocks start first) on SM ${here.sm}`
        : `. This step's block (blockIdx.x = ${s.block} of head 0) runs on SM ${here.sm}`,
      waves > 1 ? `, wave ${here.wave + 1} of ${waves}.` : ".",
    );
  }

  private drawSmGrid(hw: HardwareDoc, k: KernelOnGpu, l: LaunchOnSms): void {
    const per = k.occupancy.blocks_per_sm;
    const cells: HTMLElement[] = l.resident.map((n, sm) => {
      const bar = h("i", { class: "on" });
      bar.style.width = `${per ? (100 * n) / per : 0}%`; // the share of the SM's block slots taken
      const cell = h(
        "div",
        { class: `sm${n ? " busy" : " idle"}`, "data-sm": sm, "data-blocks": n, title: `SM ${sm}: ${n} of ${per} blocks` },
        bar,
      );
      return cell;
    });
    this.smCells = cells;
    this.hereCell = null;
    this.sms.dataset.heads = String(l.heads);
    this.sms.dataset.blocks = String(l.blocks);
    this.sms.dataset.busy = String(l.busy_sms);
    this.sms.dataset.idle = String(l.idle_sms);
    this.sms.dataset.kernel = k.template;
    this.sms.replaceChildren(...cells);
    this.sms.setAttribute(
      "aria-label",
      `${hw.device.sms} SMs of the ${hw.device.name}: ${l.busy_sms} busy, ${l.idle_sms} idle in the first wave`,
    );
  }

  private drawOccupancy(k: KernelOnGpu): void {
    const o = k.occupancy;
    const limit = (name: string, v: number | null | undefined) =>
      h(
        "tr",
        { class: o.limited_by.includes(name) ? "limit" : "" },
        h("th", { scope: "row" }, name),
        h("td", { class: "num" }, v === null || v === undefined ? "unknown" : String(v)),
      );
    fill(
      this.occupancy,
      h(
        "p",
        { class: "small" },
        `${k.threads} threads (${o.warps_per_block} warps), ${smemText(k)} of shared memory `,
        k.smem ? `(${k.smem.source}: ${k.smem.note}) and ` : "and ",
        k.registers.value === null ? "unknown registers" : `${k.registers.value} registers per thread`,
        ` (${k.registers.source}: ${k.registers.note}). Blocks per SM each resource allows:`,
      ),
      h(
        "table",
        { class: "final", "data-testid": "hw-occupancy" },
        h("tbody", {}, ...Object.entries(o.limits).map(([name, v]) => limit(name, v))),
        h("tfoot", {}, h("tr", {}, h("th", { scope: "row" }, "blocks per SM"), h("td", { class: "num" }, String(o.blocks_per_sm)))),
      ),
      h(
        "p",
        { class: "small" },
        `Theoretical occupancy: ${o.warps_per_sm} of 64 warps = `,
        h("b", { "data-testid": "hw-theoretical" }, pct(100 * o.theoretical)),
        ` (limited by ${o.limited_by.join(", ")}).`,
      ),
    );
  }

  private drawWarps(hw: HardwareDoc, s: Step): void {
    const w = hw.warps;
    if (!w) {
      fill(this.warps, h("p", { class: "small muted" }, "This algorithm's folder declares no warp split."));
      return;
    }
    const op: WarpOp | undefined = w.ops[s.op];
    this.warps.dataset.op = s.op;
    const maps: HTMLElement[] = [];
    // the figures are kept per op and per scheme for this trace: a canvas keeps its pixels when moved back in
    const figure = (key: string, make: (idle: string) => HTMLElement): HTMLElement => {
      let f = this.figures.get(key);
      if (!f) {
        this.idle ??= getComputedStyle(document.documentElement).getPropertyValue("--cell-zero").trim() || "#ddd";
        f = make(this.idle);
        this.figures.set(key, f);
      }
      return f;
    };
    if (op) {
      maps.push(
        figure(`op:${s.op}`, (idle) =>
          ownerFigure(
            idle,
            op.owners,
            `this step in the kernel: ${op.buffer} (${op.shape.join(" \u00d7 ")})${op.cut ? ", first 64 × 64 shown" : ""}`,
            `${op.loop}: ${op.busy_warps} of ${w.warps} warps busy${op.idle_warps ? `, ${op.idle_warps} idle until the next __syncthreads` : ""}` +
              (op.from
                ? `; ${int(op.crossing_elements)} of ${op.from_buffer ?? op.buffer}'s elements were written by another warp at "${op.from}" and cross shared memory`
                : ""),
            "hw-owners",
          ),
        ),
      );
    } else {
      maps.push(
        h("p", { class: "small muted", "data-testid": "hw-owners-none" }, `This step moves no tile the warps share out (${s.op}).`),
      );
    }
    for (const sc of w.schemes)
      maps.push(
        figure(`scheme:${sc.name}`, (idle) =>
          ownerFigure(
            idle,
            sc.owners,
            `${sc.name}: ${sc.paper}`,
            `exchanged through shared memory per tile: ${sc.exchange}`,
            `hw-scheme-${sc.name}`,
          ),
        ),
      );
    fill(
      this.warps,
      h("p", { class: "small" }, `${w.threads} threads = ${w.warps} warps per block. Colour: the warp that computes each element.`),
      h("div", { class: "hw-maps" }, ...maps),
    );
  }

  private drawMeasured(hw: HardwareDoc): void {
    const m = hw.measured;
    if (!m.rows.length) {
      fill(
        this.measured,
        h("p", { class: "small muted" }, `The recorded occupancy run (${m.source}) measured no launch of this algorithm.`),
      );
      return;
    }
    fill(
      this.measured,
      h(
        "table",
        { class: "final", "data-testid": "hw-measured" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ...["N", "heads", "blocks", "ms", "waves", "achieved occ.", "SM utilisation"].map((x) => h("th", { scope: "col" }, x)),
          ),
        ),
        h(
          "tbody",
          {},
          ...m.rows.map((r) =>
            h(
              "tr",
              {},
              h("td", { class: "num" }, int(r.n)),
              h("td", { class: "num" }, String(r.heads)),
              h("td", { class: "num" }, int(r.blocks)),
              h("td", { class: "num" }, r.ms.toFixed(2)),
              h("td", { class: "num" }, r.ncu.waves === null ? "\u2014" : r.ncu.waves.toFixed(2)),
              h("td", { class: "num" }, pct(r.ncu.achieved_occupancy_pct)),
              h("td", { class: "num" }, pct(r.ncu.sm_utilisation_pct)),
            ),
          ),
        ),
      ),
      h(
        "p",
        { class: "small muted" },
        `Measured with Nsight Compute on the ${hw.device.name}, ${m.date} (${m.source}; ${m.command}): D=64, Br=Bc=64. SM utilisation = sm__cycles_active.avg / sm__cycles_elapsed.avg; achieved occupancy = sm__warps_active.avg.pct_of_peak_sustained_active.`,
      ),
    );
  }
}

/** A grid of a tile's elements coloured by the warp that computes them, with a caption. */
function ownerFigure(idle: string, owners: number[][], title: string, note: string, testid: string): HTMLElement {
  const rows = owners.length;
  const cols = owners[0]?.length ?? 0;
  const cell = Math.max(2, Math.min(12, Math.floor(192 / Math.max(rows, cols, 1))));
  const canvas = h("canvas", { width: cols * cell, height: rows * cell, "data-testid": testid, "data-rows": rows, "data-cols": cols });
  canvas.dataset.warps = [...new Set(owners.flat())].sort((a, b) => a - b).join(",");
  canvas.dataset.row0 = (owners[0] ?? []).join(",");
  canvas.dataset.col0 = owners.map((r) => r[0]).join(",");
  const ctx = canvas.getContext("2d");
  if (ctx) {
    for (let r = 0; r < rows; r++) {
      const row = owners[r] ?? [];
      for (let c = 0; c < row.length; c++) {
        const w = row[c] ?? -1;
        ctx.fillStyle = w < 0 ? idle : warpColour(w);
        ctx.fillRect(c * cell, r * cell, cell, cell);
      }
    }
  }
  return h("figure", { class: "hw-map" }, canvas, h("figcaption", { class: "small" }, h("b", {}, title), h("br"), note));
}

/** A launch's waves as ncu writes them (two decimals), with two significant digits below 0.01 so that a launch
 *  of a few blocks does not read "0.00 waves". */
export function wavesText(waves: number): string {
  return waves > 0 && waves < 0.01 ? waves.toPrecision(2) : waves.toFixed(2);
}
