"""float64 attention: the reference every output is judged against."""

from __future__ import annotations

import numpy as np

# The float64 reference works on a band of query rows at a time: each band's scores are rows x N float64, about
# 32 MB, where the whole N x N matrix at N = 16384 would be 2 GB (and the backward holds several at once).
BAND_BYTES = 2**25


def bands(n_rows: int, n_cols: int) -> list[tuple[int, int]]:
    """[first, end) row ranges whose (rows, n_cols) float64 matrix takes at most BAND_BYTES."""
    rows = max(1, BAND_BYTES // (8 * max(1, n_cols)))
    return [(r0, min(n_rows, r0 + rows)) for r0 in range(0, n_rows, rows)]


def scores(Q: np.ndarray, K: np.ndarray, scale: float, r0: int, r1: int, causal: bool) -> np.ndarray:
    """S = scale * Q[r0:r1] K^T in float64, keys after the query row masked to -inf under causal."""
    S = Q[r0:r1] @ K.T  # (rows, N)
    S *= scale
    if causal:
        S[np.arange(r0, r1)[:, None] < np.arange(K.shape[0])[None, :]] = -np.inf
    return S


def attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, scale: float, causal: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """O = softmax(scale * Q K^T) V and L = logsumexp(scale * Q K^T), in float64 (causal: key > query masked)."""
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    n = Q.shape[0]
    O, L = np.empty((n, V.shape[1])), np.empty(n)  # (N, D), (N,)
    for r0, r1 in bands(n, K.shape[0]):
        S = scores(Q, K, scale, r0, r1, causal)  # (rows, N)
        m = S.max(axis=1, keepdims=True)  # (rows, 1)
        S -= m
        P = np.exp(S, out=S)  # (rows, N), in place
        l = P.sum(axis=1, keepdims=True)  # (rows, 1)
        O[r0:r1] = (P @ V) / l
        L[r0:r1] = (m + np.log(l))[:, 0]
    return O, L


def attention_backward(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, dO: np.ndarray, scale: float, causal: bool = False
) -> dict[str, np.ndarray]:
    """Gradients of attention in float64: given dO = ∂loss/∂O, return dQ, dK, dV (N×D each), with the
    float64 forward's O and L they were computed from."""
    O, L = attention(Q, K, V, scale, causal)
    Q, K, V, dO = (np.asarray(x, dtype=np.float64) for x in (Q, K, V, dO))
    D = (dO * O).sum(axis=1)  # (N,) rowsum(dO ∘ O) = rowsum(P ∘ dP)
    dQ, dK, dV = np.empty_like(Q), np.zeros_like(K), np.zeros_like(V)
    for r0, r1 in bands(Q.shape[0], K.shape[0]):
        S = scores(Q, K, scale, r0, r1, causal)  # (rows, N)
        S -= L[r0:r1, None]
        P = np.exp(S, out=S)  # (rows, N) softmax rows, rebuilt from L
        dV += P.T @ dO[r0:r1]  # (N, D)
        dS = dO[r0:r1] @ V.T  # (rows, N) dP
        dS -= D[r0:r1, None]
        dS *= P  # ∂loss/∂S: the softmax's Jacobian applied row by row
        dQ[r0:r1] = scale * (dS @ K)
        dK += scale * (dS.T @ Q[r0:r1])
    return {"O": O, "L": L, "dQ": dQ, "dK": dK, "dV": dV}


def row_stats(Q: np.ndarray, K: np.ndarray, scale: float, causal: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The softmax's row statistics in float64: m = rowmax(S) and l = rowsum(exp(S - m)) (FA1 leaves both)."""
    Q, K = (np.asarray(x, dtype=np.float64) for x in (Q, K))
    m, l = np.empty(Q.shape[0]), np.empty(Q.shape[0])
    for r0, r1 in bands(Q.shape[0], K.shape[0]):
        S = scores(Q, K, scale, r0, r1, causal)  # (rows, N)
        m[r0:r1] = S.max(axis=1)
        S -= m[r0:r1, None]
        l[r0:r1] = np.exp(S, out=S).sum(axis=1)
    return m, l


def errors(got: np.ndarray, ref: np.ndarray, floor: float = 0.0) -> dict[str, float]:
    """Max abs error, and max abs error relative to max(floor, the reference's largest magnitude)."""
    diff = np.abs(np.asarray(got, dtype=np.float64) - ref)
    max_abs = float(diff.max()) if diff.size else 0.0
    scale = max(floor, float(np.abs(ref).max()) if ref.size else 0.0)
    return {"max_abs": max_abs, "max_rel": max_abs / scale if scale > 0 else max_abs}


# Logits and log-sum-exps (L, m) carry the absolute rounding of a float32 dot product, which does not shrink with
# the value: a score of 0.04 from a sum of O(1) products is off by ~1e-7. Their relative error is taken against
# max(1, max |ref|), so that small logits (N = 1, say) are not judged against their own tiny magnitude.
LOG_DOMAIN = {"L", "m"}


# float32 arithmetic on O(1) inputs lands far below this; both are max-norm relative errors.
TOLERANCE = {"O": 1e-5, "L": 1e-6}
# FA1's m is a max of float32 scores; l a float32 sum of up to N terms, each rescaled as the max rises.
TOLERANCE.update({"m": 1e-6, "l": 1e-5})
# Gradients carry more rounding than O: Pij = exp(Sij - Li) inherits Li's float32 rounding, a relative error of
# about |Li| * 2^-24, and dSij = Pij (dPij - Di) subtracts two O(1) numbers. Standard-normal inputs land at
# 1e-7 .. 1.1e-6 (N up to 2048, D up to 128), inputs x10 (|L| ~ 400) at <= 1.1e-5: 1e-4 leaves a 10x margin.
TOLERANCE.update({"dQ": 1e-4, "dK": 1e-4, "dV": 1e-4})


def check(outputs: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> dict[str, object]:
    """The self-check every trace records: per output its errors, the tolerance and a verdict."""
    report: dict[str, object] = {
        "dtype": "float64",
        "metric": "max |x - ref|, and that over max |ref| (for L and m: over max(1, max |ref|))",
    }
    ok = True
    for name, r in ref.items():
        e = errors(outputs[name], r, floor=1.0 if name in LOG_DOMAIN else 0.0)
        e["tolerance_rel"] = TOLERANCE.get(name, 1e-5)
        # NaN or inf where float64 has a number (float32 overflow; a row with no finite score): max_abs is NaN then
        e["nonfinite"] = int(np.size(outputs[name]) - np.isfinite(outputs[name]).sum())
        e["ok"] = bool(e["nonfinite"] == 0 and e["max_rel"] <= e["tolerance_rel"])
        ok &= e["ok"]
        report[name] = e
    report["ok"] = ok
    return report


def expected(cfg, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The float64 reference of every output `cfg.algo` checks, keyed like the outputs."""
    if cfg.algo in ("standard", "fa1"):
        O, _ = attention(inputs["Q"], inputs["K"], inputs["V"], cfg.softmax_scale, cfg.causal)
        if cfg.algo == "standard":
            return {"O": O}
        m, l = row_stats(inputs["Q"], inputs["K"], cfg.softmax_scale, cfg.causal)
        return {"O": O, "l": l, "m": m}
    if cfg.algo == "fa2-backward":
        return attention_backward(inputs["Q"], inputs["K"], inputs["V"], inputs["dO"], cfg.softmax_scale, cfg.causal)
    O, L = attention(inputs["Q"], inputs["K"], inputs["V"], cfg.softmax_scale, cfg.causal)
    return {"O": O, "L": L}
