// The app: one state object, one render function that draws every view from it, and the wiring
// (URL, keys, buttons, playback, fetching). Views only draw; state.ts holds the transitions.
import "./styles.css";
import { ApiError, type CompareDoc } from "./api";
import { indexTrace, type TraceIndex } from "./derive";
import { byId, s as svg } from "./dom";
import type { MemoryLayout } from "./layout";
import { pickOf } from "./picture";
import { showBadge } from "./render/badge";
import { BlocksView, TileMap } from "./render/blocks";
import { CarriesView } from "./render/carries";
import { LazyCodeView } from "./render/codeLazy";
import { CompareView, progressAfter } from "./render/compare";
import { ConfigForm } from "./render/configForm";
import { CountersView } from "./render/counters";
import { FlopsView } from "./render/flops";
import { HardwareView } from "./render/hardware";
import { IdeaView } from "./render/idea";
import { LadderView } from "./render/ladder";
import { MemoryView } from "./render/memory/view";
import { NarrativeView } from "./render/narrative";
import { showOptions } from "./render/options";
import { type Profile, ProfileView } from "./render/profile";
import { showRegimes } from "./render/regimes";
import { ScheduleView } from "./render/schedule";
import { showSram } from "./render/sram";
import { TensorCoresView } from "./render/tensorCores";
import { loadTex, texLoaded } from "./render/tex";
import { Timeline } from "./render/timeline";
import { pickSource } from "./source";
import {
  type Action,
  blockChoices,
  type ConfigParams,
  DEFAULT_CONFIG,
  flightDuration,
  INITIAL_STATE,
  keyAction,
  landingProblems,
  landingStep,
  parseUrl,
  phaseStep,
  pickStep,
  reduce,
  SPEEDS,
  sameConfig,
  stepInterval,
  toSearch,
  unrecordedProblem,
  type ViewState,
} from "./state";
import { renderStatic } from "./statics";
import { applyTheme, initialTheme, readPalette, type Theme } from "./theme";
import type { Limits, Trace } from "./types";
import { FALLBACK_LIMITS } from "./validate";

// Where the documents come from: the server, or those inlined in the page (an export, the notebook widget): source.ts.
const source = pickSource(document);
// The trace is asked for before anything else is built: the server computes it while the page sets up. A URL that
// names an algorithm waits for /api/limits' list first (a name the server does not know is said in the config bar,
// not sent to it); without one the server's default runs.
const earlyLimits = source.limits();
const early = (() => {
  const req = parseUrl(source.search());
  const known = (l: Limits | null) => !l?.algos || l.algos.some((a) => a.name === req.config.algo);
  const trace = req.config.algo ? earlyLimits.then((l) => (known(l) ? source.trace(req.config) : null)) : source.trace(req.config);
  return { config: req.config, trace: trace.catch(() => null) as Promise<Trace | null> | null };
})();

// ---- the state ----
interface App {
  state: ViewState;
  trace: Trace | null;
  idx: TraceIndex | null;
  limits: Limits;
  theme: Theme;
  loading: AbortController | null;
  timer: number;
  compare: CompareDoc | null;
  comparing: AbortController | null;
}

const app: App = {
  state: INITIAL_STATE,
  trace: null,
  idx: null,
  limits: FALLBACK_LIMITS,
  theme: initialTheme(),
  loading: null,
  timer: 0,
  compare: null,
  comparing: null,
};
applyTheme(app.theme);

