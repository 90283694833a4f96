// The code: the whole kernel file in a read-only CodeMirror 6 editor with the step's lines
// highlighted and scrolled into view, and beside it the step's concrete code (`// i = 0, j = 1`).
// The grammar follows the kernel file's name: C++ for a .cu file, Python for a Triton kernel (.py).
import { cpp } from "@codemirror/lang-cpp";
import { python } from "@codemirror/lang-python";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { Compartment, EditorState, RangeSetBuilder, StateEffect, StateField } from "@codemirror/state";
import { Decoration, type DecorationSet, EditorView, lineNumbers } from "@codemirror/view";
import { parser as cppParser } from "@lezer/cpp";
import { highlightTree, tags } from "@lezer/highlight";
import { parser as pythonParser } from "@lezer/python";

/** Whether a kernel file is Python (a Triton kernel), by its name. */
export function isPython(file: string): boolean {
  return file.endsWith(".py");
}

const language = new Compartment();

import { h } from "../dom";
import { showCodeMeta } from "./codeMeta";

const setActive = StateEffect.define<[number, number] | null>();

const activeLines = StateField.define<DecorationSet>({
  create: () => Decoration.none,
  update(deco, tr) {
    for (const e of tr.effects) {
      if (!e.is(setActive)) continue;
      if (!e.value) return Decoration.none;
      const [first, last] = e.value;
      const b = new RangeSetBuilder<Decoration>();
      const doc = tr.state.doc;
      for (let n = Math.max(1, first); n <= Math.min(doc.lines, last); n++) {
        const cls = `cm-fv-active${n === first ? " cm-fv-first" : ""}${n === last ? " cm-fv-last" : ""}`;
        b.add(doc.line(n).from, doc.line(n).from, Decoration.line({ attributes: { class: cls, "data-testid": "code-active-line" } }));
      }
      return b.finish();
    }
    return deco;
  },
  provide: (f) => EditorView.decorations.from(f),
});

// colours come from CSS variables so the editor follows the page's theme
const highlight = HighlightStyle.define([
  { tag: [tags.keyword, tags.controlKeyword, tags.modifier, tags.definitionKeyword], color: "var(--code-keyword)", fontWeight: "600" },
  { tag: [tags.typeName, tags.standard(tags.typeName)], color: "var(--code-type)" },
  { tag: [tags.number, tags.bool, tags.null], color: "var(--code-number)" },
  { tag: [tags.string, tags.character], color: "var(--code-string)" },
  { tag: [tags.comment, tags.lineComment, tags.blockComment], color: "var(--code-comment)", fontStyle: "italic" },
  { tag: [tags.processingInstruction, tags.meta], color: "var(--code-meta)" },
  { tag: [tags.function(tags.variableName), tags.function(tags.propertyName)], color: "var(--code-fn)" },
  { tag: [tags.operator, tags.punctuation], color: "var(--code-punct)" },
  { tag: [tags.macroName], color: "var(--code-meta)" },
]);

const baseTheme = EditorView.theme({
  "&": { fontSize: "12.5px", height: "100%", backgroundColor: "var(--code-bg)", color: "var(--code-ink)" },
  ".cm-scroller": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace", lineHeight: "1.55" },
  ".cm-gutters": { backgroundColor: "var(--code-gutter)", color: "var(--ink-muted)", border: "none" },
  ".cm-content": { caretColor: "transparent" },
  ".cm-fv-active": { backgroundColor: "var(--code-active)", boxShadow: "inset 3px 0 0 var(--accent)" },
  "&.cm-focused": { outline: "2px solid var(--focus)", outlineOffset: "-2px" },
});

function readOnlyView(parent: HTMLElement, doc: string, label: string, extra: ReturnType<typeof lineNumbers>[] = []): EditorView {
  // the highlight classes are also used by the step's snippet, outside any editor
  return new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        ...extra,
        EditorState.readOnly.of(true),
        EditorView.editable.of(false),
        EditorView.contentAttributes.of({ "aria-label": label, tabindex: "0" }),
        language.of(cpp()),
        syntaxHighlighting(highlight),
        baseTheme,
        activeLines,
      ],
    }),
  });
}

export class CodeView {
  private readonly kernel: EditorView;
  private readonly concrete: HTMLElement;
  private readonly snippets = new Map<string, [string, string][]>();
  private readonly summary: HTMLElement;
  private readonly header: HTMLElement;
  private readonly fileLabel: HTMLElement;
  private source = "";
  private python = false;
  private range: [number, number] | null = null;
  private placed = false; // the editor's scroll was found at the lines with the editor on screen (its lines measured)

