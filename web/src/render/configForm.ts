// The config form: the algorithm and the launch fields (N, D, Br, Bc, seed, scale, causal: /api/limits' `fields`, the
// table flashviz.model.fields), validated in place against /api/limits. A field the page's HTML has no input for gets
// one here. A server 4xx shows its `detail` here while the last good trace stays on screen; what the user typed stays
// too.
import type { AlgoInfo, ConfigParams, LaunchField, Limits } from "../launch";
import { defaultsOf, summedN } from "../state";
import { allows, configToRaw, FALLBACK_FIELDS, type Field, fieldsOf, flagFields, typedFields, validate } from "../validate";

export class ConfigForm {
  private limits: Limits;
  private readonly inputs = new Map<Field, HTMLInputElement>();
  private readonly hints = new Map<Field, HTMLElement>();
  private readonly flags = new Map<Field, HTMLInputElement>();
  private readonly algo: HTMLSelectElement;
  private picked = ""; // the algorithm the fields were last filled or switched for
  private more: HTMLDetailsElement | null = null; // the optional fields' inputs (the options of real models)

  constructor(
    private readonly form: HTMLFormElement,
    private readonly message: HTMLElement,
    limits: Limits,
    private readonly onApply: (c: ConfigParams, note?: string) => void,
    private readonly signal?: AbortSignal, // ends the listeners the form adds to the document
  ) {
    this.limits = limits;
    this.algo = form.querySelector<HTMLSelectElement>('[name="algo"]')!;
    // picking an algorithm runs it at once (with the numbers typed, if they are good)
    this.algo.addEventListener("change", () => {
      const note = this.switchSizes(this.picked, this.algo.value);
      this.picked = this.algo.value;
      this.showOptions();
      const v = this.check(true);
      if (v) this.onApply(v, note ?? undefined);
    });
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const v = this.check(true);
      if (!v) return;
      this.closeOptions(false);
      this.onApply(v);
    });
    this.applyLimits();
  }

  setLimits(l: Limits): void {
    this.limits = l;
    this.applyLimits();
    this.check(false);
  }

  /** The inputs of the limits' fields: the page's own (index.html), or one made for a field it has none for. */
  private bind(): void {
    for (const f of typedFields(this.limits)) {
      if (this.inputs.has(f.name)) continue;
      const input = this.form.querySelector<HTMLInputElement>(`[name="${f.name}"]`) ?? this.addInput(f);
      this.inputs.set(f.name, input);
      this.hints.set(f.name, this.form.querySelector<HTMLElement>(`#cfg-${f.name}-err`) ?? this.addHint(f));
      input.addEventListener("input", () => {
        if (f.name === "seqlens") this.followSeqlens();
        this.showUsed();
        this.check(false);
      });
    }
    for (const f of flagFields(this.limits)) {
      if (!this.flags.has(f.name))
        this.flags.set(f.name, this.form.querySelector<HTMLInputElement>(`[name="${f.name}"]`) ?? this.addInput(f));
    }
  }

  private addInput(f: LaunchField): HTMLInputElement {
    const input = document.createElement("input");
    input.name = f.name;
    input.dataset.testid = `cfg-${f.name}`;
    const label = document.createElement("label");
    label.title = f.help;
    if (f.kind === "flag") {
      input.type = "checkbox";
      label.className = "check";
      label.append(input, ` ${f.label || f.name}`);
    } else {
      input.type = f.kind === "int" ? "number" : "text";
      input.inputMode = f.kind === "int" ? "numeric" : f.kind === "ints" ? "text" : "decimal";
      input.setAttribute("aria-describedby", `cfg-${f.name}-err`);
      if (f.empty) {
        input.placeholder = f.empty;
        // wide enough for its placeholder ("0 (none)", "one sequence"): the font is monospaced
        input.style.setProperty("--chars", String(Math.max(5, f.empty.length + 1)));
      }
      label.append(`${f.label || f.name} `, input);
    }
    if (f.optional) this.moreBox().append(label);
    else this.form.querySelector("button[type=submit]")!.before(label);
    return input;
  }

  /** The optional fields' inputs, folded under one "options" toggle so that the bar keeps its height: its panel
   *  opens over the page when asked (a click on the toggle) and closes on Escape, a click elsewhere or Run; the toggle
   *  names the options the launch in the form uses (`showUsed`). */
  private moreBox(): HTMLElement {
    if (!this.more) {
      const more = document.createElement("details");
      this.more = more;
      more.className = "more-fields";
      more.dataset.testid = "cfg-more";
      more.dataset.used = ""; // the options the form holds, by name (showUsed)
      const summary = document.createElement("summary");
      summary.textContent = "options";
      summary.title = OPTIONS_TITLE;
      const panel = document.createElement("div");
      panel.className = "more-panel";
      more.append(summary, panel);
      this.form.querySelector("button[type=submit]")!.before(more);
      const listen = { signal: this.signal };
      document.addEventListener(
        "keydown",
        (e) => {
          if (e.key === "Escape" && more.open) this.closeOptions(true);
        },
        listen,
      );
      document.addEventListener(
        "pointerdown",
        (e) => {
          if (more.open && !more.contains(e.target as Node | null)) this.closeOptions(false);
        },
        listen,
      );
    }
    return this.more.querySelector<HTMLElement>(".more-panel")!;
  }

  /** Fold the options' panel; `refocus`: what had focus inside it goes to its toggle (Escape from a field). */
  private closeOptions(refocus: boolean): void {
    const more = this.more;
    if (!more?.open) return;
    const inside = more.contains(document.activeElement);
    more.open = false;
    if (refocus && inside) more.querySelector("summary")?.focus();
  }

  /** The toggle says which options the form holds (in its title and its accessible name, and in the accent colour),
   *  so that a launch that uses them says so with the panel folded, in no more room: the bar stays one row tall. */
  private showUsed(): void {
    const more = this.more;
    if (!more) return;
    const used = typedFields(this.limits).filter((f) => {
      const input = this.inputs.get(f.name);
      return input !== undefined && input.value.trim() !== "" && more.contains(input);
    });
    const summary = more.querySelector("summary")!;
    const names = used.map(label).join(", ");
    summary.title = `${used.length ? `in use: ${names}. ` : ""}${OPTIONS_TITLE}`;
    summary.setAttribute("aria-label", used.length ? `options, ${used.length} in use: ${names}` : "options");
    more.dataset.used = used.map((f) => f.name).join(" ");
  }

  /** N follows the packed sequences typed: their sum (the API refuses an N that is not). */
  private followSeqlens(): void {
    const n = summedN({ seqlens: this.inputs.get("seqlens")?.value ?? "" });
    const input = this.inputs.get("n");
    if (n !== null && input) input.value = String(n);
  }

  private addHint(f: LaunchField): HTMLElement {
    const hint = document.createElement("span");
    hint.id = `cfg-${f.name}-err`;
    const others = this.form.querySelector<HTMLElement>("[id^=cfg-][id$=-err]");
    (others?.parentElement ?? this.form).append(hint);
    return hint;
  }

  private applyLimits(): void {
    this.bind();
    this.showOptions();
    const algos = this.limits.algos ?? [];
    const current = this.algo.value;
    if (algos.length && (this.algo.options.length !== algos.length || algos.some((a, k) => this.algo.options[k]?.value !== a.name))) {
      this.algo.replaceChildren(
        ...algos.map((a) => {
          const o = new Option(a.name, a.name, false, a.name === current);
          o.title = a.title;
          return o;
        }),
      );
    }
    if (current) this.algo.value = current;
    for (const f of typedFields(this.limits)) {
      if (f.kind !== "int") continue;
      const input = this.inputs.get(f.name)!;
      input.min = String(f.min);
      input.max = String(f.max);
      input.title = `${f.min}..${f.max}`;
    }
  }

  private raw(): Record<Field, string> {
    const out: Record<Field, string> = {};
    for (const f of typedFields(this.limits)) out[f.name] = this.inputs.get(f.name)?.value ?? "";
    return out;
  }

  private ticked(): Record<Field, boolean> {
    const out: Record<Field, boolean> = {};
    for (const [name, input] of this.flags) out[name] = input.checked;
    return out;
  }

  /** Validate what is typed; mark bad fields. `submit` also puts the first problem in the message. */
  check(submit: boolean): ConfigParams | null {
    const ticked = this.ticked();
    const v = validate(this.raw(), this.limits, ticked.causal ?? false, this.algo.value, ticked);
    const typed = typedFields(this.limits);
    for (const f of typed) {
      const err = v.errors[f.name];
      const input = this.inputs.get(f.name)!;
      input.setAttribute("aria-invalid", err ? "true" : "false");
      this.hints.get(f.name)!.textContent = err ? `${label(f)} ${err}` : "";
    }
    const first = typed.find((f) => v.errors[f.name]);
    if (first) {
      this.setMessage(`${label(first)}: ${v.errors[first.name]}`, "invalid");
      if (submit) {
        const input = this.inputs.get(first.name)!;
        if (this.more?.contains(input)) this.more.open = true; // a bad option: its panel opens on it
        input.focus();
      }
    } else if (this.message.dataset.kind === "invalid") {
      this.setMessage("", "");
    }
    return v.config;
  }

  /** Picking an algorithm (issue 17 item 13): a size still at the last algorithm's default takes the picked one's
   *  own (`example`: fa2-triton's N=128, D=32, Br=64, Bc=32, where the seed's D=4 is not a head dimension its kernel
   *  runs), and so does a typed one its kernel does not run; a typed one it runs stays. Returns the note the config
   *  bar shows, saying what changed and why, or null when nothing did. */
  private switchSizes(from: string, to: string): string | null {
    const next = this.limits.algos?.find((a) => a.name === to);
    if (!next) return null;
    const prev = this.limits.algos?.find((a) => a.name === from);
    const fields = fieldsOf(this.limits);
    const changed = switchedSizes(this.raw(), prev, next, (f, v) => allows(this.limits, to, f, v), fields);
    if (!changed.length) return null;
    for (const c of changed) this.inputs.get(c.field)!.value = String(c.to);
    return sizesNote(next, changed, fields);
  }

  /** The algorithm of the trace on screen is one of the picker's, even before /api/limits has listed them. */
  offerAlgo(name: string, title: string): void {
    if (Array.from(this.algo.options).some((o) => o.value === name)) return;
    const o = new Option(name, name);
    o.title = title;
    this.algo.append(o);
  }

  /** Fill the form from a config (on load and on back/forward); leaves what the user typed otherwise. */
  fill(c: ConfigParams): void {
    const raw = configToRaw(c, this.limits);
    for (const [name, input] of this.inputs) input.value = raw[name] ?? "";
    for (const [name, input] of this.flags) input.checked = c[name] === true;
    this.showUsed();
    this.algo.value = c.algo;
    this.picked = c.algo;
    this.showOptions();
    this.check(false);
  }

  /** The options' toggle is there for an algorithm that runs them (/api/limits' `options`), hidden for the rest. */
  private showOptions(): void {
    if (!this.more) return;
    const algo = (this.limits.algos ?? []).find((a) => a.name === this.algo.value);
    const takes = (algo?.options ?? []).length > 0;
    this.more.hidden = !takes && ![...this.inputs.values()].some((i) => i.value !== "" && this.more!.contains(i));
  }

  /** The server refused: show its detail, mark its field, keep the typed values. */
  serverError(detail: string, field: string | null): void {
    this.setMessage(detail, "server");
    const input = field === null ? undefined : this.inputs.get(field);
    if (field !== null && input) {
      input.setAttribute("aria-invalid", "true");
      this.hints.get(field)!.textContent = detail;
    }
  }

  setMessage(text: string, kind: "" | "invalid" | "server" | "info"): void {
    this.message.textContent = text;
    this.message.dataset.kind = kind;
    this.message.hidden = text === "";
  }

  setBusy(busy: boolean): void {
    this.form.setAttribute("aria-busy", String(busy));
    this.form.querySelector<HTMLButtonElement>("button[type=submit]")!.disabled = busy;
  }
}