// ---- the views ----
// the palette is read once the page is built (setTheme below): reading CSS now would force a style pass
// over a page that is about to change again
const memory = new MemoryView(byId("memory-host"));
const code = new LazyCodeView(byId("kernel-editor"), byId("step-editor"), byId("code-lines"), byId("code-header"), byId("kernel-file"));
const idea = new IdeaView(byId("idea-summary"), byId("idea-body"));
const narrative = new NarrativeView(byId("narrative"), byId("step-math"), byId("substeps"));
const tensorCores = new TensorCoresView(byId("tensor-cores"), byId("tc-body"), byId("tc-hidden"), byId("tc-element"));
const scheduleView = new ScheduleView(byId("schedule"), byId("sched-controls"), byId("sched-body"), byId("sched-note"), byId("sched-pipe"));
void new LadderView(byId("ladder-body")).load(() => source.ladder()); // the recorded run: once, independent of the launch
const carries = new CarriesView(byId("carries-table"), byId("carries-note"));
const counters = new CountersView(
  byId<HTMLTableSectionElement>("counters-body"),
  byId("phase-note"),
  byId("final-accounting"),
  byId("why"),
  byId("causal-saving"),
);
const tileMap = new TileMap(byId<HTMLCanvasElement>("tile-map"), byId("tile-map-caption"));
const blocks = new BlocksView(
  byId("block-chips"),
  byId("blocks-summary"),
  byId<HTMLTableSectionElement>("ops-body"),
  (b) => pickBlock(b),
  (k) => dispatch({ type: "goto", step: k }),
  tileMap,
);
const compare = new CompareView(
  byId("compare-table"),
  byId("compare-race"),
  byId("compare-chart"),
  byId("compare-note"),
  byId<HTMLButtonElement>("compare-play"),
);
const profile = new ProfileView(
  byId("profile"),
  byId("profile-drop"),
  byId<HTMLInputElement>("profile-file"),
  byId("profile-message"),
  (p) => openProfileConfig(p),
);
// issue 11: the launch on the GPU, its FLOPs, and when each algorithm moves fewer bytes
const hardware = new HardwareView(
  byId("hw-controls"),
  byId("hw-summary"),
  byId("hw-sms"),
  byId("hw-occupancy"),
  byId("hw-warps"),
  byId("hw-measured"),
);
const flops = new FlopsView(byId("flops-table"), byId("flops-note"));
const timeline = new Timeline(byId("timeline-host"), (k) => dispatch({ type: "goto", step: k }));
const form = new ConfigForm(
  byId<HTMLFormElement>("config"),
  byId("config-error"),
  app.limits,
  (c, note) => void loadConfig(c, { push: true, problems: note ? [note] : undefined }),
);
const counter = byId("step-counter");
const counterParts = (() => {
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
  counter.replaceChildren("step ", b, ofEl, whereEl);
  return { step, of, where };
})();
const playBtn = byId<HTMLButtonElement>("btn-play");
const speedSel = byId<HTMLSelectElement>("speed");
const blockSel = byId<HTMLSelectElement>("block-picker");
const blockLabel = byId("block-label");
const tag = byId("tagline");
const loadingEl = byId("loading");
renderStatic(document);

// "The idea" stays as the reader left it (open the first time)
const ideaCard = byId<HTMLDetailsElement>("idea");
try {
  if (localStorage.getItem("flashviz:idea") === "closed") ideaCard.open = false;
} catch {
  // storage off: always open
}
ideaCard.addEventListener("toggle", () => {
  try {
    localStorage.setItem("flashviz:idea", ideaCard.open ? "open" : "closed");
  } catch {
    // ignore
  }
});

// the transport bar sticks just under the top bar, whatever height the top bar wraps to
const topbar = document.querySelector<HTMLElement>(".topbar")!;
new ResizeObserver(() => document.documentElement.style.setProperty("--topbar-h", `${topbar.offsetHeight}px`)).observe(topbar);

for (const s of SPEEDS) speedSel.append(new Option(`${s}\u00d7`, String(s), s === 1, s === 1));

const PLAY_ICON = Array.from(playBtn.childNodes);
const PAUSE_ICON = [
  svg(
    "svg",
    { viewBox: "0 0 16 16", width: 14, height: 14, "aria-hidden": "true", focusable: "false" },
    svg("rect", { x: 3.5, y: 3, width: 3, height: 10, fill: "currentColor" }),
    svg("rect", { x: 9.5, y: 3, width: 3, height: 10, fill: "currentColor" }),
  ),
];

// ---- rendering: every frame from the one state object ----
let lastStep = -1;
let lastTrace: Trace | null = null;
let ideaTyped = false; // the idea was shown with KaTeX loaded (else it is shown again once it has)
let drawing = ""; // the view render() is drawing (part()), named when one cannot read what the trace holds

