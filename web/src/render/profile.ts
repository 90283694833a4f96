// The GPU profile (schema `flashviz.profile/1`, docs/profile-schema.md): what Nsight Compute measured on a real
// GPU for one launch, held against the traffic model, beside the engine's counters. From GET /api/profile
// (`flashviz serve --profile FILE.json`) or a file dropped on the page. Shows what the JSON says; computes
// only differences and ratios of its own numbers.
import { esc } from "../dom";
import { bytes, int } from "../format";

export interface ProfileComparison {
  measured: number;
  model: number;
  sector_model?: number;
  measured_over_model?: number;
  verdict: string;
}

export interface ProfileKernel {
  id?: number;
  name: string;
  grid?: string;
  block?: string;
  measured: Record<string, number>;
  comparison: {
    load: ProfileComparison;
    store: ProfileComparison;
    caches?: Record<string, number>;
    ok?: boolean;
  };
  summary?: string[];
}

export interface Profile {
  schema: string;
  date?: string;
  config: Record<string, unknown> & { algo: string; n: number; d: number; br: number; bc: number; causal?: boolean };
  launch?: Record<string, unknown>;
  device?: Record<string, unknown>;
  tool?: Record<string, unknown>;
  model: {
    tensors: Record<string, { read_bytes: number; written_bytes: number; read_elements?: number; written_elements?: number }>;
    load_bytes: number;
    store_bytes: number;
    unique_input_bytes?: number;
    unique_output_bytes?: number;
  };
  kernels: ProfileKernel[];
  ok?: boolean;
}

/** Is this a profile the panel can show? Returns the reason when not. */
export function checkProfile(x: unknown): string | null {
  if (!x || typeof x !== "object") return "not a JSON object";
  const p = x as Partial<Profile>;
  if (typeof p.schema !== "string" || !p.schema.startsWith("flashviz.profile/")) return `not a flashviz profile (schema ${JSON.stringify(p.schema ?? null)})`;
  if (!p.config || typeof p.config.n !== "number") return "the profile has no config";
  if (!p.model || typeof p.model.load_bytes !== "number") return "the profile has no model bytes";
  if (!Array.isArray(p.kernels) || !p.kernels.length) return "the profile has no kernels";
  for (const k of p.kernels) if (!k?.comparison?.load || !k.measured) return "a kernel has no measurements";
  return null;
}

/** The L2 effect in numbers: what the caches served (global loads − DRAM reads). */
export function cacheEffect(k: ProfileKernel): { loads: number; dram: number; caught: number; fraction: number } {
  const loads = k.measured.load_bytes ?? 0;
  const dram = k.measured.dram_read_bytes ?? 0;
  const caught = k.comparison.caches?.caught_bytes ?? loads - dram;
  return { loads, dram, caught, fraction: k.comparison.caches?.caught_fraction ?? (loads > 0 ? caught / loads : 0) };
}

const VERDICT: Record<string, string> = {
  exact: "\u2713 exact",
  "sector-rounded": "\u2713 = model rounded to 32-byte sectors",
  mismatch: "\u2717 mismatch",
};

export class ProfileView {
  private profile: Profile | null = null;
  private source = "";

  constructor(
    private readonly host: HTMLElement,
    private readonly drop: HTMLElement,
    private readonly input: HTMLInputElement,
    private readonly message: HTMLElement,
    private readonly onOpenConfig: (p: Profile) => void,
  ) {
    this.input.addEventListener("change", () => {
      const f = this.input.files?.[0];
      if (f) void this.readFile(f);
      this.input.value = "";
    });
    // a profile JSON dropped anywhere on the page lands here (the browser would otherwise navigate to it)
    document.addEventListener("dragover", (e) => {
      if (!e.dataTransfer?.types.includes("Files")) return;
      e.preventDefault();
      e.dataTransfer.dropEffect = "copy";
      this.drop.classList.add("over");
    });
    document.addEventListener("dragleave", (e) => {
      if (e.relatedTarget === null) this.drop.classList.remove("over");
    });
    document.addEventListener("drop", (e) => {
      const f = e.dataTransfer?.files?.[0];
      this.drop.classList.remove("over");
      if (!f) return;
      e.preventDefault();
      void this.readFile(f);
    });
    this.host.addEventListener("click", (e) => {
      if ((e.target as HTMLElement).closest("[data-action=open-config]") && this.profile) this.onOpenConfig(this.profile);
    });
  }

