"""How fa1_forward.cu's threads share each step's work (flashviz.hardware.warps): like fa2's, loads, scores and
stores are strided over the block and the update is one thread per row of Qi: this teaching kernel does not split
Kj between warps as FlashAttention-1's own kernel did (`schemes` shows that split beside it)."""

from __future__ import annotations

from ...hardware.warps import Work

STRIDED = "for (int x = tid; x < {n}; x += blockDim.x)"

WORK = {
    "load_kv": Work("Kj", lambda c: (c.bc, c.d), "strided", STRIDED.format(n="Bc*D")),
    "load_qi": Work("Qi", lambda c: (c.br, c.d), "strided", STRIDED.format(n="Br*D")),
    "scores": Work("Sij", lambda c: (c.br, c.bc), "strided", STRIDED.format(n="Br*Bc")),
    "update": Work("Sij", lambda c: (c.br, c.bc), "rows", "if (tid < Br)"),
    "write_back": Work("Oi", lambda c: (c.br, c.d), "strided", STRIDED.format(n="Br*D")),
}