/** What the config bar says when a view throws on a trace that passed the checks (a check that let through what a
 *  view cannot read: traceCheck.ts should name the field instead). The error goes to the console for whoever fixes
 *  the check; the page keeps what it showed. */
function drawProblem(e: unknown, k: number, kept = true): string {
  console.error("flashviz: a view could not draw this trace", e);
  const view = drawing || "page";
  drawing = "";
  const then = kept ? "the page keeps what it showed" : "nothing of it is shown";
  return `could not draw this trace: the ${view} view cannot read step ${k + 1} (${(e as Error)?.name ?? "error"}); ${then}`;
}

/** render(), or, when a view cannot read what the trace holds, the message in the config bar: false. */
function drawn(flight = false): boolean {
  try {
    render(flight);
    return true;
  } catch (e) {
    form.serverError(drawProblem(e, app.state.step), null);
    return false;
  }
}

function render(flight = false): void {
  const t = app.trace;
  const idx = app.idx;
  if (!t || !idx) return;
  performance.mark("flashviz:repaint:start");
  const st = app.state;
  const s = t.steps[st.step]!;
  const traceChanged = t !== lastTrace;
  if (traceChanged) {
    // measured once per trace, under the names a failing one is said by (drawProblem)
    part("memory", () => memory.setTrace(t, idx));
    part("code", () => code.setSource(t.kernel.file, t.kernel.source));
    part("tensor-cores", () => tensorCores.setTrace(t));
    part("schedule", () => scheduleView.setTrace(t));
    part("timeline", () => timeline.setTrace(t));
    part("badge", () => showBadge(byId("error-badge"), byId("exactness-detail"), t));
    part("sram", () => showSram(byId("sram-footprint"), t));
    part("block picker", () => fillBlockPicker(t));
    tag.textContent = t.tagline;
    document.title = `flashviz \u00b7 ${t.tagline}`;
    part("counters", () => counters.showSaving(t, app.compare));
    part("options", () => showOptions(byId("options"), t));
    part("profile", () => profile.match({ ...st.config, causal: !!t.config.causal, algo: t.config.algo }));
  }
  if (traceChanged || ideaTyped !== texLoaded()) {
    ideaTyped = texLoaded();
    part("idea", () => idea.show(t.config.algo, t.idea));
  }
  part("memory", () => memory.show(st.step, flight ? flightDuration(st.speed) : 0));
  part("code", () => code.showMeta(s.lines, s.code, t.kernel.file));
  lazy("code", () => code.show(s.lines, s.code, t.kernel.file));
  part("narrative", () => narrative.show(s));
  part("tensor-cores", () => tensorCores.show(t, s));
  part("schedule", () => scheduleView.show(s));
  lazy("narrative-detail", () => narrative.showSubsteps(t, s));
  lazy("carries", () => carries.show(t, idx, s));
  part("counters", () => counters.show(t, idx, s));
  part("hardware", () => hardware.show(t, s));
  part("flops", () => flops.show(t, s));
  part("blocks", () => blocks.show(t, idx, s));
  part("timeline", () => timeline.show(st.step));
  part("compare", () => compare.follow(progressAfter(s.phase, t.phases.length)));
  const where = Object.entries(s.indices)
    .map(([k, v]) => `${k} = ${v}`)
    .join(" \u00b7 ");
  const pick = pickOf(t, s);
  // text nodes only: no elements made or dropped per step. Steps are counted from 1 for people (data-step is
  // the index into trace.steps, for tests and the benchmark)
  if (counterParts.step.data !== String(st.step + 1)) counterParts.step.data = String(st.step + 1);
  const of = ` / ${t.steps.length}`;
  if (counterParts.of.data !== of) counterParts.of.data = of;
  if (counterParts.where.data !== where) counterParts.where.data = where;
  counter.dataset.step = String(st.step);
  counter.dataset.total = String(t.steps.length);
  counter.dataset.block = String(s.block);
  counter.dataset.kernel = s.kernel;
  counter.dataset.j = s.j === null ? "" : String(s.j);
  counter.dataset.op = s.op;
  const playing = String(st.playing);
  if (playBtn.getAttribute("aria-pressed") !== playing) {
    playBtn.replaceChildren(...(st.playing ? PAUSE_ICON : PLAY_ICON));
    playBtn.setAttribute("aria-label", st.playing ? "Pause (space)" : "Play (space)");
    playBtn.setAttribute("aria-pressed", playing);
  }
  if (pick !== null && blockSel.value !== String(pick)) blockSel.value = String(pick);
  if (speedSel.value !== String(st.speed)) speedSel.value = String(st.speed);
  lastStep = st.step;
  lastTrace = t;
  syncUrl(toSearch(st.config, st.step, pick ?? 0, st.speed, app.limits.default));
  source.shown(st.config, st.step);
  performance.measure("flashviz:repaint", "flashviz:repaint:start");
}