  async readFile(f: File): Promise<void> {
    try {
      const doc = JSON.parse(await f.text()) as unknown;
      this.set(doc, `dropped file ${f.name}`);
    } catch (e) {
      this.say(`${f.name}: not valid JSON (${(e as Error).message})`, true);
    }
  }

  /** Show a profile (or why it cannot be shown). */
  set(doc: unknown, source: string): boolean {
    const bad = checkProfile(doc);
    if (bad) {
      this.say(`${source}: ${bad}`, true);
      return false;
    }
    this.profile = doc as Profile;
    this.source = source;
    this.say("", false);
    this.render();
    return true;
  }

  /** No profile from the server: offer the drop zone. */
  none(): void {
    if (this.profile) return;
    this.host.innerHTML = "";
    this.host.dataset.state = "none";
    this.drop.hidden = false;
  }

  /** The page now shows config c: say whether the profile measured the same launch. */
  match(c: { algo: string; n: number; d: number; br: number; bc: number; causal: boolean }): void {
    const el = this.host.querySelector<HTMLElement>("[data-testid=profile-match]");
    const p = this.profile;
    if (!el || !p) return;
    const pc = p.config;
    const same = pc.algo === c.algo && pc.n === c.n && pc.d === c.d && pc.br === c.br && pc.bc === c.bc && !!pc.causal === c.causal;
    el.dataset.same = String(same);
    el.innerHTML = same
      ? "The page shows this very launch: the engine's counters above are the model's bytes \u00f7 4 per head."
      : `The page shows another launch (${esc(c.algo)}, N=${c.n}, D=${c.d}, B<sub>r</sub>=${c.br}, B<sub>c</sub>=${c.bc}${c.causal ? ", causal" : ""}). <button type="button" data-action="open-config" data-testid="profile-open">Show the profiled config</button>`;
  }

  private say(text: string, bad: boolean): void {
    this.message.textContent = text;
    this.message.hidden = text === "";
    this.message.classList.toggle("bad", bad);
  }

  private render(): void {
    const p = this.profile!;
    const c = p.config;
    const dev = p.device ?? {};
    const launch = p.launch ?? {};
    const heads = Number(c.heads ?? 1) * Number(c.batch ?? 1);
    this.drop.hidden = true;
    this.host.dataset.state = "loaded";
    const kernels = p.kernels.map((k, n) => this.kernel(p, k, n)).join("");
    const tensors = Object.entries(p.model.tensors)
      .map(([t, x]) => `<tr><th scope="row"><span class="tensor">${esc(t)}</span></th><td class="num">${bytes(x.read_bytes)}</td><td class="num">${bytes(x.written_bytes)}</td></tr>`)
      .join("");
    this.host.innerHTML = `<p class="small" data-testid="profile-head"><b>${esc(String(dev.name ?? "GPU"))}</b>${dev.compute_capability ? ` (sm ${esc(String(dev.compute_capability))})` : ""} \u00b7
      <code>${esc(String(launch.kernel ?? c.algo))}</code> \u00b7 ${esc(String(c.algo))}, N=${int(c.n)}, D=${c.d}, B<sub>r</sub>=${c.br}, B<sub>c</sub>=${c.bc}${c.causal ? ", causal" : ""}, ${heads} head${heads === 1 ? "" : "s"}
      ${p.date ? `\u00b7 <span class="muted">${esc(p.date.slice(0, 10))}</span>` : ""} <span class="muted">(${esc(this.source)})</span></p>
      <p class="small muted" data-testid="profile-match"></p>
      ${kernels}
      <details class="small"><summary>The model's bytes per tensor (all heads)</summary>
        <table class="final"><thead><tr><th scope="col">tensor</th><th scope="col" class="num">read</th><th scope="col" class="num">written</th></tr></thead><tbody>${tensors}</tbody></table>
      </details>`;
  }

