// Loading a launch: its trace asked for (the one the page asked for before anything was built, when it is the same
// launch), the block asked for fetched when the trace did not record it, the landing step's arrays brought, and the
// trace put on screen at the step it lands on; what the URL or the landing got wrong said in the config bar; a link
// the server refuses leaving the page on what it shows (or on the seed's example, the first time).
import { ApiError } from "../api";
import { indexTrace } from "../derive";
import type { ConfigParams, Limits } from "../launch";
import { arraysFor } from "../onDemand";
import { pickOf } from "../picture";
import type { Profile } from "../profileSchema";
import type { Source } from "../source";
import { DEFAULT_CONFIG, landingProblems, landingStep, parseUrl, phaseStep, sameConfig, toSearch, unrecordedProblem } from "../state";
import type { Trace } from "../types";
import type { Comparison } from "./comparison";
import type { Drawing } from "./drawing";
import type { AppContext } from "./store";

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

/** The requests made before anything else is built: the server computes the trace while the page sets up. */
export interface Early {
  limits: Promise<Limits | null>;
  /** the launch the URL names, as read before the limits came */
  config: ConfigParams;
  /** its trace (null when it failed), used by the first load of that launch; null once used */
  trace: Promise<Trace | null> | null;
}

/** Ask `source` for the limits and the URL's trace at once. A URL that names an algorithm waits for /api/limits' list
 *  first (a name the server does not know is said in the config bar, not sent to it); without one the server's
 *  default runs. */
export function askEarly(source: Source): Early {
  const limits = source.limits();
  const req = parseUrl(source.search());
  const known = (l: Limits | null) => !l?.algos || l.algos.some((a) => a.name === req.config.algo);
  // read again once the limits are known: the fields it leaves out are the algorithm's own defaults (state.ts parseUrl)
  const asked = (l: Limits | null) => parseUrl(source.search(), l ?? undefined).config;
  const trace = req.config.algo ? limits.then((l) => (known(l) ? source.trace(asked(l)) : null)) : source.trace(req.config);
  return { limits, config: req.config, trace: trace.catch(() => null) as Promise<Trace | null> | null };
}

export interface Loader {
  /** load launch `c` and show it where `to` lands; resolves once it is shown or said */
  load(c: ConfigParams, to?: Landing): Promise<void>;
  /** a profile's "open this launch": the form shows it, and it loads as the form's Run does */
  openProfile(p: Profile): void;
}

/** What a load needs of the other parts: the drawing, playback's timer, the URL's history, the comparison, the
 *  promise of the first step on screen, and the early requests. */
export interface LoaderParts {
  draw: Drawing;
  schedule(): void;
  pushUrl(search: string): void;
  comparison: Comparison;
  interactive: Promise<void>;
  early: Early;
}

export function createLoader(ctx: AppContext, parts: LoaderParts): Loader {
  const { store, source, form, transport } = ctx;
  const { draw, comparison, early } = parts;
  const loadingEl = ctx.find("loading");

  /** Put trace `t` on screen at the step `to` lands on. A trace a view cannot read (one the checks let through) is not
   *  shown: the page goes back to what it showed before (nothing, the first time) and the ApiError thrown says which
   *  view failed, in one line. */
  function show(t: Trace, c: ConfigParams, to: Landing, block: number | null, fetched: number | null): void {
    const before = { trace: store.trace, idx: store.idx, state: store.state };
    try {
      land(t, c, to, block, fetched);
    } catch (e) {
      const message = draw.problem(e, store.state.step, before.trace !== null);
      store.trace = before.trace;
      store.idx = before.idx;
      store.state = before.state;
      store.drawnTrace = null; // every view is given the trace again: some were half given the one that failed
      store.drawnStep = -1;
      form.fill(store.state.config);
      if (!store.trace) transport.empty();
      else if (!draw.drawn()) transport.empty();
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
    store.target = null;
    const step = landing(t, to, block);
    store.state = { ...store.state, step, playing: false };
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
    form.fill(store.state.config);
    draw.render();
    if (to.push) parts.pushUrl(toSearch(store.state.config, step, shown ?? 0, store.state.speed, store.limits.default));
    // not before the first step is on screen: it runs engines on the server, which the first trace needs
    if (comparison.wanted(c)) void parts.interactive.then(() => comparison.load(c));
    parts.schedule();
  }

  async function load(c: ConfigParams, to: Landing = {}): Promise<void> {
    if (!store.live) return;
    store.loading?.abort();
    const ctl = new AbortController();
    store.loading = ctl;
    form.setBusy(true);
    const slow = window.setTimeout(() => (loadingEl.hidden = false), 150);
    const block = to.block ?? null;
    try {
      // the early request named no algorithm: the server's default ran
      const asked = { ...early.config, algo: early.config.algo || (store.limits.default ?? "") };
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
      if (!store.trace && !sameConfig(c, defaultConfig())) {
        // nothing on screen yet (a bad link): show the default so the page is not empty, and the form shows it too
        form.serverError(err.detail, err.field);
        await loadFallback(err, to.problems ?? []);
      } else if (store.trace && !to.push) {
        // a link (back, forward, the host) the server refused: the page keeps what it shows, and so does the form
        form.fill(store.state.config);
        form.serverError(err.detail, null);
      } else form.serverError(err.detail, err.field); // the form's own Run: what was typed stays, to be fixed
    } finally {
      if (store.loading === ctl) {
        store.loading = null;
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
      void comparison.load(store.state.config);
      store.state = { ...store.state, step: 0 };
      if (!draw.drawn()) return;
      form.fill(store.state.config);
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
    return { ...DEFAULT_CONFIG, algo: store.limits.default ?? DEFAULT_CONFIG.algo };
  }

  function setTrace(t: Trace, c: ConfigParams): void {
    store.trace = t;
    store.idx = indexTrace(t);
    // "" (the server's default) becomes the algorithm the server ran
    store.state = { ...store.state, config: { ...c, algo: t.config.algo } };
    form.offerAlgo(t.config.algo, t.title);
  }

  function openProfile(p: Profile): void {
    const c = p.config;
    const next: ConfigParams = {
      ...store.state.config,
      algo: c.algo,
      n: c.n,
      d: c.d,
      br: c.br,
      bc: c.bc,
      causal: !!c.causal,
      seed: typeof c.seed === "number" ? c.seed : store.state.config.seed,
    };
    form.fill(next);
    void load(next, { push: true });
  }

  return { load, openProfile };
}
