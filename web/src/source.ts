// Where the page's documents come from (the seam between the one page and its three homes): the server that served
// it (`flashviz serve`: /api/*), the documents inlined in the page (`flashviz export`: an HTML file opened from disk,
// no network), or those plus the notebook widget that holds the page in an iframe (`flashviz.show`: a launch the page
// does not hold is asked of Python through the widget's model). main.ts asks its Source, never the network directly.
import {
  ApiError,
  fetchCompare,
  fetchCurves,
  fetchLadder,
  fetchLimits,
  fetchProfile,
  fetchStepArrays,
  fetchTrace,
  parseTrace,
  schemaProblem,
  TRACE_SCHEMA,
} from "./api";
import type { CompareDoc, Curves } from "./compareDoc";
import { got } from "./echo";
import { isLadder, type LadderDoc } from "./ladderDoc";
import type { ConfigParams, Limits } from "./launch";
import { attachArrays } from "./onDemand";
import { sameConfig, toSearch } from "./state";
import { traceProblem } from "./traceCheck";
import { compareProblem } from "./traceShape";
import type { Trace } from "./types";

export interface Source {
  /** the page's /api/limits: the ranges and the algorithms it offers */
  limits(): Promise<Limits | null>;
  trace(c: ConfigParams, record?: number | null, signal?: AbortSignal): Promise<Trace>;
  compare(c: ConfigParams, signal?: AbortSignal): Promise<CompareDoc>;
  /** the comparison's per-phase curves, for a compare document that came without them (the server's) */
  curves(c: ConfigParams, doc: CompareDoc, signal?: AbortSignal): Promise<Curves>;
  profile(): Promise<unknown | null>;
  /** the recorded ladder run (GET /api/ladder's document, or the one inlined in the page), or the one-line reason
   *  there is none */
  ladder(): Promise<LadderDoc | string>;
  /** the query string the page opens with: the URL's, or (inlined documents) the first launch the page holds */
  search(): string;
  /** whether the page keeps its state in the URL (a page from a server; not one from disk or inside a widget) */
  readonly url: boolean;
  /** a host (the widget) asks the page to show a launch: main.ts registers what loads it */
  onOpen(open: (c: ConfigParams) => void): void;
  /** the page tells its host what it shows */
  shown(c: ConfigParams, step: number): void;
  /** a launch (or a block of one) that this page's documents do not hold and a server or the notebook computed, said
   *  in one line ("block 0 is not in t.json, …: the server computed it"); null when it is a document held, or when
   *  there are none (the server's page) */
  provenance?(c: ConfigParams, record: number | null): string | null;
}

/** The server that served the page (`flashviz serve`). A large launch comes without its steps' arrays, which
 *  onDemand.ts fetches as the steps are shown (docs/trace-schema.md, "Arrays on demand"). */
export function serverSource(): Source {
  return {
    limits: () => fetchLimits(),
    async trace(c, record = null, signal) {
      const t = await fetchTrace(c, record, signal, "auto");
      attachArrays(t, (steps, sig) => fetchStepArrays(c, record, steps, sig));
      return t;
    },
    compare: (c, signal) => fetchCompare(c, signal),
    curves: (c, doc, signal) => fetchCurves(c, Object.keys(doc.algorithms), signal),
    profile: () => fetchProfile(),
    ladder: () => fetchLadder(),
    search: () => location.search,
    url: true,
    onOpen: () => {},
    shown: () => {},
  };
}

/** What `flashviz export` and the widget inline: an index (limits, the launches held, whether a host answers the
 *  rest) in `<script type="application/json" id="flashviz-data">`, and one element per trace and comparison, each
 *  read only when asked for. */
interface Index {
  limits: Limits;
  traces: { id: string; config: ConfigParams; recorded: number[]; blocks: number; inputs?: "random" | "file" }[];
  /** the trace file the page shows (`flashviz view t.json`), for messages */
  file?: string | null;
  compares: { id: string; n: number; d: number; br: number; bc: number; causal: boolean }[];
  /** who wrote the page, said when a launch is not held: "flashviz export", "the notebook widget" */
  origin: string;
  /** a host (the widget) answers launches the page does not hold */
  host: boolean;
  /** the server that served the page answers them (`flashviz view`: a trace file, then any launch) */
  server: boolean;
  /** the element holding the recorded ladder run, or null when none shipped with the flashviz that wrote the page */
  ladder?: string | null;
}

export const DATA_ID = "flashviz-data";
/** how to get a good file: said with every problem of an inlined trace */
const AGAIN = "write it again with this version's `flashviz export`";

/** The page's Source: inlined documents when the page holds any, else the server. */
export function pickSource(doc: Document): Source {
  const index = doc.getElementById(DATA_ID);
  if (!index) return serverSource();
  let parsed: Index;
  try {
    parsed = JSON.parse(index.textContent ?? "") as Index;
  } catch {
    return brokenSource("the documents inlined in this page are not JSON: export it again");
  }
  return inlineSource(doc, parsed);
}

