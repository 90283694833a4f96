// The Source of a page with its documents inlined (flashviz export): it answers from the elements it holds, and says
// in one line what it holds, or what is wrong with a trace, for anything else. The document is a stand-in holding
// only what source.ts reads (getElementById → textContent).
import { describe, expect, it, vi } from "vitest";
import { ApiError, TRACE_SCHEMA } from "../src/api";
import type { ConfigParams } from "../src/launch";
import { DATA_ID, pickSource } from "../src/source";
import { FA1, FA2C, LIMITS } from "./fixtures";

const at = (algo: string): ConfigParams => ({ algo, n: 8, d: 4, br: 4, bc: 4, seed: 0, scale: null, causal: false });

function page(traces: Record<string, string>, configs: Record<string, ConfigParams>): Document {
  const index = {
    limits: { algos: LIMITS.algos },
    origin: "flashviz export",
    host: false,
    server: false,
    traces: Object.keys(traces).map((id) => ({ id, config: configs[id], recorded: [0, 1], blocks: 2 })),
    compares: [],
  };
  const elements: Record<string, string> = { [DATA_ID]: JSON.stringify(index), ...traces };
  return { getElementById: (id: string) => (id in elements ? { textContent: elements[id] } : null) } as unknown as Document;
}

async function problem(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return e as ApiError;
  }
  throw new Error("the Source answered");
}

describe("inlined documents", () => {
  const fa1 = { ...FA1, config: { ...FA1.config, algo: "fa1" } };
  const fa2 = { ...FA2C, config: { ...FA2C.config, algo: "fa2" } };
  const doc = page({ t0: JSON.stringify(fa1), t1: JSON.stringify(fa2) }, { t0: at("fa1"), t1: at("fa2") });

  it("answers the launches it holds, from their elements", async () => {
    vi.stubGlobal("location", { search: "" }); // a file opened with no query
    const source = pickSource(doc);
    expect(source.url).toBe(false);
    expect((await source.trace(at("fa2"))).config.algo).toBe("fa2");
    expect((await source.trace(at("fa1"))).config.algo).toBe("fa1");
    expect(source.search()).toContain("algo=fa1"); // opens with the first launch held
    vi.unstubAllGlobals();
  });

  it("says what it holds for any other launch, naming the field that differs", async () => {
    const err = await problem(pickSource(doc).trace({ ...at("fa2"), n: 16 }));
    expect(err.detail).toContain("this file holds fa1, fa2 at N=8 D=4 Br=4 Bc=4 seed=0 only (written by flashviz export)");
    expect(err.field).toBe("n");
    expect(err.detail).not.toContain("\n");
    const other = await problem(pickSource(doc).trace(at("standard")));
    expect(other.field).toBeNull();
  });

  it.each([
    ["another version", JSON.stringify({ ...FA2C, schema: "flashviz.trace/1" }), "this file holds a trace of schema flashviz.trace/1"],
    ["truncated", JSON.stringify(FA2C).slice(0, 500), "is not whole JSON (truncated?)"],
    ["not a trace", JSON.stringify({ schema: "flashviz.profile/1" }), "not a flashviz trace"],
  ])("a trace of %s is one line naming the version the page reads", async (_name, text, says) => {
    const err = await problem(pickSource(page({ t0: text }, { t0: at("fa2") })).trace(at("fa2")));
    expect(err.detail).toContain(says);
    expect(err.detail).toContain(TRACE_SCHEMA);
    expect(err.detail).not.toContain("\n");
  });
});