  private kernel(p: Profile, k: ProfileKernel, n: number): string {
    const m = k.measured;
    const load = k.comparison.load;
    const store = k.comparison.store;
    const cache = cacheEffect(k);
    const verdict = (x: ProfileComparison) => `<span class="${x.verdict === "mismatch" ? "bad" : "ok"}">${esc(VERDICT[x.verdict] ?? x.verdict)}</span>`;
    const ratio = (x: ProfileComparison) => (x.measured_over_model !== undefined ? `${x.measured_over_model.toFixed(3)}\u00d7` : "");
    const uniq = p.model.unique_input_bytes;
    const words =
      cache.caught >= 0
        ? `Of the <b>${bytes(cache.loads)}</b> the kernel loaded, DRAM supplied only <b>${bytes(cache.dram)}</b>: the caches (L1 and L2) served <b>${bytes(cache.caught)}</b>, ${(100 * cache.fraction).toFixed(1)}% of the loads \u2014 mostly K and V, which every block of Q re-reads.${uniq ? ` DRAM read ${(cache.dram / uniq).toFixed(2)}\u00d7 the ${bytes(uniq)} of distinct inputs.` : ""}`
        : `DRAM read more (${bytes(cache.dram)}) than the kernel loaded (${bytes(cache.loads)}): at this size the kernel's code and constants come from DRAM too after the cache flush, so no cache effect can be read off it.`;
    return `<article class="gpu-kernel" data-testid="profile-kernel-${n}">
      <h4><code>${esc(k.name)}</code></h4>
      <table class="final profile"><thead><tr><th scope="col"></th><th scope="col" class="num">measured</th><th scope="col" class="num">model</th><th scope="col"></th></tr></thead><tbody>
        <tr data-testid="profile-load"><th scope="row">global loads</th><td class="num">${bytes(load.measured)}</td><td class="num">${bytes(load.model)}${load.sector_model !== undefined && load.sector_model !== load.model ? `<br><span class="muted">sectors ${bytes(load.sector_model)}</span>` : ""}</td><td>${verdict(load)} ${ratio(load)}</td></tr>
        <tr data-testid="profile-store"><th scope="row">global stores</th><td class="num">${bytes(store.measured)}</td><td class="num">${bytes(store.model)}${store.sector_model !== undefined && store.sector_model !== store.model ? `<br><span class="muted">sectors ${bytes(store.sector_model)}</span>` : ""}</td><td>${verdict(store)} ${ratio(store)}</td></tr>
        <tr data-testid="profile-dram-read"><th scope="row">DRAM reads</th><td class="num">${bytes(m.dram_read_bytes ?? 0)}</td><td class="num muted">${uniq ? `${bytes(uniq)} distinct inputs` : ""}</td><td></td></tr>
        <tr data-testid="profile-dram-write"><th scope="row">DRAM writes</th><td class="num">${bytes(m.dram_write_bytes ?? 0)}</td><td class="num muted">${p.model.unique_output_bytes ? `${bytes(p.model.unique_output_bytes)} of outputs` : ""}</td><td></td></tr>
        <tr data-testid="profile-l2" data-caught="${cache.caught}"><th scope="row">caches served<br><span class="muted small">loads \u2212 DRAM reads</span></th><td class="num"><b>${bytes(Math.abs(cache.caught))}</b>${cache.caught < 0 ? " (negative)" : ""}</td><td class="num">${(100 * cache.fraction).toFixed(1)}% of loads</td><td></td></tr>
      </tbody></table>
      <p class="small" data-testid="profile-l2-words">${words}</p>
      ${k.summary?.length ? `<ul class="small muted summary">${k.summary.map((x) => `<li>${esc(x)}</li>`).join("")}</ul>` : ""}
      ${m.time_ns ? `<p class="small muted">kernel time ${(m.time_ns / 1e6).toFixed(3)} ms (ncu, clocks as they were)</p>` : ""}
    </article>`;
  }
}
