// The comparison: every algorithm at this config (closed forms: cheap), then the counters-only engine runs of its
// race (from a server), shown in the comparison card, the regimes table and the counters' causal saving.
import type { ConfigParams } from "../launch";
import { progressAfter } from "../render/compareRace";
import { showRegimes } from "../render/regimes";
import type { AppContext } from "./store";

export interface Comparison {
  /** fetch and show the comparison at `c` (a later call aborts this one) */
  load(c: ConfigParams): Promise<void>;
  /** whether `c` asks for another comparison than the one on screen (another shape, or none yet) */
  wanted(c: ConfigParams): boolean;
}

export function createComparison(ctx: AppContext): Comparison {
  const { store, source, views, find } = ctx;

  async function load(c: ConfigParams): Promise<void> {
    store.comparing?.abort();
    const ctl = new AbortController();
    store.comparing = ctl;
    try {
      const doc = await source.compare(c, ctl.signal);
      if (ctl.signal.aborted) return;
      views.compare.setDoc(doc); // a document its views cannot read throws here (the view keeps the one before)
      showRegimes(find("regimes-table"), find("regimes-note"), doc);
      if (store.trace) views.counters.showSaving(store.trace, doc);
      store.compare = doc; // only now: the trace's render reads it (the counters' saving)
      const follow = () => {
        const s = store.trace?.steps[store.state.step];
        if (store.trace && s) views.compare.follow(progressAfter(s.phase, store.trace.phases.length));
      };
      follow();
      if (doc.curves === null) {
        // the server's closed forms came first; the engine's curves (queued with traces) animate the race when they come
        const curves = await source.curves(c, doc, ctl.signal);
        if (ctl.signal.aborted || store.compare !== doc) return;
        doc.curves = curves;
        views.compare.setDoc(doc);
        follow();
      }
    } catch (e) {
      if (ctl.signal.aborted || (e instanceof DOMException && e.name === "AbortError")) return;
      find("compare-note").textContent = `The comparison is unavailable: ${(e as Error).message}`;
    }
  }

  function wanted(c: ConfigParams): boolean {
    const cmp = store.compare?.config;
    return !cmp || cmp.n !== c.n || cmp.d !== c.d || cmp.br !== c.br || cmp.bc !== c.bc || cmp.causal !== c.causal;
  }

  return { load, wanted };
}
