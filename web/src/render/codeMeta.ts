// The cheap part of the code view, every step: which lines of the kernel file, and the step's code header.
// Shared by the editor (code.ts) and its lazy stand-in (codeLazy.ts), which must not import the editor.

export function showCodeMeta(summary: HTMLElement, header: HTMLElement, lines: [number, number], code: string, file: string): void {
  const [first, last] = lines;
  const text = `lines ${first}\u2013${last} of ${file}`;
  if (summary.textContent !== text) {
    summary.textContent = text;
    summary.dataset.first = String(first);
    summary.dataset.last = String(last);
  }
  const head = code.split("\n", 1)[0] ?? "";
  if (header.textContent !== head) header.textContent = head;
}
