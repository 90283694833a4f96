// The GPU profile (schema `flashviz.profile/1`, docs/profile-schema.md): what Nsight Compute measured on a real
// GPU for one launch, held against the traffic model, beside the engine's counters. From GET /api/profile
// (`flashviz serve --profile FILE.json`) or a file dropped on the page. Shows what the JSON says; computes
// only differences and ratios of its own numbers.
import { esc } from "../dom";
import { int } from "../format";

/** Bytes in decimal units (1 MB = 10^6 B), as ncu and the profile's own sentences write them. */
export function bytes(b: number): string {
  const a = Math.abs(b);
  if (a < 1000) return `${Math.round(b)} B`;
  const [d, u] = a < 1e6 ? [1e3, "kB"] : a < 1e9 ? [1e6, "MB"] : [1e9, "GB"];
  return `${(b / d).toFixed(3).replace(/\.?0+$/, "")} ${u}`;
}

export interface ProfileComparison {
  measured: number;
  model: number;
  sector_model?: number;
  measured_over_model?: number;
  verdict: string;
}

export interface ProfileCompare {
  load: ProfileComparison;
  store: ProfileComparison;
  atomic_bytes?: number;
  caches?: Record<string, number>;
  ok?: boolean;
}

export interface ProfileKernel {
  id?: number;
  name: string;
  grid?: string;
  block?: string;
  counted?: boolean;
  measured: Record<string, number>;
  comparison?: ProfileCompare; // profiles from before several kernels: per kernel
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
  measured?: Record<string, number>; // the counted kernels, summed
  comparison?: ProfileCompare; // the model against `measured`
  summary?: string[];
  ok?: boolean;
}

/** The whole launch's measurements and comparison (older profiles: the one kernel's). */
export function launchOf(p: Profile): { measured: Record<string, number>; comparison: ProfileCompare; summary: string[] } | null {
  const k = p.kernels[0];
  const comparison = p.comparison ?? k?.comparison;
  const measured = p.measured ?? k?.measured;
  if (!comparison || !measured) return null;
  return { measured, comparison, summary: p.summary ?? k?.summary ?? [] };
}

/** Is this a profile the panel can show? Returns the reason when not. */
export function checkProfile(x: unknown): string | null {
  if (!x || typeof x !== "object") return "not a JSON object";
  const p = x as Partial<Profile>;
  if (typeof p.schema !== "string" || !p.schema.startsWith("flashviz.profile/")) return `not a flashviz profile (schema ${JSON.stringify(p.schema ?? null)})`;
  if (!p.config || typeof p.config.n !== "number") return "the profile has no config";
  if (!p.model || typeof p.model.load_bytes !== "number") return "the profile has no model bytes";
  if (!Array.isArray(p.kernels) || !p.kernels.length) return "the profile has no kernels";
  for (const k of p.kernels) if (!k?.measured) return "a kernel has no measurements";
  const l = launchOf(p as Profile);
  if (!l?.comparison.load || !l.comparison.store) return "the profile has no comparison with the model";
  return null;
}

/** The L2 effect in numbers: what the caches served (global loads − DRAM reads). */
export function cacheEffect(measured: Record<string, number>, c: ProfileCompare): { loads: number; dram: number; caught: number; fraction: number } {
  const loads = measured.load_bytes ?? 0;
  const dram = measured.dram_read_bytes ?? 0;
  const caught = c.caches?.caught_bytes ?? loads - dram;
  return { loads, dram, caught, fraction: c.caches?.caught_fraction ?? (loads > 0 ? caught / loads : 0) };
}

const VERDICT: Record<string, string> = {
  exact: "\u2713 exact",
  "sector-rounded": "\u2713 = model rounded to 32-byte sectors",
  mismatch: "\u2717 mismatch",
};

