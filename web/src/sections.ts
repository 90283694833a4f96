// The page's sections, in the order the page shows them: each one a view over the trace on screen, found in the
// page's markup (index.html) by id and drawn from the one state object. app.ts gives every section the trace once
// (`trace`, before its first step is drawn), then every step (`step`); a view only draws, the app holds the state.
// Adding a section: its card in index.html, its view in render/, one entry in the list below.
import type { CompareDoc } from "./compareDoc";
import type { TraceIndex } from "./derive";
import { showBadge } from "./render/badge";
import { BlocksView, TileMap } from "./render/blocks";
import { CarriesView } from "./render/carries";
import { LazyCodeView } from "./render/codeLazy";
import { CompareView } from "./render/compare";
import { progressAfter } from "./render/compareRace";
import { CountersView } from "./render/counters";
import { FlopsView } from "./render/flops";
import { HardwareView } from "./render/hardware";
import { IdeaView } from "./render/idea";
import { LadderView } from "./render/ladder";
import { MemoryView } from "./render/memory/view";
import { NarrativeView } from "./render/narrative";
import { showOptions } from "./render/options";
import { type Profile, ProfileView } from "./render/profile";
import { DevicesView } from "./render/ring";
import { ScheduleView } from "./render/schedule";
import { showSram } from "./render/sram";
import { TensorCoresView } from "./render/tensorCores";
import { Timeline } from "./render/timeline";
import type { Source } from "./source";
import { flightDuration, type ViewState } from "./state";
import { readPalette } from "./theme";
import type { Find, Transport } from "./transport";
import type { Step, Trace } from "./types";

/** What a section draws from: the trace on screen, its index, the step shown and the state. */
export interface Frame {
  t: Trace;
  idx: TraceIndex;
  s: Step;
  state: ViewState;
  /** the step is the one after the last shown (a step forward): the memory picture flies its transfers */
  flight: boolean;
}

export interface Section {
  /** the name its update is measured by (`flashviz:repaint:NAME`) and said by when it cannot read a trace */
  name: string;
  /** once per trace, before the trace's first step is drawn */
  trace?(f: Frame): void;
  /** every step drawn */
  step?(f: Frame): void;
  /** a card far below the fold: `step` runs only while the card (this element id) is on screen or within `margin`
   *  of it, and once more when it scrolls back into view after steps it missed */
  lazy?: { card: string; margin: string };
  /** `trace` typesets TeX: it runs again once KaTeX has loaded */
  typeset?: boolean;
  /** the theme changed: redraw what is coloured from CSS (canvases) */
  retheme?(): void;
}

/** What the sections need of the app. */
export interface SectionContext {
  find: Find;
  source: Source;
  transport: Transport;
  goto(step: number): void;
  pickBlock(block: number): void;
  /** a profile's "open this launch" */
  openProfile(p: Profile): void;
  /** the comparison on screen, if any (the causal saving reads it) */
  compared(): CompareDoc | null;
}

/** The sections, and the views the app also drives outside a step (loading, the comparison, the profile). */
export interface Sections {
  list: Section[];
  memory: MemoryView;
  code: LazyCodeView;
  compare: CompareView;
  counters: CountersView;
  profile: ProfileView;
}

