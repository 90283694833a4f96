// The Trace (schema `flashviz.trace/1`, docs/trace-schema.md) as the viewer reads it.
// `null` inside a numeric array means −∞ (JSON has no infinities).

export type Num = number | null;
export type Vec = Num[];
export type Mat = Num[][];

export const TENSORS = ["Q", "K", "V", "O", "L"] as const;
export type TensorName = (typeof TENSORS)[number];

export const BUFFERS = ["Qi", "Kj", "Vj", "Sij", "mi", "li", "Oi"] as const;
export type BufferName = (typeof BUFFERS)[number];

export type Op = "load_q" | "load_kv" | "scores" | "online_softmax" | "write_back";

export interface Counter {
  read: number;
  written: number;
}
export type Counters = Record<TensorName, Counter>;

export interface TraceConfig {
  algo: string;
  n: number;
  d: number;
  br: number;
  bc: number;
  scale: number;
  seed: number | null;
  causal?: boolean; // absent in traces from before causal masking
  inputs: "random" | "file";
  tr: number;
  tc: number;
  dtype: string;
  recorded_blocks: number[];
}

export interface ErrorCheck {
  max_abs: number;
  max_rel: number;
  tolerance_rel: number;
  ok: boolean;
}

export interface Transfer {
  tensor: TensorName;
  kind: "read" | "write";
  rows: [number, number];
  cols: [number, number];
  elements: number;
}

export interface Substep {
  name: string;
  math: string;
  tex: string;
  values: Record<string, Vec | Mat>;
}

export interface Step {
  index: number;
  block: number;
  j: number | null;
  phase: number;
  op: Op;
  math: string;
  tex: string;
  code: string;
  lines: [number, number];
  transfers: Transfer[];
  sram: Partial<Record<BufferName, Vec | Mat>>;
  carries: Record<string, Vec> | null;
  substeps: Substep[] | null;
  text: string;
}

export interface Phase {
  phase: number;
  op: Op;
  j: number | null;
  hbm: Counters;
}

export interface SramFootprint {
  buffers: Record<string, { shape: number[]; bytes: number }>;
  bytes: number;
  static_limit_bytes: number;
  budget_bytes: number;
  fits: boolean;
  needs_opt_in: boolean;
}

export interface BlockInfo {
  i: number;
  rows: [number, number];
  recorded: boolean;
}

export interface Trace {
  schema: string;
  config: TraceConfig;
  kernel: { file: string; name: string; source: string };
  inputs: { Q: Mat; K: Mat; V: Mat };
  outputs: { O: Mat; L: Vec };
  reference: { O: ErrorCheck; L: ErrorCheck; ok: boolean; metric: string; dtype?: string };
  hbm: Counters;
  model: Counters & { matches: boolean };
  sram: SramFootprint;
  tensors: Record<TensorName, { shape: number[]; dtype: string; role: string }>;
  blocks: BlockInfo[];
  phases: Phase[];
  steps: Step[];
}

/** GET /api/limits: inclusive integer ranges per field. */
export type Limits = Record<"n" | "d" | "br" | "bc" | "seed", [number, number]>;
