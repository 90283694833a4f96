// What differs between the algorithms, for the views: which HBM tensors and SRAM buffers the memory picture
// holds and where they sit, where each transfer lands in SRAM, what a CUDA block owns, and the words of the
// final accounting. Pure data and functions of shapes: the numbers still all come from the Trace.
import type { Step } from "./types";

export const ALGOS = ["fa2", "fa1", "standard", "fa2-backward"] as const;
export type AlgoName = (typeof ALGOS)[number];

export function isAlgo(x: string): x is AlgoName {
  return (ALGOS as readonly string[]).includes(x);
}

/** Used until /api/limits answers (the server's list replaces it). */
export const FALLBACK_ALGOS = [
  { name: "fa2", title: "FlashAttention-2 forward", causal: true, pass: "forward", max_n: 4096 },
  { name: "fa1", title: "FlashAttention-1 forward", causal: true, pass: "forward", max_n: 4096 },
  { name: "standard", title: "Standard attention (S and P in HBM)", causal: true, pass: "forward", max_n: 4096 },
  { name: "fa2-backward", title: "FlashAttention-2 backward", causal: true, pass: "backward", max_n: 4096 },
] as const;

export interface Shape {
  n: number;
  d: number;
  br: number;
  bc: number;
}

/** Which loop index a buffer's rows (or columns) follow: rows of a block of Q, keys of a tile, or neither. */
export type Axis = "q" | "kv" | "none";

export interface BufferSpec {
  name: string;
  rows: number;
  cols: number;
  rowAxis: Axis;
  colAxis: Axis;
  kernel?: string; // standard and the backward: the kernel whose shared memory holds it
}

export interface TensorSpec {
  name: string;
  rows: number; // N
  cols: number; // D, N (S and P) or 1 (vectors)
  axis: Axis; // rows grouped by Br (q) or Bc (kv)
  colAxis: Axis; // S and P: columns are keys (tiles of Bc)
}

export interface AlgoSpec {
  name: AlgoName;
  tensors: TensorSpec[];
  /** SRAM rows of the picture, top to bottom; a buffer in `align` sits over the one named */
  sram: BufferSpec[][];
  align: Record<string, string>;
}

const FWD_T = (s: Shape, names: string[]): TensorSpec[] =>
  names.map((name) => {
    const vec = name === "L" || name === "l" || name === "m" || name === "D";
    const nn = name === "S" || name === "P";
    const kv = name === "K" || name === "V" || name === "dK" || name === "dV";
    return { name, rows: s.n, cols: vec ? 1 : nn ? s.n : s.d, axis: kv ? "kv" : "q", colAxis: nn ? "kv" : "none" };
  });

const buf = (name: string, rows: number, cols: number, rowAxis: Axis, colAxis: Axis, kernel?: string): BufferSpec =>
  kernel ? { name, rows, cols, rowAxis, colAxis, kernel } : { name, rows, cols, rowAxis, colAxis };

