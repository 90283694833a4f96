// Typesets the page's fixed math (elements with data-tex) once at start-up: what the build's Vite plugin (vite.config.ts,
// staticTex) did not already typeset.
import { setTex } from "./render/tex";

export function renderStatic(root: ParentNode): void {
  root.querySelectorAll<HTMLElement>("[data-tex]").forEach((el) => {
    const tex = el.dataset.tex ?? "";
    delete el.dataset.tex;
    setTex(el, tex, el.hasAttribute("data-display"));
  });
}
