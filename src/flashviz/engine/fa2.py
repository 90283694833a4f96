"""The FlashAttention-2 forward executor: kernels/fa2_forward.cu's loops, in float32, on the memory model.

Every block i of the launch runs (blocks are independent, so running them one after another gives
the same numbers as running them at once). Steps with values are recorded for the chosen blocks;
counters are kept for all.
"""

from __future__ import annotations

import numpy as np

from .. import kernels, narrative
from ..config import Config
from ..trace import Step, Transfer
from .memory import HBM, SRAM

ALGO = "fa2"
TENSORS = ("Q", "K", "V", "O", "L")

# op -> (the seed's label, TeX)
LABELS = {
    "load_q": (
        "Qi = Q[i]; Oi = 0; mi = -inf; li = 0",
        r"Q_i \leftarrow Q[i];\; O_i \leftarrow 0;\; m_i \leftarrow -\infty;\; \ell_i \leftarrow 0",
    ),
    "load_kv": ("Kj, Vj = K[j], V[j]", r"K_j, V_j \leftarrow K[j], V[j]"),
    "scores": ("Sij = Qi @ Kj.T", r"S_{ij} = \tau\, Q_i K_j^{\top}"),
    "online_softmax": (
        "mi, li, Oi = ...",
        r"m_i, \ell_i, O_i \leftarrow \mathrm{online\_softmax}(m_i, \ell_i, O_i, S_{ij}, V_j)",
    ),
    "write_back": (
        "O[i], L[i] = Oi/li, mi + log(li)",
        r"O[i] \leftarrow O_i / \ell_i,\; L[i] \leftarrow m_i + \log \ell_i",
    ),
}
SUBSTEPS = (
    (
        "new max",
        "mi = max(mi, Sij.max(-1))",
        r"m_i^{\text{new}} = \max\!\big(m_i,\ \mathrm{rowmax}(S_{ij})\big)",
    ),
    (
        "rescaled sum",
        "li = rescale(li) + exp(Sij - mi).sum(-1)",
        r"\ell_i = e^{m_i - m_i^{\text{new}}}\,\ell_i + \mathrm{rowsum}\big(e^{S_{ij} - m_i^{\text{new}}}\big)",
    ),
    (
        "rescaled output",
        "Oi = rescale(Oi) + softmax(Sij) @ Vj",
        r"O_i = e^{m_i - m_i^{\text{new}}}\,O_i + e^{S_{ij} - m_i^{\text{new}}}\,V_j",
    ),
)


def phase_of(op: str, j: int | None, tc: int) -> int:
    """Position of a step in every block's program: load_q, then 3 per tile, then write_back."""
    if op == "load_q":
        return 0
    if op == "write_back":
        return 1 + 3 * tc
    return 1 + 3 * j + ("load_kv", "scores", "online_softmax").index(op)


def phase_ops(tc: int) -> list[tuple[str, int | None]]:
    return (
        [("load_q", None)]
        + [(op, j) for j in range(tc) for op in ("load_kv", "scores", "online_softmax")]
        + [("write_back", None)]
    )


