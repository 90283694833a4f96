// Math typesetting with KaTeX (bundled with its fonts: nothing is fetched from elsewhere).
import katex from "katex";
import "katex/dist/katex.min.css";

const cache = new Map<string, string>();

/** HTML (with MathML for screen readers) for a TeX string; falls back to the source on an error. */
export function texHtml(tex: string, display = false): string {
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
  el.dataset.tex = tex;
  el.innerHTML = texHtml(tex, display);
}
