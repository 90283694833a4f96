// The two calls the page makes, both to the server that served it (relative URLs: any mount works).
import { apiQuery, type ConfigParams } from "./state";
import type { Limits, Trace } from "./types";

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

export async function fetchTrace(c: ConfigParams, record: number | null = null, signal?: AbortSignal): Promise<Trace> {
  const res = await fetch(`api/trace?${apiQuery(c, record)}`, { signal, headers: { Accept: "application/json" } });
  if (!res.ok) throw await errorOf(res);
  const t = (await res.json()) as Trace;
  if (typeof t.schema !== "string" || !t.schema.startsWith("flashviz.trace/")) {
    throw new ApiError(res.status, `unexpected response: not a flashviz trace (schema ${String(t.schema)})`, null);
  }
  return t;
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
