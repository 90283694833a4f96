// The Trace (schema `flashviz.trace/4`, docs/trace-schema.md) as the viewer reads it. A trace describes its own
// picture: its tensors, SRAM buffers, kernels, ops, tiling, veils, writes and texts; the viewer knows no algorithm.
// `null` inside a numeric array means −∞ (JSON has no infinities). Its larger sections have modules of their own:
// the arithmetic and the GPU (hardwareDoc.ts), a warp-specialized kernel's schedule (scheduleDoc.ts).
import type { FlopsDoc, HardwareDoc } from "./hardwareDoc";
import type { ScheduleDoc } from "./scheduleDoc";

export type Num = number | null;
export type Vec = Num[];
export type Mat = Num[][];

/** An HBM tensor's name (`Q`, `S`, `dO`, `l`, ...): a key of `trace.tensors`. */
export type TensorName = string;
/** An SRAM buffer's name (`Qi`, `Sr`, `dKj`, ...): a key of `trace.buffers`. */
export type BufferName = string;
/** A step's name: a key of `trace.ops`. */
export type Op = string;

/** What a tensor's or buffer's rows (or columns) follow: rows of Q in blocks of Br, keys in tiles of Bc, or neither. */
export type Axis = "q" | "kv" | "none";

export interface Counter {
  read: number;
  written: number;
}
export type Counters = Record<TensorName, Counter>;

/** Rich text: runs of text, bold, a subscripted name, code, a value the viewer fills in (`slot`), or runs shown only
 *  when a slot has a value (`when`). Rendered as text nodes, never as HTML. */
export type Run = string | { b: string } | { sub: [string, string] } | { code: string } | { slot: string } | { when: string; runs: Run[] };
export type Rich = Run[];

export interface TraceConfig {
  algo: string;
  n: number;
  d: number;
  br: number;
  bc: number;
  scale: number;
  seed: number | null;
  causal: boolean;
  inputs: "random" | "file";
  tr: number;
  tc: number;
  dtype: string;
  element_bytes: number;
  /** the picks whose steps carry values */
  recorded_blocks: number[];
  /** how the kernel is launched beyond N, D, Br, Bc (a Triton kernel: warps, stages, and where they come from) */
  launch?: Record<string, string | number | null>;
  /** the options of real models (absent in older traces: plain attention): q heads per K/V head, keys, the window,
   *  soft-capping, packed sequences */
  group?: number;
  nk?: number;
  window?: [number, number];
  softcap?: number;
  seqlens?: number[] | null;
  seqlens_k?: number[] | null;
}

export interface ErrorCheck {
  max_abs: number | null; // null when the output holds NaN or ±∞ (`nonfinite` counts them)
  max_rel: number | null;
  tolerance_rel: number;
  nonfinite: number;
  ok: boolean;
  /** what max_rel is max_abs over: "max |ref|", "max(1, max |ref|)", or the scale of a gradient's terms */
  over?: string;
  over_value?: number;
  /** the reference's largest finite magnitude: the size of the answer itself (absent in older traces) */
  max_ref?: number;
}

/** Where a write's values are in the trace. */
export type Source = { buffer: BufferName } | { carry: string } | { fill: Num };

export interface Transfer {
  tensor: TensorName;
  kind: "read" | "write";
  rows: [number, number];
  cols: [number, number];
  elements: number;
  /** the SRAM buffers it fills (read) or empties (write); [] when none */
  buffers: BufferName[];
  source?: Source;
  /** a few words after the HBM slice in the buffer's note */
  note?: string;
}

export interface Substep {
  name: string;
  math: string;
  tex: string;
  values: Record<string, Vec | Mat>;
}

export interface Step {
  index: number;
  kernel: string;
  /** blockIdx.x of the step's kernel */
  block: number;
  /** the tile the step works on, null outside the loop over tiles */
  j: number | null;
  /** the tile held in SRAM at the step, null before the unit's first */
  tile: number | null;
  phase: number;
  /** loop indices of the code header, outer loop first */
  indices: Record<string, number>;
  op: Op;
  math: string;
  tex: string;
  code: string;
  lines: [number, number];
  transfers: Transfer[];
  sram: Record<BufferName, Vec | Mat>;
  veil: number | null;
  action: string;
  carries: Record<string, Vec | Mat> | null;
  carries_note: number | null;
  substeps: Substep[] | null;
  text: string;
  /** a tensor-core kernel's matrix-product step: one element of its result as the k-steps add it up */
  mma?: Mma | null;
}