export function buildSections(ctx: SectionContext): Sections {
  const { find } = ctx;
  // the palette is read once the page is built (the app's first theme): reading CSS now would force a style pass
  const memory = new MemoryView(find("memory-host"));
  const code = new LazyCodeView(find("kernel-editor"), find("step-editor"), find("code-lines"), find("code-header"), find("kernel-file"));
  const idea = new IdeaView(find("idea-summary"), find("idea-body"));
  const narrative = new NarrativeView(find("narrative"), find("step-math"), find("substeps"));
  const tensorCores = new TensorCoresView(find("tensor-cores"), find("tc-body"), find("tc-hidden"), find("tc-element"));
  const schedule = new ScheduleView(find("schedule"), find("sched-controls"), find("sched-body"), find("sched-note"), find("sched-pipe"));
  const devices = new DevicesView(find("devices"), find("devices-body")); // a run over devices (the ring)
  void new LadderView(find("ladder-body")).load(() => ctx.source.ladder()); // the recorded run: once, independent of the launch
  const carries = new CarriesView(find("carries-table"), find("carries-note"));
  const counters = new CountersView(
    find<HTMLTableSectionElement>("counters-body"),
    find("phase-note"),
    find("final-accounting"),
    find("why"),
    find("causal-saving"),
  );
  const tileMap = new TileMap(find<HTMLCanvasElement>("tile-map"), find("tile-map-caption"));
  const blocks = new BlocksView(
    find("block-chips"),
    find("blocks-summary"),
    find<HTMLTableSectionElement>("ops-body"),
    (b) => ctx.pickBlock(b),
    (k) => ctx.goto(k),
    tileMap,
  );
  const compare = new CompareView(
    find("compare-table"),
    find("compare-race"),
    find("compare-chart"),
    find("compare-note"),
    find<HTMLButtonElement>("compare-play"),
  );
  const profile = new ProfileView(
    find("profile"),
    find("profile-drop"),
    find<HTMLInputElement>("profile-file"),
    find("profile-message"),
    (p) => ctx.openProfile(p),
  );
  const hardware = new HardwareView(
    find("hw-controls"),
    find("hw-summary"),
    find("hw-sms"),
    find("hw-occupancy"),
    find("hw-warps"),
    find("hw-measured"),
  );
  const flops = new FlopsView(find("flops-table"), find("flops-note"));
  const timeline = new Timeline(find("timeline-host"), (k) => ctx.goto(k));
  const tag = find("tagline");
  const near = "300px 0px";

  const list: Section[] = [
    // the top bar and the transport bar
    {
      name: "title",
      trace: ({ t }) => {
        tag.textContent = t.tagline;
        document.title = `flashviz \u00b7 ${t.tagline}`;
      },
    },
    { name: "badge", trace: ({ t }) => showBadge(find("error-badge"), find("exactness-detail"), t) },
    { name: "block picker", trace: ({ t }) => ctx.transport.fillBlocks(t) },
    {
      name: "timeline",
      trace: ({ t }) => timeline.setTrace(t),
      step: ({ state }) => timeline.show(state.step),
      retheme: () => timeline.retheme(),
    },
    // the cards
    { name: "idea", trace: ({ t }) => idea.show(t.config.algo, t.idea), typeset: true },
    {
      name: "memory",
      trace: ({ t, idx }) => memory.setTrace(t, idx),
      step: ({ state, flight }) => memory.show(state.step, flight ? flightDuration(state.speed) : 0),
      retheme: () => memory.setPalette(readPalette()),
    },
    { name: "narrative", step: ({ s }) => narrative.show(s) },
    {
      name: "code",
      trace: ({ t }) => code.setSource(t.kernel.file, t.kernel.source),
      step: ({ t, s }) => code.showMeta(s.lines, s.code, t.kernel.file),
    },
    // the editor's highlight is cheap to bring up to date when scrolled to, but not on every step off screen
    { name: "code", lazy: { card: "code", margin: "0px" }, step: ({ t, s }) => code.show(s.lines, s.code, t.kernel.file) },
    { name: "tensor-cores", trace: ({ t }) => tensorCores.setTrace(t), step: ({ t, s }) => tensorCores.show(t, s) },
    { name: "schedule", trace: ({ t }) => schedule.setTrace(t), step: ({ s }) => schedule.show(s) },
    { name: "devices", step: ({ t, s }) => devices.show(t, s) },
    // big tables at large Br: drawn only near the screen
    { name: "narrative-detail", lazy: { card: "narrative-detail", margin: near }, step: ({ t, s }) => narrative.showSubsteps(t, s) },
    { name: "carries", lazy: { card: "carries", margin: near }, step: ({ t, idx, s }) => carries.show(t, idx, s) },
    { name: "blocks", step: ({ t, idx, s }) => blocks.show(t, idx, s), retheme: () => tileMap.retheme() },
    { name: "options", trace: ({ t }) => showOptions(find("options"), t) },
    {
      name: "counters",
      trace: ({ t }) => counters.showSaving(t, ctx.compared()),
      step: ({ t, idx, s }) => counters.show(t, idx, s),
    },
    {
      name: "profile",
      trace: ({ t, state }) => profile.match({ ...state.config, causal: !!t.config.causal, algo: t.config.algo }),
    },
    { name: "hardware", step: ({ t, s }) => hardware.show(t, s), retheme: () => hardware.retheme() },
    { name: "flops", step: ({ t, s }) => flops.show(t, s) },
    { name: "sram", trace: ({ t }) => showSram(find("sram-footprint"), t) },
    { name: "compare", step: ({ t, s }) => compare.follow(progressAfter(s.phase, t.phases.length)) },
  ];
  return { list, memory, code, compare, counters, profile };
}
