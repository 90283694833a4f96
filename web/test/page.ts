// The page for the app's unit tests: index.html's markup mounted in happy-dom's document, a canvas whose 2D context
// records the calls made to it (happy-dom draws nothing), and a Source that holds documents as an export does
// (source.ts's inlined documents: the page's own seam, read through pickSource).
import html from "../index.html?raw";
import type { ConfigParams, Limits } from "../src/launch";
import { DATA_ID } from "../src/source";
import type { Trace } from "../src/types";

/** What a canvas was asked to draw: the name of each method called, in order (fillRect, drawImage, fillText, ...). */
export const drawnOn = new WeakMap<object, string[]>();

function context2d(canvas: object): CanvasRenderingContext2D {
  const calls: string[] = [];
  drawnOn.set(canvas, calls);
  const props: Record<string | symbol, unknown> = { canvas };
  return new Proxy(props, {
    get(target, key) {
      if (key in target) return target[key];
      if (key === "measureText")
        return (text: string) => ({ width: 7 * String(text).length, actualBoundingBoxAscent: 8, actualBoundingBoxDescent: 2 });
      if (key === "getImageData" || key === "createImageData")
        return (...a: number[]) => ({
          width: a[2] ?? a[0] ?? 1,
          height: a[3] ?? a[1] ?? 1,
          data: new Uint8ClampedArray(4 * (a[2] ?? a[0] ?? 1) * (a[3] ?? a[1] ?? 1)),
        });
      if (key === "getTransform") return () => ({ a: 1, b: 0, c: 0, d: 1, e: 0, f: 0 });
      if (key === "createLinearGradient" || key === "createPattern" || key === "createRadialGradient") return () => ({ addColorStop() {} });
      if (key === "getLineDash") return () => [];
      if (typeof key === "string") return (..._a: unknown[]) => void calls.push(key);
      return undefined;
    },
    set(target, key, value) {
      target[key] = value;
      return true;
    },
  }) as unknown as CanvasRenderingContext2D;
}

/** `new Option(...)`, which happy-dom lacks: an <option> as the browser's constructor makes it. */
function installOption(): void {
  if (typeof globalThis.Option === "function") return;
  globalThis.Option = function Option(text = "", value?: string, defaultSelected = false, selected = false) {
    const o = document.createElement("option");
    o.text = text;
    if (value !== undefined) o.value = value;
    o.defaultSelected = defaultSelected;
    o.selected = selected;
    return o;
  } as unknown as typeof Option;
}

/** Mount index.html's body (without its script) in the document; `held` becomes the page's inlined documents. */
export function mountPage(held: { limits: Limits; traces: { config: ConfigParams; trace: Trace }[] } | null = null): HTMLElement {
  installOption();
  const contexts = new WeakMap<object, CanvasRenderingContext2D>();
  const getContext = function (this: HTMLCanvasElement, kind: string) {
    if (kind !== "2d") return null;
    let c = contexts.get(this);
    if (!c) {
      c = context2d(this);
      contexts.set(this, c);
    }
    return c;
  };
  HTMLCanvasElement.prototype.getContext = getContext as typeof HTMLCanvasElement.prototype.getContext;
  if (typeof OffscreenCanvas !== "undefined")
    OffscreenCanvas.prototype.getContext = getContext as unknown as typeof OffscreenCanvas.prototype.getContext;
  // a standards-mode document, as index.html's doctype makes it (KaTeX refuses quirks mode)
  if (!document.compatMode) Object.defineProperty(document, "compatMode", { value: "CSS1Compat", configurable: true });
  if (!document.doctype) document.insertBefore(document.implementation.createDocumentType("html", "", ""), document.documentElement);
  const body = html.slice(html.indexOf("<body>") + "<body>".length, html.indexOf("</body>")).replace(/<script[\s\S]*?<\/script>/g, "");
  document.body.innerHTML = body;
  if (held) {
    const index = {
      limits: held.limits,
      origin: "flashviz export",
      host: false,
      server: false,
      traces: held.traces.map(({ config, trace }, k) => ({
        id: `flashviz-trace-${k}`,
        config,
        recorded: trace.config.recorded_blocks,
        blocks: trace.blocks.length,
      })),
      compares: [],
    };
    const script = (id: string, text: string) => {
      const el = document.createElement("script");
      el.type = "application/json";
      el.id = id;
      el.textContent = text;
      document.body.append(el);
    };
    script(DATA_ID, JSON.stringify(index));
    held.traces.forEach(({ trace }, k) => {
      script(`flashviz-trace-${k}`, JSON.stringify(trace));
    });
  }
  return document.body;
}

/** The launch a trace was made with, as the page's config bar holds it. */
export function configOf(t: Trace): ConfigParams {
  const c = t.config;
  return { algo: c.algo, n: c.n, d: c.d, br: c.br, bc: c.bc, seed: c.seed ?? 0, scale: null, causal: c.causal };
}
