// The app's one store: every value that more than one part of the app (app/*.ts) reads or changes, in one object that
// app.ts makes and hands to each part with the page's elements, source, form and views (AppContext). What one part
// keeps to itself (the URL's pending write, the section being drawn, the cards on screen) stays in that part.
import type { CompareDoc } from "../compareDoc";
import type { TraceIndex } from "../derive";
import type { Limits } from "../launch";
import type { ConfigForm } from "../render/configForm";
import type { Sections } from "../sections";
import type { Source } from "../source";
import { INITIAL_STATE, type ViewState } from "../state";
import type { Theme } from "../theme";
import type { Find, Transport } from "../transport";
import type { Trace } from "../types";
import { FALLBACK_LIMITS } from "../validate";

export interface Store {
  /** the one state object every frame is drawn from (state.ts) */
  state: ViewState;
  /** the trace on screen and its index (derive.ts); null before the first */
  trace: Trace | null;
  idx: TraceIndex | null;
  /** the server's /api/limits; the bundle's until it answers */
  limits: Limits;
  theme: Theme;
  /** the comparison on screen; null until one has come */
  compare: CompareDoc | null;
  /** the state a dispatch waits to show (its step's arrays are on their way); a later dispatch or load supersedes it */
  target: ViewState | null;
  /** the step and the trace the views last drew: -1 and null have the next frame draw them again */
  drawnStep: number;
  drawnTrace: Trace | null;
  /** the load and the comparison in flight, each aborted by the next */
  loading: AbortController | null;
  comparing: AbortController | null;
  /** playback's timer to the next step */
  timer: number;
  /** false once the app is destroyed: nothing draws or loads after */
  live: boolean;
}

export function createStore(theme: Theme): Store {
  return {
    state: INITIAL_STATE,
    trace: null,
    idx: null,
    limits: FALLBACK_LIMITS,
    theme,
    compare: null,
    target: null,
    drawnStep: -1,
    drawnTrace: null,
    loading: null,
    comparing: null,
    timer: 0,
    live: true,
  };
}

/** What each part of the app is handed: the store, and the page's elements, source, config form and views. */
export interface AppContext {
  store: Store;
  find: Find;
  source: Source;
  form: ConfigForm;
  views: Sections;
  transport: Transport;
  /** aborted by destroy(): every listener the app adds outside its views is added with it */
  signal: AbortSignal;
}
