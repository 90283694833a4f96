// A tiny element builder. Every view builds its DOM with it: text lands as text nodes, never as HTML, so a value
// from a trace, a profile or the network shows literally whatever it holds. The only HTML the page inserts is
// KaTeX's rendering of TeX (render/tex.ts, trust: false).
export type Child = Node | string | number | null | undefined | false;
export type Attrs = Record<string, string | number | boolean | undefined | null>;

function setAttrs(el: Element, attrs: Attrs): void {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.setAttribute("class", String(v));
    else if (k === "text") el.textContent = String(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

function addChildren(el: Element | DocumentFragment, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === "number" ? String(c) : c);
  }
}

/** An HTML element with attributes and children (strings become text nodes). */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  addChildren(el, children);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** An SVG element, as h() makes HTML ones. */
export function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  addChildren(el, children);
  return el;
}

/** Several nodes to append or to replace an element's children with. */
export function frag(...children: Child[]): DocumentFragment {
  const f = document.createDocumentFragment();
  addChildren(f, children);
  return f;
}

/** Replace an element's children. */
export function fill(el: Element, ...children: Child[]): void {
  el.replaceChildren(frag(...children));
}

/** "B" with a subscript "r": the seed's symbols as text with <sub>. */
export function sub(base: string, index: string): DocumentFragment {
  return frag(base, h("sub", {}, index));
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`flashviz: #${id} missing from index.html`);
  return el as T;
}
