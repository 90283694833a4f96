// The config form: the algorithm, N, D, Br, Bc, seed, scale and causal, validated in place against /api/limits. A server 4xx
// shows its `detail` here while the last good trace stays on screen; what the user typed stays too.
import { type ConfigParams, DEFAULT_CONFIG, OPTION_FIELDS } from "../state";
import type { AlgoInfo, Limits } from "../types";
import { allows, configToRaw, FIELDS, type Field, validate } from "../validate";

export class ConfigForm {
  private limits: Limits;
  private readonly inputs = new Map<Field, HTMLInputElement>();
  private readonly hints = new Map<Field, HTMLElement>();
  private readonly causal: HTMLInputElement;
  private readonly algo: HTMLSelectElement;
  private picked = ""; // the algorithm the fields were last filled or switched for
  private options: { algo: string; values: Partial<ConfigParams> } | null = null; // the launch's options (see check)

  constructor(
    private readonly form: HTMLFormElement,
    private readonly message: HTMLElement,
    limits: Limits,
    private readonly onApply: (c: ConfigParams, note?: string) => void,
  ) {
    this.limits = limits;
    for (const f of FIELDS) {
      const input = form.querySelector<HTMLInputElement>(`[name="${f}"]`)!;
      const hint = form.querySelector<HTMLElement>(`#cfg-${f}-err`)!;
      this.inputs.set(f, input);
      this.hints.set(f, hint);
      input.addEventListener("input", () => this.check(false));
    }
    this.causal = form.querySelector<HTMLInputElement>('[name="causal"]')!;
    this.algo = form.querySelector<HTMLSelectElement>('[name="algo"]')!;
    // picking an algorithm runs it at once (with the numbers typed, if they are good)
    this.algo.addEventListener("change", () => {
      const note = this.switchSizes(this.picked, this.algo.value);
      this.picked = this.algo.value;
      const v = this.check(true);
      if (v) this.onApply(v, note ?? undefined);
    });
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const v = this.check(true);
      if (v) this.onApply(v);
    });
    this.applyLimits();
  }

  setLimits(l: Limits): void {
    this.limits = l;
    this.applyLimits();
    this.check(false);
  }

  private applyLimits(): void {
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
    for (const f of ["n", "d", "br", "bc", "seed"] as const) {
      const input = this.inputs.get(f)!;
      const [lo, hi] = this.limits[f];
      input.min = String(lo);
      input.max = String(hi);
      input.title = `${lo}..${hi}`;
    }
  }

  private raw(): Record<Field, string> {
    const out = {} as Record<Field, string>;
    for (const f of FIELDS) out[f] = this.inputs.get(f)!.value;
    return out;
  }

  /** Validate what is typed; mark bad fields. `submit` also puts the first problem in the message. */
  check(submit: boolean): ConfigParams | null {
    const v = validate(this.raw(), this.limits, this.causal.checked, this.algo.value);
    // the options of real models the launch on screen runs (the URL's; the form has no fields for them) stay while
    // its algorithm does
    if (v.config && this.options && this.algo.value === this.options.algo) Object.assign(v.config, this.options.values);
    for (const f of FIELDS) {
      const err = v.errors[f];
      const input = this.inputs.get(f)!;
      input.setAttribute("aria-invalid", err ? "true" : "false");
      this.hints.get(f)!.textContent = err ? `${label(f)} ${err}` : "";
    }
    const first = FIELDS.find((f) => v.errors[f]);
    if (first) {
      this.setMessage(`${label(first)}: ${v.errors[first]}`, "invalid");
      if (submit) this.inputs.get(first)!.focus();
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
    const changed = switchedSizes(this.raw(), prev, next, (f, v) => allows(this.limits, to, f, v));
    if (!changed.length) return null;
    for (const c of changed) this.inputs.get(c.field)!.value = String(c.to);
    return sizesNote(next, changed);
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
    const values = Object.fromEntries(OPTION_FIELDS.filter((f) => c[f] !== undefined).map((f) => [f, c[f]]));
    this.options = Object.keys(values).length ? { algo: c.algo, values } : null;
    const raw = configToRaw(c);
    for (const f of FIELDS) this.inputs.get(f)!.value = raw[f];
    this.causal.checked = c.causal;
    this.algo.value = c.algo;
    this.picked = c.algo;
    this.check(false);
  }

  /** The server refused: show its detail, mark its field, keep the typed values. */
  serverError(detail: string, field: string | null): void {
    this.setMessage(detail, "server");
    if (field && (FIELDS as readonly string[]).includes(field)) {
      const input = this.inputs.get(field as Field)!;
      input.setAttribute("aria-invalid", "true");
      this.hints.get(field as Field)!.textContent = detail;
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

function label(f: Field): string {
  return { n: "N", d: "D", br: "Br", bc: "Bc", seed: "seed", scale: "scale" }[f];
}

const SIZES = ["n", "d", "br", "bc"] as const;
type Size = (typeof SIZES)[number];

/** An algorithm's own default for a size: its `example`'s, else the seed's (N=8, D=4, Br=Bc=4). */
export function ownDefault(a: AlgoInfo | undefined, f: Size): number {
  return a?.example?.[f] ?? DEFAULT_CONFIG[f];
}

/** The sizes to change when the picker goes from `prev` to `next`: those at prev's default, or that next's kernel
 *  does not run (`runs` false), take next's default where it differs. */
export function switchedSizes(
  raw: Record<string, string>,
  prev: AlgoInfo | undefined,
  next: AlgoInfo,
  runs: (f: Size, v: number) => boolean,
): { field: Size; from: number; to: number }[] {
  const out: { field: Size; from: number; to: number }[] = [];
  for (const f of SIZES) {
    const v = Number(raw[f]);
    const to = ownDefault(next, f);
    const atDefault = raw[f] === "" || v === ownDefault(prev, f);
    if (to !== v && (atDefault || !Number.isInteger(v) || !runs(f, v))) out.push({ field: f, from: v, to });
  }
  return out;
}

/** The config bar's note on a switch: what changed, and why (the algorithm's `example_why`, its `launch_rule`). */
export function sizesNote(next: AlgoInfo, changed: { field: Size; from: number; to: number }[]): string {
  const what = changed.map((c) => `${label(c.field)} ${Number.isNaN(c.from) ? "\u2014" : c.from} \u2192 ${c.to}`).join(", ");
  const why = next.example_why || next.launch_rule || "";
  const own = next.example ? `${next.name}'s own defaults` : "the seed's example";
  return `Switched to ${next.name}: ${what} (${own}${why ? `: ${why}` : ""})`; // the config bar adds the full stop
}
