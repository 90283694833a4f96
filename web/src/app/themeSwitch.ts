// The theme switch: the button swaps light and dark (and remembers the choice), the system's preference follows until
// the reader has chosen, and each switch recolours what is drawn from CSS (the canvases) and draws the frame again.
import { applyTheme, type Theme } from "../theme";
import type { AppContext } from "./store";

/** Wire the theme button of `ctx`'s page; `drawn` draws the frame again. Returns how to set a theme. */
export function createThemeSwitch(ctx: AppContext, drawn: () => boolean): (t: Theme, remember: boolean) => void {
  const { store, signal } = ctx;
  const button = ctx.find("theme");

  function setTheme(t: Theme, remember: boolean): void {
    applyTheme(t, remember);
    button.setAttribute("aria-label", t === "dark" ? "Switch to the light theme" : "Switch to the dark theme");
    for (const x of ctx.views.list) x.retheme?.();
    if (store.trace) drawn();
  }

  button.addEventListener(
    "click",
    () => {
      store.theme = store.theme === "dark" ? "light" : "dark";
      setTheme(store.theme, true);
    },
    { signal },
  );
  matchMedia("(prefers-color-scheme: dark)").addEventListener(
    "change",
    (e) => {
      try {
        if (localStorage.getItem("flashviz:theme")) return;
      } catch {
        // ignore
      }
      store.theme = e.matches ? "dark" : "light";
      setTheme(store.theme, false);
    },
    { signal },
  );
  return setTheme;
}
