// The generated fixtures (web/test/fixtures/generate.py writes them from `flashviz trace` and flashviz.reports.compare_api),
// typed as the viewer reads them.
import type { CompareDoc } from "../src/compareDoc";
import type { Limits } from "../src/launch";
import type { Trace } from "../src/types";
import compare from "./fixtures/compare_n12_causal.json";
import fa1 from "./fixtures/fa1_n8.json";
import fa2c from "./fixtures/fa2_causal_n12_block0.json";
import bwd from "./fixtures/fa2-backward_causal_n8_d2.json";
import triton from "./fixtures/fa2-triton_causal_n20_d32.json";
import limits from "./fixtures/limits.json";
import std from "./fixtures/standard_causal_n6_d3.json";

/** flashviz trace --algo fa1 (N=8, D=4, Br=Bc=4): one CUDA block, blocks of Q visited inside each tile j */
export const FA1 = fa1 as unknown as Trace;
/** flashviz trace --n 12 --causal --block 0: three blocks of Q, only block 0 recorded */
export const FA2C = fa2c as unknown as Trace;
/** flashviz trace --algo fa2-backward --n 8 --d 2 --causal: the preprocessing kernel's two blocks, then fa2_bwd's two */
export const BWD = bwd as unknown as Trace;
/** flashviz trace --algo standard --n 6 --d 3 --causal: three kernels, two blocks of Q (the second ragged), S and P */
export const STD = std as unknown as Trace;
/** flashviz trace --algo fa2-triton --n 20 --d 32 --br 16 --bc 16 --causal: the Triton kernel, two blocks of Q (the
 *  second ragged), its products on the tensor cores (`tensor_cores`, each product step's `mma`) */
export const TRITON = triton as unknown as Trace;
/** compare_document(n=12, d=4, br=4, bc=4, causal=True): what GET /api/compare answers */
export const COMPARE = compare as unknown as CompareDoc;
/** GET /api/limits of the real app: the ranges and the algorithms */
export const LIMITS = limits as unknown as Limits;

/** One trace of each algorithm, by name (its picture is the same at every shape: layout tests lay it out at others) */
export const BY_ALGO: Record<string, Trace> = { fa2: FA2C, fa1: FA1, standard: STD, "fa2-backward": BWD, "fa2-triton": TRITON };
