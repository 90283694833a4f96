"""float64 attention: the reference every output is judged against (each algorithm's `expect` module says which
of its outputs are checked against what, and how closely), and the check itself."""

from __future__ import annotations

import numpy as np

# The float64 reference works on a band of query rows at a time: each band's scores are rows x N float64, about
# 32 MB, where the whole N x N matrix at N = 16384 would be 2 GB (and the backward holds several at once).
BAND_BYTES = 2**25


def bands(n_rows: int, n_cols: int) -> list[tuple[int, int]]:
    """[first, end) row ranges whose (rows, n_cols) float64 matrix takes at most BAND_BYTES."""
    rows = max(1, BAND_BYTES // (8 * max(1, n_cols)))
    return [(r0, min(n_rows, r0 + rows)) for r0 in range(0, n_rows, rows)]


def seen(nq: int, nk: int, r0: int, r1: int, causal: bool, window: tuple[int, int] = (-1, -1)) -> np.ndarray:
    """Which keys each query row of [r0, r1) sees, (rows, Nk): key c against row r when c - (r + Nk - Nq) lies in
    [-left, right] (a side of -1 unbounded; causal: right at most 0), aligned to the bottom-right as
    FlashAttention-2 aligns queries shorter or longer than the keys. Written on its own, not with the kernels'
    geometry (flashviz.model.band), so that the engine is held to an independent statement of the mask."""
    d = np.arange(nk)[None, :] - (np.arange(r0, r1)[:, None] + (nk - nq))  # (rows, Nk) key minus aligned row
    ok = np.ones(d.shape, dtype=bool)
    left, right = window
    if causal:
        ok &= d <= 0
    if right >= 0:
        ok &= d <= right
    if left >= 0:
        ok &= d >= -left
    return ok


def scores(
    Q: np.ndarray,
    K: np.ndarray,
    scale: float,
    r0: int,
    r1: int,
    causal: bool,
    window: tuple[int, int] = (-1, -1),
    softcap: float = 0.0,
) -> np.ndarray:
    """S = scale * Q[r0:r1] K^T in float64 (softcap > 0: softcap * tanh(S / softcap)), keys a row does not see
    masked to -inf (`seen`: causal, a window, Nq != Nk aligned to the bottom-right)."""
    S = Q[r0:r1] @ K.T  # (rows, Nk)
    S *= scale
    if softcap > 0:
        S = softcap * np.tanh(S / softcap)
    if causal or tuple(window) != (-1, -1):
        S[~seen(Q.shape[0], K.shape[0], r0, r1, causal, window)] = -np.inf
    return S


def attention(
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    scale: float,
    causal: bool = False,
    window: tuple[int, int] = (-1, -1),
    softcap: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """O = softmax(scale * Q K^T) V and L = logsumexp(scale * Q K^T), in float64 (causal: key > query masked; Q of
    Nq rows against K, V of Nk, a window and soft-capping as `scores` says). A row that sees no key has O = 0 and
    L = -inf, as FlashAttention-2 leaves it."""
    Q, K, V = (np.asarray(x, dtype=np.float64) for x in (Q, K, V))
    n = Q.shape[0]
    O, L = np.empty((n, V.shape[1])), np.empty(n)  # (Nq, D), (Nq,)
    for r0, r1 in bands(n, K.shape[0]):
        S = scores(Q, K, scale, r0, r1, causal, window, softcap)  # (rows, Nk)
        m = S.max(axis=1, keepdims=True, initial=-np.inf)  # (rows, 1)
        empty = np.isneginf(m[:, 0])  # rows that see no key
        m[empty] = 0.0
        S -= m
        P = np.exp(S, out=S)  # (rows, Nk), in place
        l = P.sum(axis=1, keepdims=True)  # (rows, 1)
        O[r0:r1] = (P @ V) / np.where(l == 0, 1.0, l)
        L[r0:r1] = np.where(empty, -np.inf, (m + np.log(np.where(l == 0, 1.0, l)))[:, 0])
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


def backward_magnitudes(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, dO: np.ndarray, scale: float, causal: bool = False
) -> dict[str, float]:
    """The scale of each gradient, in float64: the largest sum of the magnitudes of the terms each element adds up
    (|scale| Σ_j Pij (|dPij| + |Δi|) |Kj| for dQ, its transpose against |Q| for dK, Σ_i Pij |dOi| for dV). A gradient
    whose terms cancel (a true dQ of 0; a one-hot softmax at --scale 1e6) is judged against these, the size of
    what its float32 rounding is made of, not against its own tiny max |ref|."""
    O, L = attention(Q, K, V, scale, causal)
    Q, K, V, dO = (np.asarray(x, dtype=np.float64) for x in (Q, K, V, dO))
    D = (dO * O).sum(axis=1)  # (N,)
    dq = 0.0
    dk, dv = np.zeros_like(K), np.zeros_like(V)
    for r0, r1 in bands(Q.shape[0], K.shape[0]):
        S = scores(Q, K, scale, r0, r1, causal)  # (rows, N)
        S -= L[r0:r1, None]
        P = np.exp(S, out=S)  # (rows, N)
        A = P * (np.abs(dO[r0:r1] @ V.T) + np.abs(D[r0:r1, None]))  # (rows, N) |terms| of dS
        dq = max(dq, float((abs(scale) * (A @ np.abs(K))).max(initial=0.0)))
        dk += abs(scale) * (A.T @ np.abs(Q[r0:r1]))  # (N, D)
        dv += P.T @ np.abs(dO[r0:r1])  # (N, D)
    return {"dQ": dq, "dK": float(dk.max(initial=0.0)), "dV": float(dv.max(initial=0.0))}


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
    """Max abs error, and max abs error relative to max(floor, the reference's largest magnitude). An infinity where
    the reference has the same one (L = -inf: a row that sees no key) is no error; the scale is over finite values."""
    got = np.asarray(got, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.where(got == ref, 0.0, np.abs(got - ref))
    max_abs = float(diff.max()) if diff.size else 0.0
    finite = np.abs(ref[np.isfinite(ref)])
    scale = max(floor, float(finite.max()) if finite.size else 0.0)
    return {"max_abs": max_abs, "max_rel": max_abs / scale if scale > 0 else max_abs}


def check(
    outputs: dict[str, np.ndarray],
    ref: dict[str, np.ndarray],
    tolerance: dict[str, float],
    log_domain: frozenset[str] = frozenset(),
    magnitudes: dict[str, float] | None = None,
) -> dict[str, object]:
    """The self-check every trace records: per output its errors, the tolerance and a verdict.

    `tolerance` is the largest max-norm relative error each output may have (every output of `ref` needs one);
    the outputs in `log_domain` (logits and log-sum-exps: L, m) carry the absolute rounding of a float32 dot
    product, which does not shrink with the value (a score of 0.04 from a sum of O(1) products is off by ~1e-7),
    so their relative error is taken against max(1, max |ref|), and small logits (N = 1, say) are not judged
    against their own tiny magnitude. `magnitudes`: outputs judged against the scale of their terms instead
    (`backward_magnitudes`: gradients). Each algorithm's `expect` module holds all three. Each output says what
    its `max_rel` is over (`over`): the verdict is max_rel <= tolerance_rel."""
    magnitudes = magnitudes or {}
    report: dict[str, object] = {
        "dtype": "float64",
        "metric": "max |x - ref| over the output's scale (max |ref|; for L and m max(1, max |ref|); for gradients "
        "the largest sum of the magnitudes of their terms), judged against the tolerance",
    }
    ok = True
    for name, r in ref.items():
        floor = 1.0 if name in log_domain else 0.0
        err = errors(outputs[name], r, floor=floor)
        max_abs, max_rel = err["max_abs"], err["max_rel"]
        finite = np.abs(r[np.isfinite(r)])
        # the size of the answer itself, beside the scale a gradient is judged on (its terms may cancel to far less)
        e: dict[str, float | int | bool | str] = {"max_abs": max_abs, "max_ref": float(finite.max(initial=0.0))}
        if name in magnitudes:
            m = magnitudes[name]
            max_rel = max_abs / m if m > 0 else max_abs
            e["over"] = "the largest sum of the magnitudes of its terms"
            e["over_value"] = m
        else:
            e["over"] = "max(1, max |ref|)" if floor else "max |ref|"
        e["max_rel"] = max_rel
        e["tolerance_rel"] = tolerance[name]
        # NaN or inf where float64 has a number (float32 overflow; a row with no finite score): max_abs is NaN then;
        # the -inf of L where float64's is -inf too (a row that sees no key under a window) is the right value
        got = np.asarray(outputs[name])
        nonfinite = int(np.sum(~np.isfinite(got) & ~(got == r)))
        e["nonfinite"] = nonfinite
        verdict = bool(nonfinite == 0 and max_rel <= tolerance[name])
        e["ok"] = verdict
        ok = ok and verdict
        report[name] = e
    report["ok"] = ok
    return report