// Cards far below the fold (the substeps and the carries: big tables at large Br) are brought up to
// date only while they are on screen or about to be; scrolling to one draws it from the current state.
const onScreen = new Set<string>();
const stale = new Set<string>();
function lazy(id: string, fn: () => void): void {
  if (onScreen.has(id)) {
    stale.delete(id);
    part(id, fn);
  } else stale.add(id);
}
/** Track which of `ids` are on screen; repaint when one that went stale off screen comes back. */
function watchOnScreen(ids: string[], rootMargin: string): void {
  const observer = new IntersectionObserver(
    (entries) => {
      let wake = false;
      for (const e of entries) {
        if (e.isIntersecting) {
          onScreen.add(e.target.id);
          wake ||= stale.has(e.target.id);
        } else onScreen.delete(e.target.id);
      }
      if (wake) drawn();
    },
    { rootMargin },
  );
  for (const id of ids) observer.observe(byId(id));
}
watchOnScreen(["narrative-detail", "carries"], "300px 0px");
// the editor's highlight is cheap to bring up to date when scrolled to, but not on every step off screen
watchOnScreen(["code"], "0px");

let urlTimer = 0;
/** Keep the URL on the state without flooding history.replaceState (browsers throttle it). */
function syncUrl(url: string): void {
  if (!source.url) return; // a page from disk or inside a widget has no URL of its own to keep
  clearTimeout(urlTimer);
  urlTimer = window.setTimeout(() => {
    if (location.search !== url) history.replaceState(null, "", url);
  }, 120);
}

/** Run one view's update inside a measure (`flashviz:repaint:NAME`) so a profile can tell them apart. */
function part(name: string, fn: () => void): void {
  const t0 = performance.now();
  drawing = name;
  fn();
  drawing = "";
  performance.measure(`flashviz:repaint:${name}`, { start: t0, end: performance.now() });
}

function fillBlockPicker(t: Trace): void {
  const { label, options } = blockChoices(t);
  blockLabel.textContent = label;
  blockSel.replaceChildren(...options.map(([text, value]) => new Option(text, value)));
}

// ---- transitions ----
function dispatch(a: Action): void {
  const t = app.trace;
  if (!t) return;
  const before = app.state;
  app.state = reduce(before, a, t.steps.length);
  const forwardOne = app.state.step === before.step + 1;
  if (app.state.step !== lastStep || app.state.playing !== before.playing || app.state.speed !== before.speed) {
    if (!drawn(forwardOne)) {
      // a step a view cannot read: back to the one before (drawn again: the views may have been half updated)
      app.state = { ...before, playing: false };
      lastStep = -1;
      try {
        render();
      } catch {
        // the step before was drawn once; whatever fails now, the message already stands
      }
    }
  }
  schedule();
}

function schedule(): void {
  clearTimeout(app.timer);
  if (!app.state.playing || !app.trace) return;
  app.timer = window.setTimeout(() => dispatch({ type: "next" }), stepInterval(app.state.speed));
}

/** Watch another block at the same phase; fetch its values if this trace did not record them. */
function pickBlock(b: number): void {
  const t = app.trace;
  if (!t) return;
  const k = pickStep(t, app.state.step, b);
  if (k >= 0) {
    dispatch({ type: "goto", step: k });
    return;
  }
  const phase = t.steps[app.state.step]?.phase ?? 0;
  void loadConfig(app.state.config, { block: b, phase });
}

