// Typesets the page's fixed math (elements with data-tex) once at start-up.
import { setTex } from "./render/tex";

export interface BadgeTarget {
  badge: HTMLElement;
  detail: HTMLElement;
}

export function renderStatic(root: ParentNode): void {
  root.querySelectorAll<HTMLElement>("[data-tex]").forEach((el) => {
    const tex = el.dataset.tex ?? "";
    delete el.dataset.tex;
    setTex(el, tex, el.hasAttribute("data-display"));
  });
}