const OPTIONS_TITLE = "the options of real models (grouped-query heads, a KV cache, a window, softcap, packed sequences)";

/** How the form names a field in its messages: the table's label ("Br"), else its name. */
function label(f: LaunchField): string {
  return f.label || f.name;
}

/** An algorithm's own default for a field: its `example`'s, where the field takes one, else the table's. */
export function ownDefault(a: AlgoInfo | undefined, f: Field, fields: readonly LaunchField[]): number {
  return defaultsOf(fields, a)[f] as number;
}

/** The fields an algorithm may bring its own defaults for (N, D, Br, Bc), in the table's order. */
function ownFields(fields: readonly LaunchField[]): LaunchField[] {
  return fields.filter((f) => f.own && f.kind === "int");
}

/** The sizes to change when the picker goes from `prev` to `next`: those at prev's default, or that next's kernel
 *  does not run (`runs` false), take next's default where it differs. */
export function switchedSizes(
  raw: Record<string, string>,
  prev: AlgoInfo | undefined,
  next: AlgoInfo,
  runs: (f: Field, v: number) => boolean,
  fields: readonly LaunchField[] = FALLBACK_FIELDS,
): { field: Field; from: number; to: number }[] {
  const out: { field: Field; from: number; to: number }[] = [];
  for (const { name: f } of ownFields(fields)) {
    const v = Number(raw[f]);
    const to = ownDefault(next, f, fields);
    const atDefault = raw[f] === "" || v === ownDefault(prev, f, fields);
    if (to !== v && (atDefault || !Number.isInteger(v) || !runs(f, v))) out.push({ field: f, from: v, to });
  }
  return out;
}

/** The config bar's note on a switch: what changed, and why (the algorithm's `example_why`, its `launch_rule`). */
export function sizesNote(
  next: AlgoInfo,
  changed: { field: Field; from: number; to: number }[],
  fields: readonly LaunchField[] = FALLBACK_FIELDS,
): string {
  const named = (f: Field) => fields.find((x) => x.name === f)?.label || f;
  const what = changed.map((c) => `${named(c.field)} ${Number.isNaN(c.from) ? "\u2014" : c.from} \u2192 ${c.to}`).join(", ");
  const why = next.example_why || next.launch_rule || "";
  const own = next.example ? `${next.name}'s own defaults` : "the seed's example";
  return `Switched to ${next.name}: ${what} (${own}${why ? `: ${why}` : ""})`; // the config bar adds the full stop
}
