// @vitest-environment happy-dom
// The viewer without a browser: createApp on index.html's markup (happy-dom), showing the traces a page holds as an
// export does (source.ts's inlined documents, read through pickSource), driven by its handle, the page's buttons
// and keys. What the handle reports and what the page shows must agree with the trace.
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp, type ViewerHandle } from "../src/app";
import { pickOf } from "../src/picture";
import { pickSource } from "../src/source";
import { stepInterval } from "../src/state";
import type { Trace } from "../src/types";
import { FA2C, LIMITS, TRITON } from "./fixtures";
import { configOf, drawnOn, mountPage } from "./page";

const byId = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const counter = () => byId("step-counter");
const configError = () => byId("config-error");

let app: ViewerHandle | null = null;
afterEach(() => {
  app?.destroy();
  app = null;
  vi.restoreAllMocks();
});

/** The page holding FA2C (opened first) and the fa2-triton trace, ready. */
async function open(traces: Trace[] = [FA2C, TRITON]): Promise<ViewerHandle> {
  const root = mountPage({ limits: LIMITS, traces: traces.map((t) => ({ config: configOf(t), trace: t })) });
  app = createApp(root, pickSource(document));
  await app.ready;
  return app;
}

/** What the page shows of step k of t: the counter, its data, the caption and the code's lines. */
function expectShown(t: Trace, k: number): void {
  const s = t.steps[k]!;
  const c = counter();
  expect(c.dataset.step).toBe(String(k));
  expect(c.dataset.total).toBe(String(t.steps.length));
  expect(c.dataset.op).toBe(s.op);
  expect(c.dataset.kernel).toBe(s.kernel);
  expect(c.dataset.block).toBe(String(s.block));
  expect(c.dataset.j).toBe(s.j === null ? "" : String(s.j));
  const where = Object.entries(s.indices)
    .map(([name, v]) => `${name} = ${v}`)
    .join(" \u00b7 ");
  expect(c.textContent).toBe(`step ${k + 1} / ${t.steps.length}${where}`);
  expect(byId("narrative").textContent).toBe(s.text);
  expect(byId("code-lines").textContent).toBe(`lines ${s.lines[0]}\u2013${s.lines[1]} of ${t.kernel.file}`);
  expect(byId("code-header").textContent).toBe(s.code.split("\n", 1)[0]);
  const pick = pickOf(t, s);
  if (pick !== null) expect(byId<HTMLSelectElement>("block-picker").value).toBe(String(pick));
}

function shuffled(n: number): number[] {
  const ks = Array.from({ length: n }, (_, k) => k);
  for (let k = n - 1; k > 0; k--) {
    const r = Math.floor(Math.random() * (k + 1));
    [ks[k], ks[r]] = [ks[r]!, ks[k]!];
  }
  return ks;
}

