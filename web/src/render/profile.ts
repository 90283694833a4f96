// The GPU profile (schema `flashviz.profile/1`, docs/profile-schema.md): what Nsight Compute measured on a real
// GPU for one launch, held against the traffic model, beside the engine's counters. From GET /api/profile
// (`flashviz serve --profile FILE.json`) or a file dropped on the page. Checked against the schema before it is
// drawn (profileSchema.ts); every string from it lands as text. Shows what the JSON says; computes only
// differences and ratios of its own numbers.
import { fill, frag, h, sub } from "../dom";
import { cut } from "../echo";
import { bytes, int } from "../format";
import { cacheEffect, checkProfile, launchOf, type Profile, type ProfileComparison } from "../profileSchema";

export { cacheEffect, checkProfile, launchOf, type Profile } from "../profileSchema";

/** A profile is tens of kilobytes (ncu's CSV included); a file far larger is not one, and is not read. */
const MAX_PROFILE_BYTES = 16_000_000;

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
    const name = cut(f.name);
    if (f.size > MAX_PROFILE_BYTES) {
      this.say(`${name}: ${bytes(f.size)} is too large for a profile (at most ${bytes(MAX_PROFILE_BYTES)})`, true);
      return;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(await f.text()) as unknown;
    } catch (e) {
      this.say(`${name}: not valid JSON (${cut((e as Error).message, 80)})`, true);
      return;
    }
    this.set(doc, `dropped file ${name}`);
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
    this.host.replaceChildren();
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
    if (same) {
      fill(el, "The page shows this very launch: the engine's counters above are the model's bytes \u00f7 4 per head.");
    } else {
      fill(
        el,
        `The page shows another launch (${c.algo}, N=${c.n}, D=${c.d}, `,
        sub("B", "r"),
        `=${c.br}, `,
        sub("B", "c"),
        `=${c.bc}${c.causal ? ", causal" : ""}). `,
        h("button", { type: "button", "data-action": "open-config", "data-testid": "profile-open" }, "Show the profiled config"),
      );
    }
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
    const heads = (c.heads ?? 1) * (c.batch ?? 1);
    this.drop.hidden = true;
    this.host.dataset.state = "loaded";
    const head = h(
      "p",
      { class: "small", "data-testid": "profile-head" },
      h("b", {}, String(dev.name ?? "GPU")),
      dev.compute_capability !== undefined && dev.compute_capability !== null ? ` (sm ${String(dev.compute_capability)})` : "",
      " \u00b7 ",
      h("code", {}, String(p.launch?.kernel ?? c.algo)),
      ` \u00b7 ${c.algo}, N=${int(c.n)}, D=${c.d}, `,
      sub("B", "r"),
      `=${c.br}, `,
      sub("B", "c"),
      `=${c.bc}${c.causal ? ", causal" : ""}, ${heads} head${heads === 1 ? "" : "s"} `,
      p.date ? frag("\u00b7 ", h("span", { class: "muted" }, p.date.slice(0, 10)), " ") : null,
      h("span", { class: "muted" }, `(${this.source})`),
    );
    const tensors = Object.entries(p.model.tensors).map(([t, x]) =>
      h(
        "tr",
        {},
        h("th", { scope: "row" }, h("span", { class: "tensor" }, t)),
        h("td", { class: "num" }, bytes(x.read_bytes)),
        h("td", { class: "num" }, bytes(x.written_bytes)),
      ),
    );
    fill(
      this.host,
      head,
      h("p", { class: "small muted", "data-testid": "profile-match" }),
      this.launch(p),
      this.kernelTable(p),
      h(
        "details",
        { class: "small" },
        h("summary", {}, "The model's bytes per tensor (all heads)"),
        h(
          "table",
          { class: "final" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              h("th", { scope: "col" }, "tensor"),
              h("th", { scope: "col", class: "num" }, "read"),
              h("th", { scope: "col", class: "num" }, "written"),
            ),
          ),
          h("tbody", {}, ...tensors),
        ),
      ),
    );
    if (this.shown) this.match(this.shown);
  }

  /** Every kernel the profile ran: what each moved (the forward's, for the backward, is not counted). */
  private kernelTable(p: Profile): Node | null {
    if (p.kernels.length < 2) return null;
    const rows = p.kernels.map((k) => {
      const m = k.measured;
      const short = k.name.replace(/^void\s+/, "").replace(/\(.*$/, "");
      return h(
        "tr",
        { class: k.counted === false ? "muted" : undefined },
        h("th", { scope: "row" }, h("code", {}, short), k.counted === false ? " (not counted)" : ""),
        h("td", { class: "num" }, bytes(m.load_bytes ?? 0)),
        h("td", { class: "num" }, bytes(m.store_bytes ?? 0)),
        h("td", { class: "num" }, bytes(m.dram_read_bytes ?? 0)),
        h("td", { class: "num" }, m.time_ns ? `${(m.time_ns / 1e3).toFixed(1)} \u00b5s` : ""),
      );
    });
    const col = (t: string, num = true) => h("th", { scope: "col", class: num ? "num" : undefined }, t);
    return frag(
      h("h4", {}, "Per kernel"),
      h(
        "div",
        { class: "table-wrap" },
        h(
          "table",
          { class: "final", "data-testid": "profile-kernels" },
          h("thead", {}, h("tr", {}, col("kernel", false), col("loads"), col("stores"), col("DRAM reads"), col("time"))),
          h("tbody", {}, ...rows),
        ),
      ),
    );
  }

  /** The whole launch against the model: loads, stores, DRAM, and what the caches served. */
  private launch(p: Profile): HTMLElement {
    const l = launchOf(p)!;
    const m = l.measured;
    const load = l.comparison.load;
    const store = l.comparison.store;
    const cache = cacheEffect(m, l.comparison);
    const verdict = (x: ProfileComparison) =>
      h("span", { class: x.verdict === "mismatch" ? "bad" : "ok" }, VERDICT[x.verdict] ?? x.verdict);
    const ratio = (x: ProfileComparison) =>
      x.measured_over_model !== undefined && x.measured_over_model !== 1 ? ` ${x.measured_over_model.toFixed(3)}\u00d7` : "";
    const sector = (x: ProfileComparison) =>
      x.sector_model !== undefined && x.sector_model !== x.model
        ? frag(h("br"), h("span", { class: "muted" }, `in 32-byte sectors ${bytes(x.sector_model)}`))
        : null;
    const uniq = p.model.unique_input_bytes;
    // what the loads the caches served are, in the algorithm's words (the profile's model says it)
    const reread = p.model.reread ? ` \u2014 ${p.model.reread}` : "";
    const words =
      cache.caught >= 0
        ? frag(
            "Of the ",
            h("b", {}, bytes(cache.loads)),
            " the kernels loaded, DRAM supplied only ",
            h("b", {}, bytes(cache.dram)),
            ": the caches (L1 and L2) served ",
            h("b", {}, bytes(cache.caught)),
            `, ${(100 * cache.fraction).toFixed(1)}% of the loads${reread}.`,
            uniq ? ` DRAM read ${(cache.dram / uniq).toFixed(2)}\u00d7 the ${bytes(uniq)} of distinct inputs.` : "",
          )
        : `DRAM read more (${bytes(cache.dram)}) than the kernels loaded (${bytes(cache.loads)}): at this size the kernel's code and parameters come from DRAM too after the cache flush, so no cache effect can be read off it.`;
    const td = (...c: (Node | string | null)[]) => h("td", { class: "num" }, ...c);
    const side = (x: ProfileComparison, testid: string, label: string) =>
      h(
        "tr",
        { "data-testid": testid, "data-measured": x.measured, "data-model": x.model },
        h("th", { scope: "row" }, label),
        td(bytes(x.measured)),
        td(bytes(x.model), sector(x)),
        h("td", {}, verdict(x), ratio(x)),
      );
    return h(
      "article",
      { class: "gpu-kernel", "data-testid": "profile-launch" },
      h(
        "table",
        { class: "final profile" },
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", { scope: "col" }, "whole launch"),
            h("th", { scope: "col", class: "num" }, "measured"),
            h("th", { scope: "col", class: "num" }, "model"),
            h("th", { scope: "col" }),
          ),
        ),
        h(
          "tbody",
          {},
          side(load, "profile-load", "global loads"),
          side(store, "profile-store", "global stores"),
          h(
            "tr",
            { "data-testid": "profile-dram-read" },
            h("th", { scope: "row" }, "DRAM reads"),
            td(bytes(m.dram_read_bytes ?? 0)),
            h("td", { class: "num muted" }, uniq ? `${bytes(uniq)} distinct inputs` : ""),
            h("td"),
          ),
          h(
            "tr",
            { "data-testid": "profile-dram-write" },
            h("th", { scope: "row" }, "DRAM writes"),
            td(bytes(m.dram_write_bytes ?? 0)),
            h("td", { class: "num muted" }, p.model.unique_output_bytes ? `${bytes(p.model.unique_output_bytes)} of outputs` : ""),
            h("td"),
          ),
          h(
            "tr",
            { "data-testid": "profile-l2", "data-caught": cache.caught },
            h("th", { scope: "row" }, "caches served", h("br"), h("span", { class: "muted small" }, "loads \u2212 DRAM reads")),
            td(h("b", {}, `${cache.caught < 0 ? "\u2212" : ""}${bytes(Math.abs(cache.caught))}`)),
            td(`${(100 * cache.fraction).toFixed(1)}% of loads`),
            h("td"),
          ),
        ),
      ),
      h("p", { class: "small", "data-testid": "profile-l2-words" }, words),
      l.summary.length
        ? h("ul", { class: "small muted summary", "data-testid": "profile-summary" }, ...l.summary.map((x) => h("li", {}, x)))
        : null,
      m.time_ns
        ? h("p", { class: "small muted" }, `time in the kernels ${(m.time_ns / 1e6).toFixed(3)} ms (ncu, clocks as they were)`)
        : null,
    );
  }
}
