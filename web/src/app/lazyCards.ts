// Lazy cards: the cards far below the fold (the code's highlight, the substeps, the carries: big tables at large Br)
// are brought up to date only while they are on screen or about to be; scrolling to one draws it from the current
// state. A stale card says so (data-stale: how near the screen, in px, it is drawn again): the observer wakes the
// page for it, and a test can wait for the cards by what it scrolls to to be drawn before it points at something
// below them (their new height moves it).
import type { Section } from "../sections";
import type { Find } from "../transport";

export interface LazyCards {
  /** run `draw` (the section's step) when its card is on screen or near it; else mark the card stale */
  step(x: Section, draw: () => void): void;
  /** the observers, one per margin (destroy() disconnects them) */
  observers: { disconnect(): void }[];
}

/** Track which lazy cards of `sections` are on screen (one observer per margin); `wake` when one that went stale
 *  comes back. */
export function watchLazyCards(find: Find, sections: Section[], wake: () => void): LazyCards {
  const onScreen = new Set<string>();
  const margins = new Map<string, string[]>();
  for (const x of sections) if (x.lazy) margins.set(x.lazy.margin, [...(margins.get(x.lazy.margin) ?? []), x.lazy.card]);
  const observers: { disconnect(): void }[] = [];
  for (const [rootMargin, cards] of margins) {
    const observer = new IntersectionObserver(
      (entries) => {
        let stale = false;
        for (const e of entries) {
          if (e.isIntersecting) {
            onScreen.add(e.target.id);
            stale ||= (e.target as HTMLElement).dataset.stale !== undefined;
          } else onScreen.delete(e.target.id);
        }
        if (stale) wake();
      },
      { rootMargin },
    );
    for (const card of new Set(cards)) observer.observe(find(card));
    observers.push(observer);
  }
  return {
    step(x, draw) {
      const card = x.lazy!.card;
      const el = find(card);
      if (onScreen.has(card)) {
        draw();
        delete el.dataset.stale;
      } else el.dataset.stale = String(parseInt(x.lazy!.margin, 10) || 0);
    },
    observers,
  };
}