describe("createApp on a page that holds its traces", () => {
  it("opens on the first launch held, at its first step", async () => {
    const a = await open();
    expect(a.trace()?.config.algo).toBe("fa2");
    expect(a.state()).toMatchObject({ step: 0, playing: false, speed: 1, config: configOf(FA2C) });
    expectShown(FA2C, 0);
    expect(byId("tagline").textContent).toBe(FA2C.tagline);
    expect(document.title).toBe(`flashviz \u00b7 ${FA2C.tagline}`);
    expect(byId<HTMLInputElement>("config").querySelector<HTMLInputElement>('[name="n"]')!.value).toBe(String(FA2C.config.n));
    expect(byId("loading").hidden).toBe(true);
    expect(configError().hidden).toBe(true);
    // the memory picture laid out the trace's tensors and drew them
    const layout = a.layout();
    expect(layout).not.toBeNull();
    const canvases = [...byId("memory-host").querySelectorAll("canvas")];
    expect(canvases.some((c) => (drawnOn.get(c) ?? []).length > 0)).toBe(true);
  });

  it("goes to every step it is sent to, in any order, and the page shows that step", async () => {
    const a = await open();
    for (const k of shuffled(FA2C.steps.length)) {
      a.goto(k);
      expect(a.state().step).toBe(k);
      expectShown(FA2C, k);
    }
  });

  it("clamps a step outside the trace to its first or last", async () => {
    const a = await open();
    a.goto(FA2C.steps.length + 7);
    expect(a.state().step).toBe(FA2C.steps.length - 1);
    expectShown(FA2C, FA2C.steps.length - 1);
    a.goto(-3);
    expect(a.state().step).toBe(0);
    expectShown(FA2C, 0);
  });

  it("steps by the transport's buttons and by the keys, but not while typing in the form", async () => {
    const a = await open();
    byId("btn-next").click();
    expect(a.state().step).toBe(1);
    document.body.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
    expect(a.state().step).toBe(2);
    byId("btn-prev").click();
    expect(a.state().step).toBe(1);
    document.body.dispatchEvent(new KeyboardEvent("keydown", { key: "End", bubbles: true }));
    expect(a.state().step).toBe(FA2C.steps.length - 1);
    byId("btn-first").click();
    expect(a.state().step).toBe(0);
    byId("btn-last").click();
    expectShown(FA2C, FA2C.steps.length - 1);
    const n = byId("config").querySelector<HTMLInputElement>('[name="n"]')!;
    n.dispatchEvent(new KeyboardEvent("keydown", { key: "Home", bubbles: true }));
    expect(a.state().step).toBe(FA2C.steps.length - 1);
  });

  it("plays: each step schedules the next at the speed's interval, and pausing stops it", async () => {
    const a = await open();
    const timers = vi.spyOn(window, "setTimeout");
    byId<HTMLSelectElement>("speed").value = "2";
    byId("speed").dispatchEvent(new Event("change"));
    expect(a.state().speed).toBe(2);
    byId("btn-play").click();
    expect(a.state().playing).toBe(true);
    expect(byId("btn-play").getAttribute("aria-pressed")).toBe("true");
    expect(byId("btn-play").getAttribute("aria-label")).toBe("Pause (space)");
    for (let k = 1; k < 3; k++) {
      const next = timers.mock.calls.filter(([, ms]) => ms === stepInterval(2)).at(-1);
      expect(next).toBeDefined();
      (next![0] as () => void)();
      expect(a.state().step).toBe(k);
      expectShown(FA2C, k);
    }
    byId("btn-play").click();
    expect(a.state()).toMatchObject({ playing: false, step: 2 });
    expect(byId("btn-play").getAttribute("aria-label")).toBe("Play (space)");
  });

  it("opens another launch the page holds (the Triton kernel): its tensor cores, its blocks, its steps", async () => {
    const a = await open();
    expect(byId("tensor-cores").hidden).toBe(true); // fa2's scalar code has none
    await a.setConfig(configOf(TRITON));
    expect(a.trace()?.config.algo).toBe("fa2-triton");
    expect(a.state()).toMatchObject({ step: 0, config: configOf(TRITON) });
    expectShown(TRITON, 0);
    expect(byId("tensor-cores").hidden).toBe(false);
    expect(byId("tc-hidden").textContent).toContain(TRITON.tensor_cores!.hidden[0]!);
    const options = [...byId<HTMLSelectElement>("block-picker").options].map((o) => o.value);
    expect(options).toEqual(TRITON.blocks.map((b) => String(b.block)));
    // a step whose product runs on the tensor cores shows one element of it as the k-steps add it up
    const k = TRITON.steps.findIndex((s) => s.mma);
    a.goto(k);
    expectShown(TRITON, k);
    const mma = TRITON.steps[k]!.mma!;
    expect(byId("tc-element").textContent).not.toBe("");
    expect(byId("tc-element").textContent).toContain(String(mma.row));
    // the hardware card lays its kernel onto the SMs
    expect(byId("hw-summary").textContent).not.toBe("");
  });

  it("moves to another block at the same phase, and back", async () => {
    const a = await open([TRITON]);
    const k = TRITON.steps.findIndex((s) => s.block === 0 && s.op === "scores");
    a.goto(k);
    await a.pickBlock(1);
    const s = TRITON.steps[a.state().step]!;
    expect(s.block).toBe(1);
    expect(s.op).toBe("scores");
    expectShown(TRITON, a.state().step);
    byId<HTMLSelectElement>("block-picker").value = "0";
    byId("block-picker").dispatchEvent(new Event("change"));
    expect(a.state().step).toBe(k);
  });

  it("says in the config bar what a launch it does not hold is, and keeps the trace on screen", async () => {
    const a = await open();
    a.goto(2);
    await a.setConfig({ ...configOf(FA2C), n: 16 });
    expect(configError().hidden).toBe(false);
    expect(configError().textContent).toContain("this file holds fa2 at N=12 D=4 Br=4 Bc=4 causal seed=0");
    expect(configError().textContent).toContain("(written by flashviz export)");
    expect(a.trace()?.config.n).toBe(12);
    expect(a.state().step).toBe(2);
    expectShown(FA2C, 2);
  });

  it("says a block the file did not record, and stays on the block it shows", async () => {
    const a = await open([FA2C]); // only block 0 recorded
    a.goto(3);
    await a.pickBlock(1);
    expect(configError().hidden).toBe(false);
    expect(configError().textContent).toContain("block 1 was not recorded in this file (flashviz export --block 1 records it)");
    expect(a.state().step).toBe(3);
    expectShown(FA2C, 3);
  });

  it("stops when destroyed: no key, button or handle call moves it", async () => {
    const a = await open();
    a.goto(1);
    a.destroy();
    document.body.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
    byId("btn-next").click();
    a.goto(3);
    expect(a.state().step).toBe(1);
    expect(counter().dataset.step).toBe("1");
  });
});
