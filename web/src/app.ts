// The viewer: createApp(root, source) wires the page's markup under `root` (index.html's body) to one state object,
// draws every section (sections.ts) from it, loads launches from `source` (source.ts: the server, the documents a
// page holds, or the notebook widget) and returns a handle that the page, its browser tests, the benchmark and the
// unit tests (web/test/app.test.ts) drive. state.ts holds the transitions; the views only draw.
import { ApiError } from "./api";
import type { CompareDoc } from "./compareDoc";
import { indexTrace, type TraceIndex } from "./derive";
import type { ConfigParams, Limits } from "./launch";
import type { MemoryLayout } from "./layout";
import { arraysFor } from "./onDemand";
import { pickOf } from "./picture";
import { progressAfter } from "./render/compare";
import { ConfigForm } from "./render/configForm";
import type { Profile } from "./render/profile";
import { showRegimes } from "./render/regimes";
import { loadTex, texLoaded } from "./render/tex";
import { buildSections, type Frame, type Section } from "./sections";
import type { Source } from "./source";
import {
  type Action,
  DEFAULT_CONFIG,
  INITIAL_STATE,
  keyAction,
  landingProblems,
  landingStep,
  parseUrl,
  phaseStep,
  pickStep,
  reduce,
  sameConfig,
  stepInterval,
  toSearch,
  unrecordedProblem,
  type ViewState,
} from "./state";
import { renderStatic } from "./statics";
import { applyTheme, initialTheme, type Theme } from "./theme";
import { type Find, Transport } from "./transport";
import type { Trace } from "./types";
import { FALLBACK_LIMITS } from "./validate";

/** Where a load lands. */
export interface Landing {
  /** the block to watch (fetched if this config does not record it by default) */
  block?: number | null;
  /** a step index (from a URL) */
  step?: number | null;
  /** or a phase of `block` (from the block picker) */
  phase?: number | null;
  /** a new history entry (the form), not a replacement */
  push?: boolean;
  /** what the URL got wrong (parseUrl), said in the config bar once the page shows */
  problems?: string[];
}

/** What the page, its tests and the benchmark drive the viewer by. */
export interface ViewerHandle {
  /** show step k (an index into trace.steps; clamped) */
  goto(k: number): void;
  /** any transition of state.ts (next, prev, toggle, speed, ...) */
  dispatch(a: Action): void;
  /** load a launch as the config bar's Run does (the form shows it); resolves once it is shown or said */
  setConfig(c: ConfigParams, to?: Landing): Promise<void>;
  /** watch another block at the same phase (fetched when the trace did not record it); resolves once shown or said */
  pickBlock(b: number): Promise<void>;
  state(): ViewState;
  trace(): Trace | null;
  /** the memory picture's layout as drawn (null before the first trace) */
  layout(): MemoryLayout | null;
  /** the first step is on screen (painted) */
  interactive: Promise<void>;
  /** the page is ready: its first launch shown (or said in the config bar), KaTeX and the code editor loaded */
  ready: Promise<void>;
  /** stop: timers, loads in flight, the app's listeners on the document and window */
  destroy(): void;
}