export class ProfileView {
  private profile: Profile | null = null;
  private source = "";
  private shown: { algo: string; n: number; d: number; br: number; bc: number; causal: boolean } | null = null;

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
    this.shown = c;
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
    const kernels = this.launch(p) + this.kernelTable(p);
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
    if (this.shown) this.match(this.shown);
  }

  /** Every kernel the profile ran: what each moved (the forward's, for the backward, is not counted). */
  private kernelTable(p: Profile): string {
    if (p.kernels.length < 2) return "";
    const rows = p.kernels
      .map((k) => {
        const m = k.measured;
        const short = k.name.replace(/^void\s+/, "").replace(/\(.*$/, "");
        return `<tr${k.counted === false ? ' class="muted"' : ""}><th scope="row"><code>${esc(short)}</code>${k.counted === false ? " (not counted)" : ""}</th>
          <td class="num">${bytes(m.load_bytes ?? 0)}</td><td class="num">${bytes(m.store_bytes ?? 0)}</td><td class="num">${bytes(m.dram_read_bytes ?? 0)}</td>
          <td class="num">${m.time_ns ? `${(m.time_ns / 1e3).toFixed(1)} \u00b5s` : ""}</td></tr>`;
      })
      .join("");
    return `<h4>Per kernel</h4><div class="table-wrap"><table class="final" data-testid="profile-kernels"><thead><tr><th scope="col">kernel</th><th scope="col" class="num">loads</th><th scope="col" class="num">stores</th><th scope="col" class="num">DRAM reads</th><th scope="col" class="num">time</th></tr></thead><tbody>${rows}</tbody></table></div>`;
  }

  /** The whole launch against the model: loads, stores, DRAM, and what the caches served. */
  private launch(p: Profile): string {
    const l = launchOf(p)!;
    const m = l.measured;
    const load = l.comparison.load;
    const store = l.comparison.store;
    const cache = cacheEffect(m, l.comparison);
    const verdict = (x: ProfileComparison) => `<span class="${x.verdict === "mismatch" ? "bad" : "ok"}">${esc(VERDICT[x.verdict] ?? x.verdict)}</span>`;
    const ratio = (x: ProfileComparison) => (x.measured_over_model !== undefined && x.measured_over_model !== 1 ? `${x.measured_over_model.toFixed(3)}\u00d7` : "");
    const uniq = p.model.unique_input_bytes;
    const reread = p.config.algo === "fa2" ? " \u2014 mostly K and V, which every block of Q re-reads" : "";
    const words =
      cache.caught >= 0
        ? `Of the <b>${bytes(cache.loads)}</b> the kernels loaded, DRAM supplied only <b>${bytes(cache.dram)}</b>: the caches (L1 and L2) served <b>${bytes(cache.caught)}</b>, ${(100 * cache.fraction).toFixed(1)}% of the loads${reread}.${uniq ? ` DRAM read ${(cache.dram / uniq).toFixed(2)}\u00d7 the ${bytes(uniq)} of distinct inputs.` : ""}`
        : `DRAM read more (${bytes(cache.dram)}) than the kernels loaded (${bytes(cache.loads)}): at this size the kernel's code and parameters come from DRAM too after the cache flush, so no cache effect can be read off it.`;
    const sector = (x: ProfileComparison) => (x.sector_model !== undefined && x.sector_model !== x.model ? `<br><span class="muted">in 32-byte sectors ${bytes(x.sector_model)}</span>` : "");
    return `<article class="gpu-kernel" data-testid="profile-launch">
      <table class="final profile"><thead><tr><th scope="col">whole launch</th><th scope="col" class="num">measured</th><th scope="col" class="num">model</th><th scope="col"></th></tr></thead><tbody>
        <tr data-testid="profile-load" data-measured="${load.measured}" data-model="${load.model}"><th scope="row">global loads</th><td class="num">${bytes(load.measured)}</td><td class="num">${bytes(load.model)}${sector(load)}</td><td>${verdict(load)} ${ratio(load)}</td></tr>
        <tr data-testid="profile-store" data-measured="${store.measured}" data-model="${store.model}"><th scope="row">global stores</th><td class="num">${bytes(store.measured)}</td><td class="num">${bytes(store.model)}${sector(store)}</td><td>${verdict(store)} ${ratio(store)}</td></tr>
        <tr data-testid="profile-dram-read"><th scope="row">DRAM reads</th><td class="num">${bytes(m.dram_read_bytes ?? 0)}</td><td class="num muted">${uniq ? `${bytes(uniq)} distinct inputs` : ""}</td><td></td></tr>
        <tr data-testid="profile-dram-write"><th scope="row">DRAM writes</th><td class="num">${bytes(m.dram_write_bytes ?? 0)}</td><td class="num muted">${p.model.unique_output_bytes ? `${bytes(p.model.unique_output_bytes)} of outputs` : ""}</td><td></td></tr>
        <tr data-testid="profile-l2" data-caught="${cache.caught}"><th scope="row">caches served<br><span class="muted small">loads \u2212 DRAM reads</span></th><td class="num"><b>${cache.caught < 0 ? "\u2212" : ""}${bytes(Math.abs(cache.caught))}</b></td><td class="num">${(100 * cache.fraction).toFixed(1)}% of loads</td><td></td></tr>
      </tbody></table>
      <p class="small" data-testid="profile-l2-words">${words}</p>
      ${l.summary.length ? `<ul class="small muted summary" data-testid="profile-summary">${l.summary.map((x) => `<li>${esc(x)}</li>`).join("")}</ul>` : ""}
      ${m.time_ns ? `<p class="small muted">time in the kernels ${(m.time_ns / 1e6).toFixed(3)} ms (ncu, clocks as they were)</p>` : ""}
    </article>`;
  }
}
