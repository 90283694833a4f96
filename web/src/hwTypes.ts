// The trace's `flops` and `hardware` keys and the comparison's `regimes` (docs/trace-schema.md, issue 11): what
// Python computed about a launch's arithmetic and its place on the GPU. The views only draw them.
import type { CompareDoc } from "./api";
import type { Trace } from "./types";

export interface FlopAnchor {
  paper_ratio: number;
  paper: string;
  gpu: string;
  date: string;
  source: string;
  command: string;
  matmul_tflops: number;
  fma_tflops: number;
  exp_tflops: number;
  measured_ratio: number;
  exp_ratio: number;
  /** the run that measured expf (its ratio is that run's matmul over its expf); absent in older traces */
  exp_source?: string;
}

export interface FlopsDoc {
  kinds: string[];
  counted: Record<string, number>;
  model: Record<string, number> | null;
  matches: boolean | null;
  matmul: number;
  non_matmul: number;
  exp: number;
  non_matmul_as_matmul: { paper: number; measured: number };
  formulas: Record<string, string>;
  runs_on?: string; // where the kernel runs its FLOPs, one sentence (traces before it: the fp32 teaching kernels')
  uncounted?: string; // present when `model` is null: why no counts are shown
  anchor: FlopAnchor;
}

export interface Occupancy {
  limits: Record<string, number | null>;
  blocks_per_sm: number;
  limited_by: string[];
  warps_per_block: number;
  warps_per_sm: number;
  theoretical: number;
}

export interface LaunchOnSms {
  heads: number;
  grid: number[];
  blocks: number;
  waves: number;
  full_waves: number;
  tail_blocks: number;
  resident: number[];
  busy_sms: number;
  idle_sms: number;
}

export interface KernelOnGpu {
  template: string;
  threads: number;
  smem_bytes: number;
  registers: { value: number | null; source: string; note: string };
  smem?: { value: number; source: string; note: string }; // a Triton kernel's: where its shared memory comes from
  program_of_block?: "same" | "reversed"; // a Triton kernel under causal masking runs block i as program Tr - 1 - i
  occupancy: Occupancy;
  grid_x: number;
  launches: LaunchOnSms[];
}

export interface WarpOp {
  buffer: string;
  shape: [number, number];
  split: string;
  loop: string;
  owners: number[][];
  cut: boolean;
  busy_warps: number;
  idle_warps: number;
  from: string | null;
  from_buffer?: string; // the buffer that crosses, when it is not `buffer` (a tensor-core dot reading the last result)
  crossing_elements: number;
}

export interface WarpScheme {
  name: string;
  paper: string;
  owners: number[][];
  exchanged_elements: number;
  exchange: string;
}

export interface MeasuredRow {
  algo: string;
  n: number;
  d: number;
  br: number;
  bc: number;
  heads: number;
  blocks: number;
  ms: number;
  ncu: {
    waves: number | null;
    theoretical_occupancy_pct: number | null;
    achieved_occupancy_pct: number | null;
    sm_utilisation_pct: number | null;
  };
}

export interface HardwareDoc {
  device: { name: string; sms: number; max_warps_per_sm: number; max_blocks_per_sm: number; compute_capability: string };
  heads: number[];
  heads_default: number;
  placement: string;
  kernels: Record<string, KernelOnGpu>;
  warps: { warps: number; threads: number; ops: Record<string, WarpOp>; schemes: WarpScheme[] } | null;
  measured: { source: string; date: string; command: string; metrics: string[]; rows: MeasuredRow[] };
}

/** A Trace with the keys of issue 11 (absent from a trace of an older build: the views then say so). */
export type HwTrace = Trace & { flops?: FlopsDoc; hardware?: HardwareDoc | null };

export interface RegimePoint {
  br: number;
  bc: number;
  bytes: Record<string, number>;
  fewest: string;
  current: boolean;
  [ratios: string]: unknown;
}

export interface Term {
  tensor: string;
  share: number;
  times: number | null;
  rewrites: number | null;
}

export type RegimesDoc = CompareDoc & {
  regimes?: { n: number; d: number; causal: boolean; points: RegimePoint[]; real_kernels: string; left_out?: string };
  flops_anchor?: FlopAnchor;
};
