// Playback: the state's transitions (state.ts's reduce) put on screen, a large launch's step once the arrays it reads
// are here (onDemand.ts), the timer that plays the steps, another block picked, and the keys.
import type { ConfigParams } from "../launch";
import { arraysFor } from "../onDemand";
import { type Action, keyAction, pickStep, reduce, stepInterval, type ViewState } from "../state";
import type { Drawing } from "./drawing";
import type { Landing } from "./loading";
import type { AppContext } from "./store";

export interface Playback {
  /** any transition of state.ts (next, prev, toggle, speed, goto, ...) */
  dispatch(a: Action): void;
  /** the timer to the next step, while playing */
  schedule(): void;
  /** watch another block at the same phase; its values are fetched if the trace did not record them */
  pickBlock(b: number): Promise<void>;
}

/** Playback on `ctx`'s page, drawn by `draw`; `load` fetches a block the trace did not record. */
export function createPlayback(ctx: AppContext, draw: Drawing, load: (c: ConfigParams, to: Landing) => Promise<void>): Playback {
  const { store, form } = ctx;

  function dispatch(a: Action): void {
    const t = store.trace;
    if (!t || !store.live) return;
    const next = reduce(store.target ?? store.state, a, t.steps.length);
    // a large launch's step is drawn once the arrays it reads are here (onDemand.ts); a later dispatch supersedes it
    const wait = arraysFor(t, next.step);
    store.target = wait ? next : null;
    if (!wait) {
      advance(next);
      return;
    }
    wait.then(
      () => {
        if (store.target !== next || store.trace !== t || !store.live) return;
        store.target = null;
        advance(next);
      },
      (e: unknown) => {
        if (store.target !== next) return;
        store.target = null;
        form.serverError(`could not fetch the arrays of step ${next.step + 1}: ${(e as Error).message}`, null);
      },
    );
  }

  function advance(next: ViewState): void {
    const before = store.state;
    store.state = next;
    const forwardOne = store.state.step === before.step + 1;
    if (store.state.step !== store.drawnStep || store.state.playing !== before.playing || store.state.speed !== before.speed) {
      if (!draw.drawn(forwardOne)) {
        // a step a view cannot read: back to the one before (drawn again: the views may have been half updated)
        store.state = { ...before, playing: false };
        store.drawnStep = -1;
        try {
          draw.render();
        } catch {
          // the step before was drawn once; whatever fails now, the message already stands
        }
      }
    }
    schedule();
  }

  function schedule(): void {
    clearTimeout(store.timer);
    if (!store.state.playing || !store.trace || !store.live) return;
    store.timer = window.setTimeout(() => dispatch({ type: "next" }), stepInterval(store.state.speed));
  }

  function pickBlock(b: number): Promise<void> {
    const t = store.trace;
    if (!t) return Promise.resolve();
    const k = pickStep(t, store.state.step, b);
    if (k >= 0) {
      dispatch({ type: "goto", step: k });
      return Promise.resolve();
    }
    const phase = t.steps[store.state.step]?.phase ?? 0;
    return load(store.state.config, { block: b, phase });
  }

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
      if (!a || !store.trace) return;
      e.preventDefault();
      dispatch(a);
    },
    { signal: ctx.signal },
  );

  return { dispatch, schedule, pickBlock };
}
