// The comparison view: the same config under every algorithm (GET /api/compare), their HBM counters
// advancing together, and a log–log chart of total HBM traffic against N (compareTable.ts, compareRace.ts,
// compareChart.ts). Draws only: every number and name comes from the server.
import type { CompareDoc } from "../compareDoc";
import { fill } from "../dom";
import { chartSvg } from "./compareChart";
import { drawRace, type RaceBars, raceAt } from "./compareRace";
import { drawTable } from "./compareTable";

export class CompareView {
  private doc: CompareDoc | null = null;
  private bars: RaceBars = new Map();
  private u = 0;
  private own = 0; // rAF of its own playback
  private playing = false;
  private ownStart = 0;
  private followU = 0;

  constructor(
    private readonly table: HTMLElement,
    private readonly race: HTMLElement,
    private readonly chart: HTMLElement,
    private readonly note: HTMLElement,
    private readonly playBtn: HTMLButtonElement,
  ) {
    this.playBtn.addEventListener("click", () => (this.playing ? this.stop() : this.play()));
  }

  /** Draw `doc`; one its views cannot read (what the checks let through) throws, and the view goes back to the
   *  document it drew before, so that the page's render (follow) never meets it. */
  setDoc(doc: CompareDoc): void {
    const before = this.doc;
    try {
      this.draw(doc);
    } catch (e) {
      this.doc = null;
      try {
        if (before && before !== doc) this.draw(before);
      } catch {
        this.doc = null; // nothing it can draw: the race and the chart stay as they are, follow() draws nothing
      }
      throw e;
    }
  }

  private draw(doc: CompareDoc): void {
    this.doc = doc;
    drawTable(this.table, this.note, doc);
    drawRace(this.race, doc, this.bars);
    this.drawChart();
    this.progress(this.followU);
  }

  private chartWidth = 0;
  private observed = false;

  /** The chart at its container's width (a phone's is narrower than the default 560), redrawn when that changes. */
  private drawChart(): void {
    if (!this.observed) {
      this.observed = true;
      new ResizeObserver((entries) => {
        const w = Math.floor(entries[0]?.contentRect.width ?? 0);
        if (w > 0 && w !== this.chartWidth) {
          this.chartWidth = w;
          if (this.doc) this.drawChart();
        }
      }).observe(this.chart);
    }
    const w = Math.max(300, Math.min(580, this.chartWidth || 560));
    fill(this.chart, chartSvg(this.doc!, w, Math.round(Math.min(300, Math.max(240, w * 0.56)))));
  }

  /** Follow the main view: u = how far the watched launch has got (progressAfter: its phases done over its phases). */
  follow(u: number): void {
    this.followU = u;
    if (!this.playing) this.progress(u);
  }

  private play(): void {
    this.playing = true;
    this.playBtn.textContent = "Pause";
    this.playBtn.setAttribute("aria-pressed", "true");
    this.ownStart = performance.now() - this.u * 6000;
    if (this.u >= 1) this.ownStart = performance.now();
    const tick = () => {
      const u = Math.min(1, (performance.now() - this.ownStart) / 6000);
      this.progress(u);
      if (u < 1 && this.playing) this.own = requestAnimationFrame(tick);
      else this.stop();
    };
    this.own = requestAnimationFrame(tick);
  }

  private stop(): void {
    cancelAnimationFrame(this.own);
    this.playing = false;
    this.playBtn.textContent = "Run all together";
    this.playBtn.setAttribute("aria-pressed", "false");
  }

  /** Every algorithm's counters at the same fraction u of its launch. */
  private progress(u: number): void {
    this.u = u;
    const d = this.doc;
    if (!d) return;
    raceAt(d, this.bars, u);
  }
}
