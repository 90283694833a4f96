// The page around its sections: "The idea" card stays as the reader left it (open the first time), and the transport
// bar sticks just under the top bar, whatever height the top bar wraps to.
import type { Find } from "../transport";

/** Wire both under `root`; the listeners end with `signal`. Returns the observer to disconnect (none without a top bar). */
export function watchChrome(root: HTMLElement, find: Find, signal: AbortSignal): { disconnect(): void }[] {
  const ideaCard = find<HTMLDetailsElement>("idea");
  try {
    if (localStorage.getItem("flashviz:idea") === "closed") ideaCard.open = false;
  } catch {
    // storage off: always open
  }
  ideaCard.addEventListener(
    "toggle",
    () => {
      try {
        localStorage.setItem("flashviz:idea", ideaCard.open ? "open" : "closed");
      } catch {
        // ignore
      }
    },
    { signal },
  );

  const topbar = root.querySelector<HTMLElement>(".topbar");
  if (!topbar) return [];
  const sticky = new ResizeObserver(() => document.documentElement.style.setProperty("--topbar-h", `${topbar.offsetHeight}px`));
  sticky.observe(topbar);
  return [sticky];
}