/** The picture's contents for an algorithm at a shape: a pure function (the layout's input). */
export function algoSpec(algo: string, s: Shape): AlgoSpec {
  const { n, d, br, bc } = s;
  switch (algo) {
    case "fa1":
      return {
        name: "fa1",
        tensors: FWD_T(s, ["Q", "K", "V", "O", "l", "m"]),
        sram: [
          [buf("Kj", bc, d, "kv", "none"), buf("Vj", bc, d, "kv", "none")],
          [
            buf("Qi", br, d, "q", "none"),
            buf("Sij", br, bc, "q", "kv"),
            buf("mi", br, 1, "q", "none"),
            buf("li", br, 1, "q", "none"),
            buf("Oi", br, d, "q", "none"),
          ],
        ],
        align: { Kj: "Qi", Vj: "Oi" },
      };
    case "standard":
      return {
        name: "standard",
        tensors: FWD_T(s, ["Q", "K", "V", "S", "P", "O"]),
        sram: [
          [buf("Kj", bc, d, "kv", "none", "standard_scores"), buf("Vj", bc, d, "kv", "none", "standard_pv")],
          [
            buf("Qi", br, d, "q", "none", "standard_scores"),
            buf("Sij", br, bc, "q", "kv", "standard_scores"),
            buf("Pij", br, bc, "q", "kv", "standard_pv"),
            buf("Oi", br, d, "q", "none", "standard_pv"),
          ],
          [
            buf("Sr", 1, n, "none", "none", "standard_softmax"),
            buf("mr", 1, 1, "none", "none", "standard_softmax"),
            buf("lr", 1, 1, "none", "none", "standard_softmax"),
          ],
        ],
        align: { Kj: "Qi", Vj: "Oi" },
      };
    case "fa2-backward":
      return {
        name: "fa2-backward",
        tensors: FWD_T(s, ["Q", "K", "V", "O", "L", "dO", "D", "dQ", "dK", "dV"]),
        sram: [
          [
            buf("Kj", bc, d, "kv", "none"),
            buf("Vj", bc, d, "kv", "none"),
            buf("dKj", bc, d, "kv", "none"),
            buf("dVj", bc, d, "kv", "none"),
          ],
          [
            buf("Qi", br, d, "q", "none"),
            buf("dOi", br, d, "q", "none"),
            buf("Oi", br, d, "q", "none", "fa2_bwd_preprocess"),
            buf("Pij", br, bc, "q", "kv"),
            buf("dSij", br, bc, "q", "kv"),
            buf("Li", br, 1, "q", "none"),
            buf("Di", br, 1, "q", "none"),
          ],
        ],
        align: { Kj: "Qi", Vj: "dOi" },
      };
    default:
      return {
        name: "fa2",
        tensors: FWD_T(s, ["Q", "K", "V", "O", "L"]),
        sram: [
          [buf("Kj", bc, d, "kv", "none"), buf("Vj", bc, d, "kv", "none")],
          [
            buf("Qi", br, d, "q", "none"),
            buf("Sij", br, bc, "q", "kv"),
            buf("mi", br, 1, "q", "none"),
            buf("li", br, 1, "q", "none"),
            buf("Oi", br, d, "q", "none"),
          ],
        ],
        align: { Kj: "Qi", Vj: "Oi" },
      };
  }
}

/** The SRAM buffer(s) a transfer fills (read) or empties (write), for the flying tile and its connector. */
export function endpoint(algo: string, tensor: string, kind: "read" | "write", op: string): string[] {
  switch (tensor) {
    case "Q":
      return ["Qi"];
    case "K":
      return ["Kj"];
    case "V":
      return ["Vj"];
    case "O":
      return ["Oi"];
    case "L":
      return algo === "fa2-backward" ? ["Li"] : ["mi", "li"];
    case "l":
      return ["li"];
    case "m":
      return ["mi"];
    case "S":
      return kind === "write" ? ["Sij"] : ["Sr"];
    case "P":
      return kind === "write" ? ["Sr"] : ["Pij"];
    case "dO":
      return ["dOi"];
    case "D":
      return ["Di"];
    case "dQ":
      return op === "dq" ? ["dSij"] : [];
    case "dK":
      return ["dKj"];
    case "dV":
      return ["dVj"];
    default:
      return [];
  }
}

/** The steps whose SRAM belongs together: one CUDA block of one kernel (fa1: the one block of the head). */
export function unitOf(algo: string, s: Step): string {
  if (algo === "fa1") return "one";
  if (algo === "fa2-backward") return `${s.indices && "j" in s.indices ? "bwd" : "pre"}:${s.block}`;
  return String(s.block);
}

/** The block of Q a step works on (its `i`), or null. */
export function iOf(algo: string, s: Step): number | null {
  if (s.indices && "i" in s.indices) return s.indices.i!;
  return algo === "fa2-backward" || s.block === null ? null : s.block;
}

/** What a block is called in this algorithm: "i" (a block of Q) or "j" (a tile of K/V). */
export function blockLetter(algo: string): "i" | "j" {
  return algo === "fa2-backward" ? "j" : "i";
}

/** The colour class of an op on the timeline: a load (read), a store (write), softmax-like, or compute. */
export function opKind(s: Step): "read" | "write" | "softmax" | "compute" {
  if (s.transfers.some((t) => t.kind === "write")) return "write";
  if (s.transfers.length) return "read";
  return /softmax|update|probs|ds$/.test(s.op) ? "softmax" : "compute";
}

/** The one-line tag under the brand. */
export function tagline(algo: string): string {
  switch (algo) {
    case "fa1":
      return "FlashAttention-1 forward: O, l, m carried through HBM";
    case "standard":
      return "Standard attention: S and P written to HBM";
    case "fa2-backward":
      return "FlashAttention-2 backward, tile by tile";
    default:
      return "FlashAttention-2 forward, tile by tile";
  }
}
