// Math typesetting with KaTeX (bundled with its fonts: nothing is fetched from elsewhere). KaTeX is most of
// the page's script, so it loads as its own chunk right after start-up; until it has, a formula shows as
// its plain label and is typeset once KaTeX arrives (main.ts renders again once `loadTex()` has resolved).
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

/** KaTeX's HTML (with MathML for screen readers) for a TeX string, or null while KaTeX is loading. The TeX may
 *  come from a trace (a step's `tex`, an algorithm's idea): trust is off, so \\href, \\url, \\htmlClass and the
 *  like render as errors, never as links or attributes; an error shows the source in KaTeX's error colour. */
function texHtml(tex: string, display: boolean): string | null {
  if (!katex) return null;
  const key = (display ? "D" : "I") + tex;
  let html = cache.get(key);
  if (html === undefined) {
    html = katex.renderToString(tex, {
      displayMode: display,
      throwOnError: false,
      output: "htmlAndMathml",
      strict: "ignore",
      trust: false,
      maxSize: 20,
      maxExpand: 200,
    });
    cache.set(key, html);
  }
  return html;
}

/** Typeset TeX into `el` (KaTeX's output: the only HTML the page inserts); its plain source until KaTeX loads. */
export function typeset(el: HTMLElement, tex: string, display = false): void {
  const html = texHtml(tex, display);
  if (html === null) {
    el.textContent = tex;
    el.classList.add("tex-pending");
  } else {
    el.classList.remove("tex-pending");
    el.innerHTML = html;
  }
}

/** A new element holding typeset TeX. */
export function texEl(tex: string, display = false, tag: "span" | "div" = display ? "div" : "span"): HTMLElement {
  const el = document.createElement(tag);
  el.className = "tex";
  typeset(el, tex, display);
  return el;
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
  typeset(el, tex, display);
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
    typeset(on, tex, display);
    on.classList.add("on");
    el.append(on);
  }
}