/** One element of a step's tensor-core product: `parts[k]` is what the k-th 16-wide slice of the inner dimension
 *  adds (one instruction's share), `value` the fp32 sum the step holds. `dot` names the product (its op's entry in
 *  `Trace.tensor_cores.ops`). */
export interface Mma {
  dot: string;
  row: number;
  col: number;
  parts: number[];
  /** null where the element is not finite (a masked score: −∞) */
  value: number | null;
}

/** How one tl.dot runs on the tensor cores (Python: algos/<name>/tiles.py `dot`). */
export interface TensorDot {
  a: string;
  b: string;
  c: string;
  m: number;
  n: number;
  k: number;
  flops: number;
  instruction: { name: string; shape: number[]; text: string; issued_by: string; per_warpgroup?: number; per_warp?: number };
  k_steps: number;
  owners: { warp: number; warpgroup: number; rows: [number, number][] }[];
  replicated: boolean;
  title: Rich;
  b_transposed: boolean;
}

/** Trace.tensor_cores: per op that runs a matrix product, how it runs; what the kernel's source hides. */
export interface TensorCores {
  ops: Record<string, TensorDot>;
  warps: number;
  warpgroups: number;
  num_stages: number;
  d_padded: number;
  hidden: string[];
  why: string;
}

/** One write of the launch: by a recorded step (`step`), or by a block the trace did not record (null). */
export interface Write {
  tensor: TensorName;
  rows: [number, number];
  cols: [number, number];
  kernel: string;
  block: number;
  step: number | null;
  /** a block not recorded whose values are a constant (0, or null for −∞) */
  fill?: Num;
}

export interface Phase {
  phase: number;
  op: Op | null;
  j: number | null;
  hbm: Counters;
  /** the launch-wide FLOPs by kind after this phase */
  flops?: Record<string, number>;
  writes: Write[];
}

export interface SramFootprint {
  /** `in`: where a buffer lives when not in shared memory ("registers": a Triton kernel's accumulators, not counted) */
  buffers: Record<string, { shape: number[]; bytes: number; in?: string }>;
  bytes: number;
  static_limit_bytes: number;
  budget_bytes: number;
  fits: boolean;
  needs_opt_in: boolean;
  kernel?: string; // standard: the largest of its kernels
  kernels?: Record<string, Omit<SramFootprint, "kernels" | "kernel">>;
}

/** A pick: what the block picker, its chips and the URL's `block` choose. */
export interface BlockInfo {
  block: number;
  i?: number;
  j?: number;
  rows: [number, number];
  recorded: boolean;
  phases: number;
  /** [from, to) phase ranges before its last in which it runs no step */
  idle: [number, number][];
  first_i?: number;
  /** in a trace with a layout: its segment (an index into layout.segments) and its sequence's rows of K and V */
  segment?: number;
  keys?: [number, number];
  /** the picker's words for it */
  label?: string;
}

/** One (q head, sequence) of a launch with a layout: its rows of Q (O, L) and its sequence's rows of K and V. */
export interface Segment {
  q: [number, number];
  kv: [number, number];
  head: number;
  seq: number;
  label: string;
  short: string;
}

/** How a launch's rows are cut when it is more than one head of one sequence (docs/trace-schema.md `layout`). */
export interface Layout {
  q_rows: number;
  kv_rows: number;
  group: number;
  seqs: [number, number][];
  segments: Segment[];
}

/** One option of real models the launch runs, in words and numbers (docs/trace-schema.md `options`). */
export interface OptionItem {
  option: string;
  title: string;
  text: Rich;
  rows: [string, string][];
}

/** What an algorithm does (section 1): paragraphs of text with inline TeX between `$`; a paragraph that is one
 *  `$$...$$` is a displayed formula. */
export interface Idea {
  summary: string;
  body: string[];
}