class _Run:
    def __init__(self, cfg: Config, Q: np.ndarray, K: np.ndarray, V: np.ndarray):
        self.cfg = cfg
        self.n, self.d, self.br, self.bc = cfg.n, cfg.d, cfg.br, cfg.bc
        self.tr, self.tc, self.scale = cfg.tr, cfg.tc, np.float32(cfg.softmax_scale)
        self.hbm = HBM()
        for name, x in (("Q", Q), ("K", K), ("V", V)):
            self.hbm.put(name, x)
        # outputs are poisoned so that an element the kernel never wrote shows up as NaN
        self.hbm.put("O", np.full((self.n, self.d), np.nan, dtype=np.float32))
        self.hbm.put("L", np.full(self.n, np.nan, dtype=np.float32))
        self.recorded = set(cfg.recorded_blocks())
        self.steps: list[Step] = []
        # elements moved per (phase, tensor, read|write), summed over every block of the launch
        self.phase_counts = np.zeros((2 + 3 * self.tc, len(TENSORS), 2), dtype=np.int64)
        self.sram_footprint: dict | None = None

    def emit(
        self,
        i: int,
        j: int | None,
        op: str,
        transfers: list[Transfer],
        sram: dict[str, np.ndarray],
        text: str,
        carries: dict | None = None,
        substeps: list | None = None,
    ) -> None:
        phase = phase_of(op, j, self.tc)
        for t in transfers:
            self.phase_counts[phase, TENSORS.index(t.tensor), int(t.kind == "write")] += t.elements
        if i not in self.recorded:
            return
        region = kernels.regions(ALGO)[op]
        math, tex = LABELS[op]
        self.steps.append(
            Step(
                index=len(self.steps),
                block=i,
                j=j,
                phase=phase,
                op=op,
                math=math,
                tex=tex,
                code=kernels.step_code(ALGO, op, i, j),
                lines=(region.first, region.last),
                transfers=transfers,
                sram={k: v.copy() for k, v in sram.items()},
                carries=carries,
                substeps=substeps,
                text=text,
            )
        )

    def block(self, i: int) -> None:
        n, d, br, bc = self.n, self.d, self.br, self.bc
        rec = i in self.recorded
        sram = SRAM()
        Qi = sram.alloc("Qi", (br, d))  # (Br, D)
        Oi = sram.alloc("Oi", (br, d))  # (Br, D)
        Kj = sram.alloc("Kj", (bc, d))  # (Bc, D)
        Vj = sram.alloc("Vj", (bc, d))  # (Bc, D)
        Sij = sram.alloc("Sij", (br, bc))  # (Br, Bc)
        mi = sram.alloc("mi", (br,), fill=-np.inf)  # (Br,)
        li = sram.alloc("li", (br,))  # (Br,)
        self.sram_footprint = sram.footprint()
        r0, r1 = i * br, min(n, (i + 1) * br)
        nr = r1 - r0

        # step: load_q -- Qi = Q[i]; Oi = 0; mi = -inf; li = 0
        q, t = self.hbm.read("Q", slice(r0, r1))
        Qi[:nr] = q
        self.emit(
            i,
            None,
            "load_q",
            [t],
            {"Qi": Qi, "Oi": Oi, "mi": mi, "li": li},
            narrative.load_q(i, r0, r1, br, d) if rec else "",
            carries={"mi": mi.copy(), "li": li.copy()} if rec else None,
        )

        for j in range(self.tc):
            c0, c1 = j * bc, min(n, (j + 1) * bc)
            nc = c1 - c0
            # step: load_kv -- Kj, Vj = K[j], V[j]; rows past N stay zero
            k, tk = self.hbm.read("K", slice(c0, c1))
            v, tv = self.hbm.read("V", slice(c0, c1))
            Kj[:nc], Kj[nc:] = k, 0.0
            Vj[:nc], Vj[nc:] = v, 0.0
            self.emit(
                i,
                j,
                "load_kv",
                [tk, tv],
                {"Kj": Kj, "Vj": Vj},
                narrative.load_kv(j, self.tc, c0, c1, bc, d, self.tr) if rec else "",
            )

            # step: scores -- Sij = Qi @ Kj.T * scale; columns past N score -inf
            Sij[:] = (Qi @ Kj.T) * self.scale  # (Br, Bc)
            Sij[:, nc:] = -np.inf
            self.emit(
                i,
                j,
                "scores",
                [],
                {"Sij": Sij},
                narrative.scores(j, Sij, nr, nc, float(self.scale)) if rec else "",
            )

            # step: online_softmax -- new max, rescaled sum, rescaled output
            m_old, l_old = mi.copy(), li.copy()  # (Br,)
            m_ij = Sij.max(axis=1)  # (Br,)
            m_new = np.maximum(mi, m_ij)  # (Br,)
            alpha = np.exp(mi - m_new)  # (Br,) rescale factor exp(m_old - m_new)
            Sij[:] = np.exp(Sij - m_new[:, None])  # (Br, Bc) Sij now holds P = exp(Sij - m_new)
            lsum = Sij.sum(axis=1)  # (Br,)
            li[:] = alpha * li + lsum
            pv = Sij @ Vj  # (Br, D)
            Oi[:] = alpha[:, None] * Oi + pv
            mi[:] = m_new
            if rec:
                carries = {
                    "m_old": m_old,
                    "m_ij": m_ij,
                    "mi": mi.copy(),
                    "alpha": alpha,
                    "l_old": l_old,
                    "rowsum": lsum,
                    "li": li.copy(),
                }
                substeps = [
                    {"name": name, "math": math, "tex": tex, "values": values}
                    for (name, math, tex), values in zip(
                        SUBSTEPS,
                        (
                            {"m_old": m_old, "m_ij": m_ij, "m_new": m_new},
                            {"alpha": alpha, "l_old": l_old, "rowsum": lsum, "l_new": li.copy()},
                            {"alpha": alpha, "PV": pv},  # Oi before and after: the neighbouring sram
                        ),
                        strict=True,
                    )
                ]
                text = narrative.online_softmax(j, m_old, m_new, alpha, l_old, li, nr)
                self.emit(
                    i,
                    j,
                    "online_softmax",
                    [],
                    {"Sij": Sij, "Oi": Oi, "mi": mi, "li": li},
                    text,
                    carries=carries,
                    substeps=substeps,
                )
            else:
                self.emit(i, j, "online_softmax", [], {}, "")

        # step: write_back -- O[i], L[i] = Oi/li, mi + log(li); rows past N are not stored
        Oi /= li[:, None]
        L_i = mi + np.log(li)  # (Br,)
        to = self.hbm.write("O", slice(r0, r1), Oi[:nr])
        tl = self.hbm.write("L", slice(r0, r1), L_i[:nr])
        self.emit(
            i,
            None,
            "write_back",
            [tl, to],
            {"Oi": Oi},
            narrative.write_back(i, r0, r1, d, L_i[:nr]) if rec else "",
            carries={"mi": mi.copy(), "li": li.copy(), "L": L_i} if rec else None,
        )

    def phases(self) -> list[dict]:
        cumulative = np.cumsum(self.phase_counts, axis=0)
        return [
            {
                "phase": p,
                "op": op,
                "j": j,
                "hbm": {
                    name: {"read": int(cumulative[p, t, 0]), "written": int(cumulative[p, t, 1])}
                    for t, name in enumerate(TENSORS)
                },
            }
            for p, (op, j) in enumerate(phase_ops(self.tc))
        ]


def execute(cfg: Config, Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> _Run:
    """Run every block of the launch; return the finished run (HBM, steps, phase counters)."""
    run = _Run(cfg, Q, K, V)
    for i in range(cfg.tr):
        run.block(i)
    return run
