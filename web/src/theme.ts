// Light and dark themes: the choice (stored, else prefers-color-scheme) and the palette the canvas uses.
import { hexToRgb, type Palette } from "./colors";

export type Theme = "light" | "dark";
const KEY = "flashviz:theme";

export function initialTheme(): Theme {
  try {
    const saved = localStorage.getItem(KEY);
    if (saved === "light" || saved === "dark") return saved;
  } catch {
    // storage may be off (private mode); fall through
  }
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}

export function applyTheme(t: Theme, remember = false): void {
  document.documentElement.dataset.theme = t;
  document.documentElement.style.colorScheme = t;
  if (remember) {
    try {
      localStorage.setItem(KEY, t);
    } catch {
      // ignore
    }
  }
}

/** The canvas palette, read from the CSS custom properties of the current theme. */
export function readPalette(): Palette {
  const cs = getComputedStyle(document.documentElement);
  const v = (name: string) => cs.getPropertyValue(name).trim();
  return {
    neutral: hexToRgb(v("--cell-zero")),
    neg: hexToRgb(v("--cell-neg")),
    pos: hexToRgb(v("--cell-pos")),
    negInf: hexToRgb(v("--cell-neginf")),
    ink: v("--ink"),
    inkMuted: v("--ink-muted"),
    grid: v("--grid-line"),
    panel: v("--panel"),
    panelEdge: v("--panel-edge"),
    read: v("--read"),
    write: v("--write"),
    watch: v("--watch"),
    hatch: v("--hatch"),
    changed: v("--changed"),
  };
}
