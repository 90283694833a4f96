// The config form: the algorithm, N, D, Br, Bc, seed, scale and causal, validated in place against /api/limits. A server 4xx
// shows its `detail` here while the last good trace stays on screen; what the user typed stays too.
import type { ConfigParams } from "../state";
import type { Limits } from "../types";
import { allows, configToRaw, FIELDS, type Field, validate } from "../validate";

export class ConfigForm {
  private limits: Limits;
  private readonly inputs = new Map<Field, HTMLInputElement>();
  private readonly hints = new Map<Field, HTMLElement>();
  private readonly causal: HTMLInputElement;
  private readonly algo: HTMLSelectElement;

  constructor(
    private readonly form: HTMLFormElement,
    private readonly message: HTMLElement,
    limits: Limits,
    private readonly onApply: (c: ConfigParams) => void,
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
      this.snapToAllowed();
      const v = this.check(true);
      if (v) this.onApply(v);
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

  /** A field whose value the picked algorithm's kernel does not run (/api/limits' `allowed`) takes the value of its
   *  example launch, so that picking it shows it rather than an error; the other fields stay as typed. */
  private snapToAllowed(): void {
    const info = this.limits.algos?.find((a) => a.name === this.algo.value);
    if (!info?.allowed || !info.example) return;
    for (const f of Object.keys(info.allowed)) {
      const input = this.inputs.get(f as Field);
      const v = Number(input?.value);
      const to = info.example[f];
      if (input && to !== undefined && !allows(this.limits, info.name, f, v)) input.value = String(to);
    }
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
    const raw = configToRaw(c);
    for (const f of FIELDS) this.inputs.get(f)!.value = raw[f];
    this.causal.checked = c.causal;
    this.algo.value = c.algo;
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
