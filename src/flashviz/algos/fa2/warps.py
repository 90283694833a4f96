"""How fa2_forward.cu's threads share each step's work (flashviz.hardware.warps): the loads, the scores and the
store are strided over the whole block; the online softmax and P·Vj are one thread per row of Qi."""

from __future__ import annotations

from ...hardware.warps import Work

STRIDED = "for (int x = tid; x < {n}; x += blockDim.x)"

WORK = {
    "load_q": Work("Qi", lambda c: (c.br, c.d), "strided", STRIDED.format(n="Br*D")),
    "load_kv": Work("Kj", lambda c: (c.bc, c.d), "strided", STRIDED.format(n="Bc*D")),
    "scores": Work("Sij", lambda c: (c.br, c.bc), "strided", STRIDED.format(n="Br*Bc")),
    "online_softmax": Work("Sij", lambda c: (c.br, c.bc), "rows", "if (tid < Br)"),
    "write_back": Work("Oi", lambda c: (c.br, c.d), "strided", STRIDED.format(n="Br*D")),
}