/** The comparison of every algorithm at this config (cheap: closed forms; then the counters-only engine runs of its
 *  race, from a server). */
async function loadCompare(c: ConfigParams): Promise<void> {
  app.comparing?.abort();
  const ctl = new AbortController();
  app.comparing = ctl;
  try {
    const doc = await source.compare(c, ctl.signal);
    if (ctl.signal.aborted) return;
    compare.setDoc(doc); // a document its views cannot read throws here (the view keeps the one before)
    showRegimes(byId("regimes-table"), byId("regimes-note"), doc);
    if (app.trace) counters.showSaving(app.trace, doc);
    app.compare = doc; // only now: the trace's render reads it (counters.showSaving)
    const follow = () => {
      const s = app.trace?.steps[app.state.step];
      if (app.trace && s) compare.follow(progressAfter(s.phase, app.trace.phases.length));
    };
    follow();
    if (doc.curves === null) {
      // the server's closed forms came first; the engine's curves (queued with traces) animate the race when they come
      const curves = await source.curves(c, doc, ctl.signal);
      if (ctl.signal.aborted || app.compare !== doc) return;
      doc.curves = curves;
      compare.setDoc(doc);
      follow();
    }
  } catch (e) {
    if (ctl.signal.aborted || (e instanceof DOMException && e.name === "AbortError")) return;
    byId("compare-note").textContent = `The comparison is unavailable: ${(e as Error).message}`;
  }
}

function openProfileConfig(p: Profile): void {
  const c = p.config;
  const next: ConfigParams = {
    ...app.state.config,
    algo: c.algo,
    n: c.n,
    d: c.d,
    br: c.br,
    bc: c.bc,
    causal: !!c.causal,
    seed: typeof c.seed === "number" ? c.seed : app.state.config.seed,
  };
  form.fill(next);
  void loadConfig(next, { push: true });
}

// ---- loading ----
interface Landing {
  block?: number | null; // the block to watch (fetched if this config does not record it by default)
  step?: number | null; // a step index (from a URL)
  phase?: number | null; // or a phase of `block` (from the block picker)
  push?: boolean; // a new history entry (the form), not a replacement
  problems?: string[]; // what the URL got wrong (parseUrl), said in the config bar once the page shows
}

/** Put trace `t` on screen at the step `to` lands on. A trace a view cannot read (one the checks let through) is not
 *  shown: the page goes back to what it showed before (nothing, the first time) and the ApiError thrown says which
 *  view failed, in one line. */
function show(t: Trace, c: ConfigParams, to: Landing, block: number | null, fetched: number | null): void {
  const before = { trace: app.trace, idx: app.idx, state: app.state };
  try {
    land(t, c, to, block, fetched);
  } catch (e) {
    const message = drawProblem(e, app.state.step, before.trace !== null);
    app.trace = before.trace;
    app.idx = before.idx;
    app.state = before.state;
    lastTrace = null; // every view is given the trace again: some were half given the one that failed
    lastStep = -1;
    form.fill(app.state.config);
    if (!app.trace) counter.dataset.total = "0";
    else if (!drawn()) counter.dataset.total = "0";
    throw new ApiError(0, message, null);
  }
}

