// The Trace (schema `flashviz.trace/1`, docs/trace-schema.md) as the viewer reads it, for every algorithm
// (fa2, fa1, standard, fa2-backward). `null` inside a numeric array means −∞ (JSON has no infinities).

export type Num = number | null;
export type Vec = Num[];
export type Mat = Num[][];

/** An HBM tensor's name (`Q`, `S`, `dO`, `l`, ...): a key of `trace.tensors`. */
export type TensorName = string;
/** An SRAM buffer's name (`Qi`, `Sr`, `dKj`, ...): a key of a step's `sram`. */
export type BufferName = string;

/** load_q, load_kv, scores, online_softmax, write_back (fa2); init, load_qi, update (fa1); load_k,
 *  softmax_row, load_pv, accumulate, write_o (standard); load_do_o, write_d, probs, dv, ds, dk, dq (backward). */
export type Op = string;

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
  max_abs: number | null; // null when the output holds NaN or ±∞ (`nonfinite` counts them)
  max_rel: number | null;
  tolerance_rel: number;
  nonfinite?: number;
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
  /** blockIdx.x of the step's kernel; null for fa1's outer-loop K/V loads (the one block, no block of Q) */
  block: number | null;
  j: number | null;
  phase: number;
  /** loop indices of the code header, outer loop first (absent in traces from before them) */
  indices?: Record<string, number>;
  op: Op;
  math: string;
  tex: string;
  code: string;
  lines: [number, number];
  transfers: Transfer[];
  sram: Record<BufferName, Vec | Mat>;
  carries: Record<string, Vec | Mat> | null;
  substeps: Substep[] | null;
  text: string;
}

export interface Phase {
  phase: number;
  op: Op | null;
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
  kernel?: string; // standard: the largest of its kernels
  kernels?: Record<string, Omit<SramFootprint, "kernels" | "kernel">>;
}

export interface BlockInfo {
  block?: number; // blockIdx.x (matches step.block); older traces: the index in `blocks`
  i?: number; // forward passes: the block of Q
  j?: number; // fa2-backward: the tile of K/V
  rows: [number, number];
  recorded: boolean;
  phases?: number; // phases of this block's program (causal makes blocks differ)
  first_i?: number; // fa2-backward: the first block of Q it visits
}

/** What an algorithm does (section 1): paragraphs of text with inline TeX between `$`; a paragraph that is one
 *  `$$...$$` is a displayed formula (`algorithms.Idea` in Python). Absent in traces from before it. */
export interface Idea {
  summary: string;
  body: string[];
}

export interface Trace {
  schema: string;
  idea?: Idea;
  config: TraceConfig;
  kernel: { file: string; name: string; source: string };
  inputs: Record<TensorName, Mat>;
  outputs: Record<TensorName, Mat | Vec>;
  reference: { ok: boolean; metric: string; dtype?: string } & Record<string, ErrorCheck | boolean | string | undefined>;
  hbm: Counters;
  model: Counters & { matches?: boolean };
  sram: SramFootprint;
  tensors: Record<TensorName, { shape: number[]; dtype: string; role: string }>;
  blocks: BlockInfo[];
  phases: Phase[];
  steps: Step[];
}

/** One entry of GET /api/limits' `algos`. */
export interface AlgoInfo {
  name: string;
  title: string;
  causal: boolean;
  pass: "forward" | "backward";
  max_n: number;
  kernel_file?: string;
}

/** GET /api/limits: inclusive integer ranges per field, and the algorithms. */
export type Limits = Record<"n" | "d" | "br" | "bc" | "seed", [number, number]> & { algos?: AlgoInfo[]; profile?: boolean };
