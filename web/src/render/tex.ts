// Math typesetting with KaTeX (bundled with its fonts: nothing is fetched from elsewhere). KaTeX is most of
// the page's script, so it loads as its own chunk right after start-up; until it has, a formula shows as
// its plain label and is typeset once KaTeX arrives (main.ts redraws on `texReady`).
import "katex/dist/katex.min.css";

type Katex = typeof import("katex").default;
let katex: Katex | null = null;

/** Resolves once KaTeX is loaded (started by the first call, or by main.ts after the first paint). */
let loading: Promise<void> | null = null;
export function loadTex(): Promise<void> {
  loading ??= import("katex").then((m) => {
    katex = m.default;
  });
  return loading;
}

export function texLoaded(): boolean {
  return katex !== null;
}

const cache = new Map<string, string>();
const escape = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** HTML (with MathML for screen readers) for a TeX string; falls back to the source on an error, or while
 *  KaTeX is still loading. */
export function texHtml(tex: string, display = false): string {
  if (!katex) return `<span class="tex-pending">${escape(tex)}</span>`;
  const key = (display ? "D" : "I") + tex;
  let html = cache.get(key);
  if (html === undefined) {
    html = katex.renderToString(tex, { displayMode: display, throwOnError: false, output: "htmlAndMathml", strict: "ignore" });
    cache.set(key, html);
  }
  return html;
}

/** Set an element's content to typeset TeX, only when it changed. */
export function setTex(el: HTMLElement, tex: string, display = false): void {
  if (el.dataset.tex === tex) return;
  if (!katex) {
    el.textContent = tex;
    delete el.dataset.tex;
    return;
  }
  el.dataset.tex = tex;
  el.innerHTML = texHtml(tex, display);
}

/** For content that cycles through a few formulas (the step's math): each formula is typeset once into its own
 *  child, all stacked in one grid cell, and a step only switches which one is visible. Visibility needs no
 *  layout, where replacing the formula's ~150 nodes relaid them out on every step. `plain` is shown until
 *  KaTeX has loaded. */
export function setTexCached(el: HTMLElement, tex: string, display = false, plain = tex): void {
  if (el.dataset.tex === tex) return;
  el.classList.add("tex-stack");
  if (!katex) {
    delete el.dataset.tex;
    let p = el.querySelector<HTMLElement>(":scope > .tex-pending");
    if (!p) {
      p = document.createElement("span");
      p.className = "tex-pending on";
      el.append(p);
    }
    p.textContent = plain;
    return;
  }
  el.querySelector(":scope > .tex-pending")?.remove();
  el.dataset.tex = tex;
  let on: HTMLElement | null = null;
  for (const c of Array.from(el.children) as HTMLElement[]) {
    const match = c.dataset.src === tex;
    if (match) on = c;
    c.classList.toggle("on", match);
    c.setAttribute("aria-hidden", String(!match));
  }
  if (!on) {
    on = document.createElement("span");
    on.dataset.src = tex;
    on.className = "on";
    on.innerHTML = texHtml(tex, display);
    el.append(on);
  }
}
