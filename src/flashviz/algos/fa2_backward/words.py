"""fa2-backward's words (flashviz.algos.words): every sentence of its steps, plain text with named slots, said after
the run from each step's record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from flashviz.algos.picture import Rich
from flashviz.algos.words import Said, keys_of, moves_action, num, plural, rich, row_list, rows_of, span

from . import picture

if TYPE_CHECKING:
    from flashviz.engine.steps import Record
    from flashviz.model.config import Config

# op -> (label, TeX)
LABELS = {
    "load_do_o": ("dOi, Oi = dO[i], O[i]", r"dO_i, O_i \leftarrow dO[i], O[i]"),
    "write_delta": (
        "Delta[i] = rowsum(dOi * Oi); dQ[i] = 0",
        r"\Delta[i] \leftarrow \mathrm{rowsum}(dO_i \circ O_i);\; dQ[i] \leftarrow 0",
    ),
    "load_kv": (
        "Kj, Vj = K[j], V[j]; dKj = dVj = 0",
        r"K_j, V_j \leftarrow K[j], V[j];\; dK_j, dV_j \leftarrow 0",
    ),
    "load_q": (
        "Qi, dOi, Li, Deltai = Q[i], dO[i], L[i], Delta[i]",
        r"Q_i, dO_i, L_i, \Delta_i \leftarrow Q[i], dO[i], L[i], \Delta[i]",
    ),
    "probs": ("Pij = exp(Qi @ Kj.T * scale - Li)", r"P_{ij} = \exp\!\big(\tau\, Q_i K_j^{\top} - L_i\big)"),
    "dv": ("dVj += Pij.T @ dOi", r"dV_j \mathrel{+}= P_{ij}^{\top} dO_i"),
    "ds": (
        "dSij = Pij * (dOi @ Vj.T - Deltai)",
        r"dS_{ij} = P_{ij} \circ \big(dO_i V_j^{\top} - \Delta_i\big)",
    ),
    "dk": ("dKj += scale * dSij.T @ Qi", r"dK_j \mathrel{+}= \tau\, dS_{ij}^{\top} Q_i"),
    "dq": ("dQ[i] += scale * dSij @ Kj (atomicAdd)", r"dQ[i] \mathrel{+}= \tau\, dS_{ij} K_j"),
    "write_back": ("dK[j], dV[j] = dKj, dVj", r"dK[j], dV[j] \leftarrow dK_j, dV_j"),
}
PARTS: dict[str, tuple[tuple[str, str, str], ...]] = {}  # no step shown in parts

# ---- the narrative sentences ----

LOAD_DO_O = (
    "Preprocessing, block {i}: dOi = dO[{first}:{end}] and Oi = O[{first}:{end}] arrive ({elements} elements). This "
    "pass reads dO and O once each, so that the main kernel never needs O."
)
WRITE_DELTA = (
    "Deltai = rowsum(dOi ∘ Oi) per row ({Deltai}) is written to Delta[{first}:{end}] ({valid} elements): the one "
    "number per row that the softmax's gradient subtracts. dQ[{first}:{end}] is zeroed ({elements} writes) because "
    "the main kernel only ever adds into it."
)
LOAD_KV = (
    "Block {j} owns tile {j} of K and V: Kj, Vj = K[{first}:{end}], V[{first}:{end}] are loaded once ({elements} "
    "elements) and stay, and dKj = dVj = 0 start in SRAM, where they accumulate until the end.{skip}{ragged}"
)
SKIPS = (
    " Causal: blocks 0–{last} of Q end before column {first}, wholly above the diagonal, and are skipped, so it "
    "streams {visits} of the {tr} blocks."
)
STREAMS_ALL = " It will stream all {tr} blocks of Q past them."
RAGGED = " The tile is ragged: only {valid} of {bc} rows exist, the rest are zero in SRAM."
LOAD_Q = (
    "Block {i} of Q streams in: Qi, dOi = Q[{first}:{end}], dO[{first}:{end}] and Li, Deltai = L[{first}:{end}], "
    "Delta[{first}:{end}] ({elements} + {vectors} elements). The forward's Li ({Li}) is all the softmax needs: no "
    "running max is rebuilt. {readers} of K/V read these rows, once each."
)
PROBS = (
    "Pij = exp(Sij − Li) rebuilds the forward's softmax for this tile exactly: {count} probabilities ({values}); the "
    "largest is row {row}, column {col} of the tile. Row sums over this tile: {sums} (over all tiles each row sums "
    "to 1).{nan}{dead}{padding}"
)
PROBS_NAN = (
    " In {rows} of the tile Pij is NaN: the forward left L NaN there (no softmax), and as in the kernel the NaN flows "
    "into every gradient these rows touch: dVj, dKj and dQ."
)
PROBS_DEAD = " This tile crosses the diagonal: {dead} entries with key column > query row are 0."
PROBS_PADDING = " Padding rows and columns past N are 0."
ACCUMULATE = (
    "{name} += {formula}: block {i}'s share is added in SRAM ({done} of {of} blocks of Q so far); {name} now spans "
    "{values}. It stays in SRAM, never crossing HBM until the write-back."
)
FORMULA = {"dv": ("dVj", "Pijᵀ·dOi"), "dk": ("dKj", "scale·dSijᵀ·Qi")}
DS = (
    "dPij = dOi·Vjᵀ ({dP}), then dSij = Pij ∘ (dPij − Deltai): the largest |dSij| is row {row}, column {col} "
    "({dS_rc}, from dPij = {dP_rc} and Deltai = {Delta_r}). Subtracting Deltai, not a sum over the whole row of P, is "
    "what lets the gradient of the softmax be done one tile at a time."
)
DQ = (
    "dQ[{first}:{end}] += scale·dSij·Kj with atomicAdd ({elements} elements, each counted as one read and one write "
    "of dQ): {contributors} of K/V add into these rows, this is block {j}'s share. dQi cannot stay in SRAM because no "
    "one block owns it."
)
WRITE_BACK = (
    "All {visits} of Q have passed, so dKj and dVj are complete: dK[{first}:{end}] and dV[{first}:{end}] are "
    "written once ({elements} elements) and never read back."
)

# ---- the carries panel's notes ----

NO_CARRIES = rich(
    "The backward's per-row values: L_{i} and Δ_{i} on `load_q`, the scores on `probs`, dP on `ds`, dQ's share on `dq`."
)
PER_ROW: Rich = ["Per row of the block: what this step carries, from the Trace."]


def live_of(cfg: Config, i: int, j: int) -> np.ndarray:
    """(Br, Bc) the entries of tile (i, j) the kernel computes: inside N, and under causal masking on or below the
    diagonal (the others are 0 in Pij)."""
    rows = np.arange(i * cfg.br, (i + 1) * cfg.br)[:, None]  # (Br, 1) query row of each SRAM row
    cols = np.arange(j * cfg.bc, (j + 1) * cfg.bc)[None, :]  # (1, Bc) key column of each SRAM column
    live = (rows < cfg.n) & (cols < cfg.n)
    return live & (cols <= rows) if cfg.causal else live


def probs(P: np.ndarray, live: np.ndarray, valid_rows: int, valid_cols: int, causal: bool) -> str:
    p = P[:valid_rows, :valid_cols]
    alive = live[:valid_rows, :valid_cols]
    r, c = np.unravel_index(int(np.argmax(np.where(np.isnan(p), -np.inf, p))), p.shape) if p.size else (0, 0)
    nan = np.flatnonzero(np.isnan(p).any(axis=1)) if p.size else np.array([], dtype=int)
    dead = int((~alive).sum())
    return PROBS.format(
        count=int(alive.sum()),
        values=span(p[alive]) if alive.any() else "0",
        row=r,
        col=c,
        sums=span(p.sum(axis=1)),
        nan=PROBS_NAN.format(rows=row_list(nan)) if nan.size else "",
        dead=PROBS_DEAD.format(dead=dead) if causal and dead else "",
        padding=PROBS_PADDING if valid_cols < P.shape[1] or valid_rows < P.shape[0] else "",
    )


def ds(dS: np.ndarray, dP: np.ndarray, Deltai: np.ndarray, valid_rows: int, valid_cols: int) -> str:
    ds, dp = dS[:valid_rows, :valid_cols], dP[:valid_rows, :valid_cols]
    r, c = np.unravel_index(int(np.argmax(np.abs(ds))), ds.shape) if ds.size else (0, 0)
    return DS.format(dP=span(dp), row=r, col=c, dS_rc=num(ds[r, c]), dP_rc=num(dp[r, c]), Delta_r=num(Deltai[r]))


def text(cfg: Config, s: Record, state: Mapping[str, np.ndarray]) -> str:
    d = cfg.d
    if s.op in ("load_kv", "write_back"):
        j = s.indices["j"]
        c0, c1, nc = keys_of(cfg, j)
        i0 = cfg.first_block(j)
        visits = cfg.tr - i0
        if s.op == "write_back":
            return WRITE_BACK.format(visits=plural(visits, "block"), first=c0, end=c1, elements=2 * nc * d)
        skip = SKIPS.format(last=i0 - 1, first=c0, visits=visits, tr=cfg.tr) if i0 else STREAMS_ALL.format(tr=cfg.tr)
        ragged = "" if nc == cfg.bc else RAGGED.format(valid=nc, bc=cfg.bc)
        return LOAD_KV.format(j=j, first=c0, end=c1, elements=2 * nc * d, skip=skip, ragged=ragged)
    i = s.indices["i"]
    first, end, valid = rows_of(cfg, i)
    if s.op == "load_do_o":
        return LOAD_DO_O.format(i=i, first=first, end=end, elements=2 * valid * d)
    if s.op == "write_delta":
        assert s.carries is not None
        return WRITE_DELTA.format(
            Deltai=span(s.carries["Deltai"][:valid]), first=first, end=end, valid=valid, elements=valid * d
        )
    if s.op == "load_q":
        assert s.carries is not None
        return LOAD_Q.format(
            i=i,
            first=first,
            end=end,
            elements=2 * valid * d,
            vectors=2 * valid,
            Li=span(s.carries["Li"][:valid]),
            readers=plural(cfg.tiles_of_block(i), "block"),
        )
    j = s.indices["j"]
    _, _, nc = keys_of(cfg, j)
    i0 = cfg.first_block(j)
    if s.op == "probs":
        return probs(s.sram["Pij"], live_of(cfg, i, j), valid, nc, cfg.causal)
    if s.op in FORMULA:
        name, formula = FORMULA[s.op]
        return ACCUMULATE.format(
            name=name, formula=formula, i=i, done=i - i0 + 1, of=cfg.tr - i0, values=span(s.sram[name][:nc])
        )
    if s.op == "ds":
        assert s.carries is not None
        return ds(s.sram["dSij"], s.carries["dPij"], state["Deltai"], valid, nc)
    assert s.op == "dq", s.op
    return DQ.format(first=first, end=end, elements=valid * d, contributors=plural(cfg.tiles_of_block(i), "block"), j=j)


def say(cfg: Config, s: Record, state: Mapping[str, np.ndarray]) -> Said:
    return Said(
        text(cfg, s, state), moves_action(s, picture.OPS, LABELS[s.op][0]), PER_ROW if s.carries else NO_CARRIES
    )
