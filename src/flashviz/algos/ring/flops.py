"""FLOPs of one head of the ring in closed form, by kind (flashviz.engine.flops), checked against the engine's
counters. Per attention call of r rows against r keys (ring_sim.partial_attention: the whole block, masked or
not): S = τ·QKᵀ and P·V, the row max and sum, exp(S − m), O / l and L = m + log l; per merge of r rows
(flashviz.model.merge): the log-sum-exp rule. How many calls of which size depends on the layout under the causal mask
(record.call_sizes); the trace passes it (Algorithm.closed_form_fields)."""

from __future__ import annotations

from .record import LAYOUT, call_sizes, world

FORMULAS = {
    "matmul": "4·r²·D per attention call of r rows: S = τ·QᵢKⱼᵀ and P·Vⱼ",
    "exp": "r² per call: e^(S − m); 2·r per merge: e^(Lᵢ − m), e^(L_b − m)",
    "max": "r² per call: rowmax(S); r per merge: max(Lᵢ, L_b)",
    "add": "2·r² + r per call: S − m, rowsum, m + log l; 4·r + r·D per merge",
    "mul": "r² per call: τ·S; 2·r + 2·r·D per merge: the weights, and Oᵢ, O_b weighted",
    "div": "r·D per call: O / l; r per merge: 1 / (wᵢ + w_b)",
    "log": "r per call: log l; r per merge: log(wᵢ + w_b)",
}


def count(n: int, d: int, br: int, bc: int, causal: bool = False, layout: str = LAYOUT) -> dict[str, int]:
    out = dict.fromkeys(("matmul", "exp", "log", "max", "add", "mul", "div"), 0)
    for r, k in call_sizes(world(n, br), layout, causal, br):
        out["matmul"] += k * 4 * r * r * d
        out["exp"] += k * (r * r + 2 * r)
        out["max"] += k * (r * r + r)
        out["add"] += k * (2 * r * r + r + 4 * r + r * d)
        out["mul"] += k * (r * r + 2 * r + 2 * r * d)
        out["div"] += k * (r * d + r)
        out["log"] += k * (r + r)
    return out