export interface KernelInfo {
  main: boolean;
  grid: { count: number; letter: "i" | "j" | null; axis: Axis | null; rows_per_block: number | null };
  lockstep: boolean;
  /** steps of kernels with the same scope and the same block form one unit (their SRAM carries over) */
  scope: string;
  tile_loop: string | null;
  ops: Op[];
  /** the SRAM panel's title, longest first; placeholders {block} {i} {j} {rows} */
  sram_title: string[];
  /** over the chips; slots phase, phases, math, j */
  summary: Rich;
}

export interface Picker {
  kernels: string[];
  /** where a step's pick is: its `block`, or an index of `indices` */
  index: string;
  letter: "i" | "j";
  axis: Axis;
  rows_per_block: number;
  label: string;
  lockstep: boolean;
}

export interface TensorInfo {
  shape: number[];
  dims: string[];
  dtype: string;
  role: string;
  label: string;
  axes: [Axis, Axis];
  writes: "none" | "once" | "carried" | "accumulated";
  scale_like: BufferName | null;
  unwritten_note: string | null;
  rule: { text: string; formula: string };
}

export interface BufferInfo {
  shape: number[];
  dims: string[];
  axes: [Axis, Axis];
  kernels: string[];
  label: string;
  copy_of: TensorName | null;
  align_under: BufferName | null;
  row_index: string | null;
  /** what its one row is a row of, in words ("S, then of P"), or null */
  row_of: string | null;
}

export interface OpInfo {
  kernel: string;
  kind: "read" | "write" | "softmax" | "compute";
  note: string;
  notes: Record<BufferName, string>;
  notes_masked: Record<BufferName, string>;
  after_loop: boolean;
  value_tex: Record<string, string>;
  online: { rescales?: boolean; reloads?: boolean; out?: string; out_heading?: string; o_heading?: string } | null;
}

export interface CarriesInfo {
  view: "online" | "table";
  buffers?: { m: BufferName; l: BufferName; o: BufferName };
  o_heading?: string;
  labels?: Record<string, string>;
  notes: Rich[];
}

/** A rectangle of HBM the watched unit never touches under causal masking. */
export interface Veil {
  tensor: TensorName;
  rows: [number, number];
  cols: [number, number];
  label: string;
}

export interface Tiling {
  /** per pick a string of its sequence's tiles: f (full), m (masked past the right edge), l (masked before the
   *  window's left edge), b (both), s (skipped) */
  pairs: string[];
  last_tile: number[];
  kv_width: number[];
  first_block: number[];
}

export interface Trace {
  schema: string;
  title: string;
  tagline: string;
  idea: Idea;
  config: TraceConfig;
  kernel: { file: string; name: string; source: string };
  kernels: Record<string, KernelInfo>;
  picker: Picker;
  inputs: Record<TensorName, Mat>;
  outputs: Record<TensorName, Mat | Vec>;
  reference: { ok: boolean; metric: string; dtype?: string; headline: string[]; against: string } & Record<
    string,
    ErrorCheck | boolean | string | string[] | undefined
  >;
  hbm: Counters;
  model: Counters & { matches: boolean };
  sram: SramFootprint;
  tensors: Record<TensorName, TensorInfo>;
  buffers: Record<BufferName, BufferInfo>;
  picture: { sram_rows: BufferName[][] };
  ops: Record<Op, OpInfo>;
  carries: CarriesInfo;
  substeps_note: Rich;
  counting: Rich[];
  tiling: Tiling;
  veils: Veil[][];
  /** how its matrix products run on the tensor cores; null for scalar code */
  tensor_cores?: TensorCores | null;
  /** the launch's floating-point operations by kind, counted and modelled */
  flops?: FlopsDoc;
  /** the launch on a GPU: its grid on the SMs, the occupancy, the warps inside a block; null where not modelled */
  hardware?: HardwareDoc | null;
  /** a warp-specialized kernel's partitions over time (scheduleDoc.ts); null or absent for the others */
  schedule?: ScheduleDoc | null;
  /** A run spread over several devices (the ring); checked by render/ringLayout.ts devicesProblem before it is drawn. */
  devices?: unknown;
  /** how its rows are cut (several q heads, packed sequences, Nq ≠ Nk), else null or absent */
  layout?: Layout | null;
  /** the options of real models it runs, in words and numbers, else null or absent */
  options?: { title: string; items: OptionItem[] } | null;
  blocks: BlockInfo[];
  phases: Phase[];
  steps: Step[];
}
