// The calls the page makes (trace, its arrays, limits, compare, curves, profile, ladder), all to the server that
// served it (relative URLs: any mount works).
import { ownArrayProblem, prepareArrays } from "./codec";
import type { CompareDoc, Curves } from "./compareDoc";
import { cut } from "./echo";
import { isLadder, type LadderDoc } from "./ladderDoc";
import type { ConfigParams, Limits } from "./launch";
import { apiQuery } from "./state";
import type { Trace } from "./types";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly field: string | null,
  ) {
    super(detail);
  }
}

async function errorOf(res: Response): Promise<ApiError> {
  let detail = `${res.status} ${res.statusText || "error"}`;
  let field: string | null = null;
  try {
    const body = (await res.json()) as { detail?: unknown; field?: unknown };
    if (typeof body.detail === "string") detail = body.detail;
    else if (Array.isArray(body.detail)) {
      // FastAPI's own validation errors: [{loc: [..., name], msg}]
      const first = body.detail[0] as { loc?: unknown[]; msg?: string } | undefined;
      if (first?.msg) {
        const name = first.loc?.[first.loc.length - 1];
        detail = name !== undefined ? `${String(name)}: ${first.msg}` : first.msg;
        field = typeof name === "string" ? name : null;
      }
    }
    if (typeof body.field === "string") field = body.field;
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(res.status, detail, field);
}

/** A Trace from its JSON text. null in a numeric array means −∞; a row with no finite score (the kernel's
 *  exp(−∞ − (−∞))) writes NaN and +∞ as the strings "NaN" and "Infinity" inside arrays (docs/trace-schema.md),
 *  read back here as the numbers they stand for. Only array items are read so; the fast path skips the reviver. */
export function parseTrace(text: string): Trace {
  if (!text.includes('"NaN"') && !text.includes('"Infinity"')) return JSON.parse(text) as Trace;
  return JSON.parse(text, function (this: unknown, _key: string, value: unknown) {
    if (Array.isArray(this) && typeof value === "string") {
      if (value === "NaN") return Number.NaN;
      if (value === "Infinity") return Number.POSITIVE_INFINITY;
    }
    return value;
  }) as Trace;
}

/** The one schema this page reads (docs/trace-schema.md). A trace of another version is refused, not read half-way. */
export const TRACE_SCHEMA = "flashviz.trace/4";

/** What is wrong with a trace, in one line, or null. `from` says where it came from (source.ts: a file, the
 *  notebook), `again` how to get a good one. A trace of this version also has its compact arrays checked and made
 *  lazy here (codec.ts: each decoded the first time the page reads it). `structure`, when given, judges the rest of
 *  the trace (traceCheck.ts) after each array on its own and before the references between arrays are followed,
 *  and its line is returned as it is. */
export function schemaProblem(
  t: unknown,
  from = "the server sent",
  again = "rebuild the viewer or update flashviz",
  structure?: (t: Trace) => string | null,
): string | null {
  const schema = t && typeof t === "object" ? (t as { schema?: unknown }).schema : undefined;
  if (typeof schema !== "string" || !schema.startsWith("flashviz.trace/")) {
    const found = cut(JSON.stringify(schema ?? null));
    if (from === "the server sent") return `unexpected response: not a flashviz trace (schema ${found})`;
    return `${from} something that is not a flashviz trace (schema ${found}); this page reads ${TRACE_SCHEMA} (${again})`;
  }
  if (schema !== TRACE_SCHEMA) {
    return `${from} a trace of schema ${cut(schema)}; this page reads ${TRACE_SCHEMA} only (${again})`;
  }
  const broken = (bad: string) =>
    from === "the server sent" ? `unexpected response: ${bad}` : `${from} a broken trace: ${bad} (${again})`;
  const own = ownArrayProblem(t as Trace);
  if (own) return broken(own);
  const wrong = structure?.(t as Trace);
  if (wrong) return wrong;
  const bad = prepareArrays(t as Trace);
  if (bad) return broken(bad);
  return null;
}

/** GET /api/trace. `arrays`: "auto" asks the server to leave a large launch's step arrays out (docs/trace-schema.md,
 *  "Arrays on demand"; onDemand.ts fetches them with `fetchStepArrays`). */
export async function fetchTrace(
  c: ConfigParams,
  record: number | null = null,
  signal?: AbortSignal,
  arrays: "all" | "auto" = "all",
): Promise<Trace> {
  const res = await fetch(`api/trace?${traceQuery(c, record, arrays)}`, { signal, headers: { Accept: "application/json" } });
  if (!res.ok) throw await errorOf(res);
  let t: Trace;
  try {
    t = parseTrace(await res.text());
  } catch {
    throw new ApiError(res.status, "unexpected response: not JSON", null);
  }
  const problem = schemaProblem(t);
  if (problem) throw new ApiError(res.status, problem, null);
  return t;
}

function traceQuery(c: ConfigParams, record: number | null, arrays: "all" | "auto"): string {
  return arrays === "all" ? apiQuery(c, record) : `${apiQuery(c, record)}&arrays=${arrays}`;
}

/** GET /api/trace/arrays: the arrays of `steps` of the trace /api/trace answered for this query (`{"steps": [...]}`).
 *  The server answers from its cache of that trace; when it no longer holds it (404, field "query"), the trace is
 *  asked for again (the engine runs again: the same numbers) and the arrays once more. */
export async function fetchStepArrays(c: ConfigParams, record: number | null, steps: number[], signal?: AbortSignal): Promise<unknown> {
  const url = `api/trace/arrays?${apiQuery(c, record)}&steps=${steps.join(",")}`;
  const headers = { Accept: "application/json" };
  let res = await fetch(url, { signal, headers });
  if (res.status === 404) {
    const again = await fetch(`api/trace?${traceQuery(c, record, "auto")}`, { signal, headers });
    if (!again.ok) throw await errorOf(again);
    await again.arrayBuffer();
    res = await fetch(url, { signal, headers });
  }
  if (!res.ok) throw await errorOf(res);
  try {
    return (await res.json()) as unknown;
  } catch {
    throw new ApiError(res.status, "unexpected response to the step arrays asked for: not JSON", null);
  }
}

export async function fetchLimits(signal?: AbortSignal): Promise<Limits | null> {
  try {
    const res = await fetch("api/limits", { signal, headers: { Accept: "application/json" } });
    if (!res.ok) return null;
    return (await res.json()) as Limits;
  } catch {
    return null;
  }
}

/** GET /api/curves: each algorithm's launch-wide counters per phase (the comparison's animation). When the server
 *  cannot give them (busy, gone), every algorithm says why instead: the table and the chart do not need them. */
export async function fetchCurves(c: ConfigParams, names: string[], signal?: AbortSignal): Promise<Curves> {
  const q = new URLSearchParams({ n: String(c.n), d: String(c.d), br: String(c.br), bc: String(c.bc) });
  if (c.causal) q.set("causal", "true");
  let why: string;
  try {
    const res = await fetch(`api/curves?${q}`, { signal, headers: { Accept: "application/json" } });
    if (res.ok) return (await res.json()) as Curves;
    why = (await errorOf(res)).detail;
  } catch (e) {
    if (signal?.aborted || (e instanceof DOMException && e.name === "AbortError")) throw e;
    why = `the server did not answer (${(e as Error).message})`;
  }
  return Object.fromEntries(names.map((a) => [a, { skipped: why }]));
}

export async function fetchCompare(c: ConfigParams, signal?: AbortSignal): Promise<CompareDoc> {
  const q = new URLSearchParams({ n: String(c.n), d: String(c.d), br: String(c.br), bc: String(c.bc) });
  if (c.causal) q.set("causal", "true");
  const res = await fetch(`api/compare?${q}`, { signal, headers: { Accept: "application/json" } });
  if (!res.ok) throw await errorOf(res);
  return (await res.json()) as CompareDoc;
}

/** GET /api/profile: the GPU profile the server was started with, or null (404: none given). */
export async function fetchProfile(signal?: AbortSignal): Promise<unknown | null> {
  try {
    const res = await fetch("api/profile", { signal, headers: { Accept: "application/json" } });
    if (res.status === 404) return null;
    if (!res.ok) return null;
    return (await res.json()) as unknown;
  } catch {
    return null;
  }
}

/** GET /api/ladder: the recorded run, or the server's one-line reason there is none. */
export async function fetchLadder(signal?: AbortSignal): Promise<LadderDoc | string> {
  try {
    const res = await fetch("api/ladder", { signal, headers: { Accept: "application/json" } });
    const doc = (await res.json()) as unknown;
    if (!res.ok) {
      const detail = doc && typeof doc === "object" && "detail" in doc ? String((doc as { detail: unknown }).detail) : "";
      return detail || `the server answered ${res.status}`;
    }
    return isLadder(doc) ? doc : "the server's ladder document is not a flashviz.ladder/1 run";
  } catch {
    return "the ladder could not be fetched";
  }
}
