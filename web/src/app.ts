// The viewer: createApp(root, source) wires the page's markup under `root` (index.html's body) to one store
// (app/store.ts), draws every section (sections.ts) from its state, loads launches from `source` (source.ts: the
// server, the documents a page holds, or the notebook widget) and returns a handle that the page, its browser tests,
// the benchmark and the unit tests (web/test/app.test.ts) drive. Each part has a module of its own under app/:
// loading a launch, the comparison, the URL, playback, drawing and its lazy cards, the theme switch, the page's
// chrome; this file only wires them. state.ts holds the transitions; the views only draw.

import { watchChrome } from "./app/chrome";
import { createComparison } from "./app/comparison";
import { createDrawing } from "./app/drawing";
import { watchLazyCards } from "./app/lazyCards";
import { askEarly, createLoader, type Landing } from "./app/loading";
import { createPlayback } from "./app/playback";
import { type AppContext, createStore } from "./app/store";
import { createThemeSwitch } from "./app/themeSwitch";
import { createUrl } from "./app/url";
import type { ConfigParams } from "./launch";
import type { MemoryLayout } from "./layoutBoxes";
import { ConfigForm } from "./render/configForm";
import { loadTex } from "./render/tex";
import { buildSections } from "./sections";
import type { Source } from "./source";
import type { Action, ViewState } from "./state";
import { renderStatic } from "./statics";
import { applyTheme, initialTheme } from "./theme";
import { type Find, Transport } from "./transport";
import type { Trace } from "./types";

export type { Landing } from "./app/loading";

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
  // the trace is asked for before anything else is built: the server computes it while the page sets up
  const early = askEarly(source);
  const store = createStore(initialTheme());
  applyTheme(store.theme);
  const off = new AbortController(); // every listener the app adds outside its views: removed by destroy()
  const signal = off.signal;

  // ---- the views (their callbacks reach the parts wired below, once the reader acts) ----
  const transport = new Transport(
    find,
    (a) => playback.dispatch(a),
    (b) => playback.pickBlock(b),
    signal,
  );
  const views = buildSections({
    find,
    source,
    transport,
    goto: (k) => playback.dispatch({ type: "goto", step: k }),
    pickBlock: (b) => void playback.pickBlock(b),
    openProfile: (p) => loader.openProfile(p),
    compared: () => store.compare,
  });
  const form = new ConfigForm(
    find<HTMLFormElement>("config"),
    find("config-error"),
    store.limits,
    (c, note) => void loader.load(c, { push: true, problems: note ? [note] : undefined }),
    signal,
  );
  renderStatic(root);
  const observers = watchChrome(root, find, signal);

  // ---- the parts ----
  const ctx: AppContext = { store, find, source, form, views, transport, signal };
  const lazy = watchLazyCards(find, views.list, () => draw.drawn());
  observers.push(...lazy.observers);
  const url = createUrl(
    ctx,
    (a) => playback.dispatch(a),
    (c, to) => loader.load(c, to),
  );
  const draw = createDrawing(ctx, lazy, url.sync);
  const playback = createPlayback(ctx, draw, (c, to) => loader.load(c, to));
  const comparison = createComparison(ctx);
  const setTheme = createThemeSwitch(ctx, draw.drawn);
  let markInteractive = () => {};
  const interactive = new Promise<void>((resolve) => (markInteractive = resolve));
  const loader = createLoader(ctx, { draw, schedule: playback.schedule, pushUrl: url.push, comparison, interactive, early });

  // ---- start ----
  setTheme(store.theme, false);
  const ready = (async () => {
    // the algorithms are the server's: the URL is read against its list (the trace is already on its way)
    const l = await early.limits;
    if (l) {
      store.limits = l;
      form.setLimits(l);
    }
    // the server says whether it holds a profile; only then is there one to fetch (no 404 in the console)
    const prof = l?.profile ? source.profile() : Promise.resolve(null);
    await url.open(true);
    source.onOpen((c) => {
      form.fill(c);
      void loader.load(c);
    });
    // the first step is on screen once the frame after its render has painted: "interactive" (bench/viewer_bench.py)
    await new Promise<void>((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    performance.mark("flashviz:interactive");
    markInteractive();
    await Promise.all([loadTex(), views.code.load()]);
    if (store.trace) draw.drawn();
    void prof.then((doc) => {
      if (doc === null) views.profile.none();
      else if (views.profile.set(doc, "flashviz serve --profile") && store.trace)
        views.profile.match({ ...store.state.config, algo: store.trace.config.algo, causal: !!store.trace.config.causal });
    });
  })();

  return {
    goto: (k) => playback.dispatch({ type: "goto", step: k }),
    dispatch: playback.dispatch,
    setConfig: (c, to = {}) => {
      form.fill(c);
      return loader.load(c, to);
    },
    pickBlock: playback.pickBlock,
    state: () => store.state,
    trace: () => store.trace,
    layout: () => views.memory.currentLayout,
    interactive,
    ready,
    destroy() {
      store.live = false;
      store.state = { ...store.state, playing: false };
      clearTimeout(store.timer);
      url.stop();
      store.loading?.abort();
      store.comparing?.abort();
      off.abort();
      for (const o of observers) o.disconnect();
    },
  };
}
