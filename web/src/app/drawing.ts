// Drawing: every frame from the store's one state object. A new trace is given to the sections that take one (again
// once KaTeX has loaded, for those that typeset), then each section draws the step, a lazy card only near the screen
// (lazyCards.ts), each inside a measure (`flashviz:repaint:NAME`) so a profile can tell them apart. After a frame the
// transport bar shows the step, the URL follows the state and the source hears what is shown.
import { pickOf } from "../picture";
import { texLoaded } from "../render/tex";
import type { Frame } from "../sections";
import { toSearch } from "../state";
import type { LazyCards } from "./lazyCards";
import type { AppContext } from "./store";

export interface Drawing {
  /** draw the state's step (`flight`: the step after the last shown, whose transfers fly); throws what a view threw */
  render(flight?: boolean): void;
  /** render(), or, when a view cannot read what the trace holds, the message in the config bar: false */
  drawn(flight?: boolean): boolean;
  /** what the config bar says when a view threw `e` on step k (`kept`: the page keeps what it showed) */
  problem(e: unknown, k: number, kept?: boolean): string;
}

/** The drawing of `ctx`'s sections; `syncUrl` is handed each frame's query string. */
export function createDrawing(ctx: AppContext, lazy: LazyCards, syncUrl: (search: string) => void): Drawing {
  const { store, form, source, transport } = ctx;
  const sections = ctx.views.list;
  let typed = false; // the typesetting sections were drawn with KaTeX loaded (else they are drawn again once it has)
  let drawing = ""; // the section render() is drawing (part()), named when one cannot read what the trace holds

  /** What the config bar says when a view throws on a trace that passed the checks (a check that let through what a
   *  view cannot read: traceCheck.ts should name the field instead). The error goes to the console for whoever fixes
   *  the check; the page keeps what it showed. */
  function problem(e: unknown, k: number, kept = true): string {
    console.error("flashviz: a view could not draw this trace", e);
    const view = drawing || "page";
    drawing = "";
    const then = kept ? "the page keeps what it showed" : "nothing of it is shown";
    return `could not draw this trace: the ${view} view cannot read step ${k + 1} (${(e as Error)?.name ?? "error"}); ${then}`;
  }

  function drawn(flight = false): boolean {
    try {
      render(flight);
      return true;
    } catch (e) {
      form.serverError(problem(e, store.state.step), null);
      return false;
    }
  }

  function render(flight = false): void {
    const t = store.trace;
    const idx = store.idx;
    if (!t || !idx || !store.live) return;
    performance.mark("flashviz:repaint:start");
    const st = store.state;
    const f: Frame = { t, idx, s: t.steps[st.step]!, state: st, flight };
    const traceChanged = t !== store.drawnTrace;
    if (traceChanged || typed !== texLoaded()) {
      const retypeset = !traceChanged;
      typed = texLoaded();
      for (const x of sections) if (x.trace && (!retypeset || x.typeset)) part(x.name, () => x.trace!(f));
    }
    for (const x of sections) {
      if (!x.step) continue;
      if (x.lazy) lazy.step(x, () => part(x.name, () => x.step!(f)));
      else part(x.name, () => x.step!(f));
    }
    const pick = pickOf(t, f.s);
    transport.show(t, f.s, st, pick);
    store.drawnStep = st.step;
    store.drawnTrace = t;
    syncUrl(toSearch(st.config, st.step, pick ?? 0, st.speed, store.limits.default));
    source.shown(st.config, st.step);
    performance.measure("flashviz:repaint", "flashviz:repaint:start");
  }

  /** Run one section's update inside a measure (`flashviz:repaint:NAME`) so a profile can tell them apart. */
  function part(name: string, fn: () => void): void {
    const t0 = performance.now();
    drawing = name;
    fn();
    drawing = "";
    performance.measure(`flashviz:repaint:${name}`, { start: t0, end: performance.now() });
  }

  return { render, drawn, problem };
}
