// The URL state: the address follows the state shown (history.replaceState, at most every 120 ms: browsers throttle
// it), a launch from the form is a new history entry, and back and forward open what their entry names. A page from
// disk or inside a widget has no URL of its own to keep (its source has no `url`).
import type { ConfigParams } from "../launch";
import { type Action, landingStep, parseUrl, sameConfig } from "../state";
import type { Landing } from "./loading";
import type { AppContext } from "./store";

export interface UrlState {
  /** keep the address on `search` (a query string), replacing the entry */
  sync(search: string): void;
  /** a new history entry for `search` */
  push(search: string): void;
  /** show what the URL names: the first time (`first`) as the page opens, else after back or forward */
  open(first: boolean): Promise<void>;
  /** drop a write not yet made */
  stop(): void;
}

/** The URL of `ctx`'s page; `dispatch` moves within the trace on screen, `load` opens another launch. */
export function createUrl(ctx: AppContext, dispatch: (a: Action) => void, load: (c: ConfigParams, to: Landing) => Promise<void>): UrlState {
  const { store, source, form } = ctx;
  let timer = 0;

  function sync(url: string): void {
    if (!source.url) return;
    clearTimeout(timer);
    timer = window.setTimeout(() => {
      if (location.search !== url) history.replaceState(null, "", url);
    }, 120);
  }

  function push(url: string): void {
    if (source.url) history.pushState(null, "", url);
  }

  async function open(first: boolean): Promise<void> {
    const req = parseUrl(source.search(), store.limits);
    if (req.speed !== null) store.state = { ...store.state, speed: req.speed };
    form.fill(req.config);
    if (!first && store.trace && sameConfig(req.config, store.state.config)) {
      dispatch({ type: "goto", step: landingStep(store.trace, req.step, req.block) });
      return;
    }
    await load(req.config, { block: req.block, step: req.step, problems: req.problems });
  }

  window.addEventListener(
    "popstate",
    () => {
      clearTimeout(timer); // a pending replaceState belongs to the entry we just left
      void open(false);
    },
    { signal: ctx.signal },
  );

  return { sync, push, open, stop: () => clearTimeout(timer) };
}
