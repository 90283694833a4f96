// The code view, loaded after the first step is on screen: CodeMirror and the C++ grammar are most of the
// bundle, and the code sits below the memory picture. Until they arrive the step's lines and header still
// show (plain DOM); then the real editor takes the latest source and step.
import type { CodeView } from "./code";
import { showCodeMeta } from "./codeMeta";

export class LazyCodeView {
  private view: CodeView | null = null;
  private loading: Promise<void> | null = null;
  private source: [string, string] | null = null;
  private step: [[number, number], string, string] | null = null;

  constructor(
    private readonly kernelHost: HTMLElement,
    private readonly concreteHost: HTMLElement,
    private readonly summary: HTMLElement,
    private readonly header: HTMLElement,
    private readonly fileLabel: HTMLElement,
  ) {}

  /** Fetch CodeMirror and build the editor (once); the latest source and step are replayed into it. */
  load(): Promise<void> {
    this.loading ??= import("./code").then(({ CodeView }) => {
      this.view = new CodeView(this.kernelHost, this.concreteHost, this.summary, this.header, this.fileLabel);
      if (this.source) this.view.setSource(...this.source);
      if (this.step) this.view.show(...this.step);
    });
    return this.loading;
  }

  setSource(file: string, source: string): void {
    this.source = [file, source];
    this.fileLabel.textContent = file;
    this.view?.setSource(file, source);
  }

  /** The cheap part, every step: which lines, and the step's code header. */
  showMeta(lines: [number, number], code: string, file: string): void {
    showCodeMeta(this.summary, this.header, lines, code, file);
  }

  /** The editor's highlighted lines and the step's code. */
  show(lines: [number, number], code: string, file: string): void {
    this.step = [lines, code, file];
    if (this.view) this.view.show(lines, code, file);
    else this.showMeta(lines, code, file);
  }
}
