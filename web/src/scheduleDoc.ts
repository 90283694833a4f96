// A warp-specialized kernel's schedule as a trace holds it (Trace.schedule; docs/trace-schema.md, "fa3":
// `schedule`): its partitions' lanes and their bars over time, the baseline in one lane, the ablation's rungs, a
// recorded run's measured lanes with the per-piece disagreement, and a recorded ncu run's tensor pipe.
// render/scheduleLayout.ts places it; nothing here knows an algorithm.

export type Source = "measured" | "modelled";

export interface ScheduleBar {
  lane: string;
  /** the unit a modelled bar holds; a measured bar has none */
  unit?: string;
  what: string;
  /** the key of the schedule's `pieces` (the legend's words) */
  piece?: string;
  j: number | null;
  start_ns: number;
  end_ns: number;
  /** the op and tile of the trace step whose work it is */
  step: string;
  step_j?: number | null;
  /** absent: the schedule's `source` */
  source?: Source;
}

export interface ScheduleBlock {
  i: number;
  tiles: number;
  end_ns: number;
  tensor_busy: number;
  bars: ScheduleBar[];
}

export interface ScheduleVariant {
  name: string;
  pingpong?: boolean;
  overlap?: boolean;
  /** the recorded benchmark run's TFLOP/s of this rung, null where it has none */
  tflops: number | null;
  blocks: ScheduleBlock[];
}

export interface ScheduleBaseline {
  algo: string;
  title?: string;
  lanes: string[];
  lane_labels?: Record<string, string>;
  blocks: ScheduleBlock[];
}

/** A row of lanes drawn: a lane's bars, or only those of one source (a measured lane beside its modelled one). */
export interface LaneRow {
  lane: string;
  source?: Source;
  label?: string;
}

export interface MeasuredBlock {
  i: number;
  /** the program (CTA) that ran block i in the recorded run */
  program: number;
  tiles: number;
  measured_ns: number;
  modelled_ns: number;
  /** the longer of the two: the span the block's lanes are drawn on */
  end_ns: number;
  bars: ScheduleBar[];
}

export interface DisagreementRow {
  piece: string;
  what: string;
  count: number;
  measured_ns: number;
  /** null: the model has no such piece */
  modelled_ns: number | null;
  /** measured / modelled; null where the model has none or puts 0 ns on it */
  ratio: number | null;
}

/** The recorded run's measured lanes (`schedule.measured`): its blocks' measured bars beside the model's bars at the
 *  run's shape, and per piece how far they disagree. */
export interface MeasuredDoc {
  source: "measured";
  date: string;
  gpu: string;
  driver: string;
  command: string;
  recorded_at: string;
  record_command: string;
  clock: string;
  file: string;
  results: string;
  shape: { n: number; d: number; br: number; bc: number; heads: number; batch: number; causal: boolean };
  shape_matches: boolean;
  note: string | null;
  config: string;
  check: {
    o_same_bits_as_plain: boolean;
    max_abs_err_plain_vs_float64: number;
    max_abs_err_timestamped_vs_float64: number;
    tolerance: number;
    ok: boolean;
  };
  time_us: { plain: number; timestamped: number };
  lane_rows: LaneRow[];
  pieces: Record<string, string>;
  programs: number;
  blocks: MeasuredBlock[];
  disagreement: DisagreementRow[];
}

export interface TensorPipeRow {
  algo: string;
  kernel: string;
  n: number;
  d: number;
  heads: number;
  batch: number;
  causal: boolean;
  time_ns: number;
  profile: string;
  metrics: Record<string, number>;
  top_stalls: { reason: string; per_issue: number }[];
}

/** A recorded ncu run's tensor pipe per kernel (`schedule.tensor_pipe`). */
export interface TensorPipeDoc {
  date: string;
  gpu: string;
  driver: string;
  ncu: string;
  command: string;
  file: string;
  results: string;
  /** our name -> the ncu metric */
  metrics: Record<string, string>;
  /** the metrics the table shows, in order */
  shown: string[];
  rows: TensorPipeRow[];
}

export interface ScheduleDoc {
  /** the source of a bar that names none */
  source: Source;
  lanes: string[];
  lane_labels?: Record<string, string>;
  units?: Record<string, string>;
  pieces?: Record<string, string>;
  stages?: number;
  blocks: ScheduleBlock[];
  baseline?: ScheduleBaseline | null;
  variants?: ScheduleVariant[];
  variant?: string;
  benchmark?: { n: number; d: number; causal: boolean; gpu: string; date: string; source: string } | null;
  /** the recorded run's measured lanes, null where none ships */
  measured?: MeasuredDoc | null;
  /** a recorded ncu run's tensor pipe per kernel, null where none ships */
  tensor_pipe?: TensorPipeDoc | null;
  rule?: string;
}
