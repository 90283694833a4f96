// The transport bar: the step counter, first/prev/play/next/last, the speed and the block picker. It draws the state
// it is given (text nodes only, no element made or dropped per step) and reports the reader's clicks as actions.
import { s as svg } from "./dom";
import { type Action, blockChoices, SPEEDS, type ViewState } from "./state";
import type { Step, Trace } from "./types";

export type Find = <T extends HTMLElement = HTMLElement>(id: string) => T;

export class Transport {
  private readonly counter: HTMLElement;
  private readonly parts: { step: Text; of: Text; where: Text };
  private readonly play: HTMLButtonElement;
  private readonly speed: HTMLSelectElement;
  private readonly blockSel: HTMLSelectElement;
  private readonly blockLabel: HTMLElement;
  private readonly playIcon: Node[];
  private readonly pauseIcon: Node[];

  constructor(find: Find, act: (a: Action) => void, pickBlock: (b: number) => void, signal: AbortSignal) {
    this.counter = find("step-counter");
    this.play = find<HTMLButtonElement>("btn-play");
    this.speed = find<HTMLSelectElement>("speed");
    this.blockSel = find<HTMLSelectElement>("block-picker");
    this.blockLabel = find("block-label");
    const step = document.createTextNode("");
    const of = document.createTextNode("");
    const where = document.createTextNode("");
    const b = document.createElement("b");
    b.append(step);
    const ofEl = document.createElement("span");
    ofEl.className = "of";
    ofEl.append(of);
    const whereEl = document.createElement("span");
    whereEl.className = "where";
    whereEl.append(where);
    this.counter.replaceChildren("step ", b, ofEl, whereEl);
    this.parts = { step, of, where };
    for (const s of SPEEDS) this.speed.append(new Option(`${s}\u00d7`, String(s), s === 1, s === 1));
    this.playIcon = Array.from(this.play.childNodes);
    this.pauseIcon = [
      svg(
        "svg",
        { viewBox: "0 0 16 16", width: 14, height: 14, "aria-hidden": "true", focusable: "false" },
        svg("rect", { x: 3.5, y: 3, width: 3, height: 10, fill: "currentColor" }),
        svg("rect", { x: 9.5, y: 3, width: 3, height: 10, fill: "currentColor" }),
      ),
    ];
    const on = (id: string, a: Action) => find(id).addEventListener("click", () => act(a), { signal });
    on("btn-first", { type: "first" });
    on("btn-prev", { type: "prev" });
    on("btn-next", { type: "next" });
    on("btn-last", { type: "last" });
    this.play.addEventListener("click", () => act({ type: "toggle" }), { signal });
    this.speed.addEventListener("change", () => act({ type: "speed", speed: Number(this.speed.value) }), { signal });
    this.blockSel.addEventListener("change", () => pickBlock(Number(this.blockSel.value)), { signal });
  }

  /** The picks a trace offers (once per trace). */
  fillBlocks(t: Trace): void {
    const { label, options } = blockChoices(t);
    this.blockLabel.textContent = label;
    this.blockSel.replaceChildren(...options.map(([text, value]) => new Option(text, value)));
  }

  /** Step `s` of `t` under `st`, its pick `pick`. Steps are counted from 1 for people (data-step is the index into
   *  trace.steps, for tests and the benchmark). */
  show(t: Trace, s: Step, st: ViewState, pick: number | null): void {
    const where = Object.entries(s.indices)
      .map(([k, v]) => `${k} = ${v}`)
      .join(" \u00b7 ");
    const { parts, counter } = this;
    if (parts.step.data !== String(st.step + 1)) parts.step.data = String(st.step + 1);
    const of = ` / ${t.steps.length}`;
    if (parts.of.data !== of) parts.of.data = of;
    if (parts.where.data !== where) parts.where.data = where;
    counter.dataset.step = String(st.step);
    counter.dataset.total = String(t.steps.length);
    counter.dataset.block = String(s.block);
    counter.dataset.kernel = s.kernel;
    counter.dataset.j = s.j === null ? "" : String(s.j);
    counter.dataset.op = s.op;
    const playing = String(st.playing);
    if (this.play.getAttribute("aria-pressed") !== playing) {
      this.play.replaceChildren(...(st.playing ? this.pauseIcon : this.playIcon));
      this.play.setAttribute("aria-label", st.playing ? "Pause (space)" : "Play (space)");
      this.play.setAttribute("aria-pressed", playing);
    }
    if (pick !== null && this.blockSel.value !== String(pick)) this.blockSel.value = String(pick);
    if (this.speed.value !== String(st.speed)) this.speed.value = String(st.speed);
  }

  /** No trace can be shown: the counter says there are no steps (tests wait on data-total). */
  empty(): void {
    this.counter.dataset.total = "0";
  }
}