/** Wire the viewer into `root`, which holds the page's markup (index.html's body), showing what `source` holds. */
export function createApp(root: HTMLElement, source: Source): ViewerHandle {
  const find: Find = <T extends HTMLElement = HTMLElement>(id: string) => {
    const el = root.querySelector<T>(`#${id}`);
    if (!el) throw new Error(`flashviz: #${id} missing from index.html`);
    return el;
  };
  // The trace is asked for before anything else is built: the server computes it while the page sets up. A URL that
  // names an algorithm waits for /api/limits' list first (a name the server does not know is said in the config bar,
  // not sent to it); without one the server's default runs.
  const earlyLimits = source.limits();
  const early = (() => {
    const req = parseUrl(source.search());
    const known = (l: Limits | null) => !l?.algos || l.algos.some((a) => a.name === req.config.algo);
    // read again once the limits are known: the fields it leaves out are the algorithm's own defaults (state.ts parseUrl)
    const asked = (l: Limits | null) => parseUrl(source.search(), l ?? undefined).config;
    const trace = req.config.algo ? earlyLimits.then((l) => (known(l) ? source.trace(asked(l)) : null)) : source.trace(req.config);
    return { config: req.config, trace: trace.catch(() => null) as Promise<Trace | null> | null };
  })();

  // ---- the state ----
  const app = {
    state: INITIAL_STATE as ViewState,
    trace: null as Trace | null,
    idx: null as TraceIndex | null,
    limits: FALLBACK_LIMITS as Limits,
    theme: initialTheme(),
    loading: null as AbortController | null,
    timer: 0,
    compare: null as CompareDoc | null,
    comparing: null as AbortController | null,
    live: true,
  };
  applyTheme(app.theme);
  const off = new AbortController(); // every listener the app adds outside its views: removed by destroy()
  const signal = off.signal;
  const observers: { disconnect(): void }[] = [];

  // ---- the views ----
  const transport = new Transport(
    find,
    (a) => dispatch(a),
    (b) => pickBlock(b),
    signal,
  );
  const views = buildSections({
    find,
    source,
    transport,
    goto: (k) => dispatch({ type: "goto", step: k }),
    pickBlock: (b) => void pickBlock(b),
    openProfile: (p) => openProfileConfig(p),
    compared: () => app.compare,
  });
  const sections = views.list;
  const form = new ConfigForm(
    find<HTMLFormElement>("config"),
    find("config-error"),
    app.limits,
    (c, note) => void loadConfig(c, { push: true, problems: note ? [note] : undefined }),
    signal,
  );
  const loadingEl = find("loading");
  renderStatic(root);

  // "The idea" stays as the reader left it (open the first time)
  const ideaCard = find<HTMLDetailsElement>("idea");
  try {
    if (localStorage.getItem("flashviz:idea") === "closed") ideaCard.open = false;
  } catch {
    // storage off: always open
  }
  ideaCard.addEventListener(
    "toggle",
    () => {
      try {
        localStorage.setItem("flashviz:idea", ideaCard.open ? "open" : "closed");
      } catch {
        // ignore
      }
    },
    { signal },
  );

  // the transport bar sticks just under the top bar, whatever height the top bar wraps to
  const topbar = root.querySelector<HTMLElement>(".topbar");
  if (topbar) {
    const sticky = new ResizeObserver(() => document.documentElement.style.setProperty("--topbar-h", `${topbar.offsetHeight}px`));
    sticky.observe(topbar);
    observers.push(sticky);
  }

  // ---- rendering: every frame from the one state object ----
  let lastStep = -1;
  let lastTrace: Trace | null = null;
  let typed = false; // the typesetting sections were drawn with KaTeX loaded (else they are drawn again once it has)
  let drawing = ""; // the section render() is drawing (part()), named when one cannot read what the trace holds

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
    if (!t || !idx || !app.live) return;
    performance.mark("flashviz:repaint:start");
    const st = app.state;
    const f: Frame = { t, idx, s: t.steps[st.step]!, state: st, flight };
    const traceChanged = t !== lastTrace;
    if (traceChanged || typed !== texLoaded()) {
      const retypeset = !traceChanged;
      typed = texLoaded();
      for (const x of sections) if (x.trace && (!retypeset || x.typeset)) part(x.name, () => x.trace!(f));
    }
    for (const x of sections) {
      if (!x.step) continue;
      if (x.lazy) lazy(x, f);
      else part(x.name, () => x.step!(f));
    }
    const pick = pickOf(t, f.s);
    transport.show(t, f.s, st, pick);
    lastStep = st.step;
    lastTrace = t;
    syncUrl(toSearch(st.config, st.step, pick ?? 0, st.speed, app.limits.default));
    source.shown(st.config, st.step);
    performance.measure("flashviz:repaint", "flashviz:repaint:start");
  }

  // Cards far below the fold (the substeps and the carries: big tables at large Br) are brought up to
  // date only while they are on screen or about to be; scrolling to one draws it from the current state.
  const onScreen = new Set<string>();
  // A stale card says so (data-stale: how near the screen, in px, it is drawn again): the observer wakes the page for
  // it, and a test can wait for the cards by what it scrolls to to be drawn before it points at something below them
  // (their new height moves it).
  function lazy(x: Section, f: Frame): void {
    const card = x.lazy!.card;
    const el = find(card);
    if (onScreen.has(card)) {
      part(x.name, () => x.step!(f));
      delete el.dataset.stale;
    } else el.dataset.stale = String(parseInt(x.lazy!.margin, 10) || 0);
  }
  /** Track which lazy cards are on screen (one observer per margin); repaint when one that went stale comes back. */
  const margins = new Map<string, string[]>();
  for (const x of sections) if (x.lazy) margins.set(x.lazy.margin, [...(margins.get(x.lazy.margin) ?? []), x.lazy.card]);
  for (const [rootMargin, cards] of margins) {
    const observer = new IntersectionObserver(
      (entries) => {
        let wake = false;
        for (const e of entries) {
          if (e.isIntersecting) {
            onScreen.add(e.target.id);
            wake ||= (e.target as HTMLElement).dataset.stale !== undefined;
          } else onScreen.delete(e.target.id);
        }
        if (wake) drawn();
      },
      { rootMargin },
    );
    for (const card of new Set(cards)) observer.observe(find(card));
    observers.push(observer);
  }

  let urlTimer = 0;
  /** Keep the URL on the state without flooding history.replaceState (browsers throttle it). */
  function syncUrl(url: string): void {
    if (!source.url) return; // a page from disk or inside a widget has no URL of its own to keep
    clearTimeout(urlTimer);
    urlTimer = window.setTimeout(() => {
      if (location.search !== url) history.replaceState(null, "", url);
    }, 120);
  }

  /** Run one section's update inside a measure (`flashviz:repaint:NAME`) so a profile can tell them apart. */
  function part(name: string, fn: () => void): void {
    const t0 = performance.now();
    drawing = name;
    fn();
    drawing = "";
    performance.measure(`flashviz:repaint:${name}`, { start: t0, end: performance.now() });
  }

  // ---- transitions ----
  let target: ViewState | null = null; // the state a dispatch waits to show (its step's arrays are on their way)
  function dispatch(a: Action): void {
    const t = app.trace;
    if (!t || !app.live) return;
    const next = reduce(target ?? app.state, a, t.steps.length);
    // a large launch's step is drawn once the arrays it reads are here (onDemand.ts); a later dispatch supersedes it
    const wait = arraysFor(t, next.step);
    target = wait ? next : null;
    if (!wait) {
      advance(next);
      return;
    }
    wait.then(
      () => {
        if (target !== next || app.trace !== t || !app.live) return;
        target = null;
        advance(next);
      },
      (e: unknown) => {
        if (target !== next) return;
        target = null;
        form.serverError(`could not fetch the arrays of step ${next.step + 1}: ${(e as Error).message}`, null);
      },
    );
  }

  function advance(next: ViewState): void {
    const before = app.state;
    app.state = next;
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
    if (!app.state.playing || !app.trace || !app.live) return;
    app.timer = window.setTimeout(() => dispatch({ type: "next" }), stepInterval(app.state.speed));
  }

  /** Watch another block at the same phase; fetch its values if this trace did not record them. */
  function pickBlock(b: number): Promise<void> {
    const t = app.trace;
    if (!t) return Promise.resolve();
    const k = pickStep(t, app.state.step, b);
    if (k >= 0) {
      dispatch({ type: "goto", step: k });
      return Promise.resolve();
    }
    const phase = t.steps[app.state.step]?.phase ?? 0;
    return loadConfig(app.state.config, { block: b, phase });
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
      views.compare.setDoc(doc); // a document its views cannot read throws here (the view keeps the one before)
      showRegimes(find("regimes-table"), find("regimes-note"), doc);
      if (app.trace) views.counters.showSaving(app.trace, doc);
      app.compare = doc; // only now: the trace's render reads it (the counters' saving)
      const follow = () => {
        const s = app.trace?.steps[app.state.step];
        if (app.trace && s) views.compare.follow(progressAfter(s.phase, app.trace.phases.length));
      };
      follow();
      if (doc.curves === null) {
        // the server's closed forms came first; the engine's curves (queued with traces) animate the race when they come
        const curves = await source.curves(c, doc, ctl.signal);
        if (ctl.signal.aborted || app.compare !== doc) return;
        doc.curves = curves;
        views.compare.setDoc(doc);
        follow();
      }
    } catch (e) {
      if (ctl.signal.aborted || (e instanceof DOMException && e.name === "AbortError")) return;
      find("compare-note").textContent = `The comparison is unavailable: ${(e as Error).message}`;
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
      if (!app.trace) transport.empty();
      else if (!drawn()) transport.empty();
      throw new ApiError(0, message, null);
    }
  }

  /** The step a new trace opens at. */
  function landing(t: Trace, to: Landing, block: number | null): number {
    return to.phase !== undefined && to.phase !== null && block !== null
      ? phaseStep(t, block, to.phase)
      : landingStep(t, to.step ?? null, block);
  }

  function land(t: Trace, c: ConfigParams, to: Landing, block: number | null, fetched: number | null): void {
    setTrace(t, c);
    target = null;
    const step = landing(t, to, block);
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
    if (to.push && source.url)
      history.pushState(null, "", toSearch(app.state.config, step, shown ?? 0, app.state.speed, app.limits.default));
    const cmp = app.compare?.config;
    if (!cmp || cmp.n !== c.n || cmp.d !== c.d || cmp.br !== c.br || cmp.bc !== c.bc || cmp.causal !== c.causal) {
      // not before the first step is on screen: it runs engines on the server, which the first trace needs
      void interactive.then(() => loadCompare(c));
    }
    schedule();
  }

  async function loadConfig(c: ConfigParams, to: Landing = {}): Promise<void> {
    if (!app.live) return;
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
      await arraysFor(t, landing(t, to, block)); // a large launch: the first step's arrays (onDemand.ts)
      if (ctl.signal.aborted) return;
      show(t, c, to, block, fetched);
    } catch (e) {
      if (ctl.signal.aborted || (e instanceof DOMException && e.name === "AbortError")) return;
      // a page that holds its documents (an export, the widget) reached no server: its trace could not be drawn
      const why = source.url ? "could not reach the server" : "could not show this launch";
      const err = e instanceof ApiError ? e : new ApiError(0, `${why}: ${(e as Error).message}`, null);
      if (!app.trace && !sameConfig(c, defaultConfig())) {
        // nothing on screen yet (a bad link): show the default so the page is not empty, and the form shows it too
        form.serverError(err.detail, err.field);
        await loadFallback(err, to.problems ?? []);
      } else if (app.trace && !to.push) {
        // a link (back, forward, the host) the server refused: the page keeps what it shows, and so does the form
        form.fill(app.state.config);
        form.serverError(err.detail, null);
      } else form.serverError(err.detail, err.field); // the form's own Run: what was typed stays, to be fixed
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
      await arraysFor(t, 0);
      setTrace(t, defaultConfig());
      void loadCompare(app.state.config);
      app.state = { ...app.state, step: 0 };
      if (!drawn()) return;
      form.fill(app.state.config);
      form.serverError(
        [`${err.detail} \u2014 showing the seed's example instead`, ...problems].join(" \u00b7 ") + (problems.length ? "." : ""),
        null, // the field named holds the example's value now: the message says what was refused
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
  document.addEventListener(
    "keydown",
    (e) => {
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
    },
    { signal },
  );

  const themeBtn = find("theme");
  themeBtn.addEventListener(
    "click",
    () => {
      app.theme = app.theme === "dark" ? "light" : "dark";
      setTheme(app.theme, true);
    },
    { signal },
  );
  matchMedia("(prefers-color-scheme: dark)").addEventListener(
    "change",
    (e) => {
      try {
        if (localStorage.getItem("flashviz:theme")) return;
      } catch {
        // ignore
      }
      app.theme = e.matches ? "dark" : "light";
      setTheme(app.theme, false);
    },
    { signal },
  );

  function setTheme(t: Theme, remember: boolean): void {
    applyTheme(t, remember);
    themeBtn.setAttribute("aria-label", t === "dark" ? "Switch to the light theme" : "Switch to the dark theme");
    for (const x of sections) x.retheme?.();
    if (app.trace) drawn();
  }

  window.addEventListener(
    "popstate",
    () => {
      clearTimeout(urlTimer); // a pending replaceState belongs to the entry we just left
      void openUrl(false);
    },
    { signal },
  );

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

  // ---- start ----
  setTheme(app.theme, false);
  let markInteractive = () => {};
  const interactive = new Promise<void>((resolve) => (markInteractive = resolve));

  const ready = (async () => {
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
    await Promise.all([loadTex(), views.code.load()]);
    if (app.trace) drawn();
    void prof.then((doc) => {
      if (doc === null) views.profile.none();
      else if (views.profile.set(doc, "flashviz serve --profile") && app.trace)
        views.profile.match({ ...app.state.config, algo: app.trace.config.algo, causal: !!app.trace.config.causal });
    });
  })();

  return {
    goto: (k) => dispatch({ type: "goto", step: k }),
    dispatch,
    setConfig: (c, to = {}) => {
      form.fill(c);
      return loadConfig(c, to);
    },
    pickBlock,
    state: () => app.state,
    trace: () => app.trace,
    layout: () => views.memory.currentLayout,
    interactive,
    ready,
    destroy() {
      app.live = false;
      app.state = { ...app.state, playing: false };
      clearTimeout(app.timer);
      clearTimeout(urlTimer);
      app.loading?.abort();
      app.comparing?.abort();
      off.abort();
      for (const o of observers) o.disconnect();
    },
  };
}