function brokenSource(why: string): Source {
  const fail = () => Promise.reject(new ApiError(0, why, null));
  return {
    ...serverSource(),
    limits: () => Promise.resolve(null),
    trace: fail,
    compare: fail,
    profile: () => Promise.resolve(null),
    ladder: () => Promise.resolve(why),
    url: false,
  };
}

function held(doc: Document, id: string): string {
  const el = doc.getElementById(id);
  if (!el) throw new ApiError(0, `this page lost its document ${id}: export it again`, null);
  return el.textContent ?? "";
}

/** The one config field in which `c` differs from every launch held (for the message), or null. */
function differing(c: ConfigParams, held: ConfigParams[]): string {
  const fields = ["algo", "n", "d", "br", "bc", "causal", "seed", "scale"];
  for (const f of fields) if (!held.some((h) => h[f] === c[f])) return f;
  return "algo";
}

function describe(h: ConfigParams, own = false): string {
  const scale = h.scale === null ? "" : ` scale=${h.scale}`;
  return `N=${h.n} D=${h.d} Br=${h.br} Bc=${h.bc}${h.causal ? " causal" : ""} ${own ? "on its own inputs" : `seed=${h.seed}`}${scale}`;
}

/** The launches held, in words: "fa1, fa2 at N=8 D=4 Br=4 Bc=4 seed=0" (grouped by launch); `own`: those whose
 *  inputs came from a file, not from the seed. */
function heldWords(configs: ConfigParams[], own: boolean[] = []): string {
  const groups = new Map<string, string[]>();
  configs.forEach((c, k) => {
    const key = describe(c, !!own[k]);
    groups.set(key, [...(groups.get(key) ?? []), c.algo]);
  });
  return [...groups].map(([launch, algos]) => `${algos.join(", ")} at ${launch}`).join("; ");
}

function inlineSource(doc: Document, index: Index): Source {
  const traces = new Map<string, Trace>();
  const compares = new Map<string, CompareDoc>();
  let opener: (c: ConfigParams) => void = () => {};
  const host = index.host ? hostChannel((c) => opener(c)) : null;
  const server = index.server ? serverSource() : null;
  const first = index.traces[0]?.config ?? null;

  function readTrace(id: string): Trace {
    let t = traces.get(id);
    if (!t) {
      try {
        t = parseTrace(held(doc, id));
      } catch (e) {
        if (e instanceof ApiError) throw e;
        throw new ApiError(0, `this file's trace ${id} is not whole JSON (truncated?); this page reads ${TRACE_SCHEMA} (${AGAIN})`, null);
      }
      const problem = schemaProblem(t, "this file holds", AGAIN, (u) => brokenTrace(u, id, index.limits));
      if (problem) throw new ApiError(0, problem, null);
      traces.set(id, t);
    }
    return t;
  }

  return {
    limits: () => (server ? server.limits() : Promise.resolve(index.limits)),
    async trace(c, record = null, signal) {
      const hit = index.traces.find((h) => sameConfig(h.config, c) && (record === null || h.recorded.includes(record)));
      if (hit) return readTrace(hit.id);
      if (host) return parseChecked(await host.ask("trace", { config: c, block: record }, signal));
      if (server) return server.trace(c, record, signal);
      const configs = index.traces.map((h) => h.config);
      if (configs.some((h) => sameConfig(h, c)) && record !== null) {
        throw new ApiError(0, `block ${record} was not recorded in this file (${index.origin} --block ${record} records it)`, "block");
      }
      const field = differing(c, configs);
      throw new ApiError(
        0,
        `this file holds ${heldWords(configs)} only (written by ${index.origin}); other launches need \`flashviz serve\` (or export them)`,
        field === "algo" ? null : field,
      );
    },
    async compare(c, signal) {
      const hit = index.compares.find((h) => h.n === c.n && h.d === c.d && h.br === c.br && h.bc === c.bc && h.causal === c.causal);
      if (hit) {
        let cmp = compares.get(hit.id);
        if (!cmp) {
          cmp = checkedCompare(held(doc, hit.id), `this file's comparison ${hit.id}`, AGAIN);
          compares.set(hit.id, cmp);
        }
        return cmp;
      }
      if (host)
        return checkedCompare(
          await host.ask("compare", { config: c }, signal),
          "the notebook's comparison",
          "pip install the same flashviz in the kernel",
        );
      if (server) return server.compare(c, signal);
      throw new ApiError(0, `not held in this file (written by ${index.origin}); \`flashviz serve\` computes it for any launch`, null);
    },
    curves(c, doc, signal) {
      if (server) return server.curves(c, doc, signal);
      const why = `not held in this file (written by ${index.origin})`;
      return Promise.resolve(Object.fromEntries(Object.keys(doc.algorithms).map((a) => [a, { skipped: why }])));
    },
    profile: () => (server ? server.profile() : Promise.resolve(null)),
    ladder() {
      if (index.ladder) return Promise.resolve(readLadder(held(doc, index.ladder)));
      return server ? server.ladder() : Promise.resolve(`none shipped with the flashviz that wrote this file (${index.origin})`);
    },
    // the first launch held, on its first recorded block (a file written with --block 1 holds block 1 only)
    search: () => (location.search || !first ? location.search : toSearch(first, 0, index.traces[0]?.recorded[0] ?? 0, 1, "")),
    url: !!server,
    onOpen(open) {
      opener = open;
    },
    shown(c, step) {
      host?.tell({ type: "flashviz:shown", config: c, step });
    },
    provenance(c, record) {
      const by = host ? "the notebook" : server ? "the server" : null; // without either, trace() refused it
      if (!by || !index.traces.length) return null;
      if (index.traces.some((h) => sameConfig(h.config, c) && (record === null || h.recorded.includes(record)))) return null;
      const file = index.file ?? "this page";
      const same = index.traces.filter((h) => sameConfig(h.config, c));
      const what = same.length && record !== null ? `block ${record}` : "this launch";
      const own = index.traces.map((h) => h.inputs === "file");
      const holds = heldWords(
        index.traces.map((h) => h.config),
        own,
      );
      const blocks = same.length ? ` (block ${same[0]!.recorded.join(", ")})` : "";
      // a trace of its own inputs: the server (or the notebook) draws them from the seed instead
      const inputs = own.some(Boolean) ? `, on random inputs from seed ${c.seed}, not the file's own` : "";
      return `${what} is not in ${file}, which holds ${holds}${blocks}: ${by} computed it${inputs}`;
    },
  };
}

