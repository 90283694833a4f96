// The launch's arithmetic and its place on the GPU, as a trace holds them (Trace.flops, Trace.hardware;
// docs/trace-schema.md): the FLOPs by kind against the paper's and a measured GPU's rates, the grid on the SMs, the
// occupancy, the warps inside a block, and a recorded run's ncu rows.

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
  /** the run that measured expf (its ratio is that run's matmul over its expf) */
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
  runs_on?: string; // where the kernel runs its FLOPs, one sentence (absent: the fp32 CUDA cores)
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
