// The recorded ladder run (`flashviz.ladder/1`, docs/ladder-schema.md: GET /api/ladder, or the run a page holds) as
// the page reads it, and the check a document passes before render/ladder.ts draws it. Pure: no DOM.

export interface Tiles {
  br: number;
  bc: number;
  warps: number;
  stages: number;
}

export interface Rung {
  name: string;
  label: string;
  kernel: string;
  dtype: string;
  tensor_cores: boolean;
  mma: string | null;
  tiles: Tiles | null;
  ms: number;
  peak: string;
  tflops: number;
  share_of_peak: number;
  hbm_bytes: number | null;
  sram_bytes_per_block: number | null;
  max_rel_err: number;
  what_changed: string;
}

export interface LadderDoc {
  schema: string;
  date: string;
  gpu: string;
  mode: string;
  complete: boolean;
  command: string;
  shape: { batch: number; heads: number; n: number; d: number; causal: boolean; tokens: number };
  timing: string;
  check: string;
  peaks: Record<string, { tflops: number; what: string }>;
  rungs: Rung[];
}

export function isLadder(x: unknown): x is LadderDoc {
  if (!x || typeof x !== "object") return false;
  const d = x as Partial<LadderDoc>;
  return (
    d.schema === "flashviz.ladder/1" &&
    typeof d.date === "string" &&
    typeof d.gpu === "string" &&
    Array.isArray(d.rungs) &&
    !!d.shape &&
    !!d.peaks
  );
}