/** A comparison document a page holds or the notebook sent, checked before its views read it (traceShape.ts): a broken
 *  one is said in one line ("this file's comparison flashviz-compare-0 is broken: algorithms must be ..."). */
function checkedCompare(text: string, what: string, again: string): CompareDoc {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new ApiError(0, `${what} is not JSON (${again})`, null);
  }
  const why = compareProblem(doc);
  if (why) throw new ApiError(0, `${what} is broken: ${why} (${again})`, null);
  return doc as CompareDoc;
}

function readLadder(text: string): LadderDoc | string {
  try {
    const doc = JSON.parse(text) as unknown;
    return isLadder(doc) ? doc : "the ladder document in this file is not a flashviz.ladder/1 run";
  } catch {
    return "the ladder document in this file is not JSON";
  }
}

function parseChecked(text: string): Trace {
  let t: Trace;
  try {
    t = parseTrace(text);
  } catch {
    throw new ApiError(0, "unexpected answer from the notebook: not JSON", null);
  }
  const problem = schemaProblem(t, "the notebook sent", "pip install the same flashviz in the kernel", traceProblem);
  if (problem) throw new ApiError(0, problem, null);
  return t;
}

/** What is wrong with the structure of an inlined trace (traceCheck.ts), or an algorithm the page does not offer, in
 *  one line saying it is this file's trace that is broken; null when it can be shown. */
function brokenTrace(t: Trace, id: string, limits: Limits): string | null {
  let why = traceProblem(t);
  const names = limits.algos?.map((a) => a.name); // absent: a page that lists none (any name goes)
  if (!why && names && !names.includes(t.config.algo))
    why = `config.algo must be one of ${names.join(", ") || "the algorithms of the flashviz that wrote it"} (got ${got(t.config.algo)})`;
  return why ? `this file's trace ${id} is broken: ${why}; ${AGAIN}` : null;
}

/** Requests to the widget that holds the page (window.parent), by postMessage; answers match by id. */
function hostChannel(open: (c: ConfigParams) => void) {
  let next = 0;
  const waiting = new Map<number, { resolve: (text: string) => void; reject: (e: Error) => void }>();
  window.addEventListener("message", (e: MessageEvent) => {
    if (e.source !== window.parent) return;
    const m = e.data as {
      type?: string;
      id?: number;
      ok?: boolean;
      text?: string;
      detail?: string;
      field?: string | null;
      config?: ConfigParams;
    };
    if (m?.type === "flashviz:answer" && typeof m.id === "number") {
      const w = waiting.get(m.id);
      waiting.delete(m.id);
      if (!w) return;
      if (m.ok && typeof m.text === "string") w.resolve(m.text);
      else w.reject(new ApiError(422, String(m.detail ?? "the notebook could not compute this launch"), m.field ?? null));
    } else if (m?.type === "flashviz:open" && m.config) {
      open(m.config);
    }
  });
  const tell = (message: unknown) => window.parent.postMessage(message, "*");
  return {
    tell,
    ask(kind: "trace" | "compare", params: Record<string, unknown>, signal?: AbortSignal): Promise<string> {
      const id = ++next;
      return new Promise<string>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        signal?.addEventListener("abort", () => {
          waiting.delete(id);
          reject(new DOMException("aborted", "AbortError"));
        });
        tell({ type: "flashviz:ask", id, kind, ...params });
      });
    },
  };
}