function land(t: Trace, c: ConfigParams, to: Landing, block: number | null, fetched: number | null): void {
  setTrace(t, c);
  const step =
    to.phase !== undefined && to.phase !== null && block !== null ? phaseStep(t, block, to.phase) : landingStep(t, to.step ?? null, block);
  app.state = { ...app.state, step, playing: false };
  const problems = [...(to.problems ?? []), ...landingProblems(t.steps.length, t.blocks.length, to.step ?? null, block)];
  const shown = t.steps[step] ? pickOf(t, t.steps[step]!) : null;
  const unrecorded = unrecordedProblem(t.blocks.length, t.config.recorded_blocks, block, shown ?? 0);
  if (unrecorded) problems.push(unrecorded);
  // a launch (or block) the page's trace file does not hold: said, so that it is not taken for the file's
  const elsewhere = source.provenance?.(c, fetched);
  if (elsewhere) problems.push(elsewhere);
  if (problems.length) {
    form.setMessage(`${problems.join(" \u00b7 ")}.`, "info");
  } else if (form.check(false)) {
    form.setMessage("", "");
  }
  form.fill(app.state.config);
  render();
  if (to.push && source.url) history.pushState(null, "", toSearch(app.state.config, step, shown ?? 0, app.state.speed, app.limits.default));
  const cmp = app.compare?.config;
  if (!cmp || cmp.n !== c.n || cmp.d !== c.d || cmp.br !== c.br || cmp.bc !== c.bc || cmp.causal !== c.causal) {
    // not before the first step is on screen: it runs engines on the server, which the first trace needs
    void interactive.then(() => loadCompare(c));
  }
  schedule();
}

async function loadConfig(c: ConfigParams, to: Landing = {}): Promise<void> {
  app.loading?.abort();
  const ctl = new AbortController();
  app.loading = ctl;
  form.setBusy(true);
  const slow = window.setTimeout(() => (loadingEl.hidden = false), 150);
  const block = to.block ?? null;
  try {
    // the early request named no algorithm: the server's default ran
    const asked = { ...early.config, algo: early.config.algo || (app.limits.default ?? "") };
    const pre = early.trace && sameConfig(c, asked) ? await early.trace : null;
    early.trace = null; // used once: later loads of this config ask again (it may be another block)
    let t = pre ?? (await source.trace(c, null, ctl.signal));
    let fetched: number | null = null;
    // the block asked for is not recorded by default (large launches record block 0 only): ask for it
    if (block !== null && block < t.blocks.length && !t.config.recorded_blocks.includes(block)) {
      fetched = block;
      t = await source.trace(c, block, ctl.signal);
    }
    if (ctl.signal.aborted) return;
    show(t, c, to, block, fetched);
  } catch (e) {
    if (ctl.signal.aborted || (e instanceof DOMException && e.name === "AbortError")) return;
    // a page that holds its documents (an export, the widget) reached no server: its trace could not be drawn
    const why = source.url ? "could not reach the server" : "could not show this launch";
    const err = e instanceof ApiError ? e : new ApiError(0, `${why}: ${(e as Error).message}`, null);
    form.serverError(err.detail, err.field);
    // nothing on screen yet (a bad link): show the default so the page is not empty; the form keeps what was asked
    if (!app.trace && !sameConfig(c, defaultConfig())) await loadFallback(err, to.problems ?? []);
  } finally {
    if (app.loading === ctl) {
      app.loading = null;
      form.setBusy(false);
      clearTimeout(slow);
      loadingEl.hidden = true;
    }
  }
}

async function loadFallback(err: ApiError, problems: string[]): Promise<void> {
  try {
    const t = await source.trace(defaultConfig());
    setTrace(t, defaultConfig());
    void loadCompare(app.state.config);
    app.state = { ...app.state, step: 0 };
    if (!drawn()) return;
    form.serverError(
      [`${err.detail} \u2014 showing the seed's example instead`, ...problems].join(" \u00b7 ") + (problems.length ? "." : ""),
      err.field,
    );
  } catch {
    // the server is down: the message already says so
  }
}

/** The seed's example under the server's default algorithm. */
function defaultConfig(): ConfigParams {
  return { ...DEFAULT_CONFIG, algo: app.limits.default ?? DEFAULT_CONFIG.algo };
}

function setTrace(t: Trace, c: ConfigParams): void {
  app.trace = t;
  app.idx = indexTrace(t);
  // "" (the server's default) becomes the algorithm the server ran
  app.state = { ...app.state, config: { ...c, algo: t.config.algo } };
  form.offerAlgo(t.config.algo, t.title);
}

