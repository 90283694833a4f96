// GET /api/compare: every algorithm at one config (closed forms), a sweep of N, which algorithm moves fewest bytes
// as the tiles vary (`regimes`), and, from `flashviz export`, the widget or GET /api/curves, the counters per phase.
import type { FlopAnchor } from "./hardwareDoc";

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

/** GET /api/compare: every algorithm at one config (closed forms), a sweep of N; the per-phase counter curves come
 *  with it from `flashviz export` and the widget, and from the server by GET /api/curves (an engine run, queued). */
export interface CompareEntry {
  title: string;
  /** the name the comparison's columns, rows and chart use ("FA2") */
  short: string;
  pass: "forward" | "backward";
  supported: boolean;
  tensors?: Record<string, { read: number; written: number; read_bytes: number; written_bytes: number }>;
  total?: { read: number; written: number; read_bytes: number; written_bytes: number; bytes: number };
  sram_bytes?: number | null;
  sram_fits?: boolean | null;
  steps?: number | null;
  traffic_vs_fa2?: number | null;
  /** the tensors that make up its traffic, largest share first */
  terms?: Term[];
  noncausal_bytes: number | null;
  saved_bytes: number | null;
}

export interface PhaseCurve {
  phases: number;
  phase: number[];
  op: (string | null)[];
  read: number[];
  written: number[];
  /** bytes read and written so far, each tensor at its own element size (bf16 2, fp32 4) */
  bytes?: number[];
  tensors: Record<string, [number, number][]>;
}

export interface CompareDoc {
  config: { n: number; d: number; br: number; bc: number; causal: boolean; tr: number; tc: number };
  bytes_per_element: number;
  sram_budget_bytes: number;
  algorithms: Record<string, CompareEntry>;
  /** the algorithm whose traffic `traffic_vs_fa2` divides by */
  baseline?: string;
  sweep: { n: number[]; bytes: Record<string, number[]> };
  curves: Record<string, PhaseCurve | { skipped: string }> | null;
  /** which forward algorithm moves fewest bytes as Bc/Br varies at this N and D */
  regimes?: { n: number; d: number; causal: boolean; points: RegimePoint[]; real_kernels: string; left_out?: string };
  /** the FLOP rates the comparison quotes (as a trace's `flops.anchor`) */
  flops_anchor?: FlopAnchor;
}

export type Curves = Record<string, PhaseCurve | { skipped: string }>;