  constructor(kernelHost: HTMLElement, concreteHost: HTMLElement, summary: HTMLElement, header: HTMLElement, fileLabel: HTMLElement) {
    this.kernel = readOnlyView(kernelHost, "", "The whole kernel file, read-only", [lineNumbers()]);
    // the kernel file's own text, quoted (its comments may say "NaN"): the page's junk check leaves it alone
    this.kernel.dom.dataset.verbatim = "kernel";
    // the step's own code: the same grammar and colours as the editor, as a plain <pre> (cheap per step)
    this.concrete = document.createElement("pre");
    this.concrete.className = "snippet cm-editor-like";
    this.concrete.dataset.verbatim = "kernel";
    this.concrete.tabIndex = 0;
    this.concrete.setAttribute("aria-label", "This step's code with i and j substituted");
    concreteHost.append(this.concrete);
    this.summary = summary;
    this.header = header;
    this.fileLabel = fileLabel;
  }

  setSource(file: string, source: string): void {
    this.fileLabel.textContent = file;
    if (source === this.source) return;
    this.source = source;
    this.range = null;
    this.placed = false;
    if (isPython(file) !== this.python) {
      this.python = isPython(file);
      this.snippets.clear();
      this.kernel.dispatch({ effects: language.reconfigure(this.python ? python() : cpp()) });
    }
    this.kernel.dispatch({ changes: { from: 0, to: this.kernel.state.doc.length, insert: source } });
  }

  /** The cheap part, every step: which lines, and the step's code header. */
  showMeta(lines: [number, number], code: string, file: string): void {
    showCodeMeta(this.summary, this.header, lines, code, file);
  }

  /** The editor's highlighted lines and the step's code (only while the code is on screen: see main.ts). */
  show(lines: [number, number], code: string, file: string): void {
    const [first, last] = lines;
    const moved = !this.range || this.range[0] !== first || this.range[1] !== last;
    if (moved) {
      this.range = [first, last];
      this.kernel.dispatch({ effects: setActive.of([first, last]) });
    }
    // the same lines too, while their scroll was last set off screen (with heights CodeMirror had only guessed)
    if (moved || !this.placed) {
      this.placed = false;
      this.scrollTo(first, last);
    }
    this.showMeta(lines, code, file);
    if (this.concrete.dataset.code !== code) {
      this.concrete.dataset.code = code;
      this.concrete.replaceChildren(
        ...this.snippet(code).map(([cls, text]) => (cls ? h("span", { class: cls }, text) : document.createTextNode(text))),
      );
    }
  }

  /** A snippet as highlighted runs ([classes, text]; "" for plain text) with the editor's highlight classes:
   *  built as text nodes and spans, never as HTML (the code comes from the trace). */
  private snippet(code: string): [string, string][] {
    let runs = this.snippets.get(code);
    if (runs !== undefined) return runs;
    const tree = (this.python ? pythonParser : cppParser).parse(code);
    runs = [];
    let at = 0;
    highlightTree(tree, highlight, (from, to, classes) => {
      if (from > at) runs!.push(["", code.slice(at, from)]);
      runs!.push([classes, code.slice(from, to)]);
      at = to;
    });
    if (at < code.length) runs.push(["", code.slice(at)]);
    this.snippets.set(code, runs);
    return runs;
  }

  /** Scroll the editor itself (never the page) so the lines sit in the middle, or at the top if long. In CodeMirror's
   *  measure cycle (the next frame: reading layout here would force it mid-repaint), and again in the frames after
   *  until the lines stay where they were put: an editor that was off screen measured no line, and the cycle that
   *  first measures them moves the scroll by what their heights changed (keeping its old top line in place), which
   *  took the editor back near the lines of the last step it showed. */
  private scrollTo(first: number, last: number, tries = 4): void {
    const view = this.kernel;
    const range = this.range;
    view.requestMeasure({
      key: "flashviz-scroll",
      read: (v) => {
        const doc = v.state.doc;
        const a = v.lineBlockAt(doc.line(Math.min(doc.lines, Math.max(1, first))).from);
        const b = v.lineBlockAt(doc.line(Math.min(doc.lines, Math.max(1, last))).from);
        const height = v.scrollDOM.clientHeight;
        const span = b.bottom - a.top;
        const target = span + 48 > height ? a.top - 24 : a.top - (height - span) / 2;
        const max = v.scrollDOM.scrollHeight - height;
        return Math.round(Math.max(0, Math.min(max, target)));
      },
      write: (target, v) => {
        if (this.range !== range) return; // a later step's lines
        if (Math.abs(v.scrollDOM.scrollTop - target) <= 1) {
          this.placed = v.inView; // there, and measured on screen: a step with the same lines leaves the scroll alone
          return;
        }
        v.scrollDOM.scrollTop = target;
        // look again in the next frame, once this cycle's measuring (and its move of the scroll) is done
        if (tries > 1) requestAnimationFrame(() => this.range === range && this.scrollTo(first, last, tries - 1));
      },
    });
  }
}