// ---- input ----
byId("btn-first").addEventListener("click", () => dispatch({ type: "first" }));
byId("btn-prev").addEventListener("click", () => dispatch({ type: "prev" }));
byId("btn-next").addEventListener("click", () => dispatch({ type: "next" }));
byId("btn-last").addEventListener("click", () => dispatch({ type: "last" }));
playBtn.addEventListener("click", () => dispatch({ type: "toggle" }));
speedSel.addEventListener("change", () => dispatch({ type: "speed", speed: Number(speedSel.value) }));
blockSel.addEventListener("change", () => pickBlock(Number(blockSel.value)));

document.addEventListener("keydown", (e) => {
  const target = e.target as HTMLElement | null;
  const a = keyAction(e.key, {
    tag: target?.tagName ?? "",
    editable: !!target?.isContentEditable,
    ctrl: e.ctrlKey,
    meta: e.metaKey,
    alt: e.altKey,
  });
  if (!a || !app.trace) return;
  e.preventDefault();
  dispatch(a);
});

byId("theme").addEventListener("click", () => {
  app.theme = app.theme === "dark" ? "light" : "dark";
  setTheme(app.theme, true);
});
matchMedia("(prefers-color-scheme: dark)").addEventListener("change", (e) => {
  try {
    if (localStorage.getItem("flashviz:theme")) return;
  } catch {
    // ignore
  }
  app.theme = e.matches ? "dark" : "light";
  setTheme(app.theme, false);
});

function setTheme(t: Theme, remember: boolean): void {
  applyTheme(t, remember);
  byId("theme").setAttribute("aria-label", t === "dark" ? "Switch to the light theme" : "Switch to the dark theme");
  memory.setPalette(readPalette());
  timeline.retheme();
  hardware.retheme();
  tileMap.retheme();
  if (app.trace) drawn();
}

window.addEventListener("popstate", () => {
  clearTimeout(urlTimer); // a pending replaceState belongs to the entry we just left
  void openUrl(false);
});

async function openUrl(first: boolean): Promise<void> {
  const req = parseUrl(source.search(), app.limits);
  if (req.speed !== null) app.state = { ...app.state, speed: req.speed };
  form.fill(req.config);
  if (!first && app.trace && sameConfig(req.config, app.state.config)) {
    dispatch({ type: "goto", step: landingStep(app.trace, req.step, req.block) });
    return;
  }
  await loadConfig(req.config, { block: req.block, step: req.step, problems: req.problems });
}

// ---- a handle for tests and the benchmark ----
declare global {
  interface Window {
    flashviz: {
      goto(k: number): void;
      state(): ViewState;
      trace(): Trace | null;
      layout(): MemoryLayout | null;
      ready: Promise<void>;
    };
  }
}

setTheme(app.theme, false);
let markInteractive = () => {};
const interactive = new Promise<void>((resolve) => (markInteractive = resolve));

const ready = (async () => {
  try {
    // the algorithms are the server's: the URL is read against its list (the trace is already on its way)
    const l = await earlyLimits;
    if (l) {
      app.limits = l;
      form.setLimits(l);
    }
    // the server says whether it holds a profile; only then is there one to fetch (no 404 in the console)
    const prof = l?.profile ? source.profile() : Promise.resolve(null);
    await openUrl(true);
    source.onOpen((c) => {
      form.fill(c);
      void loadConfig(c);
    });
    // the first step is on screen once the frame after its render has painted: "interactive" (bench/viewer_bench.py)
    await new Promise<void>((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    performance.mark("flashviz:interactive");
    markInteractive();
    await Promise.all([loadTex(), code.load()]);
    if (app.trace) drawn();
    void prof.then((doc) => {
      if (doc === null) profile.none();
      else if (profile.set(doc, "flashviz serve --profile") && app.trace)
        profile.match({ ...app.state.config, algo: app.trace.config.algo, causal: !!app.trace.config.causal });
    });
  } finally {
    // ready whatever the trace held: shown, or said in the config bar (a test waits for this, not for a time)
    document.documentElement.dataset.ready = "true";
  }
})();

window.flashviz = {
  goto: (k) => dispatch({ type: "goto", step: k }),
  state: () => app.state,
  trace: () => app.trace,
  layout: () => memory.currentLayout,
  ready,
};
